"""The assignment's release is generated once per version (kept in --out and in the user's cache)
and regenerated when what makes it changes: the source notebook, the nbgrader config, or the stub
class it imports (NamedStubs)."""

import re
import shutil
from pathlib import Path

import nbformat

from lmcourse.grading import template
from tests.conftest import ROOT


def _course(tmp_path, monkeypatch) -> tuple[Path, list]:
    """A course with 01's source and config, the cache in tmp_path, and nbgrader faked: the release
    is the source copied; the list records each generation."""
    monkeypatch.setenv("LMCOURSE_DATA_DIR", str(tmp_path / "cache"))
    root = tmp_path / "course"
    (root / "autograder" / "source" / "01_ngram").mkdir(parents=True)
    shutil.copy(ROOT / "autograder" / "source" / "01_ngram" / "01_ngram.ipynb",
                root / "autograder" / "source" / "01_ngram" / "01_ngram.ipynb")
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", root / "autograder" / "nbgrader_config.py")
    runs = []

    def fake_generate(args, course):
        runs.append(args)
        out = course / "release" / "01_ngram"
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(course / "source" / "01_ngram" / "01_ngram.ipynb", out / "01_ngram.ipynb")

    monkeypatch.setattr(template, "run_nbgrader", fake_generate)
    return root, runs


def test_a_new_out_copies_the_cached_release_and_a_damaged_copy_is_made_again(tmp_path, monkeypatch):
    root, runs = _course(tmp_path, monkeypatch)
    first = template.Template("01_ngram", tmp_path / "out1", root)
    second = template.Template("01_ngram", tmp_path / "out2", root)      # another --out, a shard, ...
    assert len(runs) == 1, "the same assignment version was generated again for a new --out"
    assert second.release == first.release and (tmp_path / "out2" / "template" / "release").is_dir()
    (kept,) = (tmp_path / "cache" / "templates").iterdir()
    (kept / "release" / "01_ngram" / "01_ngram.ipynb").unlink()             # damaged
    template.Template("01_ngram", tmp_path / "out3", root)
    assert len(runs) == 2 and (kept / "release" / "01_ngram" / "01_ngram.ipynb").is_file()
    assert not [p for p in kept.parent.iterdir() if p.name.startswith(".")], "a temporary copy was left"


def test_the_release_is_regenerated_when_the_source_or_the_stub_config_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("LMCOURSE_DATA_DIR", str(tmp_path / "cache"))   # no earlier run's cached copy
    stubs = tmp_path / "stubs.py"
    shutil.copy(template.STUBS, stubs)
    monkeypatch.setattr(template, "STUBS", stubs)
    root = tmp_path / "course"
    (root / "autograder" / "source" / "01_ngram").mkdir(parents=True)
    src = root / "autograder" / "source" / "01_ngram" / "01_ngram.ipynb"
    shutil.copy(ROOT / "autograder" / "source" / "01_ngram" / "01_ngram.ipynb", src)
    config = root / "autograder" / "nbgrader_config.py"
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", config)
    runs = []

    def fake_generate(args, course):   # stands in for nbgrader: the release is the source copied
        runs.append(args)
        out = course / "release" / "01_ngram"
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(course / "source" / "01_ngram" / "01_ngram.ipynb", out / "01_ngram.ipynb")

    monkeypatch.setattr(template, "run_nbgrader", fake_generate)
    template.Template("01_ngram", tmp_path / "out", root)
    template.Template("01_ngram", tmp_path / "out", root)
    assert len(runs) == 1, "an unchanged assignment was generated again"
    config.write_text(config.read_text() + "\n# another stub text\n")
    template.Template("01_ngram", tmp_path / "out", root)
    assert len(runs) == 2, "a changed nbgrader_config.py (the stubs) kept the old release"
    nb = nbformat.read(src, as_version=4)
    nb.cells[0].source += "\n"
    nbformat.write(nb, src)
    template.Template("01_ngram", tmp_path / "out", root)
    assert len(runs) == 3, "a changed source notebook kept the old release"
    stubs.write_text(stubs.read_text() + "\n# another stub message\n")
    template.Template("01_ngram", tmp_path / "out", root)
    assert len(runs) == 4, "a changed lmcourse/authoring/stubs.py (NamedStubs) kept the old release"


def test_the_config_uses_the_packaged_stubs():
    """The config imports NamedStubs from the package (no class defined in the config) and puts it
    in place of nbgrader's ClearSolutions in generate_assignment."""
    from traitlets.config.loader import PyFileConfigLoader

    from lmcourse.authoring.stubs import NamedStubs

    text = (ROOT / "autograder" / "nbgrader_config.py").read_text()
    assert "class " not in text and "from lmcourse.authoring.stubs import NamedStubs" in text
    loader = PyFileConfigLoader("nbgrader_config.py", str(ROOT / "autograder"))
    loaded = loader.load_config()
    assert NamedStubs in loaded.GenerateAssignment.preprocessors


def test_each_grade_cell_belongs_to_the_exercise_heading_above_it():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Intro"),
        nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "setup"}}),
        nbformat.v4.new_markdown_cell("### Exercise 1: pad\ntext"),
        nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": "pad"}}),
        nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": "pad_tests"}}),
        nbformat.v4.new_markdown_cell("## Exercise  2b — counts"),
        nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": "count_tests"}}),
    ])
    assert template.exercises(nb) == {"pad": "Exercise 1", "pad_tests": "Exercise 1", "count_tests": "Exercise 2b"}
    source = nbformat.read(ROOT / "autograder" / "source" / "01_ngram" / "01_ngram.ipynb", as_version=4)
    assert template.exercises(source)["pad_sentence_tests"] == "Exercise 1"


def test_a_quiz_check_is_named_by_its_question():
    """A multiple-choice check sits under "Questions", not under the last exercise: it is named
    "Question N" wherever a student reads its score."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("### Exercise 6 — sampling"),
        nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": "sample_tests"}}),
        nbformat.v4.new_markdown_cell("## 9. Questions\n\nSet each variable.\n\n**Q1.** Why bytes?"),
        nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": "q1_tests"}}),
        nbformat.v4.new_markdown_cell("**Q2 (auto-graded).** Which merge?"),
        nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade_id": "q2_tests"}}),
    ])
    found = template.exercises(nb)
    assert found == {"sample_tests": "Exercise 6", "q1_tests": "Question 1", "q2_tests": "Question 2"}
    assert [template.test_label(found, g) for g in ("sample_tests", "q2_tests", "other")] == [
        "Exercise 6 tests", "Question 2", "Tests"]
    quizzes = 0
    for path in sorted((ROOT / "autograder" / "source").glob("*/*.ipynb")):
        found = template.exercises(nbformat.read(path, as_version=4))
        quiz = {g: n for g, n in found.items() if re.fullmatch(r"q\d+_tests", g)}
        assert all(n == f"Question {g[1:-6]}" for g, n in quiz.items()), (path.name, quiz)
        quizzes += bool(quiz)
    assert quizzes >= 5       # the course's notebooks end with a quiz: the loop has something to check


def test_gradescope_names_a_quiz_check_by_its_question(tmp_path):
    from lmcourse.grading.gradescope import results_json
    from lmcourse.grading.result import Result

    tpl = template.Template("08_bpe", tmp_path)
    res = Result("s1", "08_bpe", "graded", max_score=tpl.max_score, auto_max=tpl.max_score)
    names = [t["name"] for t in results_json(res, tpl)["tests"]]
    assert "Question 1 (q1_tests)" in names and not [n for n in names if "(q1_tests)" in n and "Exercise" in n], names
