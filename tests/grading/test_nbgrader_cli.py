"""How the course starts nbgrader and its gradebooks (lmcourse/grading/nbgrader_cli.py): a new
gradebook is a copy of an empty one made once per nbgrader version (nbgrader's own way runs
``alembic heads`` in a subprocess, 3 s of CPU, for every new folder); the processes the course
starts skip rfc3987_syntax's grammars (1.5 s each); and the grader writes the package's bytecode
for its kernels (lmcourse/grading/sandbox.py: compile_course)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import nbgrader.api

from lmcourse.grading.nbgrader_cli import NBGRADER, URI_GRAMMAR, new_gradebook


def _rows(db, table):
    with sqlite3.connect(db) as con:
        rows = con.execute(f"SELECT * FROM {table}").fetchall()   # noqa: S608 (a table name of ours)
    con.close()
    return rows


def test_a_new_gradebook_is_a_copy_nbgrader_accepts(tmp_path, monkeypatch):
    monkeypatch.setenv("LMCOURSE_DATA_DIR", str(tmp_path / "cache"))
    first = tmp_path / "a" / "gradebook.db"
    new_gradebook(first)
    (cached,) = (tmp_path / "cache" / "gradebooks").glob("empty-nbgrader-*.db")
    assert _rows(first, "alembic_version") == [(nbgrader.api.get_alembic_version(),)]
    assert _rows(first, "course") == []           # whoever opens it adds its course, as on a new one

    # the second needs no alembic: nbgrader's way of making one would fail here
    def no_alembic():
        raise AssertionError("alembic ran for a gradebook the cache could give")

    monkeypatch.setattr(nbgrader.api, "get_alembic_version", no_alembic)
    second = tmp_path / "b" / "gradebook.db"
    new_gradebook(second)
    assert second.read_bytes() == cached.read_bytes()
    with nbgrader.api.Gradebook(f"sqlite:///{second}", course_id="lmcourse") as gb:
        gb.update_or_create_assignment("01_ngram")
        gb.add_student("alice")
        assert [a.name for a in gb.assignments] == ["01_ngram"]
    assert _rows(second, "course") == [("lmcourse",)]

    before = second.read_bytes()
    new_gradebook(second)                         # one that exists is left alone
    assert second.read_bytes() == before


def test_without_a_writable_cache_nbgrader_makes_it_as_before(tmp_path, monkeypatch):
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("LMCOURSE_DATA_DIR", str(tmp_path / "not-a-folder"))
    db = tmp_path / "course" / "gradebook.db"
    new_gradebook(db)
    assert not db.exists()
    with nbgrader.api.Gradebook(f"sqlite:///{db}") as gb:
        assert gb.assignments == []
    assert _rows(db, "alembic_version") == [(nbgrader.api.get_alembic_version(),)]


def test_the_lmcourse_command_reads_notebooks_without_the_uri_grammars():
    code = f"import sys, lmcourse.commands.main, nbformat; print(sys.modules.get({URI_GRAMMAR!r}) is None)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_the_nbgrader_the_course_starts_is_nbgrader_without_them():
    out = subprocess.run([sys.executable, *NBGRADER, "--version"], capture_output=True, text=True, check=True)
    assert nbgrader.__version__ in out.stdout + out.stderr


def test_the_grader_writes_the_course_package_bytecode(tmp_path, monkeypatch):
    """`lmcourse grade` compiles lmcourse once per batch: its kernels import the package read-only
    with PYTHONDONTWRITEBYTECODE set, so without bytecode each would compile it anew (a second of
    CPU per submission). Shown on a copy of the package, its bytecode removed."""
    import importlib.util
    import shutil

    import lmcourse
    from lmcourse.grading import sandbox

    copy = tmp_path / "lmcourse"
    shutil.copytree(Path(lmcourse.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(lmcourse, "__file__", str(copy / "__init__.py"))
    sandbox.compile_course()
    for module in ("checks.py", "grading/grade.py", "reference/rnn.py"):
        assert Path(importlib.util.cache_from_source(str(copy / module))).is_file(), module
