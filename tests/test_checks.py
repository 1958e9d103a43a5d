import math

import numpy as np
import pytest

from lmcourse import checks
from lmcourse.checks import CheckFailed


def test_distribution_message_names_the_sum_and_the_hint():
    with pytest.raises(CheckFailed, match=r"sum to 0.8333, not 1 — normalise"):
        checks.check_distribution({"a": 0.5, "b": 1 / 3}, "p", hint="normalise")


def test_close_handles_infinities_and_nan():
    checks.check_close(math.inf, math.inf, "x")
    with pytest.raises(CheckFailed, match="is nan"):
        checks.check_close(float("nan"), 1.0, "x")
    with pytest.raises(CheckFailed, match="off by"):
        checks.check_close(1.1, 1.0, "x")


def test_equal_points_at_the_first_difference():
    with pytest.raises(CheckFailed, match="differs at position 1"):
        checks.check_equal([1, 2, 3], [1, 5, 3], "xs")
    with pytest.raises(CheckFailed, match="missing 1 key"):
        checks.check_equal({"a": 1}, {"a": 1, "b": 2}, "d")


def test_checks_do_not_depend_on_numpy_comparisons(monkeypatch):
    monkeypatch.setattr(np, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(np, "isclose", lambda *a, **k: True)
    with pytest.raises(CheckFailed):
        checks.check_close(2.0, 1.0, "x")


def test_forbid_blocks_and_restores():
    class Ref:
        @staticmethod
        def f():
            return 1

    with checks.forbid(Ref, "f"):
        with pytest.raises(CheckFailed, match="your code called"):
            Ref.f()
    assert Ref.f() == 1
