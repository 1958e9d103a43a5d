"""The dual of the mutants: valid solutions written another way keep every point. A false
failure costs a student as much as a missed bug; each notebook ships at least 8 of them.
They are graded by the real `nbgrader autograde` in test_grading_proofs.py (every alternative,
in as few whole submissions as possible); when a round loses points, that test replays the
round's alternatives one by one in a kernel to name the culprit."""

import pytest

from lmcourse.authoring.mutants import load_alternatives, variants_path
from tests.conftest import NOTEBOOKS, ROOT

CATALOGUES = {n: variants_path(ROOT, n) for n in NOTEBOOKS}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_catalogue_is_there(name):
    assert CATALOGUES[name].exists(), f"{name}: no catalogue of alternatives at {CATALOGUES[name]}"
    alternatives = load_alternatives(CATALOGUES[name])
    assert len(alternatives) >= 8, f"{name}: the catalogue needs at least 8 alternatives, has {len(alternatives)}"
    names = [a.name for a in alternatives]
    assert len(set(names)) == len(names), f"{name}: two alternatives share a name: {sorted(names)}"
