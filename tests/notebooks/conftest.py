"""The one-kernel harness run shared by the mutant tests and the grading proofs: per notebook, the
catalogue's mutants and the alternatives past the real nbgrader rounds are tried in one kernel
that ran the notebook once (not two kernels each running the whole notebook and importing torch
for the same harness). Both tests of a notebook (tests/notebooks/test_mutants.py) are in its
``harness-<notebook>`` xdist group, so they meet on one worker and the run happens once."""

from __future__ import annotations

import pytest

from lmcourse.authoring.mutants import (
    Alternative,
    alternative_rounds,
    load_alternatives,
    load_mutants,
    run_harness,
    variants_path,
)
from tests.conftest import ROOT

# whole submissions of alternatives under the real nbgrader (round 1 holds one alternative of every
# answer that has one, round 2 a second); the rest go through the harness
REAL_ROUNDS = 2


def alternative_split(name: str) -> tuple[list[dict[str, Alternative]], list[Alternative]]:
    """(the rounds graded by the real nbgrader, the alternatives left for the harness)."""
    catalogue = variants_path(ROOT, name)
    rounds = alternative_rounds(load_alternatives(catalogue)) if catalogue.exists() else []
    return rounds[:REAL_ROUNDS], [alt for r in rounds[REAL_ROUNDS:] for alt in r.values()]


@pytest.fixture(scope="session")
def harness():
    """``harness(name)``: (the mutants' report, ``{later alternative: failures}``), run once."""
    done = {}

    def run(name: str):
        if name not in done:
            mutants = load_mutants(variants_path(ROOT, name))
            done[name] = run_harness(ROOT, name, mutants, alternative_split(name)[1])
        return done[name]

    return run
