"""One mistake costs once in 03 (issue 8, item 2): each catalogued bug fails its own test cell and
no other. The tests of ``scaled_dot_product_attention`` and ``MultiHeadAttention`` run with the
reference versions of the earlier graded functions (``lmcourse.grading.attention_stand_ins``, put in
place by ``lmcourse.checks.substitute``), so a plain ``torch.softmax`` or a float64 softmax costs the
softmax points only. (tests/test_cost_once.py checks the same for 01; the two lists can merge.)"""

import pytest

from lmcourse.grading.mutants import AUTOGRADE_ENV, Alternative, NotebookSession, load_mutants

from .conftest import ROOT

COSTS_ONCE = ["03_attention"]


@pytest.mark.parametrize("name", COSTS_ONCE)
def test_each_mutant_fails_its_own_test_cell_only(name):
    mutants = load_mutants(ROOT / "autograder" / "mutants" / f"{name}.py")
    session = NotebookSession(ROOT / "autograder" / "source" / name / f"{name}.ipynb",
                              ROOT / "notebooks" / f"{name}.ipynb")
    report = {}
    with session.started(AUTOGRADE_ENV):
        for m in mutants:
            # every test cell from the target's on, visible and hidden parts together
            failed = [gid for gid, _ in session.try_alternative(Alternative(m.name, m.target, m.source))]
            report[m.name] = (m.target, failed)
    lines = [f"{'ok  ' if failed == [target + '_tests'] else 'FAIL'} {target}: {mutant} -> fails {failed}"
             for mutant, (target, failed) in report.items()]
    print("\n" + "\n".join(lines))
    costly = [n for n, (target, failed) in report.items() if failed != [target + "_tests"]]
    assert not costly, f"{name}: mistakes that do not cost exactly their own test cell: {costly}\n" + "\n".join(lines)
