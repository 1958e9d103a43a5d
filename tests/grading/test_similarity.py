"""`lmcourse grade similarity`: planted copies are found, honest answers are not flagged, the
grades.csv column changes no score, bad input stops cleanly. Files only: no kernel, no grading.

Each class is built from the student release (notebooks/NN.ipynb) of 01_ngram and 03_attention:

- planted copies of the solution's answer cells (autograder/source/NN): variables renamed (an AST
  rewrite, which also reformats), functions reordered (each cell's statements reversed and the
  cells' texts rotated, so a function sits in another exercise's cell), comments replaced, and
  all three at once; the reference code's own source pasted in; ``exec(inspect.getsource(...))``
  (and ``getattr(inspect, "getsource")``), which carries no copied text at all; a copy of a
  classmate's answers, renamed;
- honest students made of the alternatives catalogue (ALTERNATIVES in autograder/variants/NN.py): student i
  answers with the i-th alternative of each exercise that has one, and leaves the others as
  released, so no two share an answer.

The figures behind the defaults (THRESHOLD 0.5 over MIN_MATCH 60 normalised characters, K 25),
measured when this was written: the planted copies of the solution score 0.88 to 1.00 against
it (ast.unparse's reformatting costs a little: 03's renamed MultiHeadAttention keeps 0.81 of its
cell), the pasted reference 1.00, the renamed classmate 0.86 to 0.89. The
honest students score at most 0.06 against 01's solution and 0.39 against 03's; between honest
students at most 0.31. One alternative taken alone scores above the threshold: 03's "forward that
validates its input first", 0.60 against the solution (175 of 293 characters), because its forward
is the solution's retyped with one check added (the catalogue's author edited the solution); in a
student who wrote anything else it is diluted (that student scores 0.39). The short answers that
have one sensible form (`return [BOS] * (n - 1) + list(words) + [EOS]`, `Q @ K.transpose(-2, -1) /
math.sqrt(...)`) match in runs of 25 to 35 characters: under MIN_MATCH, so never flagged alone.
"""

from __future__ import annotations

import ast
import copy
import csv
import html
import inspect
import io
import os
import re
import types
from pathlib import Path

import nbformat
import pytest

from lmcourse.authoring.mutants import load_alternatives, variants_path
from lmcourse.commands.main import main
from lmcourse.grading import similarity, similarity_sources
from lmcourse.grading.reports import write_csv
from lmcourse.grading.result import Result
from tests.conftest import NOTEBOOKS as EVERY_NOTEBOOK
from tests.conftest import ROOT

NOTEBOOKS = ("01_ngram", "03_attention")
PLANTED = ("renamed", "reordered", "comments", "disguised")       # copies of the solution
# 03's alternative that is the solution's forward retyped with one line added (see the docstring)
NEAR_COPIES = {"forward that validates its input first (reads values: an if on a tensor)"}


# ---------------------------------------------------------------- planting

def _answers(nb) -> dict[str, str]:
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")}


def renamed(code: str) -> str:
    """``code`` with every parameter and assigned variable renamed (``self`` and the graded
    functions' and classes' own names kept), as ``ast.unparse`` writes it: no comments, its own
    spacing and quotes."""
    tree = ast.parse(code)
    names = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    new = {n: f"my_{i}" for i, n in enumerate(sorted(names - {"self"}))}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            node.id = new.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            node.arg = new.get(node.arg, node.arg)
            return node

    return ast.unparse(Rename().visit(tree))


def reordered(cells: dict[str, str]) -> dict[str, str]:
    """Each cell's top-level statements reversed, and the texts moved one cell on (the first
    exercise's code in the last cell)."""
    flipped = []
    for code in cells.values():
        lines = code.split("\n")
        body = ast.parse(code).body
        parts = ["\n".join(lines[n.lineno - 1 - len(getattr(n, "decorator_list", [])):n.end_lineno]) for n in body]
        flipped.append("\n\n\n".join(reversed(parts)))
    names = list(cells)
    return {name: flipped[(i + 1) % len(flipped)] for i, name in enumerate(names)}


def recommented(code: str) -> str:
    """Comments dropped and others written: a note above each line (one with markup, which the
    report must show as text)."""
    out = []
    for i, line in enumerate(ast.unparse(ast.parse(code)).split("\n")):
        indent = line[:len(line) - len(line.lstrip())]
        out += [f"{indent}# step {i}: what this line does, in my words </pre><script>alert(1)</script>", line]
    return "\n".join(out)


def solution_cells(name: str) -> dict[str, str]:
    return similarity_sources.solution(ROOT, name).cells


def honest_students(name: str) -> dict[str, dict[str, str]]:
    """Student i: the i-th alternative of each exercise that has one (no two share an answer)."""
    by: dict[str, list] = {}
    for alt in load_alternatives(variants_path(ROOT, name)):
        by.setdefault(alt.target, []).append(alt.source)
    return {f"honest{i}": {t: srcs[i] for t, srcs in by.items() if i < len(srcs)}
            for i in range(max(len(v) for v in by.values()))}


def reference_paste(name: str) -> dict[str, str]:
    """Each answer cell replaced by the source of the course code that answers it."""
    if name == "01_ngram":
        from lmcourse.reference import ngram as ref
    else:
        from lmcourse.reference import attention as ref
    out = {}
    for gid in solution_cells(name):
        fn = getattr(ref, gid, None)
        if callable(fn):
            out[gid] = inspect.getsource(fn)
    assert len(out) >= 4, f"{name}: too few reference functions to paste ({sorted(out)})"
    return out


def runtime_reads(name: str) -> dict[str, str]:
    """Answers that load the reference's source while they run: no copied text in them."""
    mod = "lmcourse.reference.ngram" if name == "01_ngram" else "lmcourse.reference.attention"
    first, second = list(solution_cells(name))[:2]
    return {first: f"import inspect\nimport {mod} as _r\nexec(inspect.getsource(_r.{first}))  # the course's own",
            second: f"import inspect\nimport {mod} as _r\nexec(getattr(inspect, 'getsource')(_r.{second}))"}


def planted_class(name: str) -> dict[str, dict[str, str]]:
    sol = solution_cells(name)
    honest = honest_students(name)
    return {**honest,
            "renamed": {g: renamed(c) for g, c in sol.items()},
            "reordered": reordered(sol),
            "comments": {g: recommented(c) for g, c in sol.items()},
            "disguised": {g: recommented(renamed(c)) for g, c in reordered(sol).items()},
            "pasted_reference": reference_paste(name),
            "runtime_source": runtime_reads(name),
            "copycat": {g: renamed(c) for g, c in honest["honest0"].items()}}


def notebook(name: str, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The student release of ``name`` with these answer cells written in."""
    nb = copy.deepcopy(nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4))
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nb


def write_class(folder: Path, name: str, students: dict[str, dict[str, str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for student, answers in students.items():
        nbformat.write(notebook(name, answers), folder / f"{student}.ipynb")
    return folder


# ---------------------------------------------------------------- one class per notebook

@pytest.fixture(scope="module", params=NOTEBOOKS)
def judged(request, tmp_path_factory):
    name = request.param
    subs = write_class(tmp_path_factory.mktemp(f"class{name[:2]}"), name, planted_class(name))
    outcome = similarity.assess(name, subs, ROOT)
    return name, subs, outcome, {v.student: v for v in outcome.verdicts}


def test_planted_copies_of_the_solution_are_flagged(judged):
    name, _, _, by = judged
    for student in PLANTED:
        v = by[student]
        assert v.best is not None and v.best.other.kind == "solution", f"{name} {student}: {v.column()}"
        assert v.best.score >= 0.85 and v.is_flagged, f"{name} {student}: {v.column()}"
        assert any(m.other.kind == "solution" for m in v.flagged)
        # the other copies of the solution match it too: listed as echoes of the one source, not as pairs
        assert {m.other.label for m in v.echoes} >= set(PLANTED) - {student}, f"{name} {student}: {v.reasons()}"
        assert not [m for m in v.flagged if m.other.kind == "student"], f"{name} {student}: {v.reasons()}"


def test_pasted_reference_source_is_flagged_as_the_reference(judged):
    name, _, _, by = judged
    v = by["pasted_reference"]
    refs = [m for m in v.flagged if m.other.kind == "reference"]
    assert refs and max(m.score for m in refs) >= 0.95, f"{name}: {v.column()} {[m.what() for m in v.flagged]}"


def test_source_read_at_run_time_is_flagged_without_copied_text(judged):
    name, _, _, by = judged
    v = by["runtime_source"]
    assert not v.flagged, f"{name}: no copied text, yet {[m.what() for m in v.flagged]}"
    assert len(v.runtime) == 2, v.runtime         # exec(inspect.getsource(..)) and getattr(inspect, "getsource")
    assert "reference source loaded at run time" in v.column() and v.is_flagged


def test_a_classmates_copy_flags_the_pair(judged):
    name, _, _, by = judged
    assert [m.other.label for m in by["copycat"].flagged] == ["honest0"], by["copycat"].column()
    assert by["copycat"].best.score >= 0.8
    assert "student copycat" in by["honest0"].column()     # who copied whom is for the TA to find out


def test_honest_alternatives_are_not_flagged(judged):
    name, _, outcome, by = judged
    honest = [s for s in by if s.startswith("honest") and s != "honest0"]   # honest0 was copied
    assert len(honest) >= 2
    for s in honest:
        v = by[s]
        assert not v.is_flagged, f"{name} {s}: {v.column()}"
        assert v.best is None or v.best.score < outcome.threshold


def test_each_alternative_alone_is_below_the_threshold_but_the_known_near_copy(judged):
    """One alternative as a student's only answer: the sternest case (nothing dilutes it)."""
    name, _, _, _ = judged
    release = similarity_sources.release_of(ROOT, name)
    boiler = frozenset().union(*(similarity.fingerprint(b).hashes for b in similarity_sources.boilerplate(release)))
    sol = similarity_sources.solution(ROOT, name)
    sol_hashes = similarity.fingerprint(sol.text()).hashes
    over = {}
    for alt in load_alternatives(variants_path(ROOT, name)):
        doc = similarity_sources.Document(alt.name, "student", {alt.target: alt.source})
        cells = {alt.target: similarity.without(similarity.fingerprint(alt.source), boiler)}
        m = similarity.compare(doc, cells, sol, sol_hashes)
        if m.flagged(similarity.THRESHOLD, similarity.MIN_MATCH):
            over[alt.name] = round(m.score, 2)
    assert set(over) <= NEAR_COPIES, f"{name}: honest alternatives flagged: {over}"


def test_the_solution_itself_reads_no_source_at_run_time():
    for name in NOTEBOOKS:
        for gid, code in solution_cells(name).items():
            assert similarity_sources.runtime_source(code) == [], f"{name} {gid}"


def test_the_catalogues_run_time_copies_are_seen_and_no_alternative_is():
    """The mutants catalogues hold the course's own gaming attempts (a reference's source exec'd
    shifted one line, a fresh copy of a reference module loaded from its file): each is seen. No
    alternative of any notebook reads source."""
    import re

    from lmcourse.authoring.mutants import load_mutants

    attacks = [m for name in EVERY_NOTEBOOK for m in load_mutants(variants_path(ROOT, name))
               if re.search(r"copy of|fresh copy|getsource", m.name)]
    assert len(attacks) >= 10
    missed = [m.name for m in attacks if not similarity_sources.runtime_source(m.source)]
    assert not missed, missed
    for name in EVERY_NOTEBOOK:
        for alt in load_alternatives(variants_path(ROOT, name)):
            assert similarity_sources.runtime_source(alt.source) == [], f"{name} {alt.name}"


def test_runtime_source_ignores_comments_and_sees_files():
    assert similarity_sources.runtime_source("x = 1  # not inspect.getsource(f)") == []
    assert similarity_sources.runtime_source("src = open('lmcourse/ngram.py').read()")
    assert similarity_sources.runtime_source("import linecache\nlines = linecache.getlines(p)")
    assert similarity_sources.runtime_source("def f(:\n  return inspect.getsource(g)")   # does not parse
    assert similarity_sources.runtime_source("from importlib import resources\nt = resources.files('lmcourse')")
    assert similarity_sources.runtime_source("def get_data():\n    return load()") == []   # a helper's name


def test_an_answer_that_imports_a_tokenizer_library_is_flagged():
    """08 red team, finding E: an answer cell that imports tiktoken's compiled core (or Hugging Face
    tokenizers, sentencepiece), at the top of the cell or by name, is flagged for a person to look;
    a name inside another package or a variable called `tokenizers` is not."""
    seen = similarity_sources.runtime_source
    for code in ("import tiktoken._tiktoken as _tk\n\ndef encode(text, merges):\n    return _tk.CoreBPE",
                 "from tokenizers import Tokenizer, models", "import os, sentencepiece as spm",
                 "core = __import__('tiktoken._tiktoken', fromlist=['x'])",
                 "import importlib\nlib = importlib.import_module(\"tokenizers\")"):
        hits = seen(code)
        assert hits and all(similarity_sources.TOKENIZER_IMPORTED in h for h in hits), (code, hits)
    assert seen("import tiktoken._tiktoken as _tk")[0] == (
        "line 1: a tokenizer library imported: import tiktoken._tiktoken as _tk")
    for code in ("from lmcourse import tokenizers", "tokenizers = []\ntokenizers.append(1)",
                 "s = 'tiktoken and tokenizers agree'  # import tiktoken"):
        assert seen(code) == [], code


def test_the_verdict_names_what_was_loaded_at_run_time():
    def verdict(*hits):
        return similarity.Verdict("s", None, [], {"encode": list(hits)}, own=0)

    tok = "line 1: " + similarity_sources.TOKENIZER_IMPORTED + ": import tiktoken"
    assert verdict(tok).reasons() == [similarity_sources.TOKENIZER_IMPORTED]
    assert verdict("line 2: inspect.getsource").column() == "0.00 nothing of their own; " \
                                                             "reference source loaded at run time"
    assert verdict(tok, "line 2: inspect.getsource").runtime_kind() == \
        "reference source loaded at run time; " + similarity_sources.TOKENIZER_IMPORTED


# ---------------------------------------------------------------- the command and its files

def test_command_writes_the_report(judged, tmp_path, capsys):
    name, subs, _, _ = judged
    out = tmp_path / "report"
    assert main(["grade", "similarity", name, str(subs), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "renamed:" in printed and "flagged" in printed
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((out / "similarity.csv").read_text()))}
    assert rows["renamed"]["kind"] == "solution" and rows["renamed"]["flagged"] == "yes"
    assert rows["honest1"]["flagged"] == "no"
    assert "reference source loaded at run time" in rows["runtime_source"]["why"]
    page = (out / "similarity.html").read_text()
    assert "renamed &harr; solution" in page and "hl-a" in page and "hl-b" in page
    assert "<script" not in page and "&lt;script&gt;alert(1)" in page      # the student's text, escaped


def _graded_out(folder: Path, name: str, students: dict[str, dict[str, str]]) -> Path:
    """A stand-in for `lmcourse grade`'s OUT: grades.csv written by the grader's own writer (rows
    in an order that is not sorted) and the autograded copies."""
    src = nbformat.read(ROOT / "autograder" / "source" / name / f"{name}.ipynb", as_version=4)
    cells = [(c.metadata["nbgrader"]["grade_id"], c.cell_type, float(c.metadata["nbgrader"].get("points", 0)))
             for c in src.cells if c.metadata.get("nbgrader", {}).get("grade")]
    tpl = types.SimpleNamespace(grade_cells=cells)
    order = sorted(students, reverse=True) + ["absent"]
    results = [Result(s, name, "graded" if s != "absent" else "missing-notebook", score=float(i), max_score=40,
                      auto_max=38, flags=["renamed"] if i == 1 else [], detail="a, \"quoted\" detail",
                      tests={g: float(i % 2) for g, kind, _ in cells if kind == "code"})
               for i, s in enumerate(order)]
    folder.mkdir(parents=True)
    write_csv(results, tpl, folder / "grades.csv")
    write_class(folder / "autograded", name, students)
    return folder


def test_graded_out_gets_a_column_and_no_score_changes(tmp_path):
    name = "01_ngram"
    students = {k: v for k, v in planted_class(name).items() if k in ("renamed", "honest1", "honest2")}
    out = _graded_out(tmp_path / "graded", name, students)
    before = (out / "grades.csv").read_text()
    assert main(["grade", "similarity", name, str(out)]) == 0
    old = list(csv.reader(io.StringIO(before)))
    new = list(csv.reader(io.StringIO((out / "grades.csv").read_text())))
    assert new[0] == [*old[0], "similarity"]
    assert [r[:-1] for r in new] == old                      # every cell and the row order as they were
    col = {r[0]: r[-1] for r in new[1:]}
    assert col["renamed"].startswith(("0.9", "1.0")) and col["renamed"].endswith("solution (flagged)")
    assert col["absent"] == "" and "(flagged)" not in col["honest1"]
    for text in col.values():                                # never a bare number (an export reads numbers)
        with pytest.raises(ValueError):
            float(text)
    assert (out / "similarity.html").is_file() and (out / "similarity.csv").is_file()
    assert main(["grade", "similarity", name, str(out)]) == 0                # again: the column is refreshed
    again = list(csv.reader(io.StringIO((out / "grades.csv").read_text())))
    assert again == new


def test_a_crash_while_writing_leaves_grades_csv_whole(tmp_path, monkeypatch):
    name = "01_ngram"
    out = _graded_out(tmp_path / "graded", name, {"renamed": planted_class(name)["renamed"]})
    before = (out / "grades.csv").read_bytes()
    real = os.replace

    def crash(src, dst):
        if Path(dst).name == "grades.csv":
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", crash)
    assert main(["grade", "similarity", name, str(out)]) == 2
    assert (out / "grades.csv").read_bytes() == before
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("case", ["no folder", "no submissions", "only a corrupt notebook", "unknown assignment",
                                  "graded folder without copies"])
def test_bad_input_stops_with_a_message_and_writes_nothing(case, tmp_path, capsys):
    name = "01_ngram"
    src = tmp_path / "in"
    if case != "no folder":
        src.mkdir()
    if case == "only a corrupt notebook":
        (src / "alice.ipynb").write_text('{"cells": [')
    if case == "unknown assignment":
        name = "99_nothing"
        write_class(src, "01_ngram", {"alice": {}})
    if case == "graded folder without copies":
        (src / "grades.csv").write_text("student,score\r\nalice,3\r\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    out = tmp_path / "report"
    assert main(["grade", "similarity", name, str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lmcourse grade similarity: ") and "Traceback" not in err
    assert not out.exists()
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_one_corrupt_notebook_does_not_stop_the_class(tmp_path, capsys):
    name = "01_ngram"
    planted = planted_class(name)
    src = write_class(tmp_path / "in", name, {k: planted[k] for k in ("renamed", "honest1")})
    (src / "broken.ipynb").write_text("not json")
    assert main(["grade", "similarity", name, str(src), "--out", str(tmp_path / "report")]) == 0
    said = capsys.readouterr()
    assert "not compared: broken: invalid-notebook" in said.err
    # the summary's count names whom it leaves out, and why
    assert re.search(r"2 students compared .*; 1 not compared: broken \(invalid-notebook", said.out), said.out
    page = html.unescape((tmp_path / "report" / "similarity.html").read_text())
    assert re.search(r"2 students compared .* 1 not compared: broken \(invalid-notebook", page, re.S), page[:2000]
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((tmp_path / "report" / "similarity.csv").read_text()))}
    assert rows["broken"]["why"].startswith("not compared: invalid-notebook") and rows["renamed"]["flagged"] == "yes"


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py")))
def test_every_notebook_compares(name, tmp_path):
    """The untouched release is nothing of a student's own; the solution's text is a copy; the
    reference files are the course's (not torch's, which some REFERENCE tuples also name)."""
    write_class(tmp_path, name, {"blank": {}, "copy": solution_cells(name)})
    outcome = similarity.assess(name, tmp_path, ROOT)
    by = {v.student: v for v in outcome.verdicts}
    assert by["blank"].best is None and not by["blank"].is_flagged
    assert by["copy"].best.other.kind == "solution" and by["copy"].best.score == pytest.approx(1.0)
    refs = [d.label for d in outcome.documents.values() if d.kind == "reference"]
    assert refs and all(r.startswith("lmcourse/") for r in refs), refs


def test_an_lms_zip_is_read_and_left_nowhere(tmp_path):
    """A zip goes through the grader's own safe extraction, into a folder removed afterwards."""
    import zipfile

    planted = planted_class("01_ngram")
    folder = write_class(tmp_path / "class", "01_ngram", {k: planted[k] for k in ("renamed", "honest1")})
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for p in folder.iterdir():
            z.write(p, p.name)
    out = tmp_path / "report"
    assert main(["grade", "similarity", "01_ngram", str(archive), "--out", str(out)]) == 0
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((out / "similarity.csv").read_text()))}
    assert rows["renamed"]["flagged"] == "yes" and rows["honest1"]["flagged"] == "no"
    assert sorted(p.name for p in out.iterdir()) == ["similarity.csv", "similarity.html"]


@pytest.mark.parametrize("option", [["--threshold", "2"], ["--threshold", "0"], ["--min-match", "-3"]])
def test_options_out_of_range_are_refused(option, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["grade", "similarity", "01_ngram", str(tmp_path), "--out", str(tmp_path / "r"), *option])
    assert stop.value.code == 2 and option[0] in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_regrade_keeps_the_similarity_column_for_cached_students(tmp_path, capsys):
    """`lmcourse grade` rewrites grades.csv: the column `grade similarity` added stays for students
    served from the cache, and a regraded student's (stale) value is dropped with a line saying how
    to fill it again."""
    name = "01_ngram"
    students = {k: v for k, v in planted_class(name).items() if k in ("renamed", "honest1")}
    out = _graded_out(tmp_path / "graded", name, students)
    assert main(["grade", "similarity", name, str(out)]) == 0
    with_column = (out / "grades.csv").read_text()
    tpl = types.SimpleNamespace(grade_cells=[(h, "code", 1.0) for h in next(csv.reader(io.StringIO(with_column)))
                                             if h.endswith("_tests")])
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(with_column))}
    assert rows["renamed"]["similarity"].endswith("(flagged)")

    def results(cached: bool) -> list[Result]:
        return [Result(s, name, r["status"], cached=cached or s != "renamed") for s, r in rows.items()]

    assert write_csv(results(cached=True), tpl, out / "grades.csv") == []
    kept = {r["student"]: r["similarity"] for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    assert kept == {s: r["similarity"] for s, r in rows.items()}
    said = write_csv(results(cached=False), tpl, out / "grades.csv")
    fresh = {r["student"]: r["similarity"] for r in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    assert fresh["renamed"] == "" and fresh["honest1"] == rows["honest1"]["similarity"]
    assert len(said) == 1 and "renamed" in said[0] and f"lmcourse grade similarity {name} {out}" in said[0], said
