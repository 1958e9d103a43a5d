"""Every solution notebook runs top to bottom: in `tiny` (what autograding uses) always, and in
`cpu` (what a laptop user gets) for the notebooks cheap enough to run that way in CI."""

import time

import pytest

from lmcourse.notebook_runner import execute_notebook

from tests.conftest import NOTEBOOKS, ROOT

# notebooks whose full `cpu` profile fits in CI's budget (seconds on 2 cores, measured)
CPU_PROFILE_IN_CI = {"01_ngram": 120}


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_solution_runs_in_tiny_profile(name, tmp_path):
    start = time.perf_counter()
    execute_notebook(ROOT / "solutions" / f"{name}.ipynb", tmp_path / f"{name}.ipynb", profile="tiny",
                     cwd=tmp_path)
    print(f"{name}: tiny profile in {time.perf_counter() - start:.1f} s")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CPU_PROFILE_IN_CI))
def test_solution_runs_in_cpu_profile(name, tmp_path):
    start = time.perf_counter()
    execute_notebook(ROOT / "solutions" / f"{name}.ipynb", tmp_path / f"{name}.ipynb", profile="cpu",
                     cwd=tmp_path)
    print(f"{name}: cpu profile in {time.perf_counter() - start:.1f} s")
