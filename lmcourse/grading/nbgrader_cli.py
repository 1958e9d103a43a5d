"""Run nbgrader as a subprocess of *this* Python environment.

nbgrader shells out to ``alembic`` when it creates a gradebook, so the environment's
``bin/`` must be on PATH; calling ``python -m nbgrader`` with a bare PATH fails on
machines where the venv is not activated. Every nbgrader call in the project goes here.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

# jsonschema (which nbformat imports) imports rfc3987_syntax when it is installed (jupyter-events
# pulls it in), and that builds some forty lark grammars: seconds of CPU in every process that reads
# a notebook. Nothing in the course or nbgrader validates URI formats, so the processes the course
# starts (the `lmcourse` command, nbgrader, the grader's runner, Gradescope's script) leave it out.
URI_GRAMMAR = "rfc3987_syntax"
# `python -m nbgrader` with that module left out
NBGRADER = ["-c", f"import sys, runpy; sys.modules.setdefault({URI_GRAMMAR!r}, None); "
                  "runpy.run_module('nbgrader', run_name='__main__', alter_sys=True)"]


def skip_uri_grammar() -> None:
    """Leave rfc3987_syntax out of this process (call it before nbformat is imported)."""
    sys.modules.setdefault(URI_GRAMMAR, None)


def put_bin_on_path() -> None:
    """The same for nbgrader called in-process (``Gradebook(...)`` runs ``alembic`` on a new
    database): this environment's ``bin/`` onto ``os.environ["PATH"]`` unless it is there."""
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def nbgrader_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("PYTHONHASHSEED", "0")
    env.update(extra or {})
    return env


def new_gradebook(db: Path) -> None:
    """Make ``db`` an empty nbgrader gradebook where there is none: a copy of one made once per
    nbgrader version in the user's cache. nbgrader makes every new gradebook by running ``alembic
    heads`` in a subprocess (3 s of CPU) for the same answer each time: every new course folder,
    shard, regrade folder and test paid it. The copy holds nbgrader's tables and its alembic
    version and no course row (whatever opens it adds its own, as on a new one)."""
    db = Path(db)
    if db.exists():
        return
    from importlib.metadata import version

    from ..data import data_dir

    cached = data_dir() / "gradebooks" / f"empty-nbgrader-{version('nbgrader')}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    try:
        if not cached.is_file():
            from nbgrader.api import Gradebook

            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
            tmp.unlink(missing_ok=True)
            put_bin_on_path()
            with Gradebook(f"sqlite:///{tmp}"):
                pass
            with sqlite3.connect(tmp) as con:
                con.execute("DELETE FROM course")
            con.close()
            os.replace(tmp, cached)      # whole or not at all: another process may be making it too
        shutil.copyfile(cached, db)
    except OSError:                      # no writable cache: nbgrader makes this one itself, as before
        db.unlink(missing_ok=True)
        put_bin_on_path()


def run_nbgrader(args: list[str], course_root: Path, timeout: float | None = 900,
                 extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``nbgrader <args>`` in ``course_root``; raises with nbgrader's log tail on failure."""
    new_gradebook(Path(course_root).resolve() / "gradebook.db")
    db = f"sqlite:///{Path(course_root).resolve() / 'gradebook.db'}"
    cmd = [sys.executable, *NBGRADER, *args,
           f"--CourseDirectory.root={Path(course_root).resolve()}", f"--db={db}"]
    proc = subprocess.run(cmd, cwd=course_root, env=nbgrader_env(extra_env), capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise RuntimeError(f"`nbgrader {' '.join(args)}` failed (exit {proc.returncode}):\n{tail}")
    return proc
