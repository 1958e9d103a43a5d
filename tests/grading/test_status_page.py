"""The page a student gets for a notebook that was not run: its reason reads as a sentence."""

from __future__ import annotations

import html
import re
import types

from lmcourse.grading.feedback import write_status_page
from lmcourse.grading.result import WRONG_ASSIGNMENT_HINT, Result


def test_the_reason_is_a_sentence_with_one_closing_mark(tmp_path):
    res = Result("s1", "08_bpe", "wrong-assignment", max_score=10, auto_max=10,
                 detail=f"none of this assignment's graded cells is in the notebook — {WRONG_ASSIGNMENT_HINT}")
    write_status_page(types.SimpleNamespace(assignment="08_bpe"), tmp_path, res)
    page = html.unescape((tmp_path / "feedback" / "s1.html").read_text())
    why = re.search(r"</b>\. (.*?)</p>", page).group(1)
    assert why[0].isupper() and why.startswith("None of this assignment's"), why
    assert not re.search(r"[.?!]\.", page), page          # never "submitted?."
    assert why.endswith("submitted?"), why
