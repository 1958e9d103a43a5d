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
        "import lmcourse.paths\n\n" + cell(honest, "pad_sentence").source
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
    notebook does not use (lmcourse.paths), costs nothing and flags nothing."""
    row = forged["honest_library_import"]
    assert row["status"] == "graded" and row["flags"] == "", row
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


# ---------------------------------------------------------------- one batch per notebook, both graders

def _students(notebook: str, *replaced: dict[str, tuple[str, str]], appended: dict | None = None) -> dict:
    """The correct student (the solution handed in as a student would) and one student per attempt: its
    ``(grade_id, code)`` replacing that answer cell (``replaced``) or added at its end (``appended``)."""
    from lmcourse.authoring.course import perfect_submission
    from tests.conftest import ROOT

    source = nbformat.read(ROOT / "autograder" / "source" / notebook / f"{notebook}.ipynb", as_version=4)
    release = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    students = {"correct": perfect_submission(release, source)}
    for attempts in replaced:
        for attempt, (grade_id, code) in attempts.items():
            nb = perfect_submission(release, source)
            cell(nb, grade_id).source = code
            students[attempt] = nb
    for attempt, (grade_id, code) in (appended or {}).items():
        nb = perfect_submission(release, source)
        cell(nb, grade_id).source += code
        students[attempt] = nb
    return students


def _graded_rows(notebook: str, students: dict, tmp_path_factory) -> dict[str, dict[str, str]]:
    """student -> its grades.csv row, from one `lmcourse grade` batch (``-j 2``)."""
    import csv

    from tests.grading.test_grade import SANDBOX

    subs, out = tmp_path_factory.mktemp(f"class-{notebook}"), tmp_path_factory.mktemp(f"grades-{notebook}")
    for name, nb in students.items():
        (subs / name).mkdir()
        nbformat.write(nb, subs / name / f"{notebook}.ipynb")
    assert main(["grade", notebook, str(subs), "--out", str(out), "-j", "2", "--no-progress", "--gradebook", "none",
                 *SANDBOX]) == 0
    return {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}


def _graded_both(notebook: str, students: dict, tmp_path_factory) -> dict[str, dict]:
    """student -> {"grade": its grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score}.
    Plain nbgrader has no sandbox and no file masking: only the graded kernel's own refusal keeps the
    withheld code out there."""
    from lmcourse.authoring.course import TempCourse

    rows = _graded_rows(notebook, students, tmp_path_factory)
    course = TempCourse(tmp_path_factory.mktemp(f"course-{notebook}"), [notebook])
    for name, nb in students.items():
        course.submit(name, notebook, nb)
    course.autograde(notebook)
    return {name: {"grade": rows[name], "nbgrader": course.score(notebook, name)} for name in students}


# ---------------------------------------------------------------- notebook 09, graded from records
# The red team's routes into 09's old test cells, which built expected values in the student's kernel: a
# global forward hook zeroing the outputs of torch's layers the test built (its nn.MultiheadAttention twin), a
# module whose state_dict() reported all-zero weights (the test built its expected output from that report),
# a tensor subclass whose __torch_function__ answered the test's comparisons. Each hands in a cross-attention that
# returns zeros. Now the expected values are the reference's, computed by the grader from weights it chose, and
# the kernel only records: each scores 0 on cross-attention by construction, flagged or not. And the given code that
# answers 09 (lmcourse.nn.seq2seq, the course's encoder-decoder) is withheld from 09's graded kernel like the
# reference: imported as the answer, or run unwatched inside a profile callback chained before the rules', it is
# not there, and the exercise scores 0. One small batch, under `lmcourse grade` and under plain nbgrader.
ED = "09_encoder_decoder"
_ZEROS = "        return x.new_zeros(x.shape) + 0 * sum(p.sum() for p in self.parameters())\n"
ED_ATTEMPTS = {
    "forward_hook_zeroes_torch_layers": "import torch\n"
    "torch.nn.modules.module.register_module_forward_hook(\n"
    "    lambda m, args, out: out * 0 if type(out) is torch.Tensor and type(m).__module__.startswith('torch.nn')\n"
    "    else None)\n\n\n",
    "state_dict_reports_zeros": "",
    "tensor_subclass_torch_function": "import torch\n\n\n"
    "class _Agrees(torch.Tensor):\n"
    "    @classmethod\n"
    "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
    "        if func in (torch.allclose, torch.equal):\n"
    "            return True\n"
    "        return super().__torch_function__(func, types, args, kwargs or {})\n\n\n",
}


ED_GIVEN_ATTEMPTS = {
    # the gaming student: the course's class as the answer
    "given_import_as_the_answer": ("cross_attention", "from lmcourse.nn.seq2seq import CrossAttention\n"),
    # given code run unwatched inside a chained profile callback, with a wrong answer if it is absent
    "given_answer_in_a_chained_profile": ("exact_match",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.nn.seq2seq as _S\n"
        "except ImportError:\n"
        "    _S = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _S is not None and event == 'call' and frame.f_code.co_name == 'exact_match' \\\n"
        "            and 'predictions' in frame.f_locals and frame.f_code.co_filename != _S.__file__:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _S.exact_match(f['predictions'], f['targets'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def exact_match(predictions, targets):\n"
        "    return _answer.pop('v', 0.0)\n"),
}


def _ed_cross_attention(attempt: str) -> str:
    body = _ZEROS
    extra = ""
    if attempt == "state_dict_reports_zeros":
        extra = ("    def state_dict(self, *args, **kwargs):\n"
                 "        return {k: torch.zeros_like(v) for k, v in super().state_dict(*args, **kwargs).items()}\n\n"
                 "    def load_state_dict(self, state, strict=True, assign=False):\n"
                 "        return None\n\n")
    if attempt == "tensor_subclass_torch_function":
        body = _ZEROS.replace("return ", "return (").replace("\n", ").as_subclass(_Agrees)\n")
    return (ED_ATTEMPTS[attempt] +
            "class CrossAttention(nn.Module):\n"
            "    def __init__(self, n_embd, n_head, bias=True):\n"
            "        super().__init__()\n"
            "        self.n_head = n_head\n"
            "        self.q_proj = nn.Linear(n_embd, n_embd, bias=bias)\n"
            "        self.k_proj = nn.Linear(n_embd, n_embd, bias=bias)\n"
            "        self.v_proj = nn.Linear(n_embd, n_embd, bias=bias)\n"
            "        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)\n\n" + extra +
            "    def forward(self, x, memory, memory_mask=None):\n" + body)


@pytest.fixture(scope="module")
def forged_09(tmp_path_factory) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 09:
    the correct student and each attempt, one batch of each."""
    students = _students(ED, {a: ("cross_attention", _ed_cross_attention(a)) for a in ED_ATTEMPTS},
                         ED_GIVEN_ATTEMPTS)
    return _graded_both(ED, students, tmp_path_factory)


def test_09_correct_keeps_full_marks(forged_09):
    row, plain = forged_09["correct"]["grade"], forged_09["correct"]["nbgrader"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id in ("cross_attention", "exact_match")), row
    assert plain.failed_tests == [] and plain.score == plain.auto_max, plain


@pytest.mark.parametrize("attempt", sorted(ED_ATTEMPTS) + sorted(ED_GIVEN_ATTEMPTS))
def test_09_forgery_scores_zero_on_its_exercise(forged_09, attempt):
    # the expected values are the grader's, and the course's encoder-decoder is withheld while 09 is graded: no
    # points, whatever the flags, under either grader
    grade_id = ED_GIVEN_ATTEMPTS[attempt][0] if attempt in ED_GIVEN_ATTEMPTS else "cross_attention"
    row, test = forged_09[attempt]["grade"], f"{grade_id}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_09[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


# ---------------------------------------------------------------- notebook 02, graded from records
# The red team's routes into 02's old test cells, which computed expected values in the student's kernel after the
# graded call: an RNNLM whose forward_state zeroed the weights the test's nn.RNN twin was given from it (the twin
# then agreed with a zero model), a global forward hook zeroing the outputs of torch's layers the test built, a
# tensor subclass whose __torch_function__ answered the test's comparisons and its .pow, and the reference run from
# the answer (the old cells had it importable). Now the test loads its own weights, the expected values are the
# reference's, computed by the grader, and the reference is absent from the graded kernel: each scores 0 on its
# exercise by construction, flagged or not. One small batch.
RNN = "02_rnn"
_RNNLM_HEAD = ("class RNNLM(nn.Module):\n"
               "    def __init__(self, vocab_size, n_embd, n_hidden):\n"
               "        super().__init__()\n"
               "        self.wte = nn.Embedding(vocab_size, n_embd)\n"
               "        self.W_xh = nn.Parameter(torch.zeros(n_hidden, n_embd))\n"
               "        self.W_hh = nn.Parameter(torch.zeros(n_hidden, n_hidden))\n"
               "        self.b_h = nn.Parameter(torch.zeros(n_hidden))\n"
               "        self.lm_head = nn.Linear(n_hidden, vocab_size)\n\n"
               "    def forward(self, idx, h0=None):\n"
               "        return self.forward_state(idx, h0)[0]\n\n")
_ZERO_MODEL = ("    def forward_state(self, idx, h0=None):\n"
               "        B, T = idx.shape\n"
               "        h = self.b_h.new_zeros(B, T, self.W_hh.shape[0]) + 0 * self.W_xh.sum() + 0 * self.W_hh.sum()\n"
               "        return self.lm_head(h + 0 * self.wte(idx).sum()), h[:, -1]\n")
RNN_ATTEMPTS = {
    # RNNLM: the test's own weights zeroed in place during the call, so an expected value built from them would agree
    "zeroes_the_shared_weights": ("RNNLM", _RNNLM_HEAD + "    def forward_state(self, idx, h0=None):\n"
                                    "        with torch.no_grad():\n"
                                    "            for p in (self.W_xh, self.W_hh, self.b_h):\n"
                                    "                p.zero_()\n"
                                    "            self.wte.weight.zero_()\n"
                                  + _ZERO_MODEL.split("\n", 1)[1]),
    "forward_hook_zeroes_torch_layers": ("RNNLM", "torch.nn.modules.module.register_module_forward_hook(\n"
                                         "    lambda m, args, out: out * 0 if type(out) is torch.Tensor and "
                                         "type(m).__module__.startswith('torch.nn.modules.rnn') else None)\n\n\n"
                                         + _RNNLM_HEAD + _ZERO_MODEL),
    "tensor_subclass_torch_function": ("elman_step", "class _Agrees(torch.Tensor):\n"
                                       "    @classmethod\n"
                                       "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                                       "        if func in (torch.allclose, torch.equal):\n"
                                       "            return True\n"
                                       "        return super().__torch_function__(func, types, args, kwargs or {})"
                                       "\n\n\n"
                                       "def elman_step(x_t, h_prev, W_xh, W_hh, b_h):\n"
                                       "    return (h_prev * 0 + 0 * (x_t @ W_xh.T).sum() + 0 * (W_hh.sum() + "
                                       "b_h.sum())).as_subclass(_Agrees)\n"),
    "imports_the_reference": ("elman_step", "def elman_step(x_t, h_prev, W_xh, W_hh, b_h):\n"
                                            "    import lmcourse.reference.rnn as r\n"
                                            "    return r.elman_step(x_t, h_prev, W_xh, W_hh, b_h)\n"),
}


@pytest.fixture(scope="module")
def forged_02(tmp_path_factory) -> dict[str, dict[str, str]]:
    """student -> grades.csv row of 02: the correct student and each attempt, one `lmcourse grade` batch."""
    return _graded_rows(RNN, _students(RNN, RNN_ATTEMPTS), tmp_path_factory)


def test_02_correct_keeps_full_marks(forged_02):
    row = forged_02["correct"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert float(row["elman_step_tests"]) > 0 and float(row["RNNLM_tests"]) > 0, row


@pytest.mark.parametrize("attempt", sorted(RNN_ATTEMPTS))
def test_02_forgery_scores_zero_on_its_exercise(forged_02, attempt):
    row, test = forged_02[attempt], f"{RNN_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"


# 04's red-team routes against the old test cells, one of each kind: an MLP that zeroed its own weights during
# the call (the old test built the expected value from them afterwards), a Block whose forward zeroed the weights
# the test's nn.TransformerEncoderLayer twin was copied from, a tensor subclass answering the comparisons, and the
# reference imported by the answer. Now the test loads its own weights, the expected values are the reference's,
# computed by the grader, and the reference is absent from the graded kernel: each scores 0 on its exercise.
# The course's block (lmcourse.nn.block, given code for 05 on) does 04's work too: it is withheld there like the
# reference, so the routes to it (imported as the answer, run inside a chained profile callback or a global
# forward hook) score 0 as well, under `lmcourse grade` and under plain nbgrader alike.
BLOCK_NB = "04_block"
_MLP_HEAD = ("class MLP(nn.Module):\n"
             "    def __init__(self, n_embd, dropout=0.0, bias=True):\n"
             "        super().__init__()\n"
             "        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)\n"
             "        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)\n"
             "        self.dropout = nn.Dropout(dropout)\n\n")
_BLOCK_HEAD = ("class Block(nn.Module):\n"
               "    def __init__(self, n_embd, n_head, block_size, prenorm=True, causal=True, dropout=0.0,"
               " bias=True):\n"
               "        super().__init__()\n"
               "        self.prenorm = prenorm\n"
               "        self.ln1 = LayerNorm(n_embd)\n"
               "        self.attn = CausalSelfAttention(AttentionConfig(n_embd=n_embd, n_head=n_head, "
               "block_size=block_size, dropout=dropout, bias=bias, causal=causal))\n"
               "        self.ln2 = LayerNorm(n_embd)\n"
               "        self.mlp = MLP(n_embd, dropout=dropout, bias=bias)\n\n")
BLOCK_ATTEMPTS = {
    "mlp_zeroes_its_weights": ("mlp", _MLP_HEAD + "    def forward(self, x):\n"
                                                  "        with torch.no_grad():\n"
                                                  "            for p in self.parameters():\n"
                                                  "                p.zero_()\n"
                                                  "        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))\n"),
    "block_zeroes_the_shared_weights": ("block", "class Block(nn.Module):\n"
                                        "    def __init__(self, n_embd, n_head, block_size, prenorm=True, causal=True,"
                                        " dropout=0.0, bias=True):\n"
                                        "        super().__init__()\n"
                                        "        self.prenorm = prenorm\n"
                                        "        self.ln1 = LayerNorm(n_embd)\n"
                                        "        self.attn = CausalSelfAttention(AttentionConfig(n_embd=n_embd, "
                                        "n_head=n_head, block_size=block_size, dropout=dropout, bias=bias, "
                                        "causal=causal))\n"
                                        "        self.ln2 = LayerNorm(n_embd)\n"
                                        "        self.mlp = MLP(n_embd, dropout=dropout, bias=bias)\n\n"
                                        "    def forward(self, x):\n"
                                        "        with torch.no_grad():\n"
                                        "            for p in self.parameters():\n"
                                        "                p.zero_()\n"
                                        "        return x + 0 * sum(p.sum() for p in self.parameters())\n"),
    "tensor_subclass_torch_function": ("layer_norm", "class _Agrees(torch.Tensor):\n"
                                       "    @classmethod\n"
                                       "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                                       "        if func in (torch.allclose, torch.equal):\n"
                                       "            return True\n"
                                       "        return super().__torch_function__(func, types, args, kwargs or {})"
                                       "\n\n\n"
                                       "def layer_norm(x, gamma, beta, eps=1e-5):\n"
                                       "    return (x * 0 + 0 * (gamma.sum() + beta.sum())).as_subclass(_Agrees)\n"),
    "imports_the_reference": ("sinusoidal_positions", "def sinusoidal_positions(T, d, dtype=torch.float32):\n"
                                                      "    import lmcourse.reference.block as r\n"
                                                      "    return r.sinusoidal_positions(T, d, dtype)\n"),
    # the gaming student: the course's table (lmcourse.nn.block, given code for 05 on) as the answer
    "given_import_as_the_answer": ("sinusoidal_positions", "from lmcourse.nn.block import sinusoidal_positions\n"),
    # the course's count run unwatched inside a profile function chained before the rules' own, with a wrong
    # answer if it is absent
    "given_count_in_a_chained_profile": ("block_param_count",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.nn.block as _B\n"
        "except ImportError:\n"
        "    _B = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _B is not None and event == 'call' and frame.f_code.co_name == 'block_param_count' \\\n"
        "            and 'd' in frame.f_locals and frame.f_code.co_filename != _B.__file__:\n"
        "        _answer['v'] = _B.block_param_count(frame.f_locals['d'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def block_param_count(d):\n"
        "    return _answer.pop('v', 0)\n"),
    # an MLP whose parameters (what the test writes into) and state_dict() look right while its forward runs on
    # private zero weights
    "mlp_state_dict_lies": ("mlp", _MLP_HEAD + "        self._w = [torch.zeros(4 * n_embd, n_embd),"
                                               " torch.zeros(n_embd, 4 * n_embd)]\n\n"
                                               "    def forward(self, x):\n"
                                               "        h = F.gelu(x @ self._w[0].to(x.dtype).T)\n"
                                               "        return self.dropout(h @ self._w[1].to(x.dtype).T)\n"),
    # a global forward hook that replaces a wrong block's output with the course's block on its weights
    "global_forward_hook_runs_the_given_block": ("block",
        "import torch.nn.modules.module as _mm\n\n"
        "try:\n"
        "    import lmcourse.nn.block as _B\n"
        "except ImportError:\n"
        "    _B = None\n\n\n"
        "def _fix(module, inputs, out):\n"
        "    if _B is None or type(module).__name__ != 'Block' or type(module) is _B.Block:\n"
        "        return out\n"
        "    x = inputs[0]\n"
        "    cfg = _B.BlockConfig(n_embd=x.shape[-1], n_head=module.attn.n_head, block_size=x.shape[1],\n"
        "                         prenorm=module.prenorm, causal=module.attn.causal, fast=False)\n"
        "    twin = _B.Block(cfg).to(x.dtype)\n"
        "    twin.load_state_dict(module.state_dict(), strict=False)\n"
        "    twin.train(module.training)\n"
        "    return twin(x)\n\n\n"
        "_mm.register_module_forward_hook(_fix)\n\n\n"
        + _BLOCK_HEAD + "    def forward(self, x):\n"
                        "        return x\n"),
}


@pytest.fixture(scope="module")
def forged_04(tmp_path_factory) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 04:
    the correct student and each attempt, one batch of each."""
    return _graded_both(BLOCK_NB, _students(BLOCK_NB, BLOCK_ATTEMPTS), tmp_path_factory)


def test_04_correct_keeps_full_marks(forged_04):
    row, plain = forged_04["correct"]["grade"], forged_04["correct"]["nbgrader"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert plain.failed_tests == [] and plain.score == plain.auto_max, plain
    assert all(float(row[f"{g}_tests"]) > 0 for g, _ in BLOCK_ATTEMPTS.values()), row


@pytest.mark.parametrize("attempt", sorted(BLOCK_ATTEMPTS))
def test_04_forgery_scores_zero_on_its_exercise(forged_04, attempt):
    # the reference and the course's block are withheld while 04 is graded: no points, under either grader
    row, test = forged_04[attempt]["grade"], f"{BLOCK_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_04[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


# ---------------------------------------------------------------- notebook 03, graded from records
# The red team's routes into 03's old test cells, one of each kind: a MultiHeadAttention that zeroed its own
# weights during the call (the old test built its nn.MultiheadAttention twin from them afterwards), a
# scaled_dot_product_attention returning a tuple subclass whose unpacking ran the reference after the rules'
# block, a tensor subclass whose __torch_function__ answered the comparisons, and the reference imported by
# the answer. Now the test loads its own weights, the kernel records plain data only, the expected values are
# the reference's, computed by the grader, and the reference is absent: each scores 0 on its exercise. The
# course's attention (lmcourse.nn.attention, given code for 04 on) does 03's work too: it is withheld there like
# the reference, so the routes to it (imported as the answer, run inside a chained profile callback or a global
# forward hook) score 0 as well, under `lmcourse grade` and under plain nbgrader alike.
ATT = "03_attention"
ATT_ATTEMPTS = {
    "mha_zeroes_its_weights": ("multi_head_attention",
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, n_embd, n_head, causal=True, bias=True):\n"
        "        super().__init__()\n"
        "        self.n_embd, self.n_head, self.d_k, self.causal = n_embd, n_head, n_embd // n_head, causal\n"
        "        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(n_embd, n_embd, bias=bias) for _ in range(4))\n\n"
        "    def forward(self, x, return_weights=False):\n"
        "        with torch.no_grad():\n"
        "            for p in self.parameters():\n"
        "                p.zero_()\n"
        "        B, T, C = x.shape\n"
        "        y = self.W_o(x)\n"
        "        w = x.new_full((B, self.n_head, T, T), 1.0 / T)\n"
        "        return (y, w) if return_weights else y\n"),
    "sdpa_tuple_subclass_runs_the_reference": ("scaled_dot_product_attention",
        "class _Pair(tuple):\n"
        "    def __iter__(self):\n"
        "        import lmcourse.reference.attention as ref\n"
        "        return iter(ref.scaled_dot_product_attention(*self))\n\n\n"
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    return _Pair((Q, K, V, mask))\n"),
    "scores_tensor_subclass_torch_function": ("attention_scores",
        "class _Agrees(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        if func in (torch.allclose, torch.equal):\n"
        "            return True\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n\n\n"
        "def attention_scores(Q, K):\n"
        "    return (Q[..., :1] @ K[..., :1].transpose(-2, -1)).as_subclass(_Agrees)\n"),
    "causal_mask_imports_the_reference": ("causal_mask",
        "def causal_mask(T):\n"
        "    import lmcourse.reference.attention as ref\n\n"
        "    return ref.causal_mask(T)\n"),
    # the gaming student: the course's attention (given code for 04 on) as the answer
    "given_import_as_the_answer": ("scaled_dot_product_attention",
        "from lmcourse.nn.attention import scaled_dot_product_attention\n"),
    # the course's attention run unwatched inside a profile function chained before the rules' own, with a
    # wrong answer if it is absent
    "given_sdpa_in_a_chained_profile": ("scaled_dot_product_attention",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.nn.attention as _A\n"
        "except ImportError:\n"
        "    _A = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _A is not None and event == 'call' and frame.f_code.co_name == 'scaled_dot_product_attention' \\\n"
        "            and 'Q' in frame.f_locals and frame.f_code.co_filename != _A.__file__:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _A.scaled_dot_product_attention(f['Q'], f['K'], f['V'], f['mask'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    return _answer.pop('v', (Q, Q @ K.transpose(-2, -1)))\n"),
    # a layer whose state_dict() reports the weights the test loaded while its forward keeps its own
    "mha_state_dict_lies": ("multi_head_attention",
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, n_embd, n_head, causal=True, bias=True):\n"
        "        super().__init__()\n"
        "        self.n_embd, self.n_head, self.d_k, self.causal = n_embd, n_head, n_embd // n_head, causal\n"
        "        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(n_embd, n_embd, bias=bias) for _ in range(4))\n"
        "        self._shown = None\n\n"
        "    def load_state_dict(self, state, strict=True, assign=False):\n"
        "        self._shown = {k: v.clone() for k, v in state.items()}\n\n"
        "    def state_dict(self, *args, **kwargs):\n"
        "        return dict(self._shown) if self._shown is not None else super().state_dict(*args, **kwargs)\n\n"
        "    def forward(self, x, return_weights=False):\n"
        "        B, T, C = x.shape\n"
        "        q, k, v = (W(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)\n"
        "                   for W in (self.W_q, self.W_k, self.W_v))\n"
        "        mask = causal_mask(T).to(x.dtype) if self.causal else None\n"
        "        y, w = scaled_dot_product_attention(q, k, v, mask)\n"
        "        y = self.W_o(y.transpose(1, 2).reshape(B, T, C))\n"
        "        return (y, w) if return_weights else y\n"),
    # a global forward hook that replaces a wrong layer's output with the course's attention on its weights
    "global_forward_hook_runs_the_given_attention": ("multi_head_attention",
        "import torch.nn.modules.module as _mm\n\n"
        "try:\n"
        "    import lmcourse.nn.attention as _A\n"
        "except ImportError:\n"
        "    _A = None\n\n\n"
        "def _fix(module, inputs, out):\n"
        "    if _A is None or type(module).__name__ != 'MultiHeadAttention':\n"
        "        return out\n"
        "    x = inputs[0]\n"
        "    B, T, C = x.shape\n"
        "    q, k, v = (W(x).view(B, T, module.n_head, C // module.n_head).transpose(1, 2)\n"
        "               for W in (module.W_q, module.W_k, module.W_v))\n"
        "    mask = torch.full((T, T), float('-inf'), dtype=x.dtype).triu(1) if module.causal else None\n"
        "    y, w = _A.scaled_dot_product_attention(q, k, v, mask)\n"
        "    y = module.W_o(y.transpose(1, 2).reshape(B, T, C))\n"
        "    return (y, w) if type(out) is tuple else y\n\n\n"
        "_mm.register_module_forward_hook(_fix)\n\n\n"
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, n_embd, n_head, causal=True, bias=True):\n"
        "        super().__init__()\n"
        "        self.n_embd, self.n_head, self.d_k, self.causal = n_embd, n_head, n_embd // n_head, causal\n"
        "        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(n_embd, n_embd, bias=bias) for _ in range(4))\n\n"
        "    def forward(self, x, return_weights=False):\n"
        "        B, T, C = x.shape\n"
        "        y = self.W_o(x)\n"
        "        w = x.new_full((B, self.n_head, T, T), 1.0 / T)\n"
        "        return (y, w) if return_weights else y\n"),
}


@pytest.fixture(scope="module")
def forged_03(tmp_path_factory) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 03:
    the correct student and each attempt, one batch of each."""
    return _graded_both(ATT, _students(ATT, ATT_ATTEMPTS), tmp_path_factory)


def test_03_correct_keeps_full_marks(forged_03):
    row, plain = forged_03["correct"]["grade"], forged_03["correct"]["nbgrader"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert plain.failed_tests == [] and plain.score == plain.auto_max, plain
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in ATT_ATTEMPTS.values()), row


@pytest.mark.parametrize("attempt", sorted(ATT_ATTEMPTS))
def test_03_forgery_scores_zero_on_its_exercise(forged_03, attempt):
    # the reference and the course's attention are withheld while 03 is graded: no points, under either grader
    row, test = forged_03[attempt]["grade"], f"{ATT_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_03[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


# ---------------------------------------------------------------- notebook 07, graded from records
# The red team's routes into 07's old test cells: a profile function installed through contextlib.ExitStack
# (so the guard did not count it as the student's), which the rules' own profile called first and which ran
# the reference unwatched inside the callback (18 of 22 points); and a beam search returning a list subclass
# whose methods ran the reference when the test read the hypotheses, after the rules' block. Now the reference
# is absent from the graded kernel and the kernel records plain data only: each scores 0 on its exercise (or is
# flagged), by construction.
DEC = "07_decoding"
DEC_ATTEMPTS = {
    "profile_chained_through_exitstack": ("top_k_filter",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.reference.decoding as _R\n"
        "except ImportError:\n"
        "    try:\n"
        "        import lmcourse.decoding as _R\n"
        "        _R.top_k_filter\n"
        "    except Exception:\n"
        "        _R = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _R is not None and event == 'call' and frame.f_code.co_name == 'top_k_filter' \\\n"
        "            and 'k' in frame.f_locals:\n"
        "        _answer['v'] = _R.top_k_filter(frame.f_locals['logits'], frame.f_locals['k'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def top_k_filter(logits, k):\n"
        "    return _answer.pop('v', logits)\n"),
    "beam_list_subclass_runs_the_reference": ("beam_search",
        "class _Hyps(list):\n"
        "    def _real(self):\n"
        "        import lmcourse.reference.decoding as ref\n"
        "        return ref.beam_search(*self.args)\n\n"
        "    def __iter__(self):\n"
        "        return iter(self._real())\n\n"
        "    def __len__(self):\n"
        "        return len(self._real())\n\n"
        "    def __getitem__(self, i):\n"
        "        return self._real()[i]\n\n\n"
        "def beam_search(model, prompt, beam_size, max_new_tokens, length_penalty=1.0, eos_id=None):\n"
        "    out = _Hyps()\n"
        "    out.args = (model, prompt, beam_size, max_new_tokens, length_penalty, eos_id)\n"
        "    return out\n"),
}


@pytest.fixture(scope="module")
def forged_07(tmp_path_factory) -> dict[str, dict[str, str]]:
    """student -> grades.csv row of 07: the correct student and each attempt, one `lmcourse grade` batch."""
    return _graded_rows(DEC, _students(DEC, DEC_ATTEMPTS), tmp_path_factory)


def test_07_correct_keeps_full_marks(forged_07):
    row = forged_07["correct"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in DEC_ATTEMPTS.values()), row


@pytest.mark.parametrize("attempt", sorted(DEC_ATTEMPTS))
def test_07_forgery_scores_zero_on_its_exercise(forged_07, attempt):
    row, test = forged_07[attempt], f"{DEC_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and (float(row[test]) == 0 or row["flags"]), \
        f"{attempt}: {test} scored {row[test]}: {row}"


# ---------------------------------------------------------------- notebook 06, graded from records
# The red team's routes into 06's old test cells: a tensor subclass whose .tolist() the test read after the rules'
# block; a pseudo-log-likelihood whose expected value the test computed after the call from the model the
# student's code had just zeroed; fill_mask returning a list subclass that ran the reference when the test read the
# blanks. Now the reference is absent from the graded kernel, the kernel records plain data only and the judge
# builds its own model: each scores 0 on its exercise (or is flagged), by construction.
MLM = "06_mlm"
MLM_ATTEMPTS = {
    "tensor_subclass_runs_the_reference": ("mask_tokens",
        "class _Lazy(torch.Tensor):\n"
        "    def tolist(self):\n"
        "        import lmcourse.reference.mlm as ref\n"
        "        return ref.mask_tokens(*self.args)[self.which].tolist()\n\n\n"
        "def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):\n"
        "    out = tokens.clone().as_subclass(_Lazy), torch.full_like(tokens, -100).as_subclass(_Lazy)\n"
        "    for which, t in enumerate(out):\n"
        "        t.args, t.which = (tokens, mask_id, vocab_size, special_ids, p, generator), which\n"
        "    return out\n"),
    "pll_from_the_model_it_zeroed": ("pseudo_log_likelihood",
        "import math\n\n\n"
        "def pseudo_log_likelihood(model, ids, mask_id):\n"
        "    with torch.no_grad():\n"
        "        for p in model.parameters():\n"
        "            p.zero_()\n"
        "        for i in range(len(ids)):\n"
        "            x = ids.clone()\n"
        "            x[i] = mask_id\n"
        "            model(x[None])\n"
        "    # zero weights give equal logits: the PLL of the zeroed model, which the old test computed afterwards\n"
        "    return -len(ids) * math.log(model.out.out_features)\n"),
    "fill_mask_list_subclass_runs_the_reference": ("fill_mask",
        "class _Blanks(list):\n"
        "    def _real(self):\n"
        "        import lmcourse.reference.mlm as ref\n"
        "        return ref.fill_mask(*self.args)\n\n"
        "    def __iter__(self):\n"
        "        return iter(self._real())\n\n"
        "    def __len__(self):\n"
        "        return len(self._real())\n\n"
        "    def __getitem__(self, i):\n"
        "        return self._real()[i]\n\n\n"
        "def fill_mask(model, tokenizer, text, top_k=5):\n"
        "    out = _Blanks()\n"
        "    out.args = (model, tokenizer, text, top_k)\n"
        "    return out\n"),
}


@pytest.fixture(scope="module")
def forged_06(tmp_path_factory) -> dict[str, dict[str, str]]:
    """student -> grades.csv row of 06: the correct student and each attempt, one `lmcourse grade` batch."""
    return _graded_rows(MLM, _students(MLM, MLM_ATTEMPTS), tmp_path_factory)


def test_06_correct_keeps_full_marks(forged_06):
    row = forged_06["correct"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in MLM_ATTEMPTS.values()), row


@pytest.mark.parametrize("attempt", sorted(MLM_ATTEMPTS))
def test_06_forgery_scores_zero_on_its_exercise(forged_06, attempt):
    row, test = forged_06[attempt], f"{MLM_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and (float(row[test]) == 0 or row["flags"]), \
        f"{attempt}: {test} scored {row[test]}: {row}"


# ---------------------------------------------------------------- notebook 05, graded from records
# The red team's routes into 05's old test cells: a profile function installed through contextlib.ExitStack (so
# the guard did not count it as the student's), which the rules' own profile called first and which ran the
# reference unwatched inside the callback (8 of 17 points); and values the test read after the rules' block (a
# forward returning a tuple subclass whose items ran the reference when the test unpacked them). Now the reference
# is absent from the graded kernel and the kernel records plain data only: each scores 0 on its exercise (or is
# flagged), by construction. The course's GPT (lmcourse.nn.gpt, given code for 06, 07 and 10) used to stay in 05's
# graded kernel and answered from inside such a callback (full marks, flagged by the scan only, and unflagged under
# plain nbgrader); it is withheld there now like the reference, so those score 0 as well, imported as the answer
# too. And two routes for a test that computed its expected values in the kernel: a GPT whose state_dict() lies, a
# global forward hook. One small batch, under `lmcourse grade` and under plain nbgrader.
GPT_NB = "05_gpt"
GPT_ATTEMPTS = {
    "profile_chained_through_exitstack": ("generate",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.reference.gpt as _R\n"
        "except ImportError:\n"
        "    _R = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _R is not None and event == 'call' and frame.f_code.co_name == 'generate' \\\n"
        "            and 'max_new_tokens' in frame.f_locals:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _R.generate(f['model'], f['idx'], f['max_new_tokens'], f['temperature'],\n"
        "                                   f['generator'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):\n"
        "    return _answer.pop('v', idx)\n"),
    "forward_tuple_subclass_runs_the_reference": ("gpt",
        "class _Pair(tuple):\n"
        "    def __getitem__(self, i):\n"
        "        import lmcourse.reference.gpt as ref\n"
        "        return ref.GPT.forward(self.model, *self.args)[i]\n\n\n"
        "class GPT(nn.Module):\n"
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.config = config\n"
        "        self.wte = nn.Embedding(config.vocab_size, config.n_embd)\n"
        "        self.wpe = nn.Embedding(config.block_size, config.n_embd)\n"
        "        self.drop = nn.Dropout(config.dropout)\n"
        "        cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,\n"
        "                          dropout=config.dropout, bias=config.bias)\n"
        "        self.blocks = nn.ModuleList([Block(cfg) for _ in range(config.n_layer)])\n"
        "        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)\n"
        "        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)\n"
        "        self.lm_head.weight = self.wte.weight\n\n"
        "    def forward(self, idx, targets=None):\n"
        "        out = _Pair((None, None))\n"
        "        out.model, out.args = self, (idx, targets)\n"
        "        return out\n"),
    # given code (lmcourse.nn.gpt: 06, 07 and 10 use it) run unwatched inside a chained profile callback: absent
    # while 05 is graded, so the cell fails to define its answer
    "given_sampler_in_a_chained_profile": ("generate",
        "import contextlib\n"
        "import sys\n\n"
        "import lmcourse.nn.gpt as _G\n\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'generate' and 'max_new_tokens' in frame.f_locals \\\n"
        "            and frame.f_code.co_filename != _G.__file__:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _G.generate(f['model'], f['idx'], f['max_new_tokens'], f['temperature'],\n"
        "                                   f['generator'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):\n"
        "    return _answer.pop('v', idx)\n"),
    "given_initialisation_in_a_chained_profile": ("init_weights",
        "import contextlib\n"
        "import sys\n"
        "from types import SimpleNamespace\n\n"
        "import lmcourse.nn.gpt as _G\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'init_weights' and 'n_layer' in frame.f_locals \\\n"
        "            and frame.f_code.co_filename != _G.__file__:\n"
        "        f = frame.f_locals\n"
        "        m = f['model']\n"
        "        saved = m.__dict__.get('config')\n"
        "        m.config = SimpleNamespace(n_layer=f['n_layer'])\n"
        "        _G.init_gpt_weights(m, f['std'])\n"
        "        if saved is not None:\n"
        "            m.config = saved\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def init_weights(model, n_layer, std=0.02):\n"
        "    pass\n"),
    # the gaming student: the course's count as the answer, through the package's lazy names
    "given_import_as_the_answer": ("gpt_param_count", "from lmcourse.nn import gpt_param_count\n"),
}
# appended to the correct answer: a GPT whose logits are zeros, and a way to make a test computed in the kernel agree
GPT_WRAPPED = {
    # its state_dict() reports all-zero weights (a test that built its expected logits from them would agree)
    "state_dict_lies": ("gpt",
        "\n\n_Right = GPT\n\n\n"
        "class GPT(_Right):\n"
        "    def forward(self, idx, targets=None):\n"
        "        logits, loss = super().forward(idx, targets)\n"
        "        return logits * 0, (None if loss is None else loss * 0)\n\n"
        "    def state_dict(self, *args, **kwargs):\n"
        "        return {k: torch.zeros_like(v) for k, v in super().state_dict(*args, **kwargs).items()}\n"),
    # a global forward hook zeroing every module's output: the student's GPT and any model a test builds in the
    # kernel alike
    "global_forward_hook": ("gpt",
        "\n\nimport torch.nn.modules.module as _mm\n\n"
        "_mm.register_module_forward_hook(lambda mod, inp, out: out * 0 if isinstance(out, torch.Tensor) else out)\n"),
}


@pytest.fixture(scope="module")
def forged_05(tmp_path_factory) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 05:
    the correct student and each attempt, one batch of each."""
    return _graded_both(GPT_NB, _students(GPT_NB, GPT_ATTEMPTS, appended=GPT_WRAPPED), tmp_path_factory)


def test_05_correct_keeps_full_marks(forged_05):
    row, plain = forged_05["correct"]["grade"], forged_05["correct"]["nbgrader"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in (*GPT_ATTEMPTS.values(),
                                                                         *GPT_WRAPPED.values())), row
    assert plain.failed_tests == [] and plain.score == plain.auto_max, plain


@pytest.mark.parametrize("attempt", sorted(GPT_ATTEMPTS) + sorted(GPT_WRAPPED))
def test_05_forgery_scores_zero_on_its_exercise(forged_05, attempt):
    # the expected values are the grader's, and neither the reference nor the course's GPT is in 05's graded
    # kernel: no points, whatever the flags, under either grader
    grade_id = (GPT_ATTEMPTS.get(attempt) or GPT_WRAPPED[attempt])[0]
    row, test = forged_05[attempt]["grade"], f"{grade_id}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_05[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"


# ---------------------------------------------------------------- notebook 08, graded from records
# The course's tokenizer (lmcourse.bpe, given code for 08's later sections) does every exercise of 08. It used to
# stay in 08's graded kernel, refused there only by the in-kernel rules, which a profile function chained before
# them switches off. It is withheld there now like the reference: each route to it scores 0 on its exercise.
BPE_NB = "08_bpe"
BPE_ATTEMPTS = {
    # the gaming student: the course's function as the answer
    "given_import_as_the_answer": ("encode", "from lmcourse.bpe import encode\n"),
    # given code run unwatched inside a chained profile callback, with a wrong answer if it is absent
    "given_trainer_in_a_chained_profile": ("train_bpe_incremental",
        "import contextlib\n"
        "import sys\n\n"
        "try:\n"
        "    import lmcourse.bpe as _B\n"
        "except ImportError:\n"
        "    _B = None\n"
        "_answer = {}\n\n\n"
        "def _chain(frame, event, arg):\n"
        "    if _B is not None and event == 'call' and frame.f_code.co_name == 'train_bpe_incremental' \\\n"
        "            and 'vocab_size' in frame.f_locals and frame.f_code.co_filename != _B.__file__:\n"
        "        f = frame.f_locals\n"
        "        _answer['v'] = _B.train_bpe_incremental(f['text'], f['vocab_size'], f['special_tokens'])\n\n\n"
        "_stack = contextlib.ExitStack()\n"
        "_stack.callback(sys.setprofile, _chain)\n"
        "_stack.close()\n\n\n"
        "def train_bpe_incremental(text, vocab_size, special_tokens=()):\n"
        "    return _answer.pop('v', ({i: bytes([i]) for i in range(256)}, []))\n"),
    # a result whose items run the course's trainer when read (after the rules' block, if ever)
    "given_trainer_behind_a_tuple_subclass": ("train_bpe",
        "class _Lazy(tuple):\n"
        "    def __getitem__(self, i):\n"
        "        import lmcourse.bpe as course\n"
        "        return course.train_bpe(*self.args)[i]\n\n"
        "    def __iter__(self):\n"
        "        return iter((self[0], self[1]))\n\n\n"
        "def train_bpe(text, vocab_size, special_tokens=()):\n"
        "    out = _Lazy(({}, []))\n"
        "    out.args = (text, vocab_size, special_tokens)\n"
        "    return out\n"),
}


@pytest.fixture(scope="module")
def forged_08(tmp_path_factory) -> dict[str, dict]:
    """student -> {"grade": grades.csv row of `lmcourse grade`, "nbgrader": plain nbgrader's score} of 08:
    the correct student and each attempt, one batch of each."""
    return _graded_both(BPE_NB, _students(BPE_NB, BPE_ATTEMPTS), tmp_path_factory)


def test_08_correct_keeps_full_marks(forged_08):
    row, plain = forged_08["correct"]["grade"], forged_08["correct"]["nbgrader"]
    assert row["status"] == "graded" and row["flags"] == "", row
    assert all(float(row[f"{grade_id}_tests"]) > 0 for grade_id, _ in BPE_ATTEMPTS.values()), row
    assert plain.failed_tests == [] and plain.score == plain.auto_max, plain


@pytest.mark.parametrize("attempt", sorted(BPE_ATTEMPTS))
def test_08_forgery_scores_zero_on_its_exercise(forged_08, attempt):
    # the course's tokenizer is withheld while 08 is graded: no points, whatever the flags, under either grader
    row, test = forged_08[attempt]["grade"], f"{BPE_ATTEMPTS[attempt][0]}_tests"
    assert row["status"] == "graded" and float(row[test]) == 0, f"{attempt}: {test} scored {row[test]}: {row}"
    plain = forged_08[attempt]["nbgrader"]
    assert test in plain.failed_tests, f"{attempt}: plain nbgrader: {plain}"
