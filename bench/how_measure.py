"""Measure the static check of "how" (lmcourse.grading.how) against today's in-kernel rules, on every
catalogue entry: the mutants and alternatives of 01-12 and the forgery catalogues' attempts.

Per entry: whether the static check finds a refused name in the answer (y), only flags a name built at
run time (flagged) or neither (n), read against the target exercise's rules (made here, as a student's own
kernel makes them); whether today's rules caught a mutant is read from the mutant harness's tables
(``--tables DIR``: the ``mutants-NN_name.txt`` that tests/notebooks/test_mutants.py writes) when there is
one: the first failing message states the rule's reason. Prints a markdown table and a summary.

    .venv/bin/python bench/how_measure.py --tables /work/house5/tables > HOW-table.md
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lmcourse.authoring.mutants import load_alternatives, load_mutants, resolve, variants_path  # noqa: E402
from lmcourse.grading import how, scan  # noqa: E402
from lmcourse.marking import notebooks  # noqa: E402

NOTEBOOKS = sorted(p.stem for p in (ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py"))
_PREFIX = {"ED": "09_encoder_decoder", "RNN": "02_rnn", "BLOCK": "04_block", "ATT": "03_attention",
           "DEC": "07_decoding", "MLM": "06_mlm", "GPT": "05_gpt", "BPE": "08_bpe", "ROUTES_03": "03_attention"}
FORGERIES = ("test_forgery_by_notebook", "test_forgery_records", "test_forgery_routes", "test_forgery_world")


def _refused(nb, target: str):
    try:
        ex = nb.exercise(target)
    except KeyError:
        return None, ""
    if ex.rules is None:
        return None, ""
    rules = ex.rules()
    return how.from_rules(rules), rules.reason


def _names(notebook: str, source: str) -> scan.Names:
    """The notebook's imports (its solution's code cells) and the entry's own."""
    nb = nbformat.read(ROOT / "autograder" / "source" / notebook / f"{notebook}.ipynb", as_version=4)
    names = scan.Names()
    for text in [c.source for c in nb.cells if c.cell_type == "code"] + [source]:
        tree, _ = scan._read(text)
        if tree is not None:
            names.learn(tree)
    return names


def _static(notebook: str, refused, source: str) -> tuple[str, str]:
    if refused is None:
        return "-", ""
    hits, flags = how.check(source, refused, _names(notebook, source))
    if hits:
        return "y", "; ".join(hits)[:80]
    return ("flagged", "; ".join(flags)[:80]) if flags else ("n", "")


def _table(tables: Path | None, notebook: str) -> dict[str, str]:
    """mutant name -> the harness's first failing message."""
    if tables is None or not (tables / f"mutants-{notebook}.txt").exists():
        return {}
    found, last = {}, None
    for line in (tables / f"mutants-{notebook}.txt").read_text().splitlines()[1:]:
        m = re.match(r"\s+\[.*?\] [^:]+: (.*)$", line)
        if m:
            last = m.group(1).split("  (ALSO FAILS")[0]
            found[last] = ""
        elif line.strip().startswith("->") and last is not None:
            found[last] = line.strip()[2:].strip()
    return found


def _by_rules(message: str, reason: str) -> str:
    if not reason:
        return "n"
    if "Confined" in message or "starting a thread" in message or "a process" in message:
        return "y (confine)"
    return "y" if reason[:40] in message or "your code called" in message or "your code imported" in message else "n"


def _forgery_entries():
    for module_name in FORGERIES:
        module = importlib.import_module(f"tests.grading.{module_name}")
        for var, value in vars(module).items():
            if var.startswith("__") or not isinstance(value, dict):
                continue
            yield from _walk(module_name, var, value, _PREFIX.get(var.split("_")[0]) or _PREFIX.get(var))


def _walk(module_name, path, value, notebook):
    if isinstance(value, dict):
        for k, v in value.items():
            key = k if isinstance(k, str) else "/".join(map(str, k))
            nb = k if isinstance(k, str) and re.match(r"\d\d_", k) else (
                k[0] if isinstance(k, tuple) and k and isinstance(k[0], str) and re.match(r"\d\d_", k[0]) else notebook)
            if isinstance(v, str) and isinstance(k, str) and not re.match(r"\d\d_", k):
                yield module_name, f"{path}/{key}", nb, k, v
            elif isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, str) for x in v):
                yield module_name, f"{path}/{key}", nb, v[0], v[1]
            else:
                yield from _walk(module_name, f"{path}/{key}", v, nb)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=Path)
    args = ap.parse_args()
    rows = []
    for notebook in NOTEBOOKS:
        nb = notebooks.load(notebook)
        master = ROOT / "autograder" / "masters" / f"{notebook}.py"
        path = variants_path(ROOT, notebook)
        table = _table(args.tables, notebook)
        for kind, variants in (("mutant", load_mutants(path)), ("alternative", load_alternatives(path))):
            for v in variants:
                v = resolve(v, master)
                refused, reason = _refused(nb, v.target)
                static, why = _static(notebook, refused, v.source)
                if kind == "alternative":
                    rules = "n (keeps full marks)"
                elif v.name in table:
                    rules = _by_rules(table[v.name], reason)
                else:
                    rules = "not run"
                rows.append((notebook, kind, v.target, v.name, rules, static, why))
    for module_name, entry, notebook, target, code in _forgery_entries():
        if notebook is None:
            candidates = [n for n in NOTEBOOKS if any(e.name == target for e in notebooks.load(n).exercises)]
            notebook = candidates[0] if len(candidates) == 1 else None
        if notebook is None or not notebooks.marked(notebook):
            continue
        refused, _ = _refused(notebooks.load(notebook), target)
        static, why = _static(notebook, refused, code)
        rows.append((notebook, f"forgery ({module_name[13:]})", target, entry, "see HOW.md", static, why))
    print("| notebook | kind | exercise | entry | caught by today's rules | static check | what it saw |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(x).replace("|", "\\|").replace("\n", " ") for x in r) + " |")
    alts = [r for r in rows if r[1] == "alternative"]
    muts = [r for r in rows if r[1] == "mutant"]
    ruled = [r for r in muts if r[4].startswith("y")]
    print(f"\n{len(muts)} mutants, {len(alts)} alternatives, {len(rows) - len(muts) - len(alts)} forgery attempts")
    print(f"mutants measured caught by today's rules: {len(ruled)}; of them static y: "
          f"{sum(r[5] == 'y' for r in ruled)}, flagged: {sum(r[5] == 'flagged' for r in ruled)}, "
          f"missed: {[r[3] for r in ruled if r[5] not in ('y', 'flagged')]}")
    print(f"static y on mutants (any): {sum(r[5] == 'y' for r in muts)}; flagged: "
          f"{sum(r[5] == 'flagged' for r in muts)}")
    print(f"false positives on alternatives (static y): {[(r[0], r[3], r[6]) for r in alts if r[5] == 'y']}")
    print(f"alternatives flagged: {[(r[0], r[3]) for r in alts if r[5] == 'flagged']}")


if __name__ == "__main__":
    main()
