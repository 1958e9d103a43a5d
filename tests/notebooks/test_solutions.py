"""Every solution notebook runs top to bottom in `cpu` (what a laptop user gets), for the notebooks
cheap enough to run that way in CI. In `tiny` (what autograding uses) every one runs in its grading
proof, graded by `lmcourse grade` (tests/notebooks/test_grading_proofs.py: no cell raises), not a
second time here."""

import time

import pytest

from lmcourse.notebook_runner import execute_notebook
from tests.conftest import ROOT

# notebooks whose full `cpu` profile fits in CI's budget (seconds on 2 cores, measured)
CPU_PROFILE_IN_CI = {"01_ngram": 120}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CPU_PROFILE_IN_CI))
def test_solution_runs_in_cpu_profile(name, tmp_path):
    start = time.perf_counter()
    execute_notebook(ROOT / "solutions" / f"{name}.ipynb", tmp_path / f"{name}.ipynb", profile="cpu",
                     cwd=tmp_path)
    print(f"{name}: cpu profile in {time.perf_counter() - start:.1f} s")
