"""`repo_root`: the clone the package was loaded from, else the clone around the current folder;
a package installed on its own says that the command needs a clone."""

from pathlib import Path

import pytest

from lmcourse.commands import paths
from tests.conftest import ROOT


def test_the_checkout_the_package_was_loaded_from():
    assert paths.repo_root() == ROOT
    assert (paths.repo_root() / paths.MARKER).is_file()


def test_an_installed_package_finds_the_clone_around_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "__file__", str(tmp_path / "site-packages" / "lmcourse" / "commands" / "paths.py"))
    clone = tmp_path / "course"
    (clone / "autograder").mkdir(parents=True)
    (clone / paths.MARKER).write_text("")
    (clone / "notebooks").mkdir()
    monkeypatch.chdir(clone / "notebooks")
    assert paths.repo_root() == clone.resolve()


def test_an_installed_package_outside_a_clone_says_it_needs_one(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "__file__", str(tmp_path / "site-packages" / "lmcourse" / "commands" / "paths.py"))
    monkeypatch.chdir(tmp_path)
    assert paths.find_repo_root() is None
    with pytest.raises(paths.CourseRepoNotFound, match="needs a clone of the course repository"):
        paths.repo_root()


def test_the_course_authors_build_uses_it():
    from lmcourse.authoring import build

    assert build.repo_root is paths.repo_root
    assert Path(build.__file__).parent.name == "authoring"


def test_the_command_line_outside_a_clone_prints_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    from lmcourse.commands.main import main

    monkeypatch.setattr(paths, "__file__", str(tmp_path / "site-packages" / "lmcourse" / "commands" / "paths.py"))
    monkeypatch.chdir(tmp_path)
    assert main(["build"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lmcourse build: this command needs a clone of the course repository"), err
    assert "Traceback" not in err
