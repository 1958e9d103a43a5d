"""The case helpers every notebook's marking module shares (marking/tensors, marking/results) and the
one builder of an exercise's rules (marking/rules.exercise_rules)."""

import math

import pytest
import torch
from torch import nn

from lmcourse.checks import CheckFailed
from lmcourse.marking.results import fields
from lmcourse.marking.rules import Later, course, exercise_rules
from lmcourse.marking.tensors import equal, grads, named_grads, param_grads, unreached


def test_fields_compares_by_comparison_or_exactly_with_a_hint():
    compare = fields(("a", equal("a")), ("b", "the hint"))
    assert compare({"a": 1, "b": [2]}, {"a": 1, "b": [2]}) is None
    assert compare({"a": 1, "b": [3]}, {"a": 1, "b": [2]}).startswith("b: got [3], expected [2]")
    assert compare({"a": 1, "b": [3]}, {"a": 1, "b": [2]}).endswith(" — the hint")
    assert compare({"a": 2, "b": [2]}, {"a": 1, "b": [2]}).startswith("a: got 2")
    assert "expected a dict" in compare({"a": 1}, {"a": 1, "b": [2]})


def test_grads_by_name_against_the_reference():
    want = {"w": torch.ones(2, dtype=torch.float64), "b": torch.zeros(1, dtype=torch.float64)}
    compare = grads("the gradient of {}", "a hint", missing="nothing reached {}")
    assert compare(dict(want), want) is None
    assert compare({**want, "b": None}, want) == "nothing reached b"
    assert "the gradient of w" in compare({**want, "w": want["w"] + 1}, want)
    assert compare({"w": want["w"]}, want).startswith("the parameters: got ['w']")


def test_gradients_collected_and_the_parameters_none_reached():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    m[1](torch.ones(1, 2)).sum().backward()
    assert unreached(m) == ["0.bias", "0.weight"]
    assert set(param_grads(m)) == {"0.weight", "0.bias", "1.weight", "1.bias"} and param_grads(m)["0.bias"] is None
    m[0].bias.grad = torch.full((2,), math.nan)
    m[0].weight.grad = torch.zeros(2, 2)
    assert unreached(m) == []
    assert unreached(m, finite=True) == ["0.bias"]
    assert unreached(m, nonzero=True) == ["0.weight"]
    x = torch.ones(2, requires_grad=True)
    assert named_grads(("x", "y"), (x, None))["y"] is None


def test_course_paths_resolve_when_the_case_starts():
    assert course("lmcourse.ngram:ContextTable") == (__import__("lmcourse.ngram", fromlist=["x"]).ContextTable,)
    assert course("torch.nn:Module.__init__") == (nn.Module.__init__,)
    assert course("lmcourse.no_such_module") == ()      # withheld or absent: nothing to refuse
    with pytest.raises(AttributeError):                 # a misspelt name is not silently nothing
        course("lmcourse.ngram:NoSuchName")


def test_exercise_rules_refuse_what_they_name():
    def mine(x):
        return x + 1

    made = []
    rules = exercise_rules("write it yourself", Later(lambda: made.append(1) or (mine,)), torch=("softmax",))
    assert made == []                       # nothing found before a case starts
    with pytest.raises(CheckFailed, match="write it yourself"), rules():
        mine(1)
    with pytest.raises(CheckFailed, match="write it yourself"), rules():
        torch.softmax(torch.ones(3), 0)
    with rules():
        torch.ones(3).exp()
    assert made == [1, 1, 1]


def test_extra_targets_are_refused_with_their_own_reason():
    def other():
        return 0

    with pytest.raises(CheckFailed, match="not that one"), exercise_rules("x", extra=(((other,), "not that one"),))():
        other()
