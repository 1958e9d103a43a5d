"""`lmcourse grade gradescope A --try NOTEBOOK`: the zip run here on one notebook in a scratch
folder, setup.sh's installs only printed, and its results.json printed."""

from __future__ import annotations

import json
import sys
import tempfile

import pytest

from lmcourse.commands.main import main
from lmcourse.grading.gradescope_try import env_for
from tests.conftest import ROOT
from tests.grading.conftest import LIMITS


def test_the_try_run_installs_nothing_and_stays_in_its_scratch_folder(tmp_path):
    env = env_for(tmp_path / "autograder")
    assert env["LMCOURSE_GS_DRY_RUN"] == "1" and env["LMCOURSE_GS_VENV"] == sys.prefix
    assert env["LMCOURSE_AUTOGRADER_ROOT"] == str(tmp_path / "autograder")


def test_a_missing_notebook_is_refused_before_the_zip_is_built(tmp_path, capsys):
    zip_path = tmp_path / "a.zip"
    assert main(["grade", "gradescope", "08_bpe", "--out", str(zip_path), "--try", str(tmp_path / "none.ipynb")]) == 2
    assert "no such notebook" in capsys.readouterr().err and not zip_path.exists()


@pytest.mark.slow
def test_try_prints_the_results_json_of_a_run_on_one_notebook(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # the scratch folder lands here, and goes with it
    notebook = ROOT / "notebooks" / "08_bpe.ipynb"      # the student notebook, unanswered
    assert main(["grade", "gradescope", "08_bpe", "--out", str(tmp_path / "a.zip"), "--try", str(notebook),
                 *LIMITS]) == 0
    out = capsys.readouterr().out
    assert "(dry run, not run)" in out and "pip install" in out            # installs printed, not run
    assert sys.prefix not in out and "/autograder/venv" in out             # as Gradescope would: not our own venv
    printed = out.split("--- 08_bpe: results.json\n", 1)[1].rsplit("\n(the try's scratch", 1)[0]
    doc = json.loads(printed)
    assert doc["score"] == 0.0
    assert any(t["name"].startswith("Exercise 1 tests") for t in doc["tests"]), [t["name"] for t in doc["tests"]]
    assert "renamed" not in printed.lower()
    assert not list(tmp_path.glob("lmcourse-gradescope-try-*")), "the scratch folder (hidden tests) was left"


@pytest.mark.slow
def test_try_reads_a_notebook_under_any_name_as_the_assignment(tmp_path, capsys, monkeypatch):
    """The TA's guide tries the zip on alice.ipynb: that is no renamed notebook."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    alice = tmp_path / "alice.ipynb"
    alice.write_bytes((ROOT / "notebooks" / "08_bpe.ipynb").read_bytes())
    assert main(["grade", "gradescope", "08_bpe", "--out", str(tmp_path / "a.zip"), "--try", str(alice),
                 *LIMITS]) == 0
    printed = capsys.readouterr().out.split("--- 08_bpe: results.json\n", 1)[1].rsplit("\n(the try's scratch", 1)[0]
    assert "renamed" not in printed.lower() and json.loads(printed)["score"] == 0.0


def test_the_root_variable_is_the_one_the_scripts_read():
    from lmcourse.grading import gradescope, gradescope_try

    assert gradescope_try.ROOT_ENV == gradescope.ROOT_ENV
