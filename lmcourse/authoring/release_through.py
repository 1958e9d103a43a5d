"""A progressive release: ``lmcourse release OUT --through NN``.

A student working on notebook NN gets the notebooks up to NN and the course code of the notebooks
before it (what NN uses as given code), never code that answers NN or a later notebook: every module
such a notebook's graded kernel withholds (:attr:`lmcourse.marking.spec.Notebook.withheld`: its
answers in ``lmcourse/reference/``, and the given code that does the same work, such as 05's
``lmcourse.nn.gpt``) is removed from the released package, and so is every module that cannot be
imported without one of them (04's ``lmcourse.nn.block`` needs 03's ``lmcourse.nn.attention``). A
module the released notebooks import cannot go that way: the release is refused, saying which. NN's
visible tests judge against expected values recorded for their inputs
(``lmcourse/marking/expected/NN.json``, read by :func:`lmcourse.marking.kernel.recorded_expected`),
and the notebooks' own cells that show the course's version of an answer skip themselves where it is
absent (:func:`lmcourse.runtime.given`).

Only a notebook graded from records (:mod:`lmcourse.marking.notebooks`) can be released this way:
its visible tests need nothing but the recorded values; ``--through`` refuses any other.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["ThroughError", "narrow"]

# what a release's own commands and notebooks' setup need whatever the notebook: never cascaded out
_ALWAYS_KEPT = ("lmcourse", "lmcourse.commands", "lmcourse.marking", "lmcourse.runtime")
_IMPORT = re.compile(r"^\s*(?:import|from)\s+(lmcourse(?:\.\w+)*)", re.M)


class ThroughError(ValueError):
    """``--through`` asked for what cannot be released that way; the message says why."""


def _number(name: str) -> int:
    return int(name[:2])


def _module_files(package_root: Path, module: str) -> list[Path]:
    rel = Path(*module.split(".")[1:])
    return [p for p in (package_root / rel.with_suffix(".py"), package_root / rel / "__init__.py") if p.is_file()]


def _notebook_imports(out: Path) -> set[str]:
    """The ``lmcourse`` modules the released notebooks' cells import."""
    found: set[str] = set()
    for nb in (out / "notebooks").glob("*.ipynb"):
        for cell in json.loads(nb.read_text(encoding="utf-8")).get("cells", []):
            if cell.get("cell_type") == "code":
                source = "".join(cell.get("source", ""))
                found |= set(_IMPORT.findall(source))
    return found


def _kept_anyway(module: str, needed: set[str]) -> bool:
    from lmcourse.marking.notebooks import TESTS

    if module in TESTS.values() or module in {f"{m}_hidden" for m in TESTS.values()}:
        return module in needed   # a later notebook's visible tests go where they cannot import; its own stay
    return any(module == m or module.startswith(m + ".") for m in _ALWAYS_KEPT if m != "lmcourse") \
        or module == "lmcourse" or module in needed


def narrow(out: Path, notebooks: list[str], through: str) -> str:
    """In the release at ``out``: keep the notebooks up to ``through``; remove every module that
    ``through`` or a later notebook withholds while graded, and every module that needs one of them;
    write ``through``'s recorded expected values; check that every module left still imports.
    Returns a line for the release's message."""
    from lmcourse.marking import kernel
    from lmcourse.marking.notebooks import TESTS, load

    if through not in notebooks:
        raise ThroughError(f"no notebook {through!r} (the notebooks: {', '.join(notebooks)})")
    if through not in TESTS:
        raise ThroughError(f"{through} still checks its visible tests against its reference in the kernel, so "
                           f"its release must ship it; --through works for the notebooks graded from records: "
                           f"{', '.join(sorted(TESTS))}")
    package = out / "lmcourse"
    gone: set[str] = set()
    for name in notebooks:
        if _number(name) < _number(through):
            continue
        if _number(name) > _number(through):
            (out / "notebooks" / f"{name}.ipynb").unlink(missing_ok=True)
        modules = load(name).withheld if name in TESTS else (f"lmcourse.reference.{name[3:]}",)
        gone |= _remove(package, modules)
    # a reference module of no earlier notebook (one whose notebook is not built yet) goes too
    earlier = {n[3:] for n in notebooks if _number(n) < _number(through)}
    for f in sorted((package / "reference").glob("*.py")):
        if f.name != "__init__.py" and f.stem not in earlier:
            gone |= _remove(package, (f"lmcourse.reference.{f.stem}",))
    kept_tests = {TESTS[n] for n in notebooks if n in TESTS and _number(n) <= _number(through)}
    gone |= _cascade(out, gone, _notebook_imports(out) | kept_tests)
    expected = package / "marking" / kernel.EXPECTED_DIR
    expected.mkdir(exist_ok=True)
    (expected / f"{through}.json").write_text(json.dumps(kernel.expected_table(through), sort_keys=True),
                                              encoding="utf-8")
    return (f"through {through}: {len(gone)} module(s) left out, the code that answers {through} and later "
            f"notebooks and what needs it ({', '.join(sorted(gone))})")


def _remove(package: Path, modules) -> set[str]:
    removed = set()
    for module in modules:
        for f in _module_files(package, module):
            f.unlink()
            removed.add(module)
    return removed


def _cascade(out: Path, gone: set[str], needed: set[str]) -> set[str]:
    """Remove the modules that fail to import because a removed one is missing, until none does;
    refuse when one the release needs would go, or a module fails for another reason."""
    more: set[str] = set()
    while True:
        failures = _import_failures(out)
        if not failures:
            return more
        cascade = {m for m, (missing, _) in failures.items() if missing in gone | more}
        kept = sorted(m for m in cascade if _kept_anyway(m, needed))
        if kept:
            raise ThroughError("the narrowed release would lose a module its notebooks or commands import, "
                               "because it needs code that answers a later exercise: "
                               + "; ".join(f"{m} needs {failures[m][0]}" for m in kept))
        other = {m: why for m, (_, why) in failures.items() if m not in cascade}
        if other:
            raise ThroughError("the narrowed release does not import:\n  "
                               + "\n  ".join(f"{m}: {why}" for m, why in sorted(other.items())))
        for module in cascade:
            more |= _remove(out / "lmcourse", (module,))


def _import_failures(out: Path) -> dict[str, tuple[str | None, str]]:
    """Every module of the released package that does not import, with the module it missed and the
    error, in a fresh interpreter that sees the release only."""
    code = ("import importlib, json, pkgutil, sys, lmcourse\n"
            "bad = {}\n"
            "for m in pkgutil.walk_packages(lmcourse.__path__, 'lmcourse.', onerror=lambda name: None):\n"
            "    try:\n"
            "        importlib.import_module(m.name)\n"
            "    except ImportError as e:\n"
            "        bad[m.name] = [e.name, str(e)]\n"
            "print(json.dumps(bad))\n")
    # the release's folder first on the path (cwd), as a student's `pip install -e .` there would put it
    code = f"import lmcourse; assert lmcourse.__file__.startswith({str(out.resolve())!r}), lmcourse.__file__\n" + code
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=out.resolve(), capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise ThroughError("the narrowed release does not import:\n  " + proc.stderr[-800:])
    return {m: (missing, why) for m, (missing, why) in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
