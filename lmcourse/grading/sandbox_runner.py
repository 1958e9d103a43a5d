"""The runner: the program that executes one notebook inside the sandbox (see :mod:`.sandbox`
for the host side and the threat model).

It is run as a script, ``python -I .../sandbox_runner.py BASE [--uid=N]`` (``-I``: no script
folder, working directory or ``PYTHON*`` variables on its path; importing the ``lmcourse``
package would import numpy for nothing), so it imports only the standard library, nbformat and
nbclient. It reads the job (notebook, limits) as JSON on stdin, drops to ``--uid`` when given,
makes itself non-dumpable, sets the rlimits, runs the notebook with nbclient and writes the
report (executed notebook, what stopped it, timestamps) as JSON to a descriptor
the kernel does not inherit.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

INSIDE = "/grade"             # the work folder's path inside the bubblewrap sandbox
# lmcourse.marking.kernel.MIME, written out (this script imports nothing of lmcourse): a test's
# record is kept whatever the output cap, up to this size
RECORD_MIME = "application/vnd.lmcourse.record+json"
MAX_RECORD_CHARS = 20_000_000


def record_display_update(nb, targets: dict, msg: dict) -> bool:
    """Whether a display update would write a record, or overwrite one: ``targets`` is nbclient's
    ``{cell index: [output index]}`` for the display id. A test's record must be the output its own
    cell wrote while it ran (lmcourse.marking.grader.RecordsStayPut does the same under nbgrader)."""
    if RECORD_MIME in ((msg.get("content") or {}).get("data") or {}):
        return True
    for cell_idx, indices in targets.items():
        outputs = nb["cells"][cell_idx].get("outputs", [])
        if any(i < len(outputs) and RECORD_MIME in (outputs[i].get("data") or {}) for i in indices):
            return True
    return False

def _test_cell(cell) -> bool:
    """A test cell of the notebook (nbgrader: graded, not an answer): the one place a record is kept whatever
    the output cap (anywhere else a record-typed output is ordinary output)."""
    meta = (cell.get("metadata") or {}).get("nbgrader") or {}
    return bool(meta.get("grade")) and not meta.get("solution") and cell.get("cell_type") == "code"


CODE_SUFFIXES = (".py", ".pyc", ".pth", ".so", ".pyx")
COMPILER_FOLDERS = ("torchinductor_", ".triton")
MAX_WRITTEN = 200_000          # characters of written code returned to the grader's scan, in all


def written_code(base: Path) -> dict[str, str]:
    """The code files the kernel left under ``base`` (its whole writable world), as text for the grader's
    scan: a module written to disk and imported is code the notebook's cells do not show."""
    found: dict[str, str] = {}
    left = MAX_WRITTEN
    try:
        device = os.stat(base).st_dev
    except OSError:
        return found
    for top, dirs, files in os.walk(base):
        # only what lies on the writable folder itself: a folder bound read-only inside it (the corpus, a
        # checkout or venv under /tmp) is the grader's, not written by the kernel; torch's compiler writes its
        # generated kernels in a folder of its own, and only it may write code files there (the kernel's rules)
        dirs[:] = sorted(d for d in dirs if _same_device(os.path.join(top, d), device)
                         and not d.startswith(COMPILER_FOLDERS))
        for name in sorted(files):
            path = os.path.join(top, name)
            if not name.endswith(CODE_SUFFIXES):
                continue
            if os.path.islink(path):    # a module's text kept under another name, imported through a link
                path = os.path.realpath(path)
            if not _same_device(path, device):
                continue
            try:
                with open(path, "rb") as f:
                    data = f.read(max(left, 0) + 1)
            except OSError:
                continue
            text = data[:left].decode("utf-8", "replace") if not name.endswith((".pyc", ".so")) else \
                "# compiled code written by the notebook"
            found[os.path.relpath(path, base)] = text
            left -= len(text)
            if left <= 0:
                return found
    return found


def _same_device(path: str, device: int) -> bool:
    try:
        return os.stat(path).st_dev == device
    except OSError:
        return False


def _limit(memory_mb: int, nproc: int) -> None:
    import resource

    mem = int(memory_mb) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 2**20, 256 * 2**20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    # open files: a kernel needs a few dozen; each socket pair can hold a fifth of a megabyte in flight
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    files = 1024 if hard == resource.RLIM_INFINITY else min(1024, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))


# Memory no process's resident set or open files show, which the host's watch would not count: memory files
# (memfd_create; held in a socket's queue after close, they are in no process at all), System V shared memory
# and message queues (kept by the IPC namespace with no process attached), POSIX message queues, and socket
# buffers enlarged past the system's default (SO_SNDBUF / SO_RCVBUF and their FORCE forms: hundreds of
# socket pairs, each holding megabytes in flight); pages given to pipes (vmsplice of one byte of each huge
# page, then unmapped: the pipe pins the page, no process maps it; splice and tee move pages the same way);
# and TCP/IP sockets, whose buffers over loopback count against the host's TCP memory, not a process (the
# kernel talks to the runner over Unix sockets). An honest notebook uses none of them; /dev/shm is not
# writable in the sandbox either. (audit arch, {call: number}, setsockopt's number, socket's number)
_HIDDEN_MEMORY_CALLS = {
    "x86_64": (0xC000003E, {"memfd_create": 319, "shmget": 29, "msgget": 68, "mq_open": 240, "splice": 275,
                            "tee": 276, "vmsplice": 278}, 54, 41),
    "aarch64": (0xC00000B7, {"memfd_create": 279, "shmget": 194, "msgget": 186, "mq_open": 180, "vmsplice": 75,
                             "splice": 76, "tee": 77}, 208, 198),
}
_SOL_SOCKET, _BUFFER_OPTIONS = 1, (7, 8, 32, 33)   # SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE
_IP_DOMAINS = (2, 10)                               # AF_INET, AF_INET6


def _refuse_hidden_memory() -> bool:
    """A seccomp filter, inherited by the kernel and everything it starts and never removable, that makes
    :data:`_HIDDEN_MEMORY_CALLS`, TCP/IP sockets and the socket-buffer options fail with EPERM (and every system call of
    another ABI: x32's numbers, i386's through ``int 0x80``). False where the machine is not known here or
    the filter cannot be set."""
    import ctypes
    import platform
    import struct

    arch = _HIDDEN_MEMORY_CALLS.get(platform.machine())
    if arch is None:
        return False
    audit_arch, calls, setsockopt, socket = arch
    ld_abs, jeq, jge, ret, ja = 0x20, 0x15, 0x35, 0x06, 0x05
    allow, refuse = 0x7FFF0000, 0x00050000 | 1          # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    # (code, jump if true, jump if false, k), a jump's target named by its label; seccomp_data: the call's
    # number at 0, the arch at 4, argument i's low word at 16 + 8 i
    body = [(ld_abs, 0, 0, 4), (jeq, 1, 0, audit_arch), (ja, 0, 0, "refuse"), (ld_abs, 0, 0, 0)]
    if platform.machine() == "x86_64":
        body.append((jge, "refuse", 0, 0x40000000))       # the x32 ABI's numbers
    body += [(jeq, "refuse", 0, nr) for nr in calls.values()]
    # socket(domain, ...): a TCP/IP domain refused; any other call goes on with its number still loaded
    body += [(jeq, 0, 2 + len(_IP_DOMAINS), socket), (ld_abs, 0, 0, 16)]
    body += [(jeq, "refuse", 0, domain) for domain in _IP_DOMAINS] + [(ja, 0, 0, "allow")]
    body += [(jeq, 0, "allow", setsockopt), (ld_abs, 0, 0, 24), (jeq, 0, "allow", _SOL_SOCKET), (ld_abs, 0, 0, 32)]
    body += [(jeq, "refuse", 0, option) for option in _BUFFER_OPTIONS]
    labels = {"allow": len(body), "refuse": len(body) + 1}
    body += [(ret, 0, 0, allow), (ret, 0, 0, refuse)]
    program = b""
    for i, (code, jt, jf, k) in enumerate(body):
        jt, jf = (labels[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf))
        k = labels[k] - i - 1 if isinstance(k, str) else k
        program += struct.pack("HBBI", code, jt, jf, k)

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    prog = Prog(len(program) // 8, program)
    if libc.prctl(38, 1, 0, 0, 0) != 0:                   # PR_SET_NO_NEW_PRIVS
        return False
    return libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0   # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


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
    injected_tag = job["injected_tag"]

    class Client(NotebookClient):
        """nbclient with a per-notebook output budget (the grader's own cells always report)."""

        def output(self, outs, msg, display_id, cell_index):
            out = super().output(outs, msg, display_id, cell_index)
            if out is None or not outs or outs[-1] is not out:
                return out
            size = len(json.dumps(out))
            if injected_tag in self.nb.cells[cell_index].metadata and size < 20_000:
                return out
            records = sum(RECORD_MIME in (o.get("data") or {}) for o in outs)
            if RECORD_MIME in out.get("data", {}) and size < MAX_RECORD_CHARS and records == 1 and \
                    _test_cell(self.nb.cells[cell_index]):
                return out      # a test's one record is what the grade is made from: a flood before it costs nothing
            if size > budget["left"]:
                outs.pop()
                if budget["left"] >= 0:
                    outs.append(nbformat.v4.new_output(
                        "stream", name="stdout", text="[output cut: the grader's output cap]\n"))
                budget["left"] = -1
                return None
            budget["left"] -= size
            return out

        def _update_display_id(self, display_id, msg):
            # a display id lets a later cell rewrite an earlier cell's output: never a test's record
            # (one cell's record replaced with what a later cell computed from its stand-ins), and every
            # rewrite is charged to the output budget like a new output
            if record_display_update(self.nb, self._display_id_map.get(display_id, {}), msg):
                return
            size = len(json.dumps((msg.get("content") or {}).get("data") or {}))
            if size > budget["left"]:
                budget["left"] = -1
                return
            budget["left"] -= size
            super()._update_display_id(display_id, msg)

    timeout_reply = {"ename": "CellTimeoutError", "evalue": f"cell ran past {job['cell_timeout']} s",
                     "traceback": [f"CellTimeoutError: cell ran past {job['cell_timeout']} s"]}
    import tempfile

    from traitlets.config import Config

    # the kernel and the runner talk over Unix sockets: the filter refuses TCP/IP sockets to both
    config = Config()
    config.KernelManager.transport = "ipc"
    # in a short folder: a Unix socket's path has a length limit (about 100 bytes), which a work folder deep in
    # a temporary tree (the runner without the sandbox) passes
    short = "/tmp" if os.path.isdir("/tmp") and os.access("/tmp", os.W_OK) else None
    sockets = tempfile.mkdtemp(prefix="k-", dir=short)
    config.KernelManager.ip = os.path.join(sockets, "kernel")
    client = Client(nb, timeout=int(job["cell_timeout"]), interrupt_on_timeout=True, config=config,
                    error_on_timeout=timeout_reply, allow_errors=True, kernel_name="python3",
                    record_timing=False, iopub_timeout=4, shutdown_kernel="immediate",
                    extra_arguments=["--HistoryManager.enabled=False"],
                    resources={"metadata": {"path": str(base / "run")}})
    report = {"timed_out_cells": [], "died": None, "deadline": None, "process_limit": None, "stuck": None}
    end = time.monotonic() + float(job["notebook_timeout"])

    bombed: asyncio.Event | None = None

    async def watchdog():
        """A fork bomb fills the process table; the kernel then cannot start a thread and
        stalls. Near the limit, kill everything in the sandbox but bwrap's init and this
        runner (the kernel dies: the cells not run score 0). Memory is watched from the host
        (:func:`lmcourse.grading.sandbox.run`), where no process of the sandbox can stop the watch."""
        while True:
            await asyncio.sleep(0.1)
            if _tasks() >= int(job["nproc"]) - 4:
                report["process_limit"] = _tasks()
                _kill_all_but_me()
                bombed.set()
                return

    async def answers(wait: float) -> bool:
        """Whether the kernel answers a kernel_info request within ``wait`` s. After a cell ran past
        its cap and was interrupted, a kernel that still does not answer is stuck (a loop that
        ignores SIGINT, a kernel the notebook broke): every later cell would wait out its own cap
        (minutes of a batch, for no point a stuck kernel could still earn)."""
        msg_id = client.kc.kernel_info()
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await client.kc.shell_channel.get_msg(timeout=left)
            except Exception:  # noqa: BLE001 (queue.Empty: nothing in time)
                return False
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return True
        return False

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
                    if not await answers(min(10.0, float(job["cell_timeout"]))):
                        report["stuck"] = i
                        return
            stamps["cells"] = time.time()

    try:
        asyncio.run(main())
    except DeadKernelError:
        report["died"] = report["died"] if report["died"] is not None else -1
    except RuntimeError as exc:  # kernel failed to start, e.g. out of processes or memory
        report["died"] = -1
        report["error"] = str(exc)[:300]
    stop = report["deadline"] if report["deadline"] is not None else report["died"]
    if stop is None and report["stuck"] is not None:
        stop = report["stuck"] + 1       # the stuck cell has its timeout error already
    if stop is not None:
        # cells that never ran (or were cut off) must not look clean: nbgrader's rule gives
        # full points to a test cell without an error output
        why = ("the sandbox reached its process limit" if report["process_limit"] is not None else
               "the kernel died" if report["died"] is not None else
               "the notebook time cap was reached" if report["deadline"] is not None else
               "the kernel did not stop when a cell was interrupted at its time cap")
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and (stop < 0 or i >= stop):
                cell.outputs.append(nbformat.v4.new_output(
                    "error", ename="NotRun", evalue=why, traceback=[f"NotRun: {why}"]))
    stamps["shutdown"] = time.time()
    import shutil

    shutil.rmtree(sockets, ignore_errors=True)
    report["written_code"] = written_code(base)
    if sandboxed:       # the sandbox's /tmp is a folder of its own
        report["written_code"].update({f"/tmp/{k}": v for k, v in written_code(Path("/tmp")).items()})
    report["nb"] = nb
    return report


def runner_main(argv: list[str]) -> int:
    import time

    stamps = {"start": time.time()}
    # what nbgrader_cli.skip_uri_grammar does (this script runs with -I and imports no lmcourse module)
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
    refused = _refuse_hidden_memory()
    try:
        # only in bubblewrap's pid namespace does /proc show just the sandbox
        report = _run(job, base, stamps, sandboxed=str(base) == INSIDE)
    except MemoryError:
        report = {"died": -1, "error": "MemoryError in the runner", "nb": None}
    except Exception as exc:  # noqa: BLE001 (report, never hang)
        report = {"died": -1, "error": f"{type(exc).__name__}: {exc}"[:300], "nb": None}
    report["stamps"] = stamps
    report["hidden_memory_refused"] = refused
    data = json.dumps(report).encode()
    with os.fdopen(result_fd, "wb") as out:
        out.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(runner_main(sys.argv[1:]))
