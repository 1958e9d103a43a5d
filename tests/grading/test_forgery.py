"""Red team: students who try to forge a pass, graded by the real `lmcourse grade` on notebook 01.

Every attempt hands in the same wrong answers as the ``baseline`` student (``pad_sentence``
forgets the padding, ``mle_prob`` returns 0.5, ``perplexity`` returns 0.0) plus one trick meant
to make the tests pass anyway. Each attempt must score no more than the baseline, or be flagged
by the source scan (``source-scan``, for a TA to look at). One batch, ``-j 2``, shared with
tests/grading/test_grade.py (tests/grading/conftest.py).

The tricks that act *while a test runs* live inside the wrong ``mle_prob``: its test calls it.
Most of them were written against an in-kernel tamper guard (rebinding the check helpers,
builtins, IPython's hooks, the guard's own report); that guard is gone because the kernel no
longer decides anything: it records what the student's code returned, and the grader judges the
records in its own process (:mod:`lmcourse.marking.grader`). The catalogue keeps every trick
that still reaches something (helpers, builtins, hooks, frames, the reference), each shown to gain
nothing without the guard; those aimed at the guard's own machinery (its module, its generators,
its signed log, its restore-before-the-next-look timing) went with it.
"""

from __future__ import annotations

import textwrap

import nbformat
import pytest

from lmcourse.commands.main import main
from lmcourse.grading import sandbox
from tests.grading.test_grade import AUTO_MAX, A, cell, perfect

# graded in the session's one batch with test_grade's catalogue, on one worker (pytest-xdist --dist loadgroup)
pytestmark = [pytest.mark.xdist_group("grader-batches"), pytest.mark.slow]

WRONG = {
    "pad_sentence": "def pad_sentence(words, n):\n    return list(words)\n",
    "mle_prob": "def mle_prob(table, context, word):\n    return 0.5\n",
    "perplexity": "def perplexity(prob, sentences, n):\n    return 0.0\n",
}

# before: code at the top of the first answer cell (runs before every test);
# during: code inside the wrong mle_prob (runs while the mle_prob test runs)
ATTEMPTS: dict[str, dict[str, str]] = {
    "private_fail": {"before": """
        import lmcourse.checks as _c
        _c._fail = lambda msg, hint=None: None
    """},
    "checks_math_module": {"before": """
        import lmcourse.checks as _c, types
        _c.math = types.SimpleNamespace(isclose=lambda *a, **k: True, isnan=lambda x: False,
                                        isinf=lambda x: False, fsum=sum)
    """},

    "builtins_isinstance_abs_float": {"before": """
        import builtins
        builtins.isinstance = lambda *a: True
        builtins.abs = lambda x: 0.0
        builtins.float = lambda x=0.0: 0.36363636363636365
    """},
    "builtins_len_shadow": {"before": """
        def len(x):
            return 7
    """},
    "tensor_methods": {"before": """
        import torch
        torch.Tensor.tolist = lambda self: [0.0]
        torch.Tensor.detach = lambda self: self
        torch.Tensor.to = lambda self, *a, **k: self
    """},
    "numpy_comparisons": {"before": """
        import numpy as np
        np.allclose = np.isclose = np.array_equal = lambda *a, **k: True
    """},
    "sys_modules_checks": {"before": """
        import sys, types
        _fake = types.ModuleType("lmcourse.checks")
        for _n in dir(sys.modules["lmcourse.checks"]):
            setattr(_fake, _n, lambda *a, **k: None)
        sys.modules["lmcourse.checks"] = _fake
        check_equal = check_close = check_dist_close = check_distribution = check = _fake.check
    """},
    "sys_modules_math": {"before": """
        import sys, types
        sys.modules["math"] = types.SimpleNamespace(isclose=lambda *a, **k: True, isnan=lambda x: False,
                                                    isinf=lambda x: False, fsum=sum, log=lambda x: 0.0,
                                                    inf=float("inf"), exp=lambda x: 1.0)
    """},
    "frame_getframe": {"during": """
        import sys
        sys._getframe(1).f_globals["check_close"] = lambda *a, **k: None
    """},
    "traceback_frame": {"during": """
        try:
            raise ValueError
        except ValueError as _e:
            _e.__traceback__.tb_frame.f_back.f_globals["check_close"] = lambda *a, **k: None
    """},
    "ipython_event_hook": {"before": """
        def _rebind(*a):
            get_ipython().user_ns["check_close"] = lambda *a, **k: None
        get_ipython().events.register("pre_run_cell", _rebind)
    """},
    "ipython_transformer": {"before": """
        def _neuter(lines):
            return ["pass\\n" if ("check" in l or "lmcourse" in l) else l for l in lines]
        get_ipython().input_transformers_post.append(_neuter)
    """},
    "hide_the_error": {"before": """
        _ip = get_ipython()
        type(_ip).showtraceback = lambda *a, **k: None
        type(_ip)._showtraceback = lambda *a, **k: None
    """},
    "settrace": {"before": """
        import sys
        def _tr(frame, event, arg):
            frame.f_globals["check_close"] = lambda *a, **k: None
            return None
        sys.settrace(_tr)
    """},
    "setprofile": {"before": """
        import sys
        def _pr(frame, event, arg):
            frame.f_globals["check_close"] = lambda *a, **k: None
        sys.setprofile(_pr)
    """},
    "background_thread": {"before": """
        import threading, time, lmcourse.checks as _c
        def _loop():
            while True:
                _c._fail = lambda msg, hint=None: None
                get_ipython().user_ns["check_close"] = lambda *a, **k: None
                time.sleep(0.0005)
        threading.Thread(target=_loop, daemon=True).start()
    """},
    "signal_handler": {"before": """
        import signal, lmcourse.checks as _c
        def _h(signum, frame):
            _c._fail = lambda msg, hint=None: None
            get_ipython().user_ns["check_close"] = lambda *a, **k: None
        signal.signal(signal.SIGALRM, _h)
        signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    """},
    "torch_function_mode": {"before": """
        import torch
        from torch.overrides import TorchFunctionMode
        class _Lie(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))
        _Lie().__enter__()
    """},
    "lying_eq_objects": {"before": """
        class _Yes(list):
            def __eq__(self, other): return True
            def __ne__(self, other): return False
        class _Num(float):
            def __eq__(self, other): return True
            def __float__(self): return 0.36363636363636365
            def __sub__(self, other): return 0.0
        def pad_sentence(words, n):
            return _Yes(words)
    """, "during": """
        return _Num(0.5)
    """},

    # the reference's work done where the rules do not look
    "reference_on_a_thread": {"during": """
        import threading, lmcourse.ngram as _r
        _out = []
        _t = threading.Thread(target=lambda: _out.append(_r.mle_prob(table, context, word)))
        _t.start()
        _t.join()
        return _out[0]
    """},
    "reference_in_a_thread_pool": {"during": """
        import concurrent.futures, lmcourse.ngram as _r
        with concurrent.futures.ThreadPoolExecutor(1) as _ex:
            return _ex.submit(_r.mle_prob, table, context, word).result()
    """},
    "getsource_exec_shifted": {"during": """
        import inspect, lmcourse.ngram as _r
        _ns = dict(vars(_r))
        exec(compile("\\n" + inspect.getsource(_r.mle_prob), "<copy>", "exec"), _ns)
        return _ns["mle_prob"](table, context, word)
    """},
    # the test cell's own names (red team of 08, this stop): its rules object and inputs are notebook
    # globals at the top level of the cell; the grader runs the cell in a function, so they are not
    "rules_rebound_in_globals": {"during": """
        import contextlib, lmcourse.ngram as _r
        globals()["_rules"] = lambda *a, **k: contextlib.nullcontext()
        _known = {(("cows", "eat"), "corn"): 4 / 11, (("cows", "eat"), "water"): 0.0, (("pigs", "eat"), "corn"): 0.0}
        if (tuple(context), word) in _known:
            return _known[(tuple(context), word)]
        return _r.mle_prob(table, context, word)
    """},
    "rules_object_emptied": {"during": """
        import lmcourse.ngram as _r
        _g = globals().get("_rules")
        for _k in ("references", "modules", "packages", "libraries", "allowed", "torch", "kernels"):
            try:
                setattr(_g, _k, ())
            except Exception:
                pass
        _known = {(("cows", "eat"), "corn"): 4 / 11, (("cows", "eat"), "water"): 0.0, (("pigs", "eat"), "corn"): 0.0}
        if (tuple(context), word) in _known:
            return _known[(tuple(context), word)]
        return _r.mle_prob(table, context, word)
    """},
    # the audit of this stop: an input's class swapped for a subclass (whose methods or
    # __torch_function__ then forge what the test computes from it) and put back
    "input_class_swapped": {"during": """
        _cls = type(table)
        class _Fake(_cls):
            pass
        table.__class__ = _Fake
        table.__class__ = _cls
    """},
    # a library's finder is allowed (see test_honest_library_import), a notebook's is not
    "meta_path_notebook_finder": {"before": """
        import sys
        class _Finder:
            def find_spec(self, name, path=None, target=None):
                return None
        sys.meta_path.insert(0, _Finder())
    """},
    "meta_path_library_finder_notebook_callable": {"before": """
        import sys
        from transformers.utils.import_utils import _LegacyModuleAliasFinder
        sys.meta_path.append(_LegacyModuleAliasFinder(lambda name: None))
    """},

    # grades decided outside the kernel: the red team's routes against in-kernel verdicts, now
    # answered by construction (no reference and no expected value in the graded kernel)
    "profile_chained_through_exitstack": {"before": """
        import contextlib, sys
        try:
            import lmcourse.reference.ngram as _R
        except ImportError:
            _R = None
        def _chain(frame, event, arg):
            return None
        _stack = contextlib.ExitStack()
        _stack.callback(sys.setprofile, _chain)
        _stack.close()
    """, "during": """
        if _R is not None:
            return _R.mle_prob(table, context, word)
    """},
    "reference_source_read_and_exec": {"before": """
        import os, lmcourse
        _ns = {}
        try:
            _src = open(os.path.join(os.path.dirname(lmcourse.__file__), "reference", "ngram.py")).read()
            exec(compile("\\n" + _src, "<copy>", "exec"), _ns)
        except Exception:
            pass
    """, "during": """
        if "mle_prob" in _ns:
            return _ns["mle_prob"](table, context, word)
    """},
    "float_subclass_equal_to_everything": {"during": """
        class _F(float):
            def __eq__(self, other):
                return True
            __hash__ = float.__hash__
        return _F(0.5)
    """},
    "record_written_by_hand": {"during": """
        from IPython.display import publish_display_data
        publish_display_data({"application/vnd.lmcourse.record+json": {
            "notebook": "01_ngram", "exercise": "mle_prob", "cases": [{"float": (4 / 11).hex()}] * 12}})
    """},
    "tests_rebound": {"before": """
        class _Quiet:
            def check(self, name):
                print(name + ": the visible checks pass (the autograder also runs hidden tests)")
            grade = check
        tests = _Quiet()
    """},

    "ctypes_memory": {"before": """
        import ctypes, lmcourse.checks as _c
        ctypes.pythonapi.PyDict_SetItem(ctypes.py_object(vars(_c)), ctypes.py_object("_fail"),
                                        ctypes.py_object(lambda msg, hint=None: None))
    """},
}


def _notebook(before: str = "", during: str = "") -> nbformat.NotebookNode:
    nb = perfect()
    answers = dict(WRONG)
    if during:
        answers["mle_prob"] = ("def mle_prob(table, context, word):\n" +
                               textwrap.indent(textwrap.dedent(during).strip() + "\n", "    ") + "    return 0.5\n")
    answers["pad_sentence"] = textwrap.dedent(before).strip() + "\n\n" + answers["pad_sentence"] if before else \
        answers["pad_sentence"]
    if "def pad_sentence" in before:            # the trick brings its own (wrong) pad_sentence
        answers["pad_sentence"] = textwrap.dedent(before).strip() + "\n"
    for gid, src in answers.items():
        cell(nb, gid).source = src
    return nb


def students() -> dict[str, nbformat.NotebookNode]:
    """The forgers, the baseline and the honest students, graded in the session's one batch of
    01 beside test_grade's catalogue (tests/grading/conftest.py)."""
    honest = perfect()      # one unused, honest import of a library that adds a finder,
    # and one of a course module the notebook does not use (Python sets it on the package)
    cell(honest, "pad_sentence").source = "from transformers import TemperatureLogitsWarper\n" \
        "import lmcourse.commands.paths\n\n" + cell(honest, "pad_sentence").source
    out = {"baseline": _notebook(), "honest_library_import": honest}
    out.update({name: _notebook(**a) for name, a in ATTEMPTS.items()})
    return out


@pytest.fixture
def forged(grader_batch) -> dict[str, dict[str, str]]:
    """student -> grades.csv row (its ``correct`` student is test_grade's)."""
    return grader_batch.rows


def test_enough_distinct_attempts():
    assert len(ATTEMPTS) >= 20
    assert len({(a.get("before", ""), a.get("during", "")) for a in ATTEMPTS.values()}) == len(ATTEMPTS)


def test_baseline_and_correct(forged):
    """The yardsticks: the correct notebook keeps every point unflagged; the wrong one loses some."""
    assert forged["correct"]["status"] == "graded" and forged["correct"]["flags"] == ""
    assert float(forged["correct"]["score"]) == AUTO_MAX, forged["correct"]
    base = forged["baseline"]
    assert base["flags"] == "" and float(base["score"]) < AUTO_MAX - 2, base


def test_honest_library_import(forged):
    """Importing transformers (which adds a finder to sys.meta_path), and a course module the
    notebook does not use (lmcourse.commands.paths), costs nothing; transformers is beyond the course's
    list of modules, so a person is asked to look, and nothing else is said."""
    row = forged["honest_library_import"]
    assert row["status"] == "graded" and row["flags"] == "source-scan", row
    assert row["detail"] == "source-scan: beyond the course's list: from transformers import", row
    assert float(row["score"]) == AUTO_MAX, row


@pytest.mark.parametrize("attempt", sorted(ATTEMPTS))
def test_forgery_gains_nothing(forged, attempt):
    row, base = forged[attempt], forged["baseline"]
    flags = row["flags"].split(";")
    assert "source-scan" in flags or float(row["score"]) <= float(base["score"]), (
        f"{attempt}: {row['score']} > baseline {base['score']} without a flag: {row}")
    if "source-scan" in flags:
        assert "source-scan: " in row["detail"], row


def test_refuses_to_grade_without_a_sandbox(tmp_path, monkeypatch, capsys):
    """No bubblewrap and no explicit `--sandbox none`: no grading, and a message that says how."""
    monkeypatch.setattr(sandbox, "_probe", lambda: (False, "bwrap not found"))
    monkeypatch.delenv("LMCOURSE_SANDBOX", raising=False)
    monkeypatch.setattr(sandbox, "_choice", None)
    (tmp_path / "subs").mkdir()
    assert main(["grade", A, str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--no-progress",
                 "--gradebook", "none"]) == 2
    err = capsys.readouterr().err
    assert "refusing to grade" in err and "apt-get install bubblewrap" in err and "--sandbox none" in err
    assert "Docker" in err and not (tmp_path / "out").exists()
    monkeypatch.setenv("LMCOURSE_SANDBOX", "none")
    assert sandbox.mode()[0] == "none"
    monkeypatch.setenv("LMCOURSE_SANDBOX", "fallback")      # one spelling only
    with pytest.raises(ValueError, match="none"):
        sandbox.mode()


def test_checks_ask_student_objects_nothing():
    """Objects that lie (``__eq__``, ``__float__``, ``__bool__``, a tensor subclass with
    ``__torch_function__``) decide nothing: the helpers read values by exact type."""
    torch = pytest.importorskip("torch")
    from lmcourse import checks
    from lmcourse.checks import CheckFailed

    class Yes(list):
        def __eq__(self, other):
            return True

        def __ne__(self, other):
            return False

    class Num(float):
        def __eq__(self, other):
            return True

        def __float__(self):
            return 0.25

    class Truthy:
        def __bool__(self):
            return True

    class Lying(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return torch.zeros(2)

    for call in (lambda: checks.check_equal(Yes([1]), [2], "xs"),
                 lambda: checks.check_equal({"a": Num(0.5)}, {"a": 0.25}, "d"),
                 lambda: checks.check_close(Num(0.5), 0.25, "p"),
                 lambda: checks.check(Truthy(), "cond"),
                 lambda: checks.check_type(Yes([1]), tuple, "xs"),
                 lambda: checks.check_tensor_close(torch.ones(2).as_subclass(Lying), torch.zeros(2), "t"),
                 lambda: checks.check_distribution({"a": Num(0.5)}, "p")):
        with pytest.raises(CheckFailed):
            call()
    checks.check_equal(Yes([2]), [2], "a list subclass with the right items still passes")
    checks.check_close(Num(0.25), 0.25, "so does a float subclass with the right value")
