"""Comparisons of a case's plain results that need no torch, shared by every notebook's tests (01's
import no torch): a dict of results key by key (:func:`fields`) and one value of an exact type
(:func:`equal`). Each returns ``None`` when the student's value is right, else a sentence."""

from __future__ import annotations

from typing import Any

from .show import show
from .spec import Compare, exact

__all__ = ["equal", "fields"]


def fields(*checks: tuple[str, Compare | str | None]) -> Compare:
    """A dict of results, each key compared in order: by its own comparison, or, given a hint (a string or
    ``None``) in its place, exactly (:func:`spec.exact`), the key leading the message and the hint after it."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not dict or set(got) != set(want):
            return f"got {show(got)}, expected a dict with {sorted(want)}"
        for key, check in checks:
            if callable(check):
                diff = check(got[key], want[key])
            else:
                diff = exact()(got[key], want[key])
                diff = diff and f"{key}: {diff}" + (f" — {check}" if check else "")
            if diff:
                return diff
        return None
    return compare


def equal(what: str, hint: str | None = None) -> Compare:
    """One value equal to the reference's and of its exact type; ``what`` leads the message, ``hint`` ends it."""
    def compare(got: Any, want: Any) -> str | None:
        if got == want and type(got) is type(want):
            return None
        return f"{what}: got {show(got)}, expected {show(want)}" + (f" — {hint}" if hint else "")
    return compare
