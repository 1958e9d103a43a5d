"""Old import paths of the commands and the set-up that are kept, and why.

Each was a top-level module before the commands got their folder (``lmcourse/commands/``) and is
named where the code cannot be changed by a ``git pull``:

- ``lmcourse.cli:main`` — the console script an existing ``.venv`` has installed (an editable
  install is not re-run), TAs' scripts and ``python -m lmcourse.cli``;
- ``lmcourse.setup_torch`` — the first cell of notebooks already in students' hands runs
  ``python -m lmcourse.setup_torch``; older set-up notes run ``python lmcourse/setup_torch.py``;
- ``lmcourse.train_cli`` — ``python -m lmcourse.train_cli`` / ``torchrun -m`` in TAs' notes;
- ``lmcourse.links``, ``lmcourse.paths`` — read by TAs' and authors' scripts;
- ``lmcourse.rules``, ``lmcourse.confine`` — the test cells of notebooks built before the graded
  call's side moved to ``lmcourse.marking``;
- ``lmcourse.commands.main.prepare_work`` / ``planned_work`` — the lab's copy under its old name.

Each old module reads every name from the new one and keeps its own name.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from tests.conftest import ROOT

KEPT = {"lmcourse.cli": "lmcourse.commands.main", "lmcourse.train_cli": "lmcourse.commands.train",
        "lmcourse.links": "lmcourse.commands.links", "lmcourse.paths": "lmcourse.commands.paths",
        "lmcourse.setup_torch": "lmcourse.commands.setup_torch",
        # the graded call's side moved beside the rest of the test cells' side
        "lmcourse.rules": "lmcourse.marking.rules", "lmcourse.confine": "lmcourse.marking.confine"}


@pytest.mark.parametrize("old", sorted(KEPT))
def test_the_old_module_reads_its_names_from_the_new_one(old):
    new = importlib.import_module(KEPT[old])
    public = [n for n in vars(new) if not n.startswith("_") and callable(getattr(new, n))]
    assert public, KEPT[old]
    module = importlib.import_module(old)
    assert module.__name__ == old
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in public:
            assert getattr(module, name) is getattr(new, name), name


def test_the_installed_console_scripts_target_still_resolves():
    from lmcourse.cli import main
    from lmcourse.commands.main import main as new

    assert main is new


@pytest.mark.parametrize("argv", [["-m", "lmcourse.setup_torch"], [str(ROOT / "lmcourse" / "setup_torch.py")]],
                         ids=["module", "script"])
def test_the_old_setup_torch_still_runs(argv):
    done = subprocess.run([sys.executable, *argv, "--dry-run", "--variant", "cpu", "--quiet"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "torch" in done.stdout + done.stderr


@pytest.mark.parametrize("old", ["lmcourse.cli", "lmcourse.train_cli"])
def test_python_dash_m_on_the_old_name_runs_the_command(old):
    done = subprocess.run([sys.executable, "-m", old, "--help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_the_lab_copy_keeps_its_old_name_with_a_warning():
    from lmcourse.commands import main

    with pytest.warns(DeprecationWarning, match="copy_student_notebooks"):
        assert main.prepare_work is main.copy_student_notebooks
    with pytest.raises(AttributeError):
        main.no_such_name  # noqa: B018
