"""The preamble: the first cell of every graded notebook, run in the student's kernel before any
of the student's code.

``prepare`` injects :func:`source` as that cell; its one statement calls :func:`run` with the
grader's values as literals. :func:`run` withholds the notebook's reference
(:func:`lmcourse.marking.kernel.withhold`), arms the confinement of processes
(:func:`lmcourse.marking.confine.arm`), seeds the random generators and caps the printed output. It
leaves no name in the notebook's namespace.

Nothing here protects a verdict: the kernel only records what the student's code returned, and
the grader judges the records in its own process (:mod:`lmcourse.marking.grader`), so whatever a
student's code rebinds in its kernel can change its own records, never the expected values or
the points.
"""

from __future__ import annotations

import sys

HEADER = "# Injected by lmcourse grade (not part of the assignment)."
CUT = "\n[output cut: the grader's output cap]\n"


def source(seed: int, output_cap: int, heavy: bool = True, assignment: str = "") -> str:
    """The preamble cell's code. The values are checked and written as Python literals (``heavy``:
    the notebook uses torch; ``assignment``: the notebook's name)."""
    seed, output_cap, heavy = int(seed), int(output_cap), bool(heavy)
    if not (isinstance(assignment, str) and all(ch.isalnum() or ch in "_-" for ch in assignment)):
        raise ValueError(f"not an assignment name: {assignment!r}")
    # __import__: no name is bound in the student's namespace
    return (f"{HEADER}\n__import__('lmcourse.grading.preamble', fromlist=['run'])"
            f".run({seed!r}, {output_cap!r}, {heavy!r}, {assignment!r})\n")


class CappedStream:
    """A text stream that passes on at most ``cap`` characters, then one line saying it cut the rest:
    a submission that prints without end cannot fill the grader's disk or the feedback page."""

    def __init__(self, stream, cap: int):
        self.stream, self.left = stream, cap

    def write(self, s: str) -> int:
        if self.left <= 0:
            return len(s)
        if len(s) > self.left:
            self.stream.write(s[: self.left] + CUT)
            self.left = 0
            return len(s)
        self.left -= len(s)
        return self.stream.write(s)

    def flush(self):
        return self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def run(seed: int, output_cap: int, heavy: bool = True, assignment: str = "") -> None:
    """In the kernel: withhold the reference of the notebook (before any student cell can import
    it), arm the confinement (from here on a process started from a student's code is refused),
    seed ``random``, NumPy and (``heavy``) torch, and cap stdout and stderr."""
    import os
    import random

    import numpy

    from lmcourse.marking import confine, kernel, notebooks

    if notebooks.marked(assignment):
        kernel.withhold(notebooks.load(assignment))
    # nothing is imported from the kernel's own folder: a module the notebook writes there and imports is code
    # its cells do not show (the scan reads the cells; a student's cell that puts the folder back is flagged)
    here = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".", here)]
    confine.arm()
    # a one-line cell whose first word names a magic (`run(x)`) runs as that magic under automagic: Python the
    # scan reads as a call, run as `%run`
    try:
        from IPython import get_ipython
    except ImportError:
        get_ipython = None
    shell = get_ipython() if get_ipython is not None else None
    if shell is not None:
        shell.automagic = False
    random.seed(seed)
    numpy.random.seed(seed)
    if heavy:
        try:
            import torch
        except ImportError:     # a notebook that names torch fails later, with its own message
            torch = None
        if torch is not None:
            torch.manual_seed(seed)
    sys.stdout, sys.stderr = CappedStream(sys.stdout, output_cap), CappedStream(sys.stderr, output_cap)
