"""The package a graded kernel sees: the student side of the course for that notebook, and nothing else.

A graded kernel imports ``lmcourse`` for its setup cell, its test cells and the code a notebook is given.
It gets a copy of the package made for the notebook it runs (the sandbox binds it read-only where the
package lives, :mod:`.sandbox`), holding what ``lmcourse release --through NN`` would give a student:

- no answer of NN or a later notebook (every module those notebooks withhold while graded,
  :attr:`lmcourse.marking.spec.Notebook.withheld`, and every ``lmcourse.reference`` module of NN or later);
- no hidden cases at all (``lmcourse.marking.*_hidden``: each test cell brings its own exercise's);
- no grader, no author's tools (``grading/`` but the preamble the kernel runs first and the runner,
  ``authoring/``, ``marking/grader.py``).

An assignment that is none of the course's notebooks (renamed by a TA, or a notebook of the TA's own)
gets the barest copy: no answer of any notebook.

The copy is made once per notebook and version of the package, in the grader's own cache (never bound into
a sandbox), with its bytecode compiled there, so each kernel imports it without compiling.
"""

from __future__ import annotations

import compileall
import hashlib
import shutil
import tempfile
from pathlib import Path

__all__ = ["kernel_package", "left_out"]

# kept from grading/: the first cell a graded kernel runs imports the preamble; the runner is the
# program that starts the kernel inside the sandbox (standard library and nbclient only)
_GRADING_KEPT = ("__init__.py", "preamble.py", "sandbox_runner.py")
# the author's tools, which a student's release does not ship either (the command side stays, as in a release:
# a notebook's cell may import any course module the student has)
_COMMANDS = ("authoring",)


def _source() -> Path:
    import lmcourse

    return Path(lmcourse.__file__).resolve().parent


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _digest(root: Path, assignment: str) -> str:
    h = hashlib.sha256(assignment.encode())
    for p in _files(root):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:20]


def _module_paths(root: Path, module: str) -> list[Path]:
    rel = Path(*module.split(".")[1:])
    return [p for p in (root / rel.with_suffix(".py"), root / rel) if p.exists()]


def left_out(assignment: str) -> list[str]:
    """The package's modules and folders (relative paths) a kernel grading ``assignment`` does not get."""
    from lmcourse.marking.notebooks import TESTS, load

    root = _source()
    # an assignment that is not one of the course's notebooks (renamed, or a TA's own) gets the barest
    # package: nothing of any notebook's answers, as if it came before the first
    number = int(assignment[:2]) if assignment in TESTS else 0
    gone: set[Path] = set()
    for name in TESTS:
        if int(name[:2]) >= number:
            for module in load(name).withheld:
                gone.update(_module_paths(root, module))
    earlier = {n[3:] for n in TESTS if int(n[:2]) < number}
    for f in (root / "reference").glob("*.py"):
        if f.name != "__init__.py" and f.stem not in earlier:
            gone.add(f)
    gone.update((root / "marking").glob("*_hidden.py"))
    gone.add(root / "marking" / "grader.py")
    gone.update(p for p in (root / "grading").iterdir() if p.name not in _GRADING_KEPT)
    gone.update(root / name for name in _COMMANDS if (root / name).exists())
    return sorted(str(p.relative_to(root)) for p in gone)


def kernel_package(assignment: str, cache: Path) -> Path:
    """The folder (under ``cache``) of the package a kernel grading ``assignment`` imports, made on first use."""
    src = _source()
    dest = Path(cache) / f"{assignment}-{_digest(src, assignment)}" / "lmcourse"
    if (dest.parent / "complete").is_file():
        return dest
    dest.parent.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{assignment}-", dir=dest.parent.parent))
    copy = work / "lmcourse"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "expected"))
    for rel in left_out(assignment):
        path = copy / rel
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    compileall.compile_dir(str(copy), quiet=2, stripdir=str(copy), prependdir=str(src))
    for p in [work, *work.rglob("*")]:          # the sandbox's own uid reads it
        p.chmod(0o755 if p.is_dir() else 0o644)
    (work / "complete").write_text(assignment)
    try:
        work.rename(dest.parent)
    except OSError:                 # another grader made it first: theirs is the same
        shutil.rmtree(work, ignore_errors=True)
    return dest
