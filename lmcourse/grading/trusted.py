"""What the grader judges with is what it started with.

A grader judges a notebook's records with the notebook's reference and hidden cases, imported in its own
process. Both graders import them here, before any kernel of the batch runs (:func:`load`), and before
each judgement they check that the package on disk is still the one they started with (:func:`check`): a
kernel that could write the package (an editable checkout graded without the sandbox) would otherwise
have the judge import answers it wrote, for its own grade and for every submission after it.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PackageChanged", "Trusted", "check", "load"]


class PackageChanged(RuntimeError):
    """The course package changed on disk while a batch was being graded."""


@dataclass(frozen=True)
class Trusted:
    assignment: str
    files: tuple[str, ...]                       # the course's files the judge runs, loaded at the start
    digest: str                                  # of those files, at the start
    modules: tuple[tuple[str, int], ...]         # (name, id) of the judge's modules, imported at the start


def _course_files() -> tuple[str, ...]:
    """The files of every course module this process has imported: what a judgement runs."""
    return tuple(sorted({m.__file__ for name, m in list(sys.modules.items())
                         if (name == "lmcourse" or name.startswith("lmcourse.")) and getattr(m, "__file__", None)}))


def _digest(files: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.encode() + b"\0" + (Path(f).read_bytes() if Path(f).is_file() else b"(gone)"))
    return h.hexdigest()


_LOADED: dict[str, Trusted] = {}


def load(assignment: str) -> Trusted:
    """Import the judge's modules for ``assignment`` (its tests, hidden cases and reference) and remember the
    package as it is now; once per process and assignment."""
    if assignment in _LOADED:
        return _LOADED[assignment]
    from lmcourse.marking import grader  # noqa: F401 (the judge itself, imported now)
    from lmcourse.marking.notebooks import TESTS
    from lmcourse.marking.notebooks import load as load_spec

    names: list[str] = []
    if assignment in TESTS:
        spec = load_spec(assignment)
        names = [TESTS[assignment], spec.hidden, spec.reference]
        for name in names:
            importlib.import_module(name)
    files = _course_files()
    trusted = Trusted(assignment, files, _digest(files), tuple((n, id(sys.modules[n])) for n in names))
    _LOADED[assignment] = trusted
    return trusted


def check(assignment: str) -> None:
    """Refuse to judge when the package changed on disk, or a judge's module was replaced, since :func:`load`."""
    trusted = load(assignment)
    changed = [n for n, ident in trusted.modules if id(sys.modules.get(n)) != ident]
    if changed or _digest(trusted.files) != trusted.digest:
        what = f"modules replaced: {', '.join(changed)}" if changed else "a file of the judge's modules changed"
        raise PackageChanged(f"the course package changed while grading ({what}): grades from here on would be "
                             "judged by code a submission may have written. Restore the package (git status / "
                             "reinstall), grade with the sandbox, and grade the batch again.")
