"""lmcourse.marking.judge and spec: the verdict and its message, from decoded plain data."""

import math

from lmcourse.marking.judge import Outcome, expected_values, judge_case, judge_exercise
from lmcourse.marking.plain import NotPlain, Raised
from lmcourse.marking.spec import Case, Exercise, Names, close, dist_close, exact, when


def case(**kw):
    return Case("f(x)", lambda names: names.f(1), **kw)


def test_a_right_value_passes_and_a_wrong_one_names_both_values_and_the_hint():
    c = case(hint="add one")
    assert judge_case(c, [1, 2], [1, 2]) is None
    msg = judge_case(c, [1, 3], [1, 2])
    assert msg == "f(x): got [1, 3], expected [1, 2] — add one"


def test_exact_tells_kinds_apart_but_not_mapping_types():
    assert "a tuple" in exact()((1, 2), [1, 2])
    assert exact()({"a": 1}, {"a": 1}) is None
    from collections import Counter
    assert exact()(Counter(a=1), {"a": 1}) is None


def test_close_compares_numbers_inside_structures_and_names_the_place():
    cmp = close(rel=1e-6)
    assert cmp({"p": [0.1, 0.2]}, {"p": [0.1 + 1e-9, 0.2]}) is None
    assert "at 'q'" in cmp({"p": 1.0, "q": 0.5}, {"p": 1.0, "q": 0.6})
    assert "missing" in cmp({"p": 1.0}, {"p": 1.0, "q": 0.0})
    assert cmp(-math.inf, -math.inf) is None
    assert cmp(float("nan"), 1.0) is not None
    assert cmp("1.0", 1.0) is not None          # a string is not a number
    assert dist_close(0.01)({"a": 0.505}, {"a": 0.5}) is None


def test_the_first_diagnosis_that_fires_names_the_mistake_and_a_broken_one_says_nothing():
    c = case(diagnoses=(lambda got, want: 1 / 0, when(lambda got, want: got < want, "too small"),
                        when(lambda got, want: True, "never reached")))
    assert judge_case(c, 1, 2) == "f(x): too small"


def test_errors_are_judged_with_their_hints_and_the_stub_says_unanswered():
    c = case(errors=(("domain", "p = 0: return -math.inf"),))
    assert judge_case(c, Raised("ValueError", "math domain error"), 0.0).endswith("return -math.inf")
    assert "not answered yet" in judge_case(c, Raised("NotImplementedError", ""), 0.0)
    assert judge_case(c, Raised("KeyError", "x"), 0.0) == "f(x) raised KeyError: x"


def test_an_expected_error_must_be_raised_and_not_plain_data_scores_nothing():
    assert judge_case(case(), Raised("ValueError", "x"), Raised("ValueError", "y")) is None
    assert "should raise ValueError" in judge_case(case(), 3, Raised("ValueError", "y"))
    assert "does not read" in judge_case(case(), NotPlain("a Liar (a subclass of list)"), [1])


def test_an_exercise_fails_at_its_first_failing_case_and_says_whether_it_was_hidden():
    cases = (case(), case(), case())
    ex = Exercise("f", cases[:1])
    assert judge_exercise(ex, cases, [1, 1, 1], [1, 1, 1], 1) == Outcome("f", True, 3)
    out = judge_exercise(ex, cases, [1, 1, 2], [1, 1, 1], 1)
    assert not out.passed and out.hidden and out.checked == 2
    assert out.text().startswith("f: a hidden test failed: f(x): got 2")
    assert not judge_exercise(ex, cases, [1], [1, 1, 1], 1).passed      # a record cut short


def test_expected_values_run_the_same_call_on_the_reference():
    want = expected_values("lmcourse.reference.ngram",
                           (Case("pad", lambda names: names.pad_sentence(["a"], 2)),
                            Case("boom", lambda names: names.pad_sentence(None, 2))))
    assert want[0] == ["<s>", "a", "</s>"] and type(want[1]) is Raised


def test_names_say_what_is_missing():
    import pytest
    with pytest.raises(NameError, match="'g' is not defined"):
        _ = Names({}).g


def test_multiple_choice_checks_the_form_and_never_names_the_right_letter():
    from lmcourse.marking.spec import multiple_choice

    form, right = multiple_choice("answer_q1", "ABC")
    assert form(" b ") is None and right(" b ", "B") is None
    assert 'one letter, "A", "B" or "C"' in form("AB") and "a str" in form(2)
    wrong = right("A", "C")
    assert "not the right choice" in wrong and "C" not in wrong.replace("choice", "")
