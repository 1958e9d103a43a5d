"""Test strength: inject typical student bugs ("mutants") and check the tests catch them; and
the dual, valid solutions written another way ("alternatives"), which must keep every point.

A mutant replaces one graded answer cell with a plausible wrong implementation. The harness
runs the solution notebook once in a single kernel (the ``tiny`` profile, as the autograder
would), then for each mutant: executes the mutant's source (redefining the function), re-runs
the test cells from the target's onwards — first the **visible** part (as released to
students), then the **full** cell with hidden tests — and finally restores the solution.
One kernel per notebook keeps hundreds of mutants within CI's budget.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import tempfile
import textwrap
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from ..marking import notebooks
from ..marking.grader import judge_cell
from ..marking.kernel import AwaitingJudge
from ..notebook_runner import ipc_kernel_config
from .build import MARKER_RE


@dataclass(frozen=True)
class Patch:
    """Edits to the master's own answer cell, applied when the catalogue is loaded (see :func:`patch`)."""
    edits: tuple[tuple[str, str], ...]
    subclass: str | None = None


@dataclass(frozen=True)
class Variant:
    """One replacement of an answer cell: a mutant (a typical bug, which must lose points) or an
    alternative (a valid solution written another way, which must keep every point)."""
    name: str  # the mistake, or how the solution differs, in words a student would recognise
    target: str  # grade id of the answer cell it replaces
    source: str | Patch  # the replacement cell; a Patch becomes its text when the catalogue loads


Mutant = Alternative = Variant  # the catalogues' two names for the one record


class PatchError(ValueError):
    """A patch's text is not in the master's answer cell (exactly once): the master changed."""


def patch(*edits: tuple[str, str], subclass: str | None = None) -> Patch:
    """A mutant made from the master's own answer cell: each ``(old, new)`` replaces ``old``,
    which must occur exactly once in the cell (``### BEGIN/END SOLUTION`` lines removed), by
    ``new``; edits apply in order. A master that no longer holds ``old`` stops the catalogue
    from loading, naming the mutant, so a mutant never tests code the master has left behind.

    ``old`` and ``new`` are written without the cell's indentation: their first line is
    matched and replaced where it stands in a line, the lines after it at that line's
    indentation. ``new=""`` for whole lines deletes those lines.

    ``subclass="GPT"``: the cell defines class ``GPT``; the mutant redefines it as a subclass of
    the solution's class holding only the methods the edits changed (as :func:`override`), a
    changed ``__init__`` calling ``nn.Module.__init__(self)`` rather than the solution's."""
    if not edits:
        raise ValueError("patch() needs at least one (old, new) pair")
    for e in edits:
        if not (isinstance(e, tuple) and len(e) == 2 and all(isinstance(t, str) for t in e)):
            raise TypeError(f"patch() takes (old, new) pairs of str, got {e!r}")
    return Patch(tuple(edits), subclass)


def _lines(text: str) -> list[str]:
    return textwrap.dedent(text.strip("\n")).split("\n")


def _apply(cell: str, old: str, new: str) -> str:
    """``cell`` with ``old`` (first line anywhere in a line, later lines at that line's
    indentation) replaced by ``new``; :class:`PatchError` unless ``old`` is there exactly once."""
    olds, news = _lines(old), _lines(new)
    if not olds[0]:
        raise PatchError("an edit's old text is empty")
    found = []
    start = cell.find(olds[0])
    while start != -1:
        line_start = cell.rfind("\n", 0, start) + 1
        indent = cell[line_start:start]
        indent = indent[:len(indent) - len(indent.lstrip())]
        text = "\n".join([olds[0]] + [indent + ln if ln else ln for ln in olds[1:]])
        if cell.startswith(text, start):
            found.append((start, start + len(text), line_start, indent))
        start = cell.find(olds[0], start + 1)
    if len(found) != 1:
        raise PatchError(f"found {len(found)} times, not once")
    start, end, line_start, indent = found[0]
    whole_lines = cell[line_start:start].strip() == "" and (end == len(cell) or cell[end] == "\n")
    if news == [""] and whole_lines:  # delete the lines themselves, not just their text
        return cell[:line_start] + cell[end + 1:] if end < len(cell) else cell[:max(0, line_start - 1)]
    text = "\n".join([news[0]] + [indent + ln if ln else ln for ln in news[1:]])
    return cell[:start] + text + cell[end:]


@cache
def _answer_cells(master: Path, stamp: tuple[int, int]) -> dict[str, str]:
    nb = jupytext.read(master, fmt="py:percent")
    return {c.metadata["solution"]: "\n".join(ln for ln in c.source.split("\n") if not MARKER_RE.match(ln)).strip("\n")
            for c in nb.cells if c.cell_type == "code" and "solution" in c.metadata}


def answer_cell(master: Path, target: str) -> str:
    """The text of the master's answer cell ``solution="<target>"``, as the solution notebook
    has it (markers removed)."""
    st = master.stat()
    cells = _answer_cells(master, (st.st_mtime_ns, st.st_size))  # read again once edited
    if target not in cells:
        raise PatchError(f"{master.name} has no answer cell solution={target!r}")
    return cells[target]


def _methods(cell: str, cls: str) -> dict[str, str]:
    """``{name: source}`` of the methods of class ``cls`` in ``cell`` (decorators included)."""
    lines = cell.split("\n")
    for node in ast.parse(cell).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {f.name: "\n".join(lines[(f.decorator_list[0].lineno if f.decorator_list else f.lineno) - 1:
                                            f.end_lineno])
                    for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    raise PatchError(f"the answer cell defines no class {cls}")


def apply_patch(cell: str, p: Patch) -> str:
    """The replacement cell that patch ``p`` makes of the answer cell ``cell``."""
    out = cell
    for i, (old, new) in enumerate(p.edits, 1):
        try:
            out = _apply(out, old, new)
        except PatchError as exc:
            raise PatchError(f"edit {i} of {len(p.edits)}: {exc}: {old!r}") from None
    if p.subclass is None:
        return out + "\n"
    before, after = _methods(cell, p.subclass), _methods(out, p.subclass)
    changed = [src for name, src in after.items() if before.get(name) != src]
    if not changed:
        raise PatchError(f"the edits change no method of {p.subclass}")
    changed = [src.replace("super().__init__()", "nn.Module.__init__(self)", 1)
               if src.lstrip().startswith("def __init__") else src for src in changed]
    return override(p.subclass, *changed)


def resolve(variant: Variant, master: Path, catalogue: str = "") -> Variant:
    """``variant`` with a :class:`Patch` made into the cell's text, read from ``master`` now;
    the error names the catalogue, the variant and the text that is missing."""
    if not isinstance(variant.source, Patch):
        return variant
    try:
        return replace(variant, source=apply_patch(answer_cell(master, variant.target), variant.source))
    except PatchError as exc:
        raise PatchError(f"{catalogue or master.name}: {variant.name!r} (target {variant.target!r}) "
                         f"no longer fits {master.name}'s answer cell: {exc}") from None


def override(cls: str, *methods: str) -> str:
    """A replacement cell that breaks only the given methods of the solution's class ``cls``.

    Each of ``methods`` is a method's full source (``def forward(self, x): ...``, at any
    indentation). The cell defines ``cls`` again as a subclass of the solution's class, so
    ``__init__`` and every method not given stay exactly as the solution wrote them, and a
    catalogue never retypes a master's code it does not break. The solution's own class object
    is left untouched (objects built before the mutant keep it), and running the solution cell
    again, as the harness does after each mutant, binds the name to the solution once more.

    A method given here runs instead of the solution's; a broken ``__init__`` that should not
    build the solution's layers first calls ``nn.Module.__init__(self)`` rather than ``super()``.
    """
    if not methods:
        raise ValueError("override() needs at least one method's source")
    body = "\n\n".join(textwrap.indent(textwrap.dedent(m).strip("\n"), "    ") for m in methods)
    return f"class {cls}({cls}):  # the solution's class with the methods below broken\n{body}\n"


def forged_choice(answer: str, wrong_letter: str) -> Mutant:
    """A multiple-choice answer forged to pass any comparison: a str subclass holding
    ``wrong_letter`` whose ``strip()`` returns an object equal to every letter. A question
    checked as ``answer.strip().upper() == letter`` gives it the point; ``check_choice`` reads
    the str it holds and does not. ``answer`` is the answer's name and its cell's grade id is
    ``answer`` without the ``answer_`` prefix."""
    source = f'''
class _AnyLetter:
    def upper(self):
        return self

    def __eq__(self, other):
        return True

    def __hash__(self):
        return hash("B")


class _Forged(str):
    def strip(self, *args):
        return _AnyLetter()


{answer} = _Forged("{wrong_letter}")
'''
    return Mutant(f"{answer} forged: a str subclass whose strip() returns an object equal to every letter",
                  answer.removeprefix("answer_"), source)


@dataclass
class MutantResult:
    mutant: Mutant
    lost_points: bool = False
    caught_visible_by: str | None = None  # grade id of the first visible test that failed
    message: str = ""  # that test's message (or the hidden test's, if only hidden caught it)
    hidden_only_by: str | None = None
    failed_cells: list[str] = field(default_factory=list)  # grade ids of the test cells that fail

    @property
    def caught_visible(self) -> bool:
        return self.caught_visible_by is not None

    @property
    def costs_once(self) -> bool:
        """Only the target's own test cell fails (its grade id is the target's + ``_tests``)."""
        return self.failed_cells == [f"{self.mutant.target}_tests"]


def variants_path(root: Path, name: str) -> Path:
    """The catalogue of notebook ``name`` (e.g. '01_ngram'): ``autograder/variants/<name>.py``,
    which defines its ``MUTANTS`` and its ``ALTERNATIVES``."""
    return root / "autograder" / "variants" / f"{name}.py"


def _load_catalogue(path: Path, attr: str) -> list:
    spec = importlib.util.spec_from_file_location(f"{attr.lower()}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    master = path.parent.parent / "masters" / path.name  # autograder/variants/01_ngram.py -> masters/01_ngram.py
    where = f"{path.parent.name}/{path.name} {attr}"  # the file holds both lists: name the one
    if not hasattr(module, attr):
        raise ValueError(f"{path} defines no {attr}")
    entries = [resolve(v, master, where) for v in getattr(module, attr)]
    names = [m.name for m in entries]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"{path}: names in {attr} must be unique, repeated: {sorted(dupes)}")
    return entries


def load_mutants(path: Path) -> list[Mutant]:
    """``MUTANTS`` of ``autograder/variants/NN_name.py``, each patch made from the master's answer
    cell (``autograder/masters/NN_name.py``) as it is now."""
    return _load_catalogue(path, "MUTANTS")


def load_alternatives(path: Path) -> list[Alternative]:
    """``ALTERNATIVES`` of ``autograder/variants/NN_name.py``."""
    return _load_catalogue(path, "ALTERNATIVES")


def _error_text(exc: Exception) -> str:
    if isinstance(exc, CellTimeoutError):
        return "timed out (the test cell did not finish)"
    if isinstance(exc, DeadKernelError):
        return "the kernel died"
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    return f"{ename}: {evalue}".strip()


class NotebookSession:
    """A kernel that has run a source notebook, ready to run extra code."""

    def __init__(self, source_nb: Path, release_nb: Path, cell_timeout: int = 60):
        self.source = nbformat.read(source_nb, as_version=4)
        release = nbformat.read(release_nb, as_version=4)
        self.visible = {c.metadata["nbgrader"]["grade_id"]: c.source for c in release.cells
                        if c.metadata.get("nbgrader", {}).get("grade")
                        and c.cell_type == "code"}
        self.cells = list(self.source.cells)
        # nbclient stores each executed cell back into the notebook at its index, so extra
        # code runs in one scratch slot after the real cells
        self.source.cells.append(nbformat.v4.new_code_cell(""))
        self._scratch = len(self.cells)
        self.workdir = source_nb.parent
        self.name = source_nb.stem
        # the test cells of a notebook graded from records are judged from their records, by the
        # grader's own code (lmcourse.marking.grader), as a graded run is
        self.recorded = ({ex.test_id: ex.name for ex in notebooks.load(self.name).exercises}
                         if notebooks.marked(self.name) else {})
        # a recorded test cell ends in AwaitingJudge after its record (what nbgrader, which allows every
        # error, scores 0 unless the course's judge reads the record): judged here as the judge does
        self._sockets = tempfile.mkdtemp(prefix="lmcourse-kernel-")
        self.client = NotebookClient(self.source, kernel_name="python3", timeout=cell_timeout,
                                     allow_error_names=[AwaitingJudge.__name__],
                                     config=ipc_kernel_config(self._sockets),
                                     resources={"metadata": {"path": str(self.workdir)}})

    def _meta(self, cell) -> dict:
        return cell.metadata.get("nbgrader", {})

    def index_of(self, grade_id: str) -> int:
        for i, cell in enumerate(self.cells):
            if self._meta(cell).get("grade_id") == grade_id:
                return i
        raise KeyError(f"no cell with grade id {grade_id!r}")

    def run(self, source: str):
        """Execute code in the kernel and return the executed cell; raises CellExecutionError /
        CellTimeoutError."""
        cell = nbformat.v4.new_code_cell(source)
        self.client.execute_cell(cell, self._scratch, store_history=False)
        return cell

    def judge(self, index: int, visible: bool = True) -> tuple[bool, bool, str]:
        """Run test cell ``index`` in full: (it passed, a visible check failed, the message). A
        recorded cell is judged from its records (its visible cases come first, so "visible" is
        whether the first failing case is one of them); another cell by whether it raised, its
        visible part run first when ``visible`` (a test that changes state runs once otherwise)."""
        gid = self._meta(self.cells[index])["grade_id"]
        if gid in self.recorded:
            try:
                cell = self.run(self.cells[index].source)
            except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
                return False, True, _error_text(exc)
            outcome = judge_cell(self.name, self.recorded[gid], cell)
            return outcome.passed, not outcome.passed and not outcome.hidden, outcome.text()
        caught = ""
        if visible:
            try:
                self.run(self.visible[gid])
            except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
                caught = _error_text(exc)
        try:
            self.run(self.cells[index].source)
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
            return False, bool(caught), caught or _error_text(exc)
        return not caught, bool(caught), caught

    def test_cells_after(self, index: int) -> list[int]:
        return [i for i, c in enumerate(self.cells) if i > index and self._meta(c).get("grade")
                and c.cell_type == "code"]

    @contextmanager
    def started(self, env: dict[str, str] | None = None):
        """Start the kernel and run the whole source notebook (it must pass)."""
        saved = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        try:
            with self.client.setup_kernel():
                self._run_notebook()
                yield self
        finally:
            shutil.rmtree(self._sockets, ignore_errors=True)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def _run_notebook(self) -> None:
        for i, cell in enumerate(self.cells):
            if cell.cell_type == "code":
                self.client.execute_cell(cell, i)
                gid = self._meta(cell).get("grade_id")
                if gid in self.recorded:     # a recorded test cell raises only AwaitingJudge: judge it
                    outcome = judge_cell(self.name, self.recorded[gid], cell)
                    if not outcome.passed:
                        raise ValueError(f"{self.name}: the solution fails its own test: {outcome.text()}")

    def try_mutant(self, mutant: Mutant, recover: bool = True) -> MutantResult:
        """Put ``mutant`` in place of its target, then run every test cell from the target's on:
        the visible part (until one catches it) and the whole cell, noting each cell that fails
        (one mistake should cost exactly its own test cell); finally restore the solution (and,
        with ``recover``, check the state it left: :meth:`_recover_state`)."""
        target = self.index_of(mutant.target)
        result = MutantResult(mutant)
        try:
            self.run(mutant.source)
        except (CellExecutionError, CellTimeoutError) as exc:
            raise ValueError(f"mutant {mutant.name!r} does not even define cleanly: {_error_text(exc)}") from exc
        ran: list[int] = []
        try:
            for i in self.test_cells_after(target):
                ran.append(i)
                gid = self._meta(self.cells[i])["grade_id"]
                passed, visible, message = self.judge(i, visible=result.caught_visible_by is None)
                if visible and result.caught_visible_by is None:
                    result.caught_visible_by, result.message = gid, message
                if not passed:
                    result.failed_cells.append(gid)
                    if result.caught_visible_by is None and result.hidden_only_by is None:
                        result.hidden_only_by, result.message = gid, message
        finally:
            self.run(self.cells[target].source)  # restore the solution
        result.lost_points = bool(result.failed_cells)
        if recover:
            self._recover_state(ran)
        return result

    def try_mutants(self, mutants: list[Mutant]) -> list[MutantResult]:
        """Every mutant (results in the catalogue's order), tried target by target with the state
        check once per target instead of once per mutant (it re-runs every test cell from the
        target on, so it cost a third of the harness's time). Each mutant's pass re-runs, in
        order, every test cell from its target on, so the state those cells build is rebuilt
        before it is read; the state the notebook's other cells built is not, and if a mutant
        damaged it the check at the target's end fails: then the notebook runs again from the top
        and that target's mutants are tried again one at a time, each checked as before
        (:meth:`_recover_state`)."""
        return self._by_target(mutants, self.try_mutant)

    def try_alternatives(self, alternatives: list[Alternative]) -> list[list[tuple[str, str]]]:
        """Every alternative's failures (:meth:`try_alternative`), in order, with the state check
        once per target as :meth:`try_mutants` does."""
        return self._by_target(alternatives, self.try_alternative)

    def _by_target(self, variants: list[Variant], try_one) -> list:
        by_target: dict[str, list[int]] = {}
        for k, v in enumerate(variants):
            by_target.setdefault(v.target, []).append(k)
        results: dict[int, object] = {}
        for target, ks in by_target.items():
            tried = [try_one(variants[k], recover=False) for k in ks]
            if not self._solution_passes(self.test_cells_after(self.index_of(target))):
                self._run_notebook()
                tried = [try_one(variants[k]) for k in ks]
            results.update(zip(ks, tried))
        return [results[k] for k in range(len(variants))]

    def _solution_passes(self, cells: list[int]) -> bool:
        return all(self.judge(i, visible=False)[0] for i in cells)

    def try_alternative(self, alt: Alternative, recover: bool = True) -> list[tuple[str, str]]:
        """Run ``alt`` in place of its target, then every test cell after it in full (visible
        and hidden); return the failures as ``(grade id, message)`` — empty when it keeps
        every point (``recover``: as for :meth:`try_mutant`)."""
        target = self.index_of(alt.target)
        try:
            self.run(alt.source)
        except (CellExecutionError, CellTimeoutError) as exc:
            return [(alt.target, f"does not even define cleanly: {_error_text(exc)}")]
        failures: list[tuple[str, str]] = []
        ran: list[int] = []
        try:
            for i in self.test_cells_after(target):
                ran.append(i)
                passed, _, message = self.judge(i, visible=False)
                if not passed:
                    failures.append((self._meta(self.cells[i])["grade_id"], message))
        finally:
            self.run(self.cells[target].source)
        if recover:
            self._recover_state(ran)
        return failures

    def _recover_state(self, ran: list[int]) -> None:
        """A mutant may have damaged shared state (e.g. divided a table in place). If the
        restored solution no longer passes the tests the mutant ran, run the notebook again
        from the top so the next mutant starts from a clean state."""
        if not self._solution_passes(ran):
            self._run_notebook()


@dataclass
class Report:
    notebook: str
    results: list[MutantResult] = field(default_factory=list)

    @property
    def visible_rate(self) -> float:
        return sum(r.caught_visible for r in self.results) / max(1, len(self.results))

    def table(self) -> str:
        lines = [f"Mutants for {self.notebook}: {len(self.results)} total, "
                 f"{sum(r.lost_points for r in self.results)} lose points, "
                 f"{sum(r.caught_visible for r in self.results)} caught by visible tests "
                 f"({self.visible_rate:.0%}), {sum(r.costs_once for r in self.results)} cost exactly "
                 "their own test cell"]
        for r in self.results:
            if r.caught_visible:
                how = f"visible {r.caught_visible_by}"
            elif r.lost_points:
                how = f"hidden  {r.hidden_only_by}"
            else:
                how = "NOT CAUGHT"
            msg = r.message.replace("\n", " ")
            more = "" if r.costs_once or not r.lost_points else f"  (ALSO FAILS {r.failed_cells})"
            lines.append(f"  [{how:<34}] {r.mutant.target}: {r.mutant.name}{more}"
                         + (f"\n      -> {msg[:220]}" if msg else ""))
        return "\n".join(lines)


def _session(root: Path, name: str) -> NotebookSession:
    source = root / "autograder" / "source" / name / f"{name}.ipynb"
    release = root / "notebooks" / f"{name}.ipynb"
    return NotebookSession(source, release)


AUTOGRADE_ENV = {"NBGRADER_EXECUTION": "autograde", "LMCOURSE_PROFILE": "tiny"}


def run_alternatives(root: Path, name: str, alternatives: list[Alternative] | None = None
                     ) -> dict[str, list[tuple[str, str]]]:
    """Every alternative of notebook ``name``: ``{alternative name: failures}`` (empty lists
    when all keep full marks)."""
    alternatives = alternatives if alternatives is not None else load_alternatives(variants_path(root, name))
    return run_harness(root, name, [], alternatives)[1]


def run_harness(root: Path, name: str, mutants: list[Mutant], alternatives: list[Alternative]
                ) -> tuple[Report, dict[str, list[tuple[str, str]]]]:
    """``mutants`` and ``alternatives`` of notebook ``name`` in one kernel, so the notebook runs
    once for both (a kernel, a torch import and the whole notebook: seconds each time): the
    alternatives first, then the mutants, each as :meth:`NotebookSession.try_alternatives` and
    :meth:`NotebookSession.try_mutants` try them. Returns the mutants' report and
    ``{alternative name: failures}``."""
    master = root / "autograder" / "masters" / f"{name}.py"
    mutants = [resolve(m, master) for m in mutants]
    alternatives = [resolve(a, master) for a in alternatives]
    report = Report(name)
    session = _session(root, name)
    with session.started(AUTOGRADE_ENV):
        failures = dict(zip((a.name for a in alternatives), session.try_alternatives(alternatives)))
        report.results = session.try_mutants(mutants)
    return report, failures


def alternative_rounds(alternatives: list[Alternative]) -> list[dict[str, Alternative]]:
    """Group alternatives into as few whole submissions as possible: each round replaces
    every answer cell at most once (``{target grade id: alternative}``)."""
    rounds: list[dict[str, Alternative]] = []
    for alt in alternatives:
        for r in rounds:
            if alt.target not in r:
                r[alt.target] = alt
                break
        else:
            rounds.append({alt.target: alt})
    return rounds


def run_mutants(root: Path, name: str, mutants: list[Mutant] | None = None) -> Report:
    """Run every mutant of notebook ``name`` (e.g. '01_ngram') and return the report."""
    mutants = mutants if mutants is not None else load_mutants(variants_path(root, name))
    return run_harness(root, name, mutants, [])[0]
