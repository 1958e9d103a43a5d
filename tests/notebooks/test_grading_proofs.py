"""For every notebook, each run of it checked once:

- the solution, submitted as a student would, graded the TA's way (`lmcourse grade`: preamble,
  sandbox, records judged outside the kernel): every autograded point, no flag, and no cell of the notebook
  raised (it runs top to bottom in the `tiny` profile, as a self-learner's solution does);
- through the real `nbgrader autograde` (the plain route) on a temporary course copy: the
  untouched student notebook scores 0 and the grader does not crash; the catalogued alternatives
  (valid solutions written another way) of the first REAL_ROUNDS rounds (conftest.py) keep full
  marks; and a catalogued mutant, put in one of the alternatives' submissions beside them, loses its
  own test cell's points and no others;
- the rest of the alternatives go through the mutants' own harness kernel (each in place of the
  solution's answer, every test cell after it in full; conftest.py and test_mutants.py), which the
  real rounds above check against nbgrader: each keeps every point.

(Once the solution was run three times, by nbgrader here, by `lmcourse grade` in
tests/grading/test_grade_solutions.py and top to bottom in tests/notebooks/test_solutions.py, and
the mutant had a whole submission of its own. Every round was a whole submission too: 44 of them
for nine notebooks, most replacing one or two answers, each a kernel, a torch import and the whole
notebook; the harness tries an alternative in well under a second.)"""

from types import SimpleNamespace

import nbformat
import pytest

from lmcourse.authoring.course import perfect_submission
from lmcourse.authoring.mutants import load_mutants, run_alternatives, variants_path
from tests.classes import proofs_group
from tests.conftest import NOTEBOOKS, ROOT
from tests.notebooks.conftest import alternative_split

pytestmark = pytest.mark.slow  # real graders on a course copy, per notebook


def _plan(name: str):
    """(the alternatives' rounds for the real nbgrader, the mutant, the round that hosts it or None):
    as few whole submissions as possible (each answer cell replaced once per round); the mutant harness
    emulates nbgrader in one kernel, so one mutant is checked on the real grader too, inside the last
    round that leaves its cell alone (it must cost that test cell only), or alone where every round
    replaces its cell."""
    mutant = load_mutants(variants_path(ROOT, name))[0]
    rounds = alternative_split(name)[0]
    host = next((k for k in reversed(range(len(rounds))) if mutant.target not in rounds[k]), None)
    return rounds, mutant, host


def _notebooks(name: str):
    source = nbformat.read(ROOT / "autograder" / "source" / name / f"{name}.ipynb", as_version=4)
    return source, nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)


def class_students(name: str) -> tuple[dict, dict]:
    """tests/classes.py: the solution (by `lmcourse grade`, the TA's path); the untouched release, the
    alternatives' rounds and the mutant (by the real nbgrader autograde)."""
    source, release = _notebooks(name)
    rounds, mutant, host = _plan(name)
    plain = {"untouched": release}
    for k, by_target in enumerate([*rounds, {}] if host is None else rounds):
        nb = perfect_submission(release, source)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.metadata.get("nbgrader", {}).get("solution") and gid in by_target:
                cell.source = by_target[gid].source
            elif cell.metadata.get("nbgrader", {}).get("solution") and gid == mutant.target and \
                    (k == host or k == len(rounds)):
                cell.source = mutant.source
        plain["mutant" if k == len(rounds) else f"alternatives-{k}"] = nb
    return {"perfect": perfect_submission(release, source)}, plain


# each notebook's class is graded once (tests/classes.py), on the worker of its proofs group, which its
# forgery batches share
@pytest.fixture(scope="module", params=[pytest.param(n, marks=proofs_group(n)) for n in NOTEBOOKS])
def graded(request, graded_class):
    name = request.param
    cls = graded_class(name)
    source, _ = _notebooks(name)
    rounds, mutant, host = _plan(name)
    course = SimpleNamespace(score=lambda _name, student: cls.plain(student), rounds=rounds)
    course.auto_max = sum(c.metadata["nbgrader"]["points"] for c in source.cells
                          if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade"))
    course.perfect = cls.rows["perfect"]
    course.perfect_nb = nbformat.read(cls.out / "autograded" / "perfect.ipynb", as_version=4)
    course.mutant_in = "mutant" if host is None else f"alternatives-{host}"
    course.mutant_cell = f"{mutant.target}_tests"
    course.mutant_points = next(c.metadata["nbgrader"]["points"] for c in source.cells
                                if c.metadata.get("nbgrader", {}).get("grade_id") == course.mutant_cell)
    return course, name


def test_solution_scores_full_marks_unflagged_under_lmcourse_grade(graded):
    """The rules and the scan see the course's own code too (rule modes, profile hooks, the
    stand-ins a test brings), so a false flag or a refusal here would cost every honest student."""
    course, name = graded
    row = course.perfect
    assert row["status"] == "graded" and row["flags"] == "", f"{name}: {row}"
    failed = [k for k, v in row.items() if k.endswith("_tests") and v != "" and float(v) == 0]
    assert float(row["score"]) == course.auto_max, f"{name}: solution scored {row['score']} of {course.auto_max}, " \
                                                   f"failed {failed}"


def test_solution_runs_top_to_bottom_in_tiny(graded):
    """Every cell of the solution ran without an error (the training cells and plots too), in the
    `tiny` profile the grader gives it (NBGRADER_EXECUTION)."""
    course, name = graded
    errors = [(i, o.get("ename"), o.get("evalue", "")[:200]) for i, c in enumerate(course.perfect_nb.cells)
              if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{name}: cells of the solution raised: {errors}"
    assert any(c.get("outputs") for c in course.perfect_nb.cells if c.cell_type == "code"), \
        f"{name}: the graded solution kept no output at all: nothing was checked"


def test_untouched_release_scores_zero(graded):
    course, name = graded
    s = course.score(name, "untouched")
    assert s.score == 0, f"{name}: the untouched student notebook scored {s.score}"
    assert s.max_score == float(course.perfect["max_score"]), "nbgrader and lmcourse grade disagree on the maximum"
    assert s.auto_max == course.auto_max


def test_a_mutant_loses_points_under_real_nbgrader(graded):
    course, name = graded
    s = course.score(name, course.mutant_in)
    assert course.mutant_cell in s.failed_tests and s.score < course.auto_max, (
        f"{name}: the first mutant lost no points under nbgrader autograde ({course.mutant_in}: {s})")


def test_alternatives_keep_full_marks_under_real_nbgrader(graded):
    """Every round keeps every point, but for the mutant's own test cell in the round that holds it."""
    course, name = graded
    for k, by_target in enumerate(course.rounds):
        s = course.score(name, f"alternatives-{k}")
        mutant = course.mutant_in == f"alternatives-{k}"
        full = course.auto_max - (course.mutant_points if mutant else 0)
        if s.score == full and set(s.failed_tests) == ({course.mutant_cell} if mutant else set()):
            continue
        # name the culprit: replay this round's alternatives one at a time in one kernel
        alone = run_alternatives(ROOT, name, list(by_target.values()))
        culprits = "\n".join(f"  {alt}: " + "; ".join(f"{gid}: {msg[:300]}" for gid, msg in f)
                              for alt, f in alone.items() if f) or "  (none fails alone: they interact)"
        also = f" (with the mutant in {course.mutant_cell}, which may cost that cell only)" if mutant else ""
        raise AssertionError(f"{name}: round {k} of alternatives{also} scored {s.score} of {full} under nbgrader "
                             f"(failed {s.failed_tests}); alone:\n{culprits}")

