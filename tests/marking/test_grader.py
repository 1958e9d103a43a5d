"""lmcourse.marking.grader: records read back from a run notebook and judged in the grader's process."""

import nbformat
import pytest

import lmcourse.reference.ngram as ref
from lmcourse.marking.grader import judge_notebook
from lmcourse.marking.judge import observe
from lmcourse.marking.kernel import MIME, hidden_cases
from lmcourse.marking.notebooks import load
from lmcourse.marking.spec import Names

NB = load("01_ngram")


def record(exercise="pad_sentence", fn=None, notebook="01_ngram"):
    ns = dict(vars(ref))
    if fn is not None:
        ns[exercise] = fn
    ex = NB.exercise(exercise)
    cases = ex.cases + hidden_cases(NB, exercise)
    return {"notebook": notebook, "exercise": exercise, "cases": [observe(c.call, Names(ns)) for c in cases]}


def notebook_with(*outputs, gid="pad_sentence_tests"):
    cell = nbformat.v4.new_code_cell('tests.check("pad_sentence")')
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": gid, "points": 1, "solution": False, "locked": True}
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="recorded\n"), *outputs]
    return nbformat.v4.new_notebook(cells=[cell])


def rec(payload):
    return nbformat.v4.new_output("display_data", data={MIME: payload, "text/plain": "(record)"})


def error(ename, evalue="..."):
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


def awaiting():
    return error("AwaitingJudge", "pad_sentence: this cell's points are decided by the course's judge")


def judged(nb):
    out = judge_notebook(nb, "01_ngram")["pad_sentence_tests"]
    return out, nb.cells[0].outputs


def test_the_reference_recorded_passes_and_the_record_leaves_the_outputs():
    out, outputs = judged(notebook_with(rec(record())))
    assert out.passed and out.checked == 6
    assert [o.output_type for o in outputs] == ["stream", "stream"]
    assert "all 6 checks pass" in outputs[-1].text and not any(MIME in o.get("data", {}) for o in outputs)


def test_the_error_a_graded_test_raises_after_its_record_is_replaced_by_the_verdict():
    """A graded test cell scores 0 under any nbgrader (tests.grade raises AwaitingJudge after the record);
    the course's judge reads the record and puts its verdict in the error's place."""
    from nbgrader.utils import determine_grade

    nb = notebook_with(rec(record()), awaiting())
    assert determine_grade(nb.cells[0])[0] == 0       # what nbgrader gives it with no judge
    out, outputs = judged(nb)
    assert out.passed and [o.output_type for o in outputs] == ["stream", "stream"]
    assert determine_grade(nb.cells[0])[0] == 1
    out, outputs = judged(notebook_with(rec(record(fn=lambda words, n: 42)), awaiting()))
    assert not out.passed and "AwaitingJudge" not in outputs[-1].evalue and outputs[-1].ename == "CheckFailed"


def test_an_undefined_answer_is_reported_unanswered_not_unrun():
    """The grader ran every cell: a name still undefined is an exercise not answered (or whose cell
    raised), not a cell to run first, which is what the same NameError says at home."""
    ns = {k: v for k, v in vars(ref).items() if k != "pad_sentence"}
    ex = NB.exercise("pad_sentence")
    trees = [observe(c.call, Names(ns)) for c in ex.cases + hidden_cases(NB, "pad_sentence")]
    out, _ = judged(notebook_with(rec({"notebook": "01_ngram", "exercise": "pad_sentence", "cases": trees})))
    assert not out.passed and "pad_sentence is not defined after every cell of the notebook ran" in out.message
    assert "not answered yet" in out.message and "Run the cell" not in out.message


def test_a_wrong_answer_becomes_an_error_output_nbgrader_scores_zero():
    from nbgrader.utils import determine_grade

    nb = notebook_with(rec(record(fn=lambda words, n: ["<s>"] * n + list(words) + ["</s>"])))
    out, outputs = judged(nb)
    assert not out.passed and not out.hidden
    assert outputs[-1].output_type == "error" and "n-1 = 2 start tokens" in outputs[-1].evalue
    assert determine_grade(nb.cells[0])[0] == 0


def test_a_slip_only_hidden_cases_see_is_named_as_hidden():
    def pad(words, n):
        return ["<s>"] * (n - 1) + list(words) + ["</s>"] if words else ["</s>"]
    out, _ = judged(notebook_with(rec(record(fn=pad))))
    assert not out.passed and out.hidden and "pad_sentence([], 5)" in out.message


@pytest.mark.parametrize("outputs, says", [
    ((), "wrote no record"),
    ((rec(record()), rec(record())), "2 records"),
    ((rec(record(notebook="02_rnn")),), "not this exercise's"),
    ((rec(record(exercise="count_ngrams")),), "not this exercise's"),
    ((rec({**record(), "cases": [{"code": "x"}]}),), "damaged"),
    ((rec({**record(), "cases": record()["cases"][:2]}),), "did not run to its end"),
    ((nbformat.v4.new_output("error", ename="NameError", evalue="name 'tests' is not defined", traceback=[]),),
     "raised NameError"),
    ((awaiting(),), "raised AwaitingJudge"),                        # the judge's cue, but no record before it
    ((awaiting(), rec(record())), "raised AwaitingJudge"),          # the record must come first
    ((rec(record()), awaiting(), awaiting()), "raised AwaitingJudge"),
    ((rec(record()), error("MissingHiddenCases")), "raised MissingHiddenCases"),
    ((rec(record()), error("AwaitingJudges")), "raised AwaitingJudges"),   # that error exactly
])
def test_every_broken_record_fails_with_a_reason(outputs, says):
    out, outs = judged(notebook_with(*outputs))
    assert not out.passed and says in out.message and outs[-1].output_type == "error"


def test_a_notebook_not_graded_from_records_is_left_alone():
    nb = notebook_with()
    assert judge_notebook(nb, "07_decoding") == {} and len(nb.cells[0].outputs) == 1


def test_a_cell_of_an_exercise_not_yet_recorded_is_left_alone():
    nb = notebook_with(gid="some_other_tests")
    assert judge_notebook(nb, "01_ngram") == {}


def test_a_notebook_s_records_share_one_reading_budget(monkeypatch):
    """Each record has its own allowance and the notebook one for all of them: a submission whose records are
    slow to read costs the batch's one finisher thread one allowance, not one per test cell. An honest
    record is read long before either."""
    import lmcourse.marking.grader as grader

    monkeypatch.setattr(grader, "NOTEBOOK_SECONDS", -1.0)     # the notebook's budget already spent
    out, outputs = judged(notebook_with(rec(record()), awaiting()))
    assert not out.passed and "too long" in out.text()
    monkeypatch.setattr(grader, "NOTEBOOK_SECONDS", 90.0)
    out, _ = judged(notebook_with(rec(record()), awaiting()))
    assert out.passed
