"""The README's timings are one table, lmcourse.authoring.timings's output; its prose states none."""

import re

from lmcourse.authoring.timings import MEASURED, table
from tests.conftest import ROOT

FIGURE = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:s|sec|seconds?|min|minutes?|h|hours?)\b")


def _prose(text: str) -> str:
    """The README without its code blocks (commands and sample output) and without the table."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return text.replace(table(), "")


def test_the_readme_table_is_the_measured_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert table() in readme, \
        "README.md's 'How long things take' differs from lmcourse/authoring/timings.py: paste " \
        "`python -m lmcourse.authoring.timings` there"


def test_the_readme_prose_states_no_other_timing():
    found = FIGURE.findall(_prose((ROOT / "README.md").read_text(encoding="utf-8")))
    assert not found, f"README.md states timings outside its table: {found} (add a row to " \
        "lmcourse/authoring/timings.py instead)"


def test_the_rule_sees_a_timing():
    assert FIGURE.findall("it took 3 min 56 s, then 12 s") == ["3 min", "56 s", "12 s"]
    assert not FIGURE.findall("at 4,000 characters and 16 GB")


def test_every_row_is_complete():
    for t in MEASURED:
        assert all((t.what, t.command, t.figure, t.machine, t.date)), t
