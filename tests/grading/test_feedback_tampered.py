"""A submission flagged `helpers-tampered` loses the points of the tests concerned only; its
feedback page says why those tests scored 0 and that a TA can give the points back."""

from __future__ import annotations

import html
import re

from lmcourse.authoring.course import perfect_submission
from lmcourse.grading.feedback import TAMPERED_FLAG, write_feedback
from lmcourse.grading.result import Result
from lmcourse.grading.template import Template


def _page(tmp_path, flags: list[str]) -> str:
    tpl = Template("08_bpe", tmp_path / "tpl")
    res = Result("s1", "08_bpe", "graded", max_score=tpl.max_score, auto_max=tpl.max_score, flags=list(flags),
                 tests={gid: 0.0 for gid, kind, _ in tpl.grade_cells if kind == "code"})
    write_feedback(perfect_submission(tpl.release, tpl.source), tpl, tmp_path, res)
    assert res.feedback, res.flags
    return re.sub(r"<[^>]+>", "", html.unescape((tmp_path / res.feedback).read_text(encoding="utf-8")))


def test_a_tampered_page_says_why_tests_scored_0_and_how_points_come_back(tmp_path):
    text = _page(tmp_path / "a", [TAMPERED_FLAG])
    assert "scored 0 whatever their output says" in text and "other tests keep theirs" in text
    assert "TA gives the points back" in text


def test_an_honest_page_has_no_such_note(tmp_path):
    assert "whatever their output says" not in _page(tmp_path / "b", [])


def test_the_grader_flags_by_the_name_the_page_looks_for():
    from lmcourse.grading import grade

    assert f'"{TAMPERED_FLAG}"' in open(grade.__file__, encoding="utf-8").read()
