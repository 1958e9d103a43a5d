"""`lmcourse lab`: the student's own work folder (copied once, never overwritten, new notebooks
appear, ignored by git) and the student's JupyterLab (instructor panels and news hidden, nbgrader
finds a config, Validate kept); `--ta` gives the instructor view."""

import json
import os
import re
import subprocess

from lmcourse.commands import main as cli
from tests.conftest import ROOT

STUDENT = ROOT / "lmcourse" / "labconfig" / "student"


def test_work_folder_copies_once_never_overwrites_and_picks_up_new_notebooks(tmp_path):
    src, work = tmp_path / "notebooks", tmp_path / "work"
    src.mkdir()
    (src / "01_a.ipynb").write_text("release 1")
    (src / "README.md").write_text("not a notebook")
    assert cli.copy_student_notebooks(src, work) == (["01_a.ipynb"], [])
    (work / "01_a.ipynb").write_text("my answers")
    (src / "01_a.ipynb").write_text("release 2 (a fix pulled with git)")
    (src / "02_b.ipynb").write_text("a new notebook")
    assert cli.copy_student_notebooks(src, work) == (["02_b.ipynb"], ["01_a.ipynb"])
    assert (work / "01_a.ipynb").read_text() == "my answers"
    assert (work / "02_b.ipynb").read_text() == "a new notebook"
    assert not (work / "README.md").exists()
    assert sorted(p.name for p in work.iterdir()) == [".gitignore", "01_a.ipynb", "02_b.ipynb"]


def test_work_folder_is_ignored_by_git(tmp_path):
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    (repo / "notebooks" / "01_a.ipynb").write_text("{}")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cli.copy_student_notebooks(repo / "notebooks", repo / "work")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout
    assert "notebooks/01_a.ipynb" in status and "work/" not in status, status


def test_student_lab_hides_instructor_panels_and_news_keeps_validate():
    page = json.loads((STUDENT / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    for plugin in ["create-assignment", "formgrader", "course-list", "assignment-list", "menu"]:
        assert page[f"@jupyter/nbgrader:{plugin}"] is True
    assert page["@jupyterlab/apputils-extension:announcements"] is True
    assert "@jupyter/nbgrader:validate-assignment" not in page
    server = json.loads((STUDENT / "jupyter_server_config.json").read_text())["ServerApp"]["jpserver_extensions"]
    assert server["nbgrader.server_extensions.validate_assignment"] is True
    assert not server["nbgrader.server_extensions.formgrader"]
    assert (STUDENT / "nbgrader_config.py").exists()  # nbgrader looks on the config path: no warning


def test_lab_command_student_and_ta(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", "/elsewhere")
    cmd, env = cli.lab_command(tmp_path / "work", ta=False, extra=["--no-browser"], root=ROOT)
    assert cmd[1:3] == ["lab", str(tmp_path / "work")] and cmd[-1] == "--no-browser"
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [str(STUDENT), "/elsewhere"]
    cmd, env = cli.lab_command(tmp_path / "work", ta=True, extra=[], root=ROOT)
    assert cmd[2] == str(ROOT / "autograder") and env["JUPYTER_CONFIG_PATH"] == "/elsewhere"


def test_nbgrader_finds_the_student_config(monkeypatch):
    """The path nbgrader searches includes the student config folder once lmcourse lab sets it."""
    _, env = cli.lab_command(ROOT / "work", ta=False, extra=[], root=ROOT)
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", env["JUPYTER_CONFIG_PATH"])
    from jupyter_core.paths import jupyter_config_path

    assert any(os.path.exists(os.path.join(p, "nbgrader_config.py")) for p in jupyter_config_path())


def test_lab_dry_run_writes_nothing(tmp_path, capsys):
    assert cli.main(["lab", "--work", str(tmp_path / "w"), "--dry-run", "--", "--no-browser"]) == 0
    out = capsys.readouterr().out
    assert "would copy 01_ngram.ipynb" in out and out.rstrip().endswith("--no-browser")
    assert not (tmp_path / "w").exists()          # no folder, no copy, no .gitignore
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "01_ngram.ipynb").write_text("mine")
    assert cli.main(["lab", "--work", str(tmp_path / "w"), "--dry-run"]) == 0
    assert "kept your 1 notebook(s)" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == ["01_ngram.ipynb"]


def test_student_lab_starts_the_preferred_kernel_without_asking():
    """The "Select Kernel" dialog: JupyterLab reads settings defaults (overrides.json) only from its
    app settings folder, which lab_command points at ours."""
    overrides = json.loads((STUDENT / "settings" / "overrides.json").read_text())
    assert overrides["@jupyterlab/notebook-extension:tracker"]["autoStartDefaultKernel"] is True
    cmd, _ = cli.lab_command(ROOT / "work", ta=False, extra=[], root=ROOT)
    assert f"--LabApp.app_settings_dir={STUDENT / 'settings'}" in cmd
    schema = ROOT / ".venv/share/jupyter/lab/schemas/@jupyterlab/notebook-extension/tracker.json"
    if schema.exists():   # the setting's name is JupyterLab's own
        assert "autoStartDefaultKernel" in json.loads(schema.read_text())["properties"]


def test_lab_solutions_opens_the_course_folder_on_solutions_and_copies_nothing(tmp_path, capsys):
    assert cli.main(["lab", "--solutions", "--dry-run", "--", "--no-browser"]) == 0
    out = capsys.readouterr().out
    cmd = out.strip().splitlines()[-1].split()
    assert cmd[1:3] == ["lab", str(ROOT)] and "--LabApp.default_url=/lab/tree/solutions" in cmd
    assert "build/executed/" in out
    assert cli.main(["lab", "--solutions", "--work", str(tmp_path)]) == 2


def test_validate_counts_the_failing_tests_first_and_names_an_unanswered_question():
    """The student config's nbclient hooks on nbgrader's Execute (lmcourse/labconfig/validate.py),
    fed cells as Validate runs them: the first failing test's error starts with the count and the
    tests, updated as later ones fail; an unanswered question's NameError says what to write."""
    from nbformat.v4 import new_code_cell, new_output
    from traitlets.config.loader import PyFileConfigLoader

    from lmcourse.labconfig import validate

    config = PyFileConfigLoader("nbgrader_config.py", str(STUDENT)).load_config()
    assert config.Execute.on_cell_start is validate.start and config.Execute.on_cell_error is validate.explain

    def test_cell(gid, evalue, ename="NotImplementedError"):
        cell = new_code_cell("check(...)", metadata={"nbgrader": {"grade": True, "solution": False,
                                                                   "grade_id": gid, "points": 1}})
        cell.outputs = [new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])]
        return cell

    for _ in range(2):                         # a second Validate starts from zero
        cells = [(3, test_cell("pad_tests", "Exercise 1: write pad here, then run the test cell below")),
                 (5, new_code_cell("x = 1")),
                 (7, test_cell("q1_tests", "name 'answer_q1' is not defined", "NameError"))]
        for index, cell in cells:
            validate.start(cell=cell, cell_index=index)
            if cell.outputs:
                validate.explain(cell=cell, cell_index=index, execute_reply={})
        first = cells[0][1].outputs[0]["traceback"]
        assert first[0].startswith(
            "2 tests stop with an error: pad_tests (Exercise 1), q1_tests. This is the first"), first
        assert first[1] == "NotImplementedError: Exercise 1: write pad here, then run the test cell below"
        q = cells[2][1].outputs[0]
        assert q["evalue"].endswith('Question q1 is not answered yet: in its cell, set answer_q1 to your answer\'s '
                                    'letter in quotes (answer_q1 = "<your letter>"), run that cell, '
                                    'then Validate again'), q
        assert not re.search(r'"[A-D]"', q["evalue"]), "the hint suggests a letter"


def test_ta_lab_starts_in_the_course_root_and_copies_nothing(tmp_path, monkeypatch, capsys):
    """nbgrader reads nbgrader_config.py from the folder the server starts in and keeps its
    gradebook.db there: the instructor lab must start in autograder/, or Formgrader lists no
    assignment and a stray gradebook.db lands in the clone. It copies no student notebook."""
    import shutil

    from lmcourse.commands import paths

    root = tmp_path / "clone"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "01_ngram.ipynb").write_text("{}")
    (root / "autograder").mkdir()
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", root / "autograder")
    monkeypatch.setattr(paths, "repo_root", lambda: root)
    monkeypatch.chdir(root)                          # where `make lab TA=1` runs it
    started = {}

    def execve(path, argv, env):
        started.update(cwd=os.getcwd(), argv=argv, env=env)

    monkeypatch.setattr(os, "execve", execve)
    assert cli.main(["lab", "--ta", "--", "--no-browser"]) == 0
    assert started["cwd"] == str(root / "autograder"), started
    assert (root / "autograder" / "nbgrader_config.py").is_file()
    assert started["argv"][1:3] == ["lab", str(root / "autograder")]
    assert not (root / "work").exists()              # no copies, no work/.gitignore
    assert "copied" not in capsys.readouterr().out
    monkeypatch.chdir(root)
    assert cli.main(["lab", "--ta", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"starts in {root / 'autograder'}" in out and "would copy" not in out
    assert cli.main(["lab", "--ta", "--work", str(tmp_path / "w")]) == 2
