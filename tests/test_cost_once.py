"""One mistake costs once: a catalogued slip in one graded function fails its own test cell and
no other, because the tests of a later function run it with the reference versions of the
earlier graded functions it calls (and build their inputs with the reference too)."""

import pytest

from lmcourse.grading.mutants import AUTOGRADE_ENV, Alternative, NotebookSession, load_mutants

from .conftest import ROOT

# notebooks whose later tests substitute the reference for earlier graded functions
COST_ONCE = ["01_ngram"]


@pytest.mark.parametrize("name", COST_ONCE)
def test_a_mistake_costs_once(name):
    mutants = load_mutants(ROOT / "autograder" / "mutants" / f"{name}.py")
    session = NotebookSession(ROOT / "autograder" / "source" / name / f"{name}.ipynb",
                              ROOT / "notebooks" / f"{name}.ipynb")
    lines, costs_more = [], []
    with session.started(AUTOGRADE_ENV):
        for m in mutants:
            # the whole test cell of every graded function from the target on, visible and hidden
            failed = [gid for gid, _ in session.try_alternative(Alternative(m.name, m.target, m.source))]
            own = f"{m.target}_tests"
            others = [gid for gid in failed if gid != own]
            lines.append(f"{'MORE' if others else 'once'}  {m.target}: {m.name}  -> fails {failed}")
            if others:
                costs_more.append(m.name)
            assert own in failed, f"{name}: mutant {m.name!r} does not fail its own test cell {own}: {failed}"
    print(f"\nOne mistake costs once in {name}: {len(mutants) - len(costs_more)} of {len(mutants)}\n"
          + "\n".join(lines))
    assert not costs_more, f"{name}: mistakes that also cost the points of other exercises: {costs_more}\n" + \
        "\n".join(lines)
