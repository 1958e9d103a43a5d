"""Which notebooks are graded from records, and where each one's tests live."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from .spec import Notebook

__all__ = ["TESTS", "load", "marked"]

# a notebook's tests: the module of lmcourse.marking that defines ``NOTEBOOK = Notebook("NN_topic", ...)``
# (visible cases; the hidden ones are in the module it names). Found by reading the files, not by
# importing them (torch and the cases load only for the notebook asked for), so a new notebook's
# marking module is all it takes.
_SPEC = re.compile(r'^NOTEBOOK = Notebook\(\s*"(\d\d_\w+)"', re.M)


def _discover() -> dict[str, str]:
    found = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        name = _SPEC.search(path.read_text(encoding="utf-8"))
        if name:
            found[name.group(1)] = f"{__package__}.{path.stem}"
    return found


TESTS = _discover()


def marked(notebook: str) -> bool:
    """True when the notebook's test cells record and the grader judges (:mod:`lmcourse.marking`)."""
    return notebook in TESTS


def load(notebook: str) -> Notebook:
    if notebook not in TESTS:
        raise KeyError(f"notebook {notebook!r} is not graded from records (known: {', '.join(TESTS)})")
    # not its hidden cases: a graded kernel gets each exercise's with its own test cell (.hidden_source)
    return importlib.import_module(TESTS[notebook]).NOTEBOOK
