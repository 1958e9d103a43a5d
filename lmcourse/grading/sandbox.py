"""The host side of the sandbox: run one student's notebook in it and read the report back.

This module is the grader's half (the bubblewrap command line, the sandbox's mode, the work
folder, the process tree killed afterwards); :mod:`.sandbox_runner` is the program that runs
inside the sandbox. It is one module because of this threat model, which belongs beside the
code that enforces it.

Threat model (what a student's code can do while its notebook is graded)
-----------------------------------------------------------------------
The grader (trusted) prepares the notebook outside, pipes it into a small runner
(:mod:`.sandbox_runner` run as a script, ``python -I .../sandbox_runner.py``) and reads the
executed notebook back from the runner's stdout. The runner starts the student's kernel with
nbclient, inside the sandbox.

With **bubblewrap** (``bwrap`` on PATH and able to start; the default) the kernel's world is an
allowlist, the same under ``lmcourse grade`` and under plain ``nbgrader autograde`` with the course's
config (:mod:`.nbgrader_execute` runs this same runner):
- read-only: the system (``/usr`` and its ``/bin``, ``/lib`` links, a few ``/etc`` files), the Python
  installation and the virtual environment; where the ``lmcourse`` package lives, the notebook's own copy
  of it (:mod:`.kernel_package`: no answer of that notebook or a later one, no hidden cases, no grader);
  the corpus files;
- writable: one folder in memory of ``disk_mb`` MB, mounted at ``/grade``: the kernel's working folder,
  home, its temporary folder (``TMPDIR``) and its course cache (``LMCOURSE_DATA_DIR``, where the corpus is
  bound); ``/tmp`` itself is a second, small folder in memory.
  Nothing the kernel writes reaches the host: the course (masters, source notebooks, the template cache,
  ``gradebook.db``), the grader's folders and every other student's submission do not exist in that
  view, so they cannot be read or written;
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
- memory is watched from the host, which no process in the sandbox can see or signal: every few
  tenths of a second it sums the sandbox's processes' proportional resident share and the memory
  files they hold open (``memfd_create``, in no resident set), and over ``memory_mb`` kills the
  kernel's side (``memory-limit``). The runner shares the kernel's uid, so the kernel can stop it;
  the host sees a stopped runner, kills the kernel's side and lets the runner report (``crashed``).
  Memory no process shows (memory files passed into a socket and closed, System V segments left
  detached, message queues, socket buffers enlarged past the default) cannot be made: the runner sets a
  seccomp filter, inherited by the kernel, that refuses those system calls and options, and caps open
  files at 1024;
- the runner makes itself non-dumpable and keeps the result pipe on a descriptor the kernel
  does not inherit, so the kernel can neither read the runner's memory (where the hidden tests
  are) nor write the result.

What the kernel **can** still see: the hidden cases of the exercise whose test cell is running (each
test cell brings its own exercise's; student code can capture a cell's source with an IPython hook,
which the source scan flags). It can print what it
captured into its own outputs; feedback is checked for verbatim hidden-test lines and withheld
(flag ``feedback-withheld``) when one appears, but an encoded copy is not detected. It can also
change anything in its own kernel (hooks, helpers, the recording code): that changes only its own
records, which the grader judges outside it (:mod:`lmcourse.marking.grader`).

**No sandbox** (``--sandbox none`` or ``LMCOURSE_SANDBOX=none``; never chosen on its own):
the same runner and rlimits, a private work folder as the working directory and home, a
scrubbed environment, its own process session killed as a tree. It does NOT hide files the
grader can read (masters, gradebook, other students' submissions, other results) and does NOT
block the network; a child that detaches into a new session of its own can outlive the kill;
the process-count limit does not bind when the grader runs as root. Use it only for trusted
input. Without a working bubblewrap and without that explicit choice, ``lmcourse grade`` and plain
nbgrader with the course's config refuse to grade (:class:`SandboxUnavailable`) and say how to get
one: ``apt-get install bubblewrap`` on Debian/Ubuntu; on macOS or Windows, grade inside a Linux container or VM
(e.g. Docker with the repository mounted, where bubblewrap runs).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import sandbox_runner
from .sandbox_runner import INSIDE

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
    """Read-only folders the kernel needs besides the system: Python, the venv and the lmcourse package
    (bound over with the notebook's own package when one is given)."""
    paths = [Path(sys.base_prefix), Path(sys.prefix), Path(os.path.realpath(sys.executable)).parent,
             package_dir()]   # bound again by itself, over these, where it lies inside one (bwrap_args)
    out: list[Path] = []
    for p in sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts)):
        if not any(p == q or q in p.parents for q in out) and not str(p).startswith("/usr"):
            out.append(p)
    return out


def package_dir() -> Path:
    import lmcourse

    return Path(lmcourse.__file__).resolve().parent


def _corpus() -> Path | None:
    from .. import data

    corpus = data.shakespeare_dir()
    return corpus.resolve() if corpus.is_dir() else None


TMP_MB = 16                 # /tmp: code that names it rather than TMPDIR (the kernel's own temp folder is capped apart)
DATA = f"{INSIDE}/data"     # the kernel's course cache (LMCOURSE_DATA_DIR): the corpus, and room to write


def bwrap_args(work: Path, uid: int | None, package: Path | None = None, disk_mb: int = 256) -> list[str]:
    """The bubblewrap command line (up to the program) for one submission's sandbox.

    What the kernel sees is an allowlist: the system, Python and the venv read-only; ``package`` (the
    notebook's own copy of lmcourse, :mod:`.kernel_package`) read-only where lmcourse lives; the corpus
    files read-only; and one folder in memory of ``disk_mb`` MB for everything it writes (its working
    folder, home, ``/tmp`` and course cache). ``work`` on the host is not visible: nothing the kernel
    writes outlives it."""
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
    # the writable world first: a checkout or venv under /tmp (CI clones there) is then bound
    # read-only on top of the private /tmp instead of being hidden by it
    args += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(int(disk_mb) * 2**20), "--tmpfs", INSIDE]
    for d in ("run", "home", "tmp", "data"):
        args += ["--perms", "1777", "--dir", f"{INSIDE}/{d}"]
    # /tmp a small folder of its own (TMPDIR points into the capped one above): a link there would leave no
    # folder to bind a checkout or venv under /tmp on (CI clones there)
    args += ["--perms", "1777", "--size", str(TMP_MB * 2**20), "--tmpfs", "/tmp"]
    made = {"/", "/usr", "/etc", INSIDE, "/tmp"}
    for p in _ro_paths():
        for parent in reversed(p.parents):
            if str(parent) not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(str(parent))
        args += ["--ro-bind", str(p), str(p)]
        made.add(str(p))
    # the package, always bound by itself last: installed into the venv or under /usr (not editable), it lies
    # inside a folder bound whole above, which would show the whole package, answers and grader included
    args += ["--ro-bind", str(package if package is not None else package_dir()), str(package_dir())]
    corpus = _corpus()
    if corpus is not None:
        from .. import data

        src = _readable_corpus(corpus) if uid is not None else corpus
        args += ["--ro-bind", str(src), f"{DATA}/{data.shakespeare_dir().name}"]
    args += ["--chdir", f"{INSIDE}/run"]
    return args


def _env(base: str, data_dir: str) -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    return {"PATH": os.pathsep.join([bindir, "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": f"{base}/home", "TMPDIR": f"{base}/tmp", "IPYTHONDIR": f"{base}/home/.ipython",
            "JUPYTER_RUNTIME_DIR": f"{base}/home/runtime", "MPLCONFIGDIR": f"{base}/home/mpl",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg",
            "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "LMCOURSE_THREADS": "1", "NBGRADER_EXECUTION": "autograde",
            "LMCOURSE_DATA_DIR": data_dir,
            # torch's compiler keeps no cache on disk here: a cached graph is a pickle and a cached kernel a
            # module, which a cell could plant where the compiler would read them back
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}


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
        make_sandbox_workdir(work, None)
        cmd = [*bwrap_args(work, None), sys.executable, "-c", "import lmcourse.grading"]
        try:
            proc = subprocess.run(cmd, env=_env(INSIDE, DATA), capture_output=True, text=True, timeout=60)
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
    if kind == "bubblewrap":
        _data_dir_outside_the_kernels_view()
    return kind, why


def _data_dir_outside_the_kernels_view() -> None:
    """The grader's cache (nbgrader's source notebooks: the answer key) must not lie in a folder the sandbox
    binds whole (the venv, Python, /usr)."""
    from .. import data

    cache = Path(data.data_dir()).resolve()
    for bound in [*_ro_paths(), Path("/usr")]:
        if cache == bound or bound in cache.parents:
            raise SandboxUnavailable(f"the course cache {cache} (LMCOURSE_DATA_DIR) lies inside {bound}, which every "
                                     "graded kernel can read, and it holds the grader's copies of the answer key: "
                                     "point LMCOURSE_DATA_DIR somewhere else (e.g. unset it for ~/.cache/lmcourse)")


def describe() -> str:
    kind, why = mode()
    if kind == "bubblewrap":
        return (f"bubblewrap ({why}): read-only system/venv, the notebook's own copy of lmcourse (no answers "
                "of it or later notebooks, no hidden tests, no grader) and the corpus; one size-capped folder "
                "in memory writable; nothing else of the course, the grader or other students; no network; "
                "own pid namespace; rlimits (memory, processes, file size)")
    if kind == NONE:
        return (f"NONE ({why}): private work folder, scrubbed environment, rlimits, own session; "
                "NO filesystem or network isolation: trusted submissions only")
    return f"UNAVAILABLE ({why})"


def compile_course() -> None:
    """Write the lmcourse package's bytecode where it is missing or stale, once per batch. Each
    kernel imports the course modules its notebook uses with PYTHONDONTWRITEBYTECODE set
    and the package read-only, so without bytecode written here every submission compiles the
    package anew: about a second of CPU each (containers often set the variable for every
    process, and an editable install has no bytecode until something writes it). A package
    folder that cannot be written is no error: the kernels compile in memory, as before."""
    import compileall

    import lmcourse

    try:
        compileall.compile_dir(str(Path(lmcourse.__file__).resolve().parent), quiet=2)
    except OSError:
        pass


def make_sandbox_workdir(work: Path, uid: int | None) -> None:
    for d in ("home", "tmp", "run"):
        (work / d).mkdir(parents=True, exist_ok=True)
    if uid is not None:
        for p in [work, *work.rglob("*")]:
            os.chown(p, uid, uid)


def command(work: Path, slot: int, package: Path | None = None,
            disk_mb: int = 256) -> tuple[list[str], dict[str, str], str]:
    """(argv, env, cwd) that runs the runner for the work folder ``work``. Under bubblewrap the kernel sees
    ``package`` (:mod:`.kernel_package`) where lmcourse lives; without a sandbox only the kernel's import
    refusal stands (:mod:`lmcourse.marking.kernel`)."""
    # the runner is a script (-I: no script folder, cwd or PYTHON* variables on its path):
    # importing the lmcourse package would import numpy for nothing
    runner = [sys.executable, "-I", str(Path(sandbox_runner.__file__).resolve())]
    if require()[0] == "bubblewrap":
        uid = UID_BASE + 256 * os.getpid() + slot % 256 if os.geteuid() == 0 else None
        make_sandbox_workdir(work, uid)
        argv = [*bwrap_args(work, uid, package, disk_mb), *runner, INSIDE]
        if uid is not None:
            argv.append(f"--uid={uid}")
        return argv, _env(INSIDE, DATA), str(work)
    from .. import data

    make_sandbox_workdir(work, None)
    return [*runner, str(work)], _env(str(work), str(Path(data.data_dir()).resolve())), str(work / "run")


def run(job: dict, work: Path, slot: int, timeout: float, max_bytes: int,
        package: Path | None = None, disk_mb: int = 256) -> tuple[dict | None, bool]:
    """Pipe ``job`` into a runner in a fresh sandbox on ``work``; (its report, or None when it
    sent none or more than ``max_bytes``; killed because it ran past ``timeout`` seconds).
    The runner stops itself at the notebook cap; ``timeout`` is the backstop. Afterwards
    everything left in the sandbox is killed."""
    argv, env, cwd = command(work, slot, package, disk_mb)
    with tempfile.TemporaryFile() as result:
        t_popen = time.time()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=result,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        killed, watched = _wait_and_watch(proc, timeout, int(job["memory_mb"]), require()[0] == "bubblewrap")
        t_exit = time.time()
        kill_tree(proc)          # whatever the student left running dies now
        t_killed = time.time()
        result.seek(0)
        data = result.read(max_bytes)
    if killed or not data:
        return None, killed
    try:
        report = json.loads(data)
    except ValueError:
        return None, False
    if not isinstance(report, dict):
        return None, False
    report.update(watched)
    if watched:     # the runner saw only its kernel die: its cells not run say why
        why = ("the sandbox's processes together held more than the memory cap" if "memory_limit" in watched else
               "the notebook stopped the grader's runner")
        for cell in (report.get("nb") or {}).get("cells", []):
            for out in cell.get("outputs", []):
                if out.get("ename") == "NotRun":
                    out["evalue"], out["traceback"] = why, [f"NotRun: {why}"]
    report.setdefault("stamps", {}).update(popen=t_popen, exited=t_exit, killed=t_killed, parsed=time.time())
    return report, False


# ------------------------------------------------------------------ the host's watch

WATCH_SECONDS = 0.2     # how often the host sums the sandbox's memory


def _wait_and_watch(proc: subprocess.Popen, timeout: float, memory_mb: int,
                    sandboxed: bool) -> tuple[bool, dict]:
    """Wait for the runner to end (True: killed at ``timeout``), watching the sandbox from outside it: no
    process in the sandbox can stop or signal the host (its own PID namespace), where the runner, which
    shares the kernel's uid, can be stopped. When the sandbox's processes together hold more than
    ``memory_mb`` (their proportional resident share, plus memory files, which no process's resident
    size shows), or the kernel has stopped the runner, everything in the sandbox but its init and the
    runner is killed, the runner is let go on, and it reports the kernel dead; what the host saw is
    added to the report (``memory_limit``: MB held; ``runner_stopped``)."""
    end = time.monotonic() + timeout
    watched: dict = {}
    while True:
        try:
            proc.wait(timeout=min(WATCH_SECONDS, max(end - time.monotonic(), 0.001)))
            return False, watched
        except subprocess.TimeoutExpired:
            if time.monotonic() >= end:
                return True, watched
        if watched or not Path("/proc").is_dir():
            continue
        tree = _descendants(proc.pid)
        runner = _runner(proc.pid, tree, sandboxed)
        if runner is not None and _state(runner) in ("T", "t"):
            watched["runner_stopped"] = True
        else:
            held = _held_mb([proc.pid, *tree])
            if held > memory_mb:
                watched["memory_limit"] = round(held)
        if watched:
            _kill_all_but(proc.pid, tree, keep={proc.pid, runner, _namespace_init(tree)})
            if runner is not None:
                try:
                    os.kill(runner, signal.SIGCONT)
                except OSError:
                    pass


def _inner_pid(pid: int) -> int | None:
    """``pid``'s number in its own (innermost) PID namespace."""
    try:
        with open(f"/proc/{pid}/status") as f:
            line = next(x for x in f if x.startswith("NSpid:"))
        return int(line.split()[-1])
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def _runner(top: int, tree: list[int], sandboxed: bool) -> int | None:
    """The runner's host pid: pid 2 of the sandbox's namespace under bubblewrap (its init is 1), else the
    process the host started."""
    if not sandboxed:
        return top
    return next((p for p in tree if _inner_pid(p) == 2), None)


def _namespace_init(tree: list[int]) -> int | None:
    return next((p for p in tree if _inner_pid(p) == 1), None)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2]
    except (OSError, ValueError, IndexError):
        return ""


def _held_mb(pids: list[int]) -> float:
    """Memory the processes hold, MB: each one's proportional resident share (PSS: a page shared by n
    processes counts 1/n in each, so forked children are not counted twice; the resident size where that
    cannot be read) and the size of every memory file any of them holds open (``memfd_create``: written
    with ``write`` it is in no process's resident set), each file once."""
    total_kb = 0
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    files: dict[tuple[int, int], int] = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total_kb += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, ValueError, IndexError, StopIteration):
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total_kb += int(f.read().split()[1]) * page_kb
            except (OSError, ValueError, IndexError):
                pass
        try:
            fds = os.scandir(f"/proc/{pid}/fd")
        except OSError:
            continue
        with fds:
            for fd in fds:
                try:
                    if os.readlink(fd.path).startswith("/memfd:"):
                        st = os.stat(fd.path)
                        files[(st.st_dev, st.st_ino)] = st.st_size
                except OSError:
                    pass
    return total_kb / 1024 + sum(files.values()) / 2**20


def _kill_all_but(top: int, pids: list[int], keep: set) -> None:
    for _ in range(3):          # a process may fork while it is being killed
        for pid in pids:
            if pid not in keep:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.01)
        pids = _descendants(top)


# ------------------------------------------------------------------ the process tree

def kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL the sandbox and every process below it (bwrap's pid namespace dies with it)."""
    victims = _descendants(proc.pid) if Path("/proc").is_dir() else []
    for target in [proc.pid, *victims]:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out
