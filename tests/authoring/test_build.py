"""One source, three products: the committed notebooks are exactly what the masters build."""

import json
import re

import nbformat
import pytest

from lmcourse.authoring.build import MasterError, build, check_stubs, master_to_source
from lmcourse.marking.notebooks import marked
from tests.conftest import NOTEBOOKS, ROOT

# one worker builds the module-scoped fixture once (pytest-xdist --dist loadgroup)
pytestmark = pytest.mark.xdist_group("build")


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    out = tmp_path_factory.mktemp("rebuild")
    build(ROOT, out, quiet=True)
    return out


@pytest.mark.slow  # the rebuild runs nbgrader for every notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_build_is_in_sync(rebuilt, name):
    for rel in (f"autograder/source/{name}/{name}.ipynb", f"notebooks/{name}.ipynb", f"solutions/{name}.ipynb"):
        committed = (ROOT / rel).read_text(encoding="utf-8")
        fresh = (rebuilt / rel).read_text(encoding="utf-8")
        assert committed == fresh, f"{rel} differs from what `lmcourse build` makes: run `make build` and commit"


@pytest.mark.slow
def test_build_is_deterministic(rebuilt, tmp_path):
    build(ROOT, tmp_path, names=NOTEBOOKS[:1], quiet=True)
    rel = f"notebooks/{NOTEBOOKS[0]}.ipynb"
    assert (tmp_path / rel).read_bytes() == (rebuilt / rel).read_bytes()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_student_notebook_has_no_solutions_or_hidden_tests(name):
    source = json.loads((ROOT / "autograder" / "source" / name / f"{name}.ipynb").read_text())
    student_text = (ROOT / "notebooks" / f"{name}.ipynb").read_text()
    assert not re.search(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS", student_text)
    # no line of any solution region or hidden-test region may survive into the student notebook
    for cell in source["cells"]:
        text = "".join(cell["source"])
        for region in re.findall(r"### BEGIN (?:SOLUTION|HIDDEN TESTS)\n(.*?)### END", text, flags=re.S):
            for line in region.splitlines():
                line = line.strip()
                if len(line) > 25:  # short lines such as "return total" legitimately recur
                    assert json.dumps(line)[1:-1] not in student_text, f"{name}: leaked {line!r}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_student_notebook_shape(name):
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    answers = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    tests = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")
             and c["cell_type"] == "code"]
    assert answers and tests
    for c in answers:
        if c["cell_type"] == "code":
            assert "raise NotImplementedError(" in "".join(c["source"])
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_answer_is_followed_by_its_tests(name):
    nb = json.loads((ROOT / "autograder" / "source" / name / f"{name}.ipynb").read_text())
    cells = nb["cells"]
    for i, c in enumerate(cells):
        meta = c["metadata"].get("nbgrader", {})
        if meta.get("solution") and c["cell_type"] == "code":
            nxt = cells[i + 1]["metadata"].get("nbgrader", {})
            assert nxt.get("grade") and nxt.get("grade_id") == meta["grade_id"] + "_tests", (
                f"{name}: answer {meta['grade_id']!r} must be followed by its locked test cell "
                f"{meta['grade_id']}_tests")


def test_malformed_master_is_refused_with_the_cell_named(tmp_path):
    bad = tmp_path / "99_bad.py"
    bad.write_text('# %% tests="t1"\nassert True\n')
    with pytest.raises(MasterError, match=r"99_bad.py, cell 1: graded cells need points"):
        master_to_source(bad)
    bad.write_text('# %% solution="a"\nx = 1\n\n# %% solution="a"\ny = 2\n')
    with pytest.raises(MasterError, match="used twice"):
        master_to_source(bad)


_STUB = re.compile(r'raise NotImplementedError\("(?:Exercise (\d+): write ([\w.]+) here|set (answer_\w+) to your '
                   r'answer\'s letter here), then run the test cell below"\)')


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_stub_names_an_exercise_that_exists(name):
    """An unfilled answer says which exercise it is (the last `### Exercise N` heading above it)
    and what to write there (a def/class of that cell), or which answer_ variable to set."""
    cells = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]
    exercise, seen = None, 0
    for i, c in enumerate(cells):
        text = "".join(c["source"])
        if c["cell_type"] == "markdown":
            found = re.findall(r"^#+\s+Exercise (\d+)\b", text, flags=re.M)
            exercise = found[-1] if found else exercise
            continue
        lines = [line for line in text.splitlines() if "raise NotImplementedError" in line]
        if not c["metadata"].get("nbgrader", {}).get("solution"):
            assert not any(line.lstrip().startswith("raise NotImplementedError(") for line in lines), (
                f"{name}: a stub outside an answer cell: {lines}")
            continue
        assert lines, f"{name}: answer cell {c['metadata']['nbgrader']['grade_id']} has no stub"
        for line in lines:
            m = _STUB.fullmatch(line.strip())
            assert m, f"{name}: a stub that names no exercise: {line.strip()}"
            seen += 1
            number, what, answer = m.groups()
            if answer:
                test_cell = "".join(cells[i + 1]["source"])
                # a notebook graded from records checks the answer cell's exercise by its grade id
                graded_as = f'tests.check("{c["metadata"]["nbgrader"]["grade_id"]}")'
                assert answer in test_cell or (marked(name) and graded_as in test_cell), (
                    f"{name}: {answer} is not what the next test cell checks")
                continue
            assert number == exercise, (
                f"{name}: a stub for {what} says Exercise {number}; the heading above is {exercise}")
            *outer, inner = what.split(".")
            for part in (*outer, inner):
                assert re.search(rf"^\s*(?:def|class)\s+{re.escape(part)}\b", text, flags=re.M), (
                    f"{name}: Exercise {number}'s stub names {what}, which its cell does not define")
    assert seen


def test_a_stub_without_an_exercise_is_refused():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()")
    cell.metadata["nbgrader"] = {"grade_id": "f", "solution": True}
    nb.cells.append(cell)
    with pytest.raises(MasterError, match=r"99_x, answer 'f': its stub does not name an exercise"):
        check_stubs(nb, "99_x")
    cell.source = 'def f():\n    raise NotImplementedError("Exercise 1: write f here, then run the test cell below")'
    check_stubs(nb, "99_x")
