"""Run notebooks headlessly with nbclient: ``lmcourse solutions`` (self-learners without a
browser), the tests that execute a whole notebook, and the benchmarks that time a notebook's own
cells (:func:`solution_namespace`)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError


def ipc_kernel_config(folder: str):
    """nbclient config that starts the kernel on IPC sockets in ``folder`` (a private folder the
    caller keeps until the kernel is gone). Over TCP the kernel manager picks free ports and the
    kernel binds them a moment later: another kernel starting in between (parallel test workers)
    takes one and the kernel dies with "Address already in use". IPC names cannot collide, and
    ipykernel does not warn "running over TCP without encryption" once per notebook."""
    from traitlets.config import Config

    config = Config()
    if os.name == "posix":
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = os.path.join(folder, "kernel")
    return config


class CellProgress:
    """nbclient's cell hooks as progress lines: one when a code cell starts (its place among the
    notebook's code cells and its first line) and one when a cell that took a second or more ends,
    so a notebook that trains for minutes is never silent."""

    def __init__(self, nb: nbformat.NotebookNode, write: Callable[[str], None], slow: float = 1.0):
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        self.ordinal = {index: n for n, index in enumerate(code, 1)}
        self.total, self.write, self.slow = len(code), write, slow
        self.started = 0.0

    def start(self, cell=None, cell_index: int = 0, **_) -> None:
        self.started = time.perf_counter()
        if cell_index not in self.ordinal:  # nbclient calls the hook for markdown cells too
            return
        first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("# %%")),
                     "")
        first = first if len(first) <= 70 else first[:67] + "..."
        self.write(f"    cell {self.ordinal.get(cell_index, '?')}/{self.total}: {first}")

    def executed(self, cell=None, cell_index: int = 0, **_) -> None:
        seconds = time.perf_counter() - self.started
        if cell_index in self.ordinal and seconds >= self.slow:
            self.write(f"    cell {self.ordinal.get(cell_index, '?')}/{self.total} done in {seconds:.1f} s")


def execute_notebook(path: Path, out: Path | None = None, profile: str | None = None,
                     timeout: int | None = 600, cwd: Path | None = None,
                     env: dict[str, str] | None = None,
                     progress: Callable[[str], None] | None = None) -> nbformat.NotebookNode:
    """Execute ``path`` top to bottom (raising on the first error); save to ``out`` if given.

    ``timeout`` is per cell, in seconds (None: no limit). ``env`` adds variables to the
    kernel's environment (ours is inherited; ``profile`` sets LMCOURSE_PROFILE there).
    ``progress``, if given, receives a line as each code cell starts and as a slow one ends.
    The executed copy is written to ``out`` even when a cell fails, so its output can be read.
    """
    import tempfile

    nb = nbformat.read(path, as_version=4)
    kernel_env = dict(os.environ)
    kernel_env.update(env or {})
    if profile:
        kernel_env["LMCOURSE_PROFILE"] = profile
    # Nobody watches a bar in a headless run, and a saved bar is a widget whose text fallback is its
    # first frame ("0%") in viewers without widget state; the runs print their own summary lines.
    kernel_env.setdefault("LMCOURSE_PROGRESS", "0")
    with tempfile.TemporaryDirectory(prefix="lmcourse-kernel-") as sockets:
        config = ipc_kernel_config(sockets)
        try:
            hooks = {}
            if progress is not None:
                cells = CellProgress(nb, progress)
                hooks = {"on_cell_start": cells.start, "on_cell_executed": cells.executed}
            client = NotebookClient(nb, timeout=timeout, kernel_name="python3", config=config,
                                    resources={"metadata": {"path": str(cwd or path.parent)}}, **hooks)
            client.execute(env=kernel_env)
        finally:
            if out is not None:
                out.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, out)
    return nb


def write_html(nb: nbformat.NotebookNode, dest: Path) -> Path:
    """An executed notebook as one HTML page (nbconvert's lab template), its figures inline as
    data URIs and its formulas as MathML, so it can be read in a browser without a kernel,
    JupyterLab or the internet."""
    from .grading.feedback import executed_page_exporter

    text, _ = executed_page_exporter().from_notebook_node(nb)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")
    return dest


def solution_namespace(name: str, cell_ids: tuple[str, ...], root: Path | None = None) -> dict:
    """Execute the named cells of ``solutions/<name>.ipynb`` (cell ids are the grade ids) in a
    fresh namespace and return it, so benchmarks time exactly the code a notebook teaches."""
    from .commands.paths import repo_root

    nb = nbformat.read(Path(root or repo_root()) / "solutions" / f"{name}.ipynb", as_version=4)
    by_id = {c.id: c for c in nb.cells}
    missing = [cid for cid in cell_ids if cid not in by_id]
    if missing:
        raise KeyError(f"solutions/{name}.ipynb has no cell(s) {missing}")
    ns: dict = {}
    for cid in cell_ids:
        exec(compile(by_id[cid].source, f"<{name}:{cid}>", "exec"), ns)  # noqa: S102 (our own notebook)
    return ns


@dataclass
class RunResult:
    """One notebook of a headless run: ``status`` is ok, error, timeout, kernel-died or crashed."""

    name: str
    status: str
    seconds: float
    detail: str = ""
    output: Path | None = None
    html: Path | None = None


def _first_line(exc: BaseException) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()  # IPython colours the error name
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


def run_one(path: Path, out_dir: Path, profile: str | None = None, timeout: int | None = 1800,
            env: dict[str, str] | None = None, progress: Callable[[str], None] | None = None) -> RunResult:
    """Run one notebook and report how it went; never raises for a failure inside it."""
    start = time.perf_counter()
    target = out_dir / path.name
    page = target.with_suffix(".html")
    target.unlink(missing_ok=True)  # an old copy must not pass for this run's output
    page.unlink(missing_ok=True)
    try:
        nb = execute_notebook(path, target, profile=profile, timeout=timeout, env=env, progress=progress)
        write_html(nb, page)
        status, detail = "ok", ""
    except CellTimeoutError:
        status, detail = "timeout", f"a cell ran longer than {timeout} s (--timeout to allow more)"
    except DeadKernelError as exc:
        status, detail = "kernel-died", _first_line(exc)
    except CellExecutionError as exc:
        status, detail = "error", _first_line(exc)
    except Exception as exc:  # a notebook that cannot be read, a kernel that cannot start, ...
        status, detail = "crashed", f"{type(exc).__name__}: {_first_line(exc)}"
    return RunResult(path.name, status, time.perf_counter() - start, detail,
                     target if target.exists() else None, page if page.exists() else None)


def summary_table(results: list[RunResult]) -> str:
    """notebook, status, time (and why, for a failure), one row per notebook."""
    rows = [("notebook", "status", "time", "detail")]
    rows += [(r.name, r.status, f"{r.seconds:.1f} s", r.detail) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + ("  " + row[3]).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  ------")
    failed = sum(r.status != "ok" for r in results)
    total = sum(r.seconds for r in results)
    count = f"{len(results)} notebook" + ("" if len(results) == 1 else "s")
    lines.append(f"{len(results) - failed} ok, {failed} failed  ({count}, {total:.1f} s)")
    return "\n".join(lines)


def run_notebooks(paths: list[Path], out_dir: Path, profile: str | None = None, timeout: int | None = 1800,
                  threads: int | None = None, stream=None) -> int:
    """Run every notebook in turn, whatever happens to the others; print a progress line per
    notebook and per cell and a summary table; 0 if all ran, 1 if any failed.

    The executed copies go to ``out_dir/<profile>/`` (the profile the kernels run with), so a
    ``tiny`` run never overwrites the pages of a ``cpu`` one.

    The kernels get the notebooks' own CPU-thread default (:func:`lmcourse.runtime.cpu_threads`:
    one thread when the models train on the CPU), or ``threads`` if given, via LMCOURSE_THREADS.
    """
    import sys

    from . import runtime

    out = stream or sys.stdout
    env: dict[str, str] = {}
    if threads is not None:
        env[runtime.THREADS_ENV] = str(threads)
    else:
        try:
            default = runtime.cpu_threads()
        except ValueError as exc:  # a bad LMCOURSE_THREADS: every notebook would fail on it
            print(f"error: {exc}", file=out, flush=True)
            return 2
        if default is not None:
            env[runtime.THREADS_ENV] = str(default)
    out_dir = Path(out_dir) / profile_name(profile)
    shown_threads = env.get(runtime.THREADS_ENV, "torch's default")
    limit = f"{timeout} s per cell" if timeout else "no cell time limit"
    print(f"running {len(paths)} notebook(s): profile {shown_profile(profile)}, cpu threads {shown_threads}, "
          f"{limit}; executed copies in {out_dir}/", file=out, flush=True)
    results = []
    for i, path in enumerate(paths, 1):
        print(f"[{i}/{len(paths)}] {path.name} ...", file=out, flush=True)
        r = run_one(path, out_dir, profile=profile, timeout=timeout, env=env,
                    progress=lambda line: print(line, file=out, flush=True))
        results.append(r)
        where = f" -> {r.output}" if r.output else ""
        note = "" if r.status == "ok" else f": {r.detail}"
        print(f"[{i}/{len(paths)}] {path.name} {r.status} in {r.seconds:.1f} s{note}{where}", file=out, flush=True)
    print(summary_table(results), file=out, flush=True)
    if any(r.output for r in results):
        print(f"read them: the .html pages in {out_dir}/ open in any browser (outputs and plots inline); "
              "`lmcourse lab --solutions` (make lab-solutions) opens the notebooks in JupyterLab",
              file=out, flush=True)
    return 1 if any(r.status != "ok" for r in results) else 0


def profile_name(profile: str | None) -> str:
    """The name of the profile the kernels will use (see :func:`shown_profile`); ``default`` when
    this machine's cannot be told."""
    from . import runtime

    if profile:
        return profile
    if os.environ.get("LMCOURSE_PROFILE"):
        return os.environ["LMCOURSE_PROFILE"]
    try:
        return runtime.profile_name(runtime.pick_device())
    except Exception:  # noqa: BLE001 (the notebooks will say what is wrong with the machine)
        return "default"


def shown_profile(profile: str | None) -> str:
    """The profile the kernels will use, and why: ``--profile``, else LMCOURSE_PROFILE (inherited
    by the kernels), else what ``lmcourse.setup()`` picks on this machine."""
    from . import runtime

    if profile:
        return f"{profile} (--profile)"
    if os.environ.get("LMCOURSE_PROFILE"):
        return f"{os.environ['LMCOURSE_PROFILE']} (LMCOURSE_PROFILE)"
    try:
        return f"{runtime.profile_name(runtime.pick_device())} (this machine's default)"
    except Exception:  # noqa: BLE001 (a banner never stops the run; the notebooks will say)
        return "the notebooks' own choice"
