"""Run one student's notebook in a sandbox and hand the executed notebook back.

Threat model (what a student's code can do while its notebook is graded)
-----------------------------------------------------------------------
The grader (trusted) prepares the notebook outside, pipes it into a small runner
(this file run as a script, ``python -I .../sandbox.py``) and reads the executed notebook back from the
runner's stdout. The runner starts the student's kernel with nbclient, inside the sandbox.

With **bubblewrap** (``bwrap`` on PATH and able to start; the default):
- the filesystem is a fresh root holding only, read-only: the system (``/usr`` and its
  ``/bin``, ``/lib`` links, a few ``/etc`` files), the Python installation and the virtual
  environment, the ``lmcourse`` package and the corpus folder (``LMCOURSE_DATA_DIR``);
  writable: that submission's own work folder only, mounted at ``/grade`` (home, ``/tmp``
  and the kernel's working directory are in it). The course (masters, source notebooks,
  ``gradebook.db``), the grader's output folder and every other student's submission or work
  folder do not exist in that view, so they cannot be read or written;
- no network: a private network namespace with only loopback (the kernel talks to the runner
  over it);
- own PID, IPC and UTS namespaces, a new session, ``--die-with-parent``: when the grader kills
  the sandbox for the notebook-wide cap, every process in it dies with it;
- rlimits set by the runner before the kernel starts: address space (``memory-limit``), file
  size, no core dumps, and a process count (``RLIMIT_NPROC``: a fork bomb gets ``EAGAIN``).
  When the grader runs as root, the runner switches to an unprivileged uid of its own
  (``UID_BASE + 256 * grader pid + slot``: distinct for concurrent graders on one machine,
  since the kernel counts processes per uid) so that the process count applies; otherwise a
  user namespace maps the TA's uid and the count is per namespace. The runner also watches
  the sandbox's process table and, when the count comes within a few of the limit, kills
  everything in the sandbox but itself (``process-limit``): a fork bomb's children keep the
  table full, and the kernel, unable to start a thread, would otherwise stall until the cell
  timeout;
- the runner makes itself non-dumpable and keeps the result pipe on a descriptor the kernel
  does not inherit, so the kernel can neither read the runner's memory (where the hidden tests
  are) nor write the result.

What the kernel **can** still see: the hidden tests of the notebook it is running (it executes
them; student code can capture a cell's source with an IPython hook). It can print what it
captured into its own outputs; feedback is checked for verbatim hidden-test lines and withheld
(flag ``feedback-withheld``) when one appears, but an encoded copy is not detected. It can also
tamper with its own kernel (hooks, helpers): see ``guard.py`` (``helpers-tampered``).

**No sandbox** (``--sandbox none`` or ``LMCOURSE_SANDBOX=none``; never chosen on its own):
the same runner and rlimits, a private work folder as the working directory and home, a
scrubbed environment, its own process session killed as a tree. It does NOT hide files the
grader can read (masters, gradebook, other students' submissions, other results) and does NOT
block the network; a child that detaches into a new session of its own can outlive the kill;
the process-count limit does not bind when the grader runs as root. Use it only for trusted
input. Without a working bubblewrap and without that explicit choice, ``lmcourse grade``
refuses to grade (:class:`SandboxUnavailable`) and says how to get one: ``apt-get install
bubblewrap`` on Debian/Ubuntu; on macOS or Windows, grade inside a Linux container or VM
(e.g. Docker with the repository mounted, where bubblewrap runs).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

INSIDE = "/grade"             # the work folder's path inside the bubblewrap sandbox
UID_BASE = 100_000            # sandbox uids when the grader runs as root: see `command`
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf", "passwd",
        "group", "fonts", "alternatives")


def _world_readable(root: Path) -> bool:
    import stat

    for p in [root, *root.rglob("*")]:
        mode = p.stat().st_mode
        if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH):
            return False
    return True


@functools.lru_cache(maxsize=1)
def _readable_corpus(corpus: Path) -> Path:
    """``corpus``, or a world-readable copy of it made once per grader process when the
    sandbox's unprivileged uid could not read it (the download leaves its folder 0700)."""
    import atexit

    if _world_readable(corpus):
        return corpus
    copy = Path(tempfile.mkdtemp(prefix="lmcourse-corpus-"))
    atexit.register(shutil.rmtree, copy, True)
    shutil.copytree(corpus, copy / "c", ignore=shutil.ignore_patterns(".*"))
    for p in [copy, *copy.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return copy / "c"


def _ro_paths() -> list[Path]:
    """Read-only folders the kernel needs besides the system: Python, venv, lmcourse, corpus."""
    import lmcourse

    paths = [Path(sys.base_prefix), Path(sys.prefix), Path(os.path.realpath(sys.executable)).parent,
             Path(lmcourse.__file__).resolve().parent]
    corpus = _corpus()
    if corpus is not None:
        paths.append(corpus)
    out: list[Path] = []
    for p in sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts)):
        if not any(p == q or q in p.parents for q in out) and not str(p).startswith("/usr"):
            out.append(p)
    return out


def _corpus() -> Path | None:
    from .. import data

    corpus = Path(data.data_dir())
    return corpus.resolve() if corpus.is_dir() else None


def bwrap_args(work: Path, uid: int | None) -> list[str]:
    """The bubblewrap command line (up to the program) for one submission's sandbox."""
    args = [shutil.which("bwrap") or "bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent", "--new-session"]
    if os.geteuid() != 0:
        args += ["--unshare-user", "--cap-drop", "ALL"]
    args += ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / name
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            args += ["--ro-bind", str(p), str(p)]
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in _ETC:
        if (Path("/etc") / name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    # the writable folders first: a checkout or venv under /tmp (CI clones there) is then
    # bound read-only on top of the private /tmp instead of being hidden by it
    args += ["--proc", "/proc", "--dev", "/dev",
             "--bind", str(work), INSIDE, "--bind", str(work / "tmp"), "/tmp"]
    made = {"/", "/usr", "/etc", INSIDE, "/tmp"}
    for p in _ro_paths():
        for parent in reversed(p.parents):
            if str(parent) not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        src = _readable_corpus(p) if uid is not None and p == _corpus() else p
        args += ["--ro-bind", str(src), str(p)]
        made.add(str(p))
    args += ["--chdir", f"{INSIDE}/run"]
    return args


def _env(base: str) -> dict[str, str]:
    from .. import data

    bindir = str(Path(sys.executable).parent)
    return {"PATH": os.pathsep.join([bindir, "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": f"{base}/home", "TMPDIR": f"{base}/tmp", "IPYTHONDIR": f"{base}/home/.ipython",
            "JUPYTER_RUNTIME_DIR": f"{base}/home/runtime", "MPLCONFIGDIR": f"{base}/home/mpl",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg",
            "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "LMCOURSE_THREADS": "1", "NBGRADER_EXECUTION": "autograde",
            "LMCOURSE_DATA_DIR": str(Path(data.data_dir()).resolve())}


NONE = "none"                 # the one spelling of "grade without a sandbox" (flag and variable)
_choice: str | None = None    # set by `choose` (the CLI's --sandbox); else LMCOURSE_SANDBOX


class SandboxUnavailable(RuntimeError):
    """No working bubblewrap, and the TA did not ask for ``--sandbox none``."""


def choose(choice: str | None) -> None:
    """``"bubblewrap"`` (the default: refuse to grade without it) or ``"none"`` (explicit)."""
    global _choice
    if choice not in (None, "bubblewrap", NONE):
        raise ValueError(f"unknown sandbox {choice!r}: 'bubblewrap' or 'none'")
    _choice = choice


def _requested() -> str:
    choice = _choice or os.environ.get("LMCOURSE_SANDBOX", "").strip().lower() or "bubblewrap"
    if choice not in ("bubblewrap", NONE):
        raise ValueError(f"LMCOURSE_SANDBOX={choice!r}: use 'none' (or leave it unset for bubblewrap)")
    return choice


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    """(works, path or why). bwrap must start Python and import nbclient and lmcourse in exactly
    the sandbox the submissions get. Probed once per process."""
    if not shutil.which("bwrap"):
        return False, "bwrap not found"
    with tempfile.TemporaryDirectory(prefix="lmcourse-probe-") as tmp:
        work = Path(tmp)
        prepare_work(work, None)
        cmd = [*bwrap_args(work, None), sys.executable, "-c", "import lmcourse.grading"]
        try:
            proc = subprocess.run(cmd, env=_env(INSIDE), capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"bwrap failed to start: {exc}"
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["?"])[-1]
            return False, f"bwrap failed to start: {last[:200]}"
    return True, shutil.which("bwrap") or "bwrap"


def mode() -> tuple[str, str]:
    """("bubblewrap" | "none" | "unavailable", why)."""
    if _requested() == NONE:
        return NONE, "--sandbox none / LMCOURSE_SANDBOX=none"
    works, why = _probe()
    return ("bubblewrap", why) if works else ("unavailable", why)


HOW_TO_GET_ONE = ("Install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: "
                  "`sudo dnf install bubblewrap`). On macOS or Windows there is none: grade inside a "
                  "Linux container or VM, e.g. `docker run --rm -it -v \"$PWD\":/course -w /course "
                  "python:3.11 bash`, then `apt-get update && apt-get install -y bubblewrap make` and "
                  "`make setup` (Docker may need `--security-opt seccomp=unconfined` for bwrap to start). "
                  "To grade trusted submissions without a sandbox, say so: `--sandbox none` "
                  "(or LMCOURSE_SANDBOX=none).")


def require() -> tuple[str, str]:
    """The sandbox in force, or :class:`SandboxUnavailable` with what to do about it."""
    kind, why = mode()
    if kind == "unavailable":
        raise SandboxUnavailable(f"no sandbox for the students' code ({why}). {HOW_TO_GET_ONE}")
    return kind, why


def describe() -> str:
    kind, why = mode()
    if kind == "bubblewrap":
        return (f"bubblewrap ({why}): read-only system/venv/lmcourse/corpus, only the submission's "
                "work folder writable, no network, own pid namespace, rlimits (memory, processes, "
                "file size)")
    if kind == NONE:
        return (f"NONE ({why}): private work folder, scrubbed environment, rlimits, own session; "
                "NO filesystem or network isolation: trusted submissions only")
    return f"UNAVAILABLE ({why})"


def prepare_work(work: Path, uid: int | None) -> None:
    for d in ("home", "tmp", "run"):
        (work / d).mkdir(parents=True, exist_ok=True)
    if uid is not None:
        for p in [work, *work.rglob("*")]:
            os.chown(p, uid, uid)


def command(work: Path, slot: int) -> tuple[list[str], dict[str, str], str]:
    """(argv, env, cwd) that runs the runner for the work folder ``work``."""
    # the runner is this file run as a script (-I: no script folder, cwd or PYTHON* variables
    # on its path): importing the lmcourse package would import numpy for nothing
    runner = [sys.executable, "-I", str(Path(__file__).resolve())]
    if require()[0] == "bubblewrap":
        uid = UID_BASE + 256 * os.getpid() + slot % 256 if os.geteuid() == 0 else None
        prepare_work(work, uid)
        argv = [*bwrap_args(work, uid), *runner, INSIDE]
        if uid is not None:
            argv.append(f"--uid={uid}")
        return argv, _env(INSIDE), str(work)
    prepare_work(work, None)
    return [*runner, str(work)], _env(str(work)), str(work / "run")


# ------------------------------------------------------------------ the runner (sandbox side)

def _limit(memory_mb: int, nproc: int) -> None:
    import resource

    mem = int(memory_mb) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 2**20, 256 * 2**20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _undumpable() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)   # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def _tasks() -> int:
    """Processes and threads visible in /proc (in the sandbox: its own pid namespace)."""
    n = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                n += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                pass
    return n


def _kill_all_but_me() -> None:
    import signal

    for _ in range(3):          # a fork bomb forks while it is being killed
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and int(entry.name) not in (1, os.getpid()):
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except OSError:
                    pass


def _run(job: dict, base: Path, stamps: dict[str, float], sandboxed: bool = False) -> dict:
    import asyncio
    import time

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    stamps["imports"] = time.time()

    nb = nbformat.from_dict(job["nb"])
    budget = {"left": int(job["output_chars"])}
    guard_tag = job["guard_tag"]

    class Client(NotebookClient):
        """nbclient with a per-notebook output budget (guard cells always report)."""

        def output(self, outs, msg, display_id, cell_index):
            out = super().output(outs, msg, display_id, cell_index)
            if out is None or not outs or outs[-1] is not out:
                return out
            size = len(json.dumps(out))
            if guard_tag in self.nb.cells[cell_index].metadata and size < 20_000:
                return out
            if size > budget["left"]:
                outs.pop()
                if budget["left"] >= 0:
                    outs.append(nbformat.v4.new_output(
                        "stream", name="stdout", text="[output cut: the grader's output cap]\n"))
                budget["left"] = -1
                return None
            budget["left"] -= size
            return out

    timeout_reply = {"ename": "CellTimeoutError", "evalue": f"cell ran past {job['cell_timeout']} s",
                     "traceback": [f"CellTimeoutError: cell ran past {job['cell_timeout']} s"]}
    client = Client(nb, timeout=int(job["cell_timeout"]), interrupt_on_timeout=True,
                    error_on_timeout=timeout_reply, allow_errors=True, kernel_name="python3",
                    record_timing=False, iopub_timeout=4, shutdown_kernel="immediate",
                    extra_arguments=["--HistoryManager.enabled=False"],
                    resources={"metadata": {"path": str(base / "run")}})
    report = {"timed_out_cells": [], "died": None, "deadline": None, "process_limit": None}
    end = time.monotonic() + float(job["notebook_timeout"])

    bombed: asyncio.Event | None = None

    async def watchdog():
        """A fork bomb fills the process table; the kernel then cannot start a thread and
        stalls. Near the limit, kill everything in the sandbox but bwrap's init and this
        runner (the kernel dies: the cells not run score 0)."""
        while True:
            await asyncio.sleep(0.1)
            if _tasks() >= int(job["nproc"]) - 4:
                report["process_limit"] = _tasks()
                _kill_all_but_me()
                bombed.set()
                return

    async def main():
        nonlocal bombed
        bombed = asyncio.Event()
        if sandboxed:
            asyncio.get_running_loop().create_task(watchdog())
        async with client.async_setup_kernel():
            stamps["kernel"] = time.time()
            for i, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                if i and "preamble" not in stamps:
                    stamps["preamble"] = time.time()
                left = end - time.monotonic()
                if left <= 0:
                    report["deadline"] = i
                    return
                started = time.monotonic()
                run = asyncio.ensure_future(asyncio.wait_for(client.async_execute_cell(cell, i), left))
                stop = asyncio.ensure_future(bombed.wait())
                await asyncio.wait({run, stop}, return_when=asyncio.FIRST_COMPLETED)
                stop.cancel()
                if bombed.is_set():     # the kernel was killed: do not wait for nbclient to notice
                    run.cancel()
                    report["died"] = i
                    return
                try:
                    await run
                except asyncio.TimeoutError:
                    report["deadline"] = i
                    return
                except DeadKernelError:
                    if time.monotonic() >= end - 1:     # stopped at the cap, not a crash
                        report["deadline"] = i
                    else:
                        report["died"] = i
                    return
                if time.monotonic() - started >= job["cell_timeout"]:
                    # interrupted by nbclient: an error output, so a test cell scores 0
                    report["timed_out_cells"].append(i)
                    cell.outputs.append(nbformat.v4.new_output("error", **timeout_reply))
            stamps["cells"] = time.time()

    try:
        asyncio.run(main())
    except DeadKernelError:
        report["died"] = report["died"] if report["died"] is not None else -1
    except RuntimeError as exc:  # kernel failed to start, e.g. out of processes or memory
        report["died"] = -1
        report["error"] = str(exc)[:300]
    stop = report["deadline"] if report["deadline"] is not None else report["died"]
    if stop is not None:
        # cells that never ran (or were cut off) must not look clean: nbgrader's rule gives
        # full points to a test cell without an error output
        why = ("the sandbox reached its process limit" if report["process_limit"] is not None else
               "the kernel died" if report["died"] is not None else "the notebook time cap was reached")
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and (stop < 0 or i >= stop):
                cell.outputs.append(nbformat.v4.new_output(
                    "error", ename="NotRun", evalue=why, traceback=[f"NotRun: {why}"]))
    stamps["shutdown"] = time.time()
    report["nb"] = nb
    try:     # the guard's signed reports (see guard.py); the grader checks them
        with open(base / "run" / ".lmcourse-guard.log", "rb") as f:
            report["guard_log"] = f.read(4 * 2**20).decode("utf-8", "replace")
    except OSError:
        report["guard_log"] = ""
    return report


def runner_main(argv: list[str]) -> int:
    import time

    stamps = {"start": time.time()}
    # jsonschema (via nbformat) would import rfc3987_syntax, which builds a grammar for about a
    # second of CPU per submission; the runner never validates URIs, so it is left out here.
    sys.modules.setdefault("rfc3987_syntax", None)
    base = Path(argv[0])
    uid = next((int(a.split("=", 1)[1]) for a in argv[1:] if a.startswith("--uid=")), None)
    if uid is not None:                  # root inside bwrap: become an unprivileged user
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _undumpable()
    job = json.loads(sys.stdin.buffer.read())
    os.close(0)
    result_fd = os.dup(1)                # not inheritable: the kernel never gets it
    log = os.open(str(base / "runner.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(base / "run")
    _limit(job["memory_mb"], job["nproc"])
    try:
        # only in bubblewrap's pid namespace does /proc show just the sandbox
        report = _run(job, base, stamps, sandboxed=str(base) == INSIDE)
    except MemoryError:
        report = {"died": -1, "error": "MemoryError in the runner", "nb": None}
    except Exception as exc:  # noqa: BLE001 (report, never hang)
        report = {"died": -1, "error": f"{type(exc).__name__}: {exc}"[:300], "nb": None}
    report["stamps"] = stamps
    data = json.dumps(report).encode()
    with os.fdopen(result_fd, "wb") as out:
        out.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(runner_main(sys.argv[1:]))
