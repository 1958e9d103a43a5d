"""Test strength: every catalogued student bug loses points, most are caught by visible tests,
and each costs exactly its own test cell ("one mistake costs once": the tests of later functions
run with the reference versions of earlier graded ones and build their inputs with them)."""

from pathlib import Path

import pytest

from lmcourse.authoring.mutants import load_mutants, variants_path
from tests.conftest import NOTEBOOKS, ROOT
from tests.classes import harness_group

WITH_MUTANTS = [n for n in NOTEBOOKS if variants_path(ROOT, n).exists()]


def test_every_notebook_has_a_mutant_catalogue():
    assert WITH_MUTANTS == NOTEBOOKS, f"no mutant catalogue for {sorted(set(NOTEBOOKS) - set(WITH_MUTANTS))}"


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    """Where the mutant tables go: a temporary folder, never the checkout."""
    return tmp_path_factory.mktemp("mutant-reports")


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=harness_group(n)) for n in WITH_MUTANTS])
def test_mutants_are_caught(name, reports, harness):
    mutants = load_mutants(variants_path(ROOT, name))
    assert len(mutants) >= 12, f"{name}: the catalogue needs at least 12 mutants"
    report, _ = harness(name)
    text = report.table()
    out = reports / f"mutants-{name}.txt"
    out.write_text(text + "\n")
    print("\n" + text)
    where = f"(the whole table: {out})"
    survivors = [r.mutant.name for r in report.results if not r.lost_points]
    assert not survivors, f"{name}: mutants that lose no points: {survivors} {where}\n{text}"
    assert report.visible_rate >= 0.8, f"{name}: only {report.visible_rate:.0%} caught by visible tests {where}\n{text}"
    costly = [r.mutant.name for r in report.results if not r.costs_once]
    assert not costly, f"{name}: mistakes that do not cost exactly their own test cell: {costly} {where}\n{text}"


# each notebook's harness kernel also tries the alternatives its grading proof leaves to it (conftest.py,
# test_grading_proofs.py)
@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=harness_group(n)) for n in WITH_MUTANTS])
def test_the_later_alternatives_keep_full_marks_in_the_harness(name, harness):
    failing = {alt: f for alt, f in harness(name)[1].items() if f}
    assert not failing, f"{name}: alternatives that lose points in the harness:\n" + "\n".join(
        f"  {alt}: " + "; ".join(f"{gid}: {msg[:300]}" for gid, msg in f) for alt, f in failing.items())
