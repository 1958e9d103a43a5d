"""lmcourse.marking.kernel: what a test cell does at home and under the autograder."""

import importlib
import inspect
import sys

import pytest

import lmcourse.reference.ngram as ref
from lmcourse.checks import CheckFailed
from lmcourse.marking import kernel
from lmcourse.marking.hidden_source import hidden_source
from lmcourse.marking.kernel import AwaitingJudge, Exam, MissingHiddenCases
from lmcourse.marking.notebooks import load

NB = load("01_ngram")


def namespace(**answers):
    """A student's namespace whose answers are right: the reference's text compiled anew (a copy, not
    the reference's own functions, which the visible checks refuse)."""
    ns: dict = {}
    exec(compile("\n" + inspect.getsource(ref), "<a student's notebook>", "exec"), ns)   # other lines: other code
    ns.update(answers)
    return ns


@pytest.fixture
def published(monkeypatch):
    records = []
    monkeypatch.setattr(kernel, "_publish", records.append)
    return records


def test_at_home_a_visible_slip_raises_with_its_hint(monkeypatch, capsys):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    exam = Exam("01_ngram", namespace(pad_sentence=lambda words, n: ["<s>"] * n + list(words) + ["</s>"]))
    with pytest.raises(CheckFailed, match="n-1 = 2 start tokens"):
        exam.check("pad_sentence")
    Exam("01_ngram", namespace()).check("pad_sentence")
    assert "the visible checks pass" in capsys.readouterr().out


def test_at_home_a_later_exercise_runs_with_the_stand_in_of_an_earlier_one(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    broken_pad = lambda words, n: list(words)  # noqa: E731
    Exam("01_ngram", namespace(pad_sentence=broken_pad)).check("count_ngrams")   # one mistake costs once


def test_at_home_calling_the_exercises_own_reference_is_refused(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    with pytest.raises(CheckFailed, match="not available when the notebook is graded"):
        Exam("01_ngram", namespace(pad_sentence=lambda w, n: ref.pad_sentence(w, n))).check("pad_sentence")


def test_under_the_autograder_check_does_nothing_and_grade_records_every_case(monkeypatch, published):
    hidden = hidden_source(NB, "pad_sentence")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    try:
        exam = Exam("01_ngram", namespace(pad_sentence=lambda words, n: 42))
        exam.check("pad_sentence")            # no verdict in the kernel
        assert published == []
        with pytest.raises(AwaitingJudge, match="nbgrader without the course's config .* scores this cell 0"):
            exam.grade("pad_sentence", hidden=hidden)
        (record,) = published                 # the record first, then the error no judge but the course's reads
        assert record["exercise"] == "pad_sentence" and len(record["cases"]) == 6
        assert record["cases"][0] == 42       # what came back, as plain data; no expected value
    finally:
        _unwithhold()


def test_a_graded_kernel_takes_hidden_cases_from_its_test_cell_and_imports_no_hidden_module(monkeypatch, published):
    hidden = hidden_source(NB, "pad_sentence")
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    try:
        exam = Exam("01_ngram", namespace())
        assert "lmcourse.marking.ngram_hidden" not in sys.modules
        for module in ("lmcourse.marking.ngram_hidden", "lmcourse.marking.gpt_hidden"):
            with pytest.raises(ImportError, match="not available while notebook 01_ngram is graded"):
                importlib.import_module(module)
        with pytest.raises(MissingHiddenCases, match="carries no hidden cases"):
            exam.grade("pad_sentence")        # a test cell the build did not write: an error, not zero hidden cases
        assert published == []
        with pytest.raises(AwaitingJudge):
            exam.grade("pad_sentence", hidden=hidden)
        assert len(published[0]["cases"]) == 6
    finally:
        _unwithhold()


def test_at_home_grade_judges_the_hidden_cases_from_the_module_or_the_text(monkeypatch, capsys):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    exam = Exam("01_ngram", namespace())
    exam.grade("pad_sentence")
    exam.grade("pad_sentence", hidden=hidden_source(NB, "pad_sentence"))
    assert capsys.readouterr().out.count("the hidden tests pass") == 2
    wrong = Exam("01_ngram", namespace(pad_sentence=lambda words, n: ["<s>"] * (n - 1) + list(words) + ["</s>"]
                                       if words else ["</s>"]))
    with pytest.raises(CheckFailed, match=r"pad_sentence\(\[\], 5\)"):
        wrong.grade("pad_sentence")


def test_under_the_autograder_the_reference_cannot_be_imported(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    try:
        Exam("01_ngram", {})
        assert "lmcourse.reference.ngram" not in sys.modules
        with pytest.raises(ImportError, match="not available while notebook 01_ngram is graded"):
            importlib.import_module("lmcourse.reference.ngram")
        import lmcourse.ngram
        assert lmcourse.ngram.ContextTable      # the library code the notebook is given stays
    finally:
        _unwithhold()


def _unwithhold():
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Withheld"]
    importlib.import_module("lmcourse.reference.ngram")


def test_without_the_reference_the_visible_checks_use_the_recorded_expected_values(monkeypatch, tmp_path):
    """A student's release for notebook NN ships the visible cases' expected values, not NN's reference."""
    import json

    from lmcourse.marking import kernel as k

    table = k.expected_table("01_ngram")
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setattr(k, "_importable", lambda module: False)
    monkeypatch.setattr(k, "recorded_expected", lambda notebook: json.loads(json.dumps(table)))
    right = namespace()
    Exam("01_ngram", right).check("count_ngrams")
    with pytest.raises(CheckFailed, match="repeated within one sentence"):
        Exam("01_ngram", namespace(count_ngrams=lambda s, n: right["count_ngrams"](s, n) if s[0][0] != "la" else {}))\
            .check("count_ngrams")


def test_the_sandbox_runner_keeps_records_by_the_kernels_mime_type():
    from lmcourse.grading import sandbox_runner

    assert sandbox_runner.RECORD_MIME == kernel.MIME


def test_torchs_late_import_is_made_before_any_test_and_only_where_torch_is(monkeypatch):
    """torch imports torch._dynamo the first time an optimizer or a Python kernel of the 'meta' device
    runs; inside a test that import runs under the rules' watch, at about three times its cost. The exam
    makes it when it is set up, and a notebook without torch gets no torch."""
    from types import SimpleNamespace

    import torch

    asked: list[str] = []
    monkeypatch.setattr(kernel, "importlib", SimpleNamespace(import_module=asked.append))
    monkeypatch.delitem(sys.modules, "torch")
    kernel._import_what_torch_imports_late()
    assert asked == []
    monkeypatch.setitem(sys.modules, "torch", torch)
    kernel._import_what_torch_imports_late()
    assert asked == ["torch._dynamo"]

    made = []
    monkeypatch.setattr(kernel, "_import_what_torch_imports_late", lambda: made.append(True))
    Exam("01_ngram", namespace())
    assert made == [True]


def test_at_home_an_unanswered_exercise_shows_its_message_without_the_courses_frames(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)

    def pad_sentence(words, n):
        raise NotImplementedError("Exercise 1: write pad_sentence here, then run the test cell below")

    with pytest.raises(NotImplementedError) as caught:
        Exam("01_ngram", namespace(pad_sentence=pad_sentence)).check("pad_sentence")
    lines = caught.value._render_traceback_()
    assert "NotImplementedError" in lines[0] and "write pad_sentence here" in lines[0]
    assert not any("lmcourse/marking" in line or "_home_error" in line for line in lines), lines
