"""The test cells' side, in the student's kernel: run the student's code on the test's inputs.

A test cell is two calls (``tests`` is made by the notebook's setup cell): the visible part
``tests.check("count_ngrams")`` (the visible cases, judged here: messages that teach), and in the
hidden-tests block ``tests.grade("count_ngrams", hidden="...")`` (under the grader: every case
recorded, judged outside).

At home :meth:`Exam.check` judges the visible cases in the kernel (:mod:`.judge`) and raises
:class:`~lmcourse.checks.CheckFailed` with the message; under the autograder
(``NBGRADER_EXECUTION=autograde``) it does nothing, and :meth:`Exam.grade` runs every case,
visible and hidden, writes what came back as plain data into the cell's output (:data:`MIME`),
and raises :class:`AwaitingJudge`: the cell fails (0 points) unless a judge reads the record. The
grader reads those records in its own process and puts its verdict in place of that error
(:mod:`.grader`): no expected value and no reference code exists in a graded kernel, so nothing
a student's code does in it can make a wrong answer pass. Run outside the autograder (the
solution notebook), :meth:`Exam.grade` judges the hidden cases here, with the same code the
grader uses.

Hidden cases arrive with their own test cell: the build writes an exercise's hidden cases into its
``tests.grade`` line as source (:mod:`.hidden_source`), which a graded kernel compiles when that
line runs; it imports no hidden module (its package has none).

Stand-ins ("one mistake costs once"): an exercise's cases run with the reference versions of the
earlier exercises it names (:attr:`.spec.Exercise.standins`) in the notebook's globals. In a
graded notebook their code arrives with the hidden test of the exercise that needs them (the
build writes it there, :mod:`.standins`): it exists in the kernel only after the records
of the exercises it answers were taken.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import os
import sys
from typing import Any

from .hidden_source import load_hidden
from .judge import judge_exercise, observe
from .plain import Raised, decode, raised
from .spec import Case, Exercise, Names, Notebook
from .standins import load_standins

__all__ = ["MIME", "AwaitingJudge", "Exam", "MissingHiddenCases", "expected_table", "grading", "hidden_cases",
           "recorded_expected", "withhold"]

MIME = "application/vnd.lmcourse.record+json"
PASS_LINE = "the visible checks pass (the autograder also runs hidden tests)"


def grading() -> bool:
    """True while an autograder runs the notebook: the records are taken, the verdict is not made here."""
    return os.environ.get("NBGRADER_EXECUTION") == "autograde"


class Exam:
    """One notebook's tests, bound to the notebook's namespace (``globals()`` of the setup cell)."""

    def __init__(self, notebook: str, namespace: dict):
        from .notebooks import load

        self._notebook: Notebook = load(notebook)
        self._ns = namespace
        _import_what_torch_imports_late()
        if grading():
            withhold(self._notebook)
            if _in_a_kernel():      # for good: an audit hook cannot be removed (not in a test's own process)
                keep_profile()

    def check(self, name: str) -> None:
        """The visible cases of exercise ``name``, judged in this kernel (nothing under the autograder,
        which takes them with the hidden ones)."""
        __tracebackhide__ = True

        ex = self._notebook.exercise(name)
        if grading():
            print(f"{name}: recorded for the autograder with the hidden tests")
            return
        standins = self._imported_standins(ex)
        got = self._run(ex, ex.cases, standins, refuse_reference=True)
        outcome = self._judge(ex, ex.cases, got, len(ex.cases))
        if not outcome.passed:
            raise _home_error(outcome, got)
        print(f"{name}: {PASS_LINE}")

    def grade(self, name: str, standins: str | None = None, hidden: str | None = None) -> None:
        """Under the autograder: every case of ``name`` run and recorded, then :class:`AwaitingJudge`
        raised, so the cell scores 0 unless the course's judge replaces it with its verdict. Elsewhere:
        the hidden cases judged here. ``standins`` and ``hidden``: the stand-ins' source and the
        exercise's hidden cases as source, written by the build (:mod:`.grade_line`)."""
        __tracebackhide__ = True
        from lmcourse.checks import CheckFailed

        ex = self._notebook.exercise(name)
        if hidden is not None:
            cases = load_hidden(hidden, ex)
        elif grading():
            raise MissingHiddenCases(
                f"{name}: this hidden test carries no hidden cases (tests.grade({name!r}, hidden=...)), and a graded "
                "kernel has no hidden module to take them from: grade the source notebook `lmcourse build` writes "
                "(autograder/source/), not one edited by hand")
        else:
            cases = hidden_cases(self._notebook, name)
        loaded = load_standins(standins, ex) if standins else self._imported_standins(ex)
        if grading():
            trees = self._run(ex, ex.cases + cases, loaded)
            _publish({"notebook": self._notebook.name, "exercise": name, "cases": trees})
            raise AwaitingJudge(
                f"{name}: this cell's points are decided by the course's judge, which reads the record above and "
                "puts its verdict here in place of this message; nbgrader without the course's config "
                "(autograder/nbgrader_config.py, which runs JudgeRecords) scores this cell 0") from None
        got = self._run(ex, cases, loaded)
        outcome = self._judge(ex, cases, got, 0)
        if not outcome.passed:
            raise CheckFailed(outcome.message)
        print(f"{name}: the hidden tests pass")

    def _run(self, ex: Exercise, cases: tuple[Case, ...], standins: dict[str, Any],
             refuse_reference: bool = False) -> list[Any]:
        from lmcourse.marking.refusals import substitute

        names = Names(self._ns)
        own = self._own_code(ex) if refuse_reference else contextlib.nullcontext
        trees = []
        for case in cases:
            before = _modes()
            with substitute(self._ns, **standins), (ex.rules() if ex.rules else contextlib.nullcontext()), own():
                tree = observe(case.call, names)
            left = before or _modes()
            trees.append(tree if not left else raised(ModeRefused(
                f"a torch mode of yours ({_type_name(type(left[0]))}) was on while the test ran: the test's own "
                "computations on what your code returned go through it — leave no TorchFunctionMode or "
                "TorchDispatchMode entered")))
        return trees

    def _own_code(self, ex: Exercise):
        """At home the reference is installed: a call of the exercise's own reference answer is
        refused here, so the student learns before handing in what the grader will find (its
        kernel has no reference at all)."""
        from lmcourse.marking.refusals import forbid_calls

        if not _importable(self._notebook.reference):
            return contextlib.nullcontext
        ref = importlib.import_module(self._notebook.reference)
        target = getattr(ref, ex.answer or ex.name, None)
        if target is None:
            return contextlib.nullcontext
        reason = (f"a graded answer must be your own code: {self._notebook.reference}.{ex.answer or ex.name} is not "
                  "available when the notebook is graded")
        return lambda: forbid_calls(target, reason=reason)

    def _judge(self, ex: Exercise, cases: tuple[Case, ...], trees: list[Any], n_visible: int):
        from .judge import expected_values

        if _importable(self._notebook.reference):
            want = expected_values(self._notebook.reference, cases)
        else:       # a student's release ships the visible cases' expected values, not the reference
            want = [decode(t) for t in recorded_expected(self._notebook.name)[ex.name]]
        return judge_exercise(ex, cases, [decode(t) for t in trees], want, n_visible)

    def _imported_standins(self, ex: Exercise) -> dict[str, Any]:
        """The stand-ins from the reference, where it is installed (a student's release for this
        notebook has none: then the student's own earlier functions run, and a slip there shows
        in this exercise's visible checks too, at home only)."""
        if not ex.standins or not _importable(self._notebook.reference):
            return {}
        ref = importlib.import_module(self._notebook.reference)
        return {n: getattr(ref, n) for n in ex.standins}


def _import_what_torch_imports_late() -> None:
    """torch imports ``torch._dynamo`` (sympy with it) the first time one of its own functions marked
    not to be compiled runs: an optimizer, a kernel of the 'meta' device that is written in Python. When
    that first time is inside a test, the import runs under the rules' watch, where each of its thousands
    of functions that run once costs a verdict: about three times the import's own time. Imported here,
    before any test, it costs what an import costs; a notebook that imports no torch imports none."""
    if "torch" in sys.modules:
        importlib.import_module("torch._dynamo")


def _home_error(outcome, trees: list[Any]) -> Exception:
    """The error a failed visible check raises at home: an exercise not answered yet, or a name not
    defined yet, stays a NotImplementedError or a NameError (what Validate and the lab explain);
    anything else is a CheckFailed with the judge's message. Each shows as a CheckFailed does: the
    message and the notebook's own lines, none of the course's frames (the student's code raised
    nothing out of the check: what it raised is in the message)."""
    import functools

    from lmcourse.checks import CheckFailed

    raised = decode(trees[outcome.checked]) if outcome.checked < len(trees) else None
    if type(raised) is Raised and raised.ename in ("NotImplementedError", "NameError") and (
            raised.ename == "NameError" or raised.unanswered):
        error = (NotImplementedError if raised.ename == "NotImplementedError" else NameError)(outcome.message)
        error._render_traceback_ = functools.partial(CheckFailed._render_traceback_, error)
        return error
    return CheckFailed(outcome.message)


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


EXPECTED_DIR = "expected"      # lmcourse/marking/expected/<notebook>.json, written into a release


def recorded_expected(notebook: str) -> dict[str, list]:
    """The visible cases' expected values as a release ships them: ``{exercise: [plain-data tree]}``."""
    import json
    from pathlib import Path

    path = Path(__file__).with_name(EXPECTED_DIR) / f"{notebook}.json"
    if not path.is_file():
        raise FileNotFoundError(f"neither the reference of {notebook} nor its recorded expected values ({path}) "
                                "are installed: reinstall the course release")
    return json.loads(path.read_text(encoding="utf-8"))


def expected_table(notebook: str) -> dict[str, list]:
    """What :func:`recorded_expected` reads, computed from the reference (by ``lmcourse release``)."""
    from .judge import observe
    from .notebooks import load

    spec = load(notebook)
    names = Names(vars(importlib.import_module(spec.reference)))
    return {ex.name: [observe(c.expect or c.call, names) for c in ex.cases] for ex in spec.exercises}


class _Withheld(importlib.abc.MetaPathFinder):
    """Refuses to import the modules a graded kernel must not have, with a message saying why."""

    def __init__(self, notebook: Notebook, names: frozenset[str] | None = None):
        self.names, self.notebook = frozenset(notebook.withheld) if names is None else names, notebook.name

    def find_spec(self, name, path=None, target=None):
        if name in self.names:
            raise ImportError(f"{name} is not available while notebook {self.notebook} is graded: a graded "
                              "answer must be your own code", name=name)
        return None


def withhold(notebook: Notebook) -> None:
    """From here on this kernel cannot import the notebook's reference (run by the setup cell
    under the autograder, before any cell of the student's). Under ``lmcourse grade`` with
    bubblewrap the files themselves read as empty too (:func:`lmcourse.grading.sandbox.withheld_files`);
    under plain nbgrader this refusal is all there is (docs/ta-guide.md, "What the autograder can and cannot see").
    Done once: ``lmcourse grade``'s preamble does it before any student cell."""
    if any(type(f) is _Withheld for f in sys.meta_path):
        return
    names = frozenset(notebook.withheld) | (_other_answers() - set(notebook.uses)) | _hidden_modules()
    for name in set(notebook.withheld) | _hidden_modules():
        sys.modules.pop(name, None)
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and child in vars(sys.modules[parent]):
            delattr(sys.modules[parent], child)
    sys.meta_path.insert(0, _Withheld(notebook, names))


class ModeRefused(RuntimeError):
    """A torch function or dispatch mode of a student's was on around a case."""


_type_name = type.__dict__["__name__"].__get__      # a metaclass cannot lie about it


def _modes() -> tuple:
    """The torch function and dispatch modes on now, but torch's default-device mode
    (``torch.set_default_device``): a case counts on plain tensors, and a mode entered by a
    student's code (before the case, or inside it and left on) would answer the test's own
    computations on them (a variance, a share of draws) however the answer was made."""
    torch = sys.modules.get("torch")
    if torch is None:
        return ()
    from torch.utils._device import DeviceContext

    c = torch._C
    on = [c._get_function_stack_at(i) for i in range(c._len_torch_function_stack())]
    on += [c._get_dispatch_stack_at(i) for i in range(c._len_torch_dispatch_stack())]
    return tuple(m for m in on if type(m) is not DeviceContext)


class ProfileRefused(RuntimeError):
    """A student's code set this kernel's profile or trace function in a graded kernel."""


_KEEPING: list[bool] = []


def _in_a_kernel() -> bool:
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


def keep_profile() -> None:
    """From here on only the course's own code sets this kernel's profile or trace function (run by
    the setup cell under the autograder, before any cell of the student's). The rules of a graded call
    watch what runs through a profile function: one a student's code sets in its place switches them
    off for the call, and one set before the call and chained by theirs runs code no profile event
    shows (third-party equivalents, torch's recurrent kernels). An audit hook refuses both, and an
    audit hook cannot be removed; its state is in its closure only."""
    if _KEEPING:
        return
    _KEEPING.append(True)
    import sysconfig

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    roots = (package, os.path.realpath(package) + os.sep)
    stdlib = tuple({os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep, "<frozen ",
                    sysconfig.get_paths()["stdlib"] + os.sep, os.path.dirname(os.__file__) + os.sep})
    # bound here: rebinding the module's names later changes nothing the hook reads
    events, modules, getframe, realpath, str_, type_ = ("sys.setprofile", "sys.settrace"), sys.modules, \
        sys._getframe, os.path.realpath, str, type
    refused = ProfileRefused

    def course(f) -> bool:
        # the file name alone can be forged (compile(src, lmcourse.x.__file__, "exec")): the frame must
        # also run in that module's own globals
        fn, g = f.f_code.co_filename, f.f_globals
        name = g.get("__name__")
        module = modules.get(name) if type_(name) is str_ else None
        file = getattr(module, "__file__", None)
        return (fn.startswith(roots) and module is not None and getattr(module, "__dict__", None) is g
                and type_(file) is str_ and realpath(file) == realpath(fn))

    def hook(event, args):
        if event not in events:
            return
        f = getframe(1)         # what called it; the standard library (contextlib's callbacks) speaks for its caller
        while f is not None and not course(f):
            if not f.f_code.co_filename.startswith(stdlib):
                raise refused(f"{event} from your code is refused in a graded notebook: the rules of a graded call "
                              "watch what runs through the course's profile function")
            f = f.f_back

    sys.addaudithook(hook)


def _other_answers() -> frozenset[str]:
    """The answers of the other notebooks that nothing in this kernel has imported by now (its tests,
    read by the setup cell, import what they need first): one notebook's answer can do part of
    another's work (05's sampler drives 02's RNN), so a graded kernel has none it does not need."""
    import pkgutil

    import lmcourse.reference

    return frozenset(name for name in (f"lmcourse.reference.{m.name}" for m in pkgutil.iter_modules(
        lmcourse.reference.__path__)) if name not in sys.modules)


def _hidden_modules() -> frozenset[str]:
    """Every notebook's hidden cases module: a graded kernel takes an exercise's hidden cases from the
    text its own test cell carries, and imports none of these (the graded kernel's package has none)."""
    import pkgutil
    from pathlib import Path

    return frozenset(f"{__package__}.{m.name}" for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                     if m.name.endswith("_hidden"))


def hidden_cases(notebook: Notebook, name: str) -> tuple[Case, ...]:
    """The hidden cases of exercise ``name``, from the notebook's hidden module (the grader's, and the
    solution notebook's at home). Fails loudly: a module that does not import, an exercise with no
    entry, or an entry whose key names no exercise (a misspelt name, whose exercise has none) would
    otherwise grade on the visible cases alone with nothing said."""
    try:
        module = importlib.import_module(notebook.hidden)
    except ImportError as exc:
        raise MissingHiddenCases(f"{notebook.name}: the hidden cases ({notebook.hidden}) do not import ({exc}): "
                                 "they are the grader's, not in a student's release") from exc
    table = getattr(module, "HIDDEN", None)
    stray = sorted(set(table) - {ex.name for ex in notebook.exercises}) if isinstance(table, dict) else []
    if stray:
        raise MissingHiddenCases(f"{notebook.name}: {notebook.hidden}.HIDDEN has cases for {stray}, which name no "
                                 "exercise of the notebook")
    if not isinstance(table, dict) or not table.get(name):
        raise MissingHiddenCases(f"{notebook.name}: {notebook.hidden}.HIDDEN has no cases for {name!r}")
    return tuple(table[name])


class MissingHiddenCases(LookupError):
    """An exercise's hidden cases are not where the test looks for them."""


class AwaitingJudge(Exception):
    """Raised by a graded test cell right after its record: the cell's points are the judge's to give,
    and a test cell no judge reads stays failed (0 points) instead of passing by default."""


def _publish(record: dict) -> None:
    from IPython.display import publish_display_data

    publish_display_data({MIME: record, "text/plain": f"(the record of {record['exercise']} for the grader)"})
