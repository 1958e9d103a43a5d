"""The grader's rewrite of a test cell (lmcourse.grading.guard.instrument): the cell's statements
run in a function, so the names it binds that start with ``_`` (its rules, inputs, expected values)
cannot be rebound through the notebook's globals by a student's function it calls; when the cell
ends they are in the globals as before, and the names without ``_`` are globals throughout.

The reports the rewrite adds are generators' ``gi_frame`` reads: without the guard's audit hook
(as here) they do nothing, so the cell runs as the kernel would run it, minus the guard."""

import pytest

from lmcourse.grading.guard import TEST_FUNCTION, instrument

CELL = '''
import math
_limit = 3
seen = []
def _probe():
    return _limit
with _ctx():
    _got = answer()
seen.append((_limit, _got, _probe(), limit_public))
limit_public = _limit + 1
for _i in range(2):
    total = _i
_squares = [k * k for k in range(3)]
'''


def _run(source, ns):
    exec(compile(instrument(source, "demo_tests"), "<test cell>", "exec"), ns)


def _namespace():
    import contextlib

    def answer():            # a student's function: rebinds the test's names through its globals
        ns["_limit"], ns["_ctx"], ns["_got"] = "forged", None, "forged"
        ns["limit_public"] = "public, so it may"
        return 42

    ns = {"answer": answer, "_ctx": contextlib.nullcontext, "limit_public": 0}
    return ns


def test_the_test_cells_private_names_are_out_of_the_students_reach():
    ns = _namespace()
    _run(CELL, ns)
    assert ns["seen"] == [(3, 42, 3, "public, so it may")]


def test_the_names_are_in_the_globals_when_the_cell_ends():
    ns = _namespace()
    _run(CELL, ns)
    assert ns["_limit"] == 3 and ns["_got"] == 42 and ns["limit_public"] == 4 and ns["total"] == 1
    assert ns["_squares"] == [0, 1, 4] and "math" in ns and ns["_probe"]() == 3
    assert TEST_FUNCTION not in ns and "k" not in ns


def test_a_failing_cell_raises_and_keeps_what_it_bound():
    ns = {}
    with pytest.raises(ZeroDivisionError):
        _run("_a = 1\nb = 2\n_c = 1 / 0\n_d = 4\n", ns)
    assert ns["_a"] == 1 and ns["b"] == 2 and "_d" not in ns and TEST_FUNCTION not in ns


def test_an_except_name_a_class_and_a_deleted_name():
    ns = {}
    _run("class _K:\n    x = 1\ntry:\n    1 / 0\nexcept ZeroDivisionError as err:\n    _e = 'caught'\n"
         "_w = 5\ndel _w\nmore = [_K.x]\n", ns)
    assert ns["_e"] == "caught" and ns["more"] == [1] and "_w" not in ns and "err" not in ns


def test_unparseable_and_empty_cells():
    assert instrument("def (:", "x") == "def (:"
    ns = {}
    _run("", ns)
    assert TEST_FUNCTION not in ns
