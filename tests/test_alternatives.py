"""The dual of the mutants: valid solutions written another way keep every point. A false
failure costs a student as much as a missed bug; each notebook ships at least 8 of them.
(They are also graded by the real `nbgrader autograde` in test_grading_proofs.py.)"""

import pytest

from lmcourse.grading.mutants import load_alternatives, run_alternatives

from .conftest import NOTEBOOKS, ROOT

CATALOGUES = {n: ROOT / "autograder" / "alternatives" / f"{n}.py" for n in NOTEBOOKS}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_catalogue_is_there(name):
    assert CATALOGUES[name].exists(), f"{name}: no catalogue of alternatives at {CATALOGUES[name]}"
    alternatives = load_alternatives(CATALOGUES[name])
    assert len(alternatives) >= 8, f"{name}: the catalogue needs at least 8 alternatives, has {len(alternatives)}"


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if CATALOGUES[n].exists()])
def test_alternatives_keep_full_marks(name):
    results = run_alternatives(ROOT, name)
    lines = [f"{'ok  ' if not f else 'FAIL'} {alt}" + "".join(f"\n      {gid}: {msg[:300]}" for gid, msg in f)
             for alt, f in results.items()]
    print(f"\nAlternatives for {name}: {len(results)}\n" + "\n".join(lines))
    failed = [alt for alt, f in results.items() if f]
    assert not failed, f"{name}: valid solutions that lose points: {failed}\n" + "\n".join(lines)
