"""A gaming route that is both a mutant (caught by the visible tests) and a graded attempt (scored by the
grader) is written once, in its notebook's catalogue (autograder/variants/NN_name.py); the graded attempt
hands in the mutant's cell, found by the mutant's name."""

from __future__ import annotations

from lmcourse.authoring.mutants import load_mutants, variants_path
from tests.conftest import ROOT


def mutant_routes(notebook: str, attempts: dict[str, str]) -> dict[str, tuple[str, str]]:
    """``{attempt: mutant's name}`` -> ``{attempt: (grade_id, the mutant's cell)}``, ready to replace that
    answer cell of a submission. Only a mutant written as a whole cell fits: a patched class
    (``subclass=``, ``override``) needs the solution's class above it, which a replaced cell removes.
    A name the catalogue does not hold is an error naming it, so a renamed mutant is not skipped."""
    by_name = {mutant.name: mutant for mutant in load_mutants(variants_path(ROOT, notebook))}
    missing = sorted(set(attempts.values()) - set(by_name))
    if missing:
        raise KeyError(f"autograder/variants/{notebook}.py has no mutant named {missing}")
    return {attempt: (by_name[name].target, by_name[name].source) for attempt, name in attempts.items()}
