"""lmcourse release --through NN: no code that answers NN or a later notebook, and NN's visible
tests still run, from recorded expected values."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from lmcourse.authoring.release import ReleaseError, release
from lmcourse.marking.notebooks import TESTS, load
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def rel01(tmp_path_factory):
    out = tmp_path_factory.mktemp("through") / "course"
    notes: list[str] = []
    written = release(ROOT, out, through="01_ngram", notes=notes)
    assert [p.name for p in written] == ["01_ngram.ipynb"] and "left out" in notes[0]
    return out


def _definitions(source: str) -> set[tuple[str, tuple[str, ...]]]:
    """Each function's name and parameters, and each class's name (parameters: ())."""
    return {(n.name, tuple(a.arg for a in n.args.args) if isinstance(n, ast.FunctionDef) else ())
            for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def _answers(notebook: str) -> set[tuple[str, tuple[str, ...]]]:
    """The definitions in the notebook's reference module that answer one of its exercises."""
    spec = load(notebook)
    path = ROOT / Path(*spec.reference.split(".")).with_suffix(".py")
    return {d for d in _definitions(path.read_text(encoding="utf-8")) if d[0] in {ex.name for ex in spec.exercises}}


def test_no_code_that_answers_01_ships(rel01):
    """No function of the released package has the name and parameters of one of 01's answers
    (08's and 09's decoding have a sample_next and a generate of their own, over tensors)."""
    answers = _answers("01_ngram")
    assert len(answers) >= 10
    defined = [f"{path.relative_to(rel01)}: {sig[0]}" for path in (rel01 / "lmcourse").rglob("*.py")
               for sig in _definitions(path.read_text(encoding="utf-8")) & answers]
    assert not defined, defined
    assert not (rel01 / "lmcourse" / "reference" / "ngram.py").exists()
    assert not [p.name for p in (rel01 / "lmcourse" / "reference").glob("*.py") if p.name != "__init__.py"]


@pytest.mark.parametrize("through", sorted(n for n in TESTS if n != "01_ngram"))
def test_a_release_through_a_notebook_holds_no_answer_of_it_or_later(through, tmp_path):
    """What each notebook from ``through`` on withholds while graded (its answers, and given code
    that does their work) is not in the release, nor any definition named and shaped as one of
    those notebooks' answers; the earlier notebooks' answers ship (given code)."""
    out = tmp_path / "course"
    notes: list[str] = []
    release(ROOT, out, through=through, notes=notes)
    later = [n for n in sorted(TESTS) if n >= through]
    for name in later:
        for module in load(name).withheld:
            rel = Path(*module.split("."))
            assert not (out / rel.with_suffix(".py")).exists() and not (out / rel / "__init__.py").exists(), module
    answers = set().union(*(_answers(n) for n in later))
    defined = [f"{path.relative_to(out)}: {d[0]}{d[1]}" for path in (out / "lmcourse").rglob("*.py")
               for d in _definitions(path.read_text(encoding="utf-8")) & answers]
    assert not defined, defined
    released = {p.stem for p in (out / "notebooks").glob("*.ipynb")}
    assert released == {n for n in TESTS if n <= through} and (out / "lmcourse" / "marking" / "expected").is_dir()
    assert f"through {through}:" in notes[0]


STUDENT = '''
import inspect, sys, types
from lmcourse.checks import CheckFailed
from lmcourse.marking import Exam
source = sys.stdin.read()
ns = {}
exec(compile("\\n" + source, "<a student's answers>", "exec"), ns)
for name in ("pad_sentence", "count_ngrams", "mle_prob", "next_word_distribution", "sentence_logprob",
             "perplexity", "add_k_prob", "continuation_counts", "kneser_ney_prob", "sample_next", "generate"):
    Exam("01_ngram", ns).check(name)
ns["pad_sentence"] = lambda words, n: ["<s>"] * n + list(words) + ["</s>"]
try:
    Exam("01_ngram", ns).check("pad_sentence")
except CheckFailed as exc:
    print("CAUGHT", exc)
try:
    import lmcourse.reference.ngram
except ImportError:
    print("NO REFERENCE")
'''


def test_the_visible_tests_run_from_the_recorded_values(rel01):
    answers = (ROOT / "lmcourse" / "reference" / "ngram.py").read_text(encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", STUDENT], cwd=rel01, input=answers, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "the visible checks pass" in proc.stdout
    assert "CAUGHT pad_sentence(['cows', 'eat', 'grass'], 3)" in proc.stdout and "n-1 = 2 start tokens" in proc.stdout
    assert "NO REFERENCE" in proc.stdout


def test_a_notebook_not_graded_from_records_is_refused(tmp_path, monkeypatch):
    from lmcourse.marking.notebooks import TESTS

    unmarked = "05_gpt"  # every notebook is graded from records: one taken out of the registry stands for a new one
    monkeypatch.delitem(TESTS, unmarked)
    with pytest.raises(ReleaseError, match="graded from records"):
        release(ROOT, tmp_path / "c", through=unmarked)
    assert not (tmp_path / "c").exists()
