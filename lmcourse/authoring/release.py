"""The student release: what a graded class gets instead of a clone of this repository.

A clone holds ``solutions/``, ``autograder/source/`` (hidden tests, the right letters) and the
mutant / alternative catalogues: right for self-learners, wrong for a class that is graded.
:func:`release` writes a folder an instructor publishes or hands out: the student notebooks
(``notebooks/``, built from the masters with solutions and hidden tests removed), the
``lmcourse`` package the notebooks import (without :mod:`lmcourse.authoring`, which reads the
masters and the catalogues, and without the TA's grader, :mod:`lmcourse.grading`), a student README
that lists the commands that work there and a ``pyproject.toml`` to install it with.

Before it returns, it scans what it wrote for nbgrader's solution and hidden-test markers and
refuses (removing the folder) when one is there: a stale or hand-edited ``notebooks/`` must not
be published. With ``through`` (``lmcourse release --through NN``, a graded class) the reference code
of that notebook and the later ones is left out and its visible tests judge against recorded
expected values (:mod:`lmcourse.authoring.release_through`); without it (``--all``) the whole
``lmcourse/reference`` ships, the answers of every exercise: for a class that is not graded.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

__all__ = ["MARKERS", "ReleaseError", "release"]

# nbgrader's marker lines, which a source notebook carries and a student's copy never may: a line
# that is the marker (in a notebook's JSON, a quoted one), not code that looks for it (template.py)
MARKERS = re.compile(r'(?m)^\s*"?### (?:BEGIN|END) (?:HIDDEN TESTS|SOLUTION)')

# parts of the package a student has no use for and that read or hold the course's secrets: the
# authoring tools (they read the masters and the catalogues) and the TA's grader
_LEFT_OUT = ("authoring", "grading")

# dependencies only the parts left out use (the grader's similarity report), with their comment lines
_TA_ONLY = ("copydetect",)

README = """\
# Language models, built by hand: student release

{count} Jupyter notebooks (`notebooks/`) in which you build language models step by step, from
n-gram counts to a small GPT, and the `lmcourse` package they import.

## Setup

Python 3.10 or newer. In this folder:

```bash
python -m venv .venv && . .venv/bin/activate
python lmcourse/commands/setup_torch.py --variant auto --spec torch=={torch}
pip install -e .            # JupyterLab, nbgrader's validator and the lmcourse package
jupyter lab notebooks/
```

The second line installs the PyTorch the course is graded with ({torch}): the CPU build (from
PyTorch's CPU wheel index, no gigabytes of NVIDIA libraries) unless the machine has an NVIDIA GPU;
`--variant cpu` or `--variant cuda` chooses, `--dry-run` shows the pip command without running it.
A plain `pip install -e .` would fetch the default build, on Linux the CUDA one.

## Working on a notebook

- Write your answers between the lines the notebook marks; leave the locked cells as they are.
- Each test cell runs **visible checks**; when they pass it prints that they do. The grader also
  runs **hidden tests** that are not in your copy, so a passing visible check is not a grade.
- A graded answer must be your own code: the course's reference code (in `lmcourse/`) is there
  for the tests, and a graded call that runs it, starts a thread or process, or reads the course's
  source is refused with a message that says why.
- Hand in the `.ipynb` file as your instructor says.

## Commands

The `lmcourse` command of this release (`lmcourse --help` lists the same):

```bash
lmcourse doctor             # versions, device, threads, disk, the notebooks' kernel, the corpus
lmcourse doctor --fetch     # the same, and download the corpus now if it is missing
lmcourse train gpt --help   # after notebook 05: train its GPT bigger (also mlm, seq2seq, sweep)
lmcourse links --help       # the Open in Colab / Kaggle links of the notebooks
```

Building the notebooks, running the solutions and grading are done in a clone of the course
repository by its authors and TAs; this release has none of them.
"""


_WORDS = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven",
          "Twelve", "Thirteen", "Fourteen", "Fifteen", "Sixteen", "Seventeen", "Eighteen", "Nineteen", "Twenty")


def count_words(n: int) -> str:
    """``n`` as the README's first word: spelled out up to twenty, digits beyond."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


def readme(n_notebooks: int, torch: str) -> str:
    """The release README for a release of ``n_notebooks`` notebooks (counted, never written by
    hand) that installs ``torch`` (a version)."""
    return README.replace("{count}", count_words(n_notebooks)).replace("{torch}", torch)


def grader_torch() -> str:
    """The torch version the course grades with: the one installed here (as the Gradescope zip pins
    it, without the ``+cpu`` local label), else set-up's default."""
    from importlib.metadata import PackageNotFoundError, version

    from ..commands.setup_torch import DEFAULT_SPEC

    try:
        return version("torch").split("+")[0]
    except PackageNotFoundError:
        return DEFAULT_SPEC.partition("==")[2]


class ReleaseError(RuntimeError):
    """The release would carry something a student must not see."""


def _ignore(src: str, names: list[str]) -> set[str]:
    # a notebook's hidden cases (lmcourse/marking/*_hidden.py) are the hidden tests: never released
    hidden = {n for n in names if n.endswith("_hidden.py")} if Path(src).name == "marking" else set()
    return hidden | {n for n in names if n in ("__pycache__", ".ipynb_checkpoints") or n.endswith((".pyc", ".pyo"))}


def _pyproject(text: str, torch: str) -> str:
    # the repository's install description, minus what only a clone has (tests, lint settings);
    # torch pinned to the grader's version (2.13.0 matches the CPU build's 2.13.0+cpu too)
    text = re.sub(r'(?m)^readme = .*$', 'readme = "README.md"', text)
    text = re.sub(r'(?m)^[ \t]*#.*\n(?=[ \t]*"torch[<>=!~])', "", text)     # the clone's note on its range
    text = re.sub(r'(?m)^(\s*)"torch[<>=!~][^"]*",', rf'\1"torch=={torch}",', text)
    for name in _TA_ONLY:
        text = re.sub(rf'(?m)(?:^[ \t]*#.*\n)*^[ \t]*"{name}[<>=!~][^"]*",[ \t]*\n', "", text)
    return re.split(r"(?m)^\[tool\.(?:pytest|ruff)", text)[0].rstrip() + "\n"


def secrets_in(folder: Path) -> list[str]:
    """``path: marker`` for every solution or hidden-test marker line in a file under ``folder``."""
    found = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix not in (".ipynb", ".py", ".md", ".toml", ".txt", ".json"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path.relative_to(folder)}: {m.group().strip()}" for m in MARKERS.finditer(text)]
    return found


def release(root: Path, out: Path, through: str | None = None, notes: list[str] | None = None) -> list[Path]:
    """Write the student release of the course at ``root`` into ``out`` (which must not exist);
    return the notebooks it holds. ``through``: the notebooks up to that one, without the reference
    of it and later ones (:mod:`.release_through`; a line for the message goes to ``notes``).
    Raises :class:`ReleaseError` when ``notebooks/`` is missing, ``through`` cannot be released that
    way, or something written carries a marker."""
    root, out = Path(root), Path(out)
    notebooks = sorted((root / "notebooks").glob("*.ipynb"))
    if not notebooks:
        raise ReleaseError(f"no student notebooks in {root / 'notebooks'}: run `lmcourse build` first")
    if out.exists():
        raise ReleaseError(f"{out} exists: give a new folder (a release is written whole, never merged)")
    (out / "notebooks").mkdir(parents=True)
    for nb in notebooks:
        shutil.copy2(nb, out / "notebooks" / nb.name)
    shutil.copytree(root / "lmcourse", out / "lmcourse",
                    ignore=lambda src, names: _ignore(src, names) | (
                        set(_LEFT_OUT) & set(names) if Path(src) == root / "lmcourse" else set()))
    torch = grader_torch()
    (out / "pyproject.toml").write_text(_pyproject((root / "pyproject.toml").read_text(encoding="utf-8"), torch),
                                        encoding="utf-8")
    if (root / "LICENSE").is_file():
        shutil.copy2(root / "LICENSE", out / "LICENSE")
    if through:
        from .release_through import ThroughError, narrow

        try:
            line = narrow(out, [nb.stem for nb in notebooks], through)
        except ThroughError as exc:
            shutil.rmtree(out)
            raise ReleaseError(str(exc)) from None
        if notes is not None:
            notes.append(line)
        notebooks = [nb for nb in notebooks if (out / "notebooks" / nb.name).exists()]
    # written after narrowing: the count is that of the notebooks this release holds
    (out / "README.md").write_text(readme(len(notebooks), torch), encoding="utf-8")
    bad = secrets_in(out)
    if bad:
        shutil.rmtree(out)
        raise ReleaseError("the release would carry solutions or hidden tests, nothing written:\n  "
                           + "\n  ".join(bad))
    return [out / "notebooks" / nb.name for nb in notebooks]
