""""How" decided by the judge from the answers' text (lmcourse.grading.how.refused_answers), where code in the
kernel cannot switch it off: every valid answer in the catalogues keeps its exercise, an answer that names what
its exercise refuses loses it, however the kernel's own rules were switched off first (the red team's routes)."""

from __future__ import annotations

import nbformat
import pytest

from lmcourse.authoring.course import perfect_submission
from lmcourse.authoring.mutants import load_alternatives, resolve, variants_path
from lmcourse.grading.how import refused_answers
from lmcourse.marking import notebooks
from lmcourse.marking.grader import judge_notebook
from tests.conftest import ROOT

MARKED = [n for n in sorted(p.stem for p in (ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py"))
          if notebooks.marked(n)]


def _perfect(notebook: str) -> nbformat.NotebookNode:
    source = nbformat.read(ROOT / "autograder" / "source" / notebook / f"{notebook}.ipynb", as_version=4)
    release = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    return perfect_submission(release, source)


def _answer(nb, grade_id: str):
    return next(c for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("grade_id") == grade_id)


@pytest.mark.parametrize("notebook", MARKED)
def test_the_solution_and_every_alternative_keep_their_exercises(notebook):
    nb = _perfect(notebook)
    assert refused_answers(nb, notebook) == {}
    master = ROOT / "autograder" / "masters" / f"{notebook}.py"
    for alternative in load_alternatives(variants_path(ROOT, notebook)):
        alternative = resolve(alternative, master)
        nb = _perfect(notebook)
        _answer(nb, alternative.target).source = alternative.source
        assert alternative.target not in refused_answers(nb, notebook), alternative.name


# the fifth red team's answers: each first switched the kernel's rules off by a spelling the scan did not name
# (a traceback's frame, gc's objects, a property on the Exercise class, Rules.__enter__ patched, torch's mode
# stack popped inside the call), then called torch's softmax; the text of the answer names it all the same
ROUTES_ANSWERS = {
    "plain": "def softmax(x, dim=-1):\n    return torch.softmax(x, dim=dim)\n",
    "functional alias": "import torch.nn.functional as _F\ndef softmax(x, dim=-1):\n    return _F.softmax(x, dim)\n",
    "through a helper called with it": "def softmax(x, dim=-1):\n    return _bare(torch.softmax, x, dim)\n",
    "tensor method": "def softmax(x, dim=-1):\n    return x.softmax(dim)\n",
}


@pytest.mark.parametrize("route", sorted(ROUTES_ANSWERS))
def test_an_answer_naming_a_refused_function_loses_its_exercise_in_the_judge(route, monkeypatch):
    from lmcourse.marking import grader
    from lmcourse.marking.judge import Outcome

    nb = _perfect("03_attention")
    _answer(nb, "softmax").source = ROUTES_ANSWERS[route]
    assert set(refused_answers(nb, "03_attention")) == {"softmax"}
    # every record passes, as a kernel whose rules were switched off records it: the text decides
    monkeypatch.setattr(grader, "judge_cell",
                        lambda notebook, exercise, cell, deadline=None: Outcome(exercise, True, 3))
    outcomes = judge_notebook(nb, "03_attention")
    assert not outcomes["softmax_tests"].passed
    assert "torch" in outcomes["softmax_tests"].text() and "refuses" in outcomes["softmax_tests"].text()
    assert all(o.passed for gid, o in outcomes.items() if gid != "softmax_tests")
    assert _answer(nb, "softmax_tests").outputs[-1]["output_type"] == "error"


def test_a_helper_in_another_cell_is_followed_but_another_exercises_answer_is_not():
    """Refused code moved into a helper of the student's own cell runs inside the graded call all the same; the
    attention answer calls the student's softmax answer, which is judged on its own (one mistake costs once)."""
    nb = _perfect("03_attention")
    _answer(nb, "softmax").source = "def softmax(x, dim=-1):\n    return _h(x, dim)\n"
    setup = next(i for i, c in enumerate(nb.cells) if (c.metadata.get("nbgrader") or {}).get("grade_id") == "setup")
    nb.cells.insert(setup + 1, nbformat.v4.new_code_cell("_z = 1\n\ndef _h(x, d):\n    return _g(x, d)\n\n\n"
                                                          "def _g(x, d):\n    return torch.softmax(x, d)\n"))
    assert set(refused_answers(nb, "03_attention")) == {"softmax"}
    # a helper hidden in another exercise's answer cell (a question's) is followed too
    nb = _perfect("03_attention")
    _answer(nb, "softmax").source = "def softmax(x, dim=-1):\n    return _h(x, dim)\n"
    _answer(nb, "q_mask").source += "\n\ndef _h(x, d):\n    return torch.softmax(x, d)\n"
    assert set(refused_answers(nb, "03_attention")) == {"softmax"}
    nb = _perfect("03_attention")
    _answer(nb, "softmax").source = ROUTES_ANSWERS["plain"]
    assert "scaled_dot_product_attention" not in refused_answers(nb, "03_attention")


def test_an_attribute_of_ones_own_that_holds_the_word_is_not_a_tensor_method():
    nb = _perfect("03_attention")
    cell = _answer(nb, "softmax")
    cell.source = cell.source + "\n\nclass _Own:\n    softmax_scale = 2.0\n\n_unused = _Own().softmax_scale\n"
    assert refused_answers(nb, "03_attention") == {}
