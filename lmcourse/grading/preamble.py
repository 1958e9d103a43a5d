"""The preamble: the first cell of every graded notebook, run in the student's kernel before any
of the student's code.

``prepare`` injects :func:`source` as that cell; its one statement calls :func:`run` with the
grader's values as literals. :func:`run` arms the confinement of processes
(:func:`lmcourse.confine.arm`), seeds the random generators, caps the output, takes the guard's
snapshot and arms its audit hook (:func:`.guard.install`), and prints the hook key once,
into the preamble's own output, where the grader reads it back (:func:`.prepare.read_guards`).
Whatever must be captured before student code runs is captured there, so this cell must stay the
first one the kernel executes. It leaves no name in the notebook's namespace.
"""

from __future__ import annotations

HEADER = "# Injected by lmcourse grade (not part of the assignment)."


def source(seed: int, output_cap: int, nonce: str, heavy: bool = True, assignment: str = "") -> str:
    """The preamble cell's code. The values are checked and written as Python literals (``nonce``
    is the grader's hex token for this run; ``heavy``: the notebook uses torch; ``assignment``: the
    notebook's name)."""
    seed, output_cap, heavy = int(seed), int(output_cap), bool(heavy)
    if not (isinstance(nonce, str) and nonce.isalnum()):
        raise ValueError(f"the nonce must be letters and digits, not {nonce!r}")
    if not (isinstance(assignment, str) and all(ch.isalnum() or ch in "_-" for ch in assignment)):
        raise ValueError(f"not an assignment name: {assignment!r}")
    # __import__: no name is bound in the student's namespace
    return (f"{HEADER}\n__import__('lmcourse.grading.preamble', fromlist=['run'])"
            f".run({seed!r}, {output_cap!r}, {nonce!r}, {heavy!r}, {assignment!r})\n")


def run(seed: int, output_cap: int, nonce: str, heavy: bool = True, assignment: str = "") -> None:
    """In the kernel: withhold the reference of a notebook graded from records
    (:func:`lmcourse.marking.kernel.withhold`, before the guard's snapshot, which then holds the
    kernel without it), arm the confinement (:func:`lmcourse.confine.arm`: from here on a process
    started from a student's code is refused at any time), install the guard
    (:func:`.guard.install`: seeds, output cap, snapshot, audit hook) and print its key after the
    guard's marker, once."""
    from lmcourse import confine
    from lmcourse.marking import kernel, notebooks

    from . import guard

    if notebooks.marked(assignment):
        kernel.withhold(notebooks.load(assignment))
    confine.arm()
    key = guard.install(seed, output_cap, nonce, heavy)
    print(guard.MARKER, "key", key)
