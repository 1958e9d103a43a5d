"""Where the course repository is.

The course's authoring and grading commands (``lmcourse build``, ``lmcourse lab``, the grader's
default gradebook, the benchmarks) work on a clone of the course repository: ``autograder/``,
``notebooks/`` and ``solutions/`` beside the ``lmcourse`` package. The package alone (installed
from a wheel, say) carries none of them, so :func:`repo_root` says so instead of returning a
folder that has no course in it.
"""

from __future__ import annotations

from pathlib import Path

# a file only a clone of the course repository has (the nbgrader course root's config)
MARKER = Path("autograder") / "nbgrader_config.py"


class CourseRepoNotFound(RuntimeError):
    """The package was not loaded from a clone of the course repository, and the current
    folder is not inside one."""


def find_repo_root(start: Path | None = None) -> Path | None:
    """The clone holding this package (an editable install or a checkout on ``sys.path``), else
    ``start`` (default: the current folder) or the nearest of its parents that holds
    ``autograder/nbgrader_config.py``; None when there is none."""
    package_parent = Path(__file__).resolve().parents[2]  # lmcourse/commands/paths.py
    if (package_parent / MARKER).is_file():
        return package_parent
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return folder
    return None


def repo_root() -> Path:
    """The course repository's root folder (see :func:`find_repo_root`).

    Raises :class:`CourseRepoNotFound` when the package is installed on its own and the current
    folder is not in a clone: the commands that need ``autograder/`` cannot run there.
    """
    root = find_repo_root()
    if root is None:
        raise CourseRepoNotFound(
            f"this command needs a clone of the course repository (a folder with {MARKER.as_posix()}); "
            f"the lmcourse package in {Path(__file__).resolve().parents[1]} is installed without one. "
            "Run it from inside a clone (git clone the course, then `make setup` there).")
    return root
