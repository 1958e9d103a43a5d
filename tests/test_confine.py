"""lmcourse.marking.confine: a graded call starts no thread or process and reads no course source
and the rules of every exercise enter it."""

from __future__ import annotations

import concurrent.futures
import inspect
import linecache
import multiprocessing
import os
import subprocess
import sysconfig
import threading
import traceback
import warnings

import pytest

from lmcourse.marking import rules
from lmcourse.marking.confine import Confined, graded_call
from lmcourse.reference import ngram


def _thread():
    out = []
    t = threading.Thread(target=lambda: out.append(ngram.mle_prob))
    t.start()
    t.join()
    return out


def _pool():
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        return ex.submit(len, "abc").result()


def _fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def _process():
    p = multiprocessing.get_context("fork").Process(target=len, args=("a",))
    p.start()
    p.join()


ATTEMPTS = {
    "thread": (_thread, "starting a thread"),
    "thread pool": (_pool, "starting a thread"),
    "fork": (_fork, "os.fork"),
    "multiprocessing": (_process, "starting a"),
    "subprocess": (lambda: subprocess.run(["true"]), "subprocess"),
    "os.system": (lambda: os.system("true"), "os.system"),
    "getsource": (lambda: inspect.getsource(ngram.mle_prob), "reading the course's source"),
    "getsource shifted": (lambda: exec(compile("\n" + inspect.getsource(ngram), ngram.__file__, "exec"), {}),
                          "reading the course's source"),
    "linecache": (lambda: linecache.getlines(ngram.__file__), "reading the course's source"),
    "open": (lambda: open(ngram.__file__).read(), "reading the course's source"),
    "loader": (lambda: ngram.__spec__.loader.get_source("lmcourse.reference.ngram"), "reading the course's source"),
}


@pytest.mark.parametrize("name", sorted(ATTEMPTS))
def test_refused_inside_a_graded_call_and_said_why(name):
    fn, what = ATTEMPTS[name]
    linecache.getlines(ngram.__file__)          # cached before: the graded call must not answer from memory
    with pytest.raises(Confined, match=what) as err, graded_call():
        fn()
    assert "inside a graded call is refused" in str(err.value) and "own thread" in str(err.value)


@pytest.mark.parametrize("name", ["thread", "thread pool", "getsource", "open"])
def test_allowed_outside_a_graded_call(name):
    ATTEMPTS[name][0]()


def test_other_threads_are_not_confined():
    """Only the graded call's own thread is gated: a thread running beside it that a library
    started (the kernel's) may start threads and run code."""
    started, go, done = [], threading.Event(), threading.Event()

    def beside():
        go.wait(5)
        _library["start"](lambda: started.append(1)).join()
        done.set()

    t = _library["start"](beside)
    with graded_call():
        go.set()
        assert done.wait(5)
    t.join()
    assert started == [1]


def test_a_thread_started_before_the_graded_call_cannot_do_its_work():
    """A worker pool warmed before the graded call (at the top of an answer cell) and fed inside it:
    the reference would run unseen on the worker, so the graded call fails when it ends."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        pool.submit(int).result()                  # the worker thread exists before the call
        with pytest.raises(Confined, match="thread your code started before it"), graded_call():
            table = ngram.ContextTable.from_counts({("a", "b"): 1})
            assert pool.submit(ngram.mle_prob, table, ("a",), "b").result() == 1
        with graded_call():                         # a graded call that hands it nothing passes
            pass
        assert pool.submit(len, "ab").result() == 2   # and outside a graded call the worker works
    finally:
        pool.shutdown()


def test_a_students_thread_cannot_switch_off_its_watch():
    out = []

    def worker():
        try:
            import sys
            sys.setprofile(None)
        except Confined as e:
            out.append(str(e))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert out and "switching off the watch" in out[0]


def test_a_reader_compiled_under_a_course_file_name_is_a_students():
    """compile() may give code any file name: course code is code that runs in the module's own globals."""
    forged: dict = {}
    exec(compile("import inspect\ndef read(obj):\n    return inspect.getsource(obj)\n", ngram.__file__, "exec"), forged)
    with pytest.raises(Confined, match="reading the course's source"), graded_call():
        forged["read"](ngram.mle_prob)


def test_imports_and_check_messages_still_read_source(tmp_path, monkeypatch):
    """Importing a not-yet-imported course module and a check helper's message quoting a line work."""
    import sys

    from lmcourse.checks import CheckFailed, check_close
    monkeypatch.delitem(sys.modules, "lmcourse.dates", raising=False)
    with graded_call():
        import lmcourse.dates  # noqa: F401
        with pytest.raises(CheckFailed):
            check_close(1.0, 2.0, "x")


def test_rules_enter_the_confinement():
    """The one graded-call context (rules.Rules.__enter__) confines: a student function that hands
    the reference to a thread is refused, and the reference is still refused on this thread."""
    r = rules.rules(ngram.mle_prob)

    def on_a_thread(table, context, word):
        out = []
        t = threading.Thread(target=lambda: out.append(ngram.mle_prob(table, context, word)))
        t.start()
        t.join()
        return out[0]

    table = ngram.ContextTable.from_counts({("a", "b"): 1})
    with pytest.raises(Confined, match="starting a thread"), r():
        on_a_thread(table, ("a",), "b")
    with pytest.raises(Confined, match="reading the course's source"), r():
        exec(compile("\n" + inspect.getsource(ngram), ngram.__file__, "exec"), {})
    _thread()                                   # left: threads start again


# A library's code, as confine tells it: compiled under a file name in site-packages (as torch's is)
_LIBRARY = os.path.join(sysconfig.get_paths()["purelib"], "lmcourse_test_library.py")
_library: dict = {}
exec(compile("import inspect, traceback, warnings\n"
             "def format_stack():\n    return traceback.format_stack()\n"
             "def warn(stacklevel):\n    warnings.warn('a library warns', UserWarning, stacklevel=stacklevel)\n"
             "def getsource(obj):\n    return inspect.getsource(obj)\n"
             "def start(target):\n    import threading\n    t = threading.Thread(target=target)\n"
             "    t.start()\n    return t\n", _LIBRARY, "exec"), _library)


def test_a_library_quoting_the_running_frames_fails_nothing_and_reads_nothing():
    """A correct answer whose library formats the stack (torch's lazy CUDA calls) or
    warns with a stack level that lands on lmcourse.checks is not failed, and the quoted lines of
    the course's files are withheld (linecache reads them as a file it cannot open: not cached)."""
    from lmcourse import checks

    line = checks.call_checked.__code__.co_firstlineno

    def answer(how):                            # the same machinery, called by the answer itself
        if how == "warning":
            return warnings.formatwarning("located in checks.py", UserWarning, checks.__file__, line)
        return "".join(traceback.format_stack())

    def answer_with_warning():
        _library["warn"](3)                     # 1: the library, 2: this answer, 3: checks.call_checked
        return 1

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        with graded_call():
            stack = checks.call_checked(lambda: "".join(_library["format_stack"]()), name="answer()")
            assert checks.call_checked(answer_with_warning, name="answer()") == 1
            # (traceback leaves a lazy entry, a loader to call later; no lines)
            cached = [k for k, v in linecache.cache.items()
                      if k.startswith(os.path.dirname(checks.__file__)) and len(v) == 4 and v[2]]
            assert not cached, cached
    assert "checks.py" in stack and "def call_checked" not in stack   # the frame is named, its text withheld
    # the answer's own: refused (warnings swallows the refusal and quotes nothing)
    with pytest.raises(checks.CheckFailed, match="raised Confined: reading the course's source"), graded_call():
        checks.call_checked(answer, "stack", name="answer()")
    with graded_call():
        quoted = checks.call_checked(answer, "warning", name="answer()")
    assert quoted.startswith(checks.__file__) and "def call_checked" not in quoted
    assert "def call_checked" in answer("warning")          # (outside a graded call the line is there)


def test_torch_reseeding_inside_a_checked_call_is_not_refused():
    """The 07 case that was refused: torch.manual_seed queues its CUDA seeding with the stack's
    text when CUDA is not initialised (a false 'reading the course's source (lmcourse/checks.py)')."""
    torch = pytest.importorskip("torch")
    from lmcourse import checks

    def sample(generator):
        torch.manual_seed(generator.initial_seed())
        return torch.multinomial(torch.ones(3), 1)

    with graded_call():
        assert checks.call_checked(sample, torch.Generator().manual_seed(0), name="sample()").shape == (1,)


def test_a_library_asked_for_the_source_by_the_answer_gets_none():
    """The other direction: an answer that asks a library for a reference's source gets an error, no text."""
    with pytest.raises((Confined, OSError)), graded_call():
        _library["getsource"](ngram.mle_prob)   # (inspect: "could not get source code")
    assert _library["getsource"](ngram.mle_prob).startswith("def mle_prob")      # outside: allowed


# the helper each script below prints its verdicts with
_ATTEMPT = r'''
def attempt(label, fn):
    try:
        fn()
        print(label, "allowed")
    except confine.Confined as e:
        print(label, "refused:", e)
'''

# A graded kernel (the grader's preamble calls confine.arm): a process started from a student's code is
# refused at any time, not only inside a graded call. Arming is for good, so it is tried in a fresh
# interpreter; its code, compiled from a string, counts as a student's.
_ARMED = r'''
import multiprocessing, os, subprocess, sys, sysconfig
from lmcourse.marking import confine
from lmcourse.commands import setup_torch

{ATTEMPT}
def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)

def pipe_worker():                  # the red team's: a child forked at the top of a cell, fed through a pipe
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)

def spawn():
    p = multiprocessing.get_context("spawn").Process(target=len, args=("a",))
    p.start()
    p.join()

library = {}
exec(compile("import subprocess\ndef run():\n    return subprocess.run(['true']).returncode\n",
             os.path.join(sysconfig.get_paths()["purelib"], "lmcourse_test_library.py"), "exec"), library)

if __name__ == "__main__":
    attempt("fork before arming", fork)
    attempt("subprocess before arming", lambda: subprocess.run(["true"]))
    confine.arm()
    confine.arm()                   # twice: still armed
    attempt("fork", fork)
    attempt("pipe worker", pipe_worker)
    attempt("subprocess", lambda: subprocess.run(["true"]))
    attempt("os.system", lambda: os.system("true"))
    attempt("multiprocessing fork", lambda: multiprocessing.get_context("fork").Process(target=len).start())
    attempt("multiprocessing spawn", spawn)
    attempt("IPython getoutput", lambda: __import__("IPython.utils.process", fromlist=["x"]).getoutput("true"))
    attempt("a library", library["run"])
    attempt("course code", lambda: setup_torch.has_nvidia_gpu(exists=lambda p: False, which=lambda n: "/bin/true"))
'''


def test_an_armed_kernel_refuses_a_students_process_at_any_time(tmp_path):
    """Finding C of the 08 red team: os.fork() at the top of an answer cell (outside any graded call),
    the child running the reference on what a pipe feeds it inside the call. Once armed, every way a
    student's code starts a process is refused, launchers that start one on request included (IPython);
    a library's and the course's own code still start theirs."""
    import subprocess
    import sys

    script = tmp_path / "armed.py"
    script.write_text(_ARMED.replace("{ATTEMPT}", _ATTEMPT))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = {}
    for line in done.stdout.splitlines():
        label, _, why = line.partition(" refused: ")
        said[label if why else line.removesuffix(" allowed")] = why or "allowed"
    assert said["fork before arming"] == said["subprocess before arming"] == "allowed"
    for label, what in [("fork", "os.fork"), ("pipe worker", "os.fork"), ("subprocess", "subprocess"),
                        ("os.system", "os.system"), ("multiprocessing fork", "os.fork"),
                        ("multiprocessing spawn", "fork_exec"), ("IPython getoutput", "subprocess")]:
        assert what in said[label] and "refused in a graded notebook" in said[label], (label, said[label])
        assert "not only inside a graded call" in said[label]
    assert said["a library"] == said["course code"] == "allowed", said


_UNPICKLING = r'''
import io, pickle, sys
import numpy as np
import torch
from lmcourse.marking import confine

class Runs:
    def __reduce__(self):
        return (exec, ("print('the hidden text ran')",))

class Reaches:
    def __reduce__(self):
        import lmcourse.marking.notebooks as n
        return (n.load, ("02_rnn",))

{ATTEMPT}
buf = io.BytesIO()
torch.save({"w": torch.ones(2), "cfg": {"lr": 1e-3}, "a": np.arange(3)}, buf)
attempt("exec before arming", lambda: pickle.loads(pickle.dumps(Runs())))
confine.arm()
attempt("exec", lambda: pickle.loads(pickle.dumps(Runs())))
attempt("the test machinery", lambda: pickle.loads(pickle.dumps(Reaches())))
attempt("torch.load of exec", lambda: torch.load(io.BytesIO(pickle.dumps(Runs())), weights_only=False))
attempt("a checkpoint", lambda: torch.load(io.BytesIO(buf.getvalue()), weights_only=False))
attempt("plain data", lambda: [pickle.loads(pickle.dumps({"t": torch.ones(2), "a": np.arange(3), "f": frozenset([1]),
                                                          "r": range(2), "dt": torch.float16}, protocol=p))
                               for p in (2, 4, 5)])

class Names:
    def __init__(self, function):
        self.function = function
    def __reduce__(self):
        return (self.function, ("print('the hidden text ran')",))

import cProfile, pkgutil, pydoc, timeit  # noqa: E401
for label, function in [("timeit", timeit.timeit), ("cProfile", cProfile.run), ("resolve_name", pkgutil.resolve_name),
                        ("pydoc.locate", pydoc.locate)]:
    attempt(label, lambda: pickle.loads(pickle.dumps(Names(function))))
'''


def test_an_armed_kernel_unpickles_data_but_no_code_runner(tmp_path):
    """The thirteenth red team: a pickle the cell wrote as hex, loaded by a course loader (then torch.load with
    weights_only=False) or a library's pickle handler, called exec on a hidden text; the fourteenth named
    timeit.timeit, which no list of refused names held. Once armed, a pickle may name data types only
    (tensors, arrays, plain containers): a checkpoint and plain data load, any function is refused."""
    import subprocess
    import sys

    script = tmp_path / "unpickling.py"
    script.write_text(_UNPICKLING.replace("{ATTEMPT}", _ATTEMPT))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "exec before arming allowed" in lines and "the hidden text ran" in lines, lines
    for label, name in [("exec", "builtins.exec"), ("the test machinery", "lmcourse.marking"),
                        ("torch.load of exec", "builtins.exec"), ("timeit", "timeit.timeit"),
                        ("cProfile", "cProfile.run"), ("resolve_name", "pkgutil.resolve_name"),
                        ("pydoc.locate", "pydoc.locate")]:
        said = next(x for x in lines if x.startswith(label + " refused") or x == label + " allowed")
        assert f"refused: a pickle naming {name}" in said, said
    assert "a checkpoint allowed" in lines and "plain data allowed" in lines, lines
    assert lines.count("the hidden text ran") == 1, lines


_CODE_FILES = r'''
import os, pathlib, sys
import numpy as np
from lmcourse.marking import confine

{ATTEMPT}
os.chdir(sys.argv[1])
attempt("before arming", lambda: open("early.py", "w").close())
confine.arm()
attempt("open w", lambda: open("_notes.py", "w").close())
attempt("open a", lambda: open("early.py", "a").close())
attempt("os.open", lambda: os.close(os.open("_n.pth", os.O_WRONLY | os.O_CREAT)))
attempt("write_text", lambda: pathlib.Path("_n.py").write_text("x = 1"))
attempt("rename", lambda: (open("n.txt", "w").close(), os.rename("n.txt", "n.py")))
attempt("read", lambda: open("early.py").read())
attempt("data", lambda: open("notes.txt", "w").write("x"))
attempt("a library", lambda: np.savetxt("table.py", np.zeros(0), header="print(1)", comments=""))
attempt("set_data", lambda: np.__loader__.set_data("planted.py", b"print(1)"))
'''


def test_an_armed_kernel_writes_no_code_file_from_a_students_code(tmp_path):
    """The sixteenth red team wrote a module with open() and had matplotlib import it by name (round fifteen's
    backend route), then could have deleted it before the written-code check lists the folder; another planted
    one where torch's compiler would import it (np.savetxt writes any text, through a library's frame; the
    seventeenth, a loader's set_data, through the import system's frames). Once
    armed, only the course and torch's compiler write, rename or link a file a module is imported from; data
    files and reading go on."""
    import subprocess
    import sys

    script = tmp_path / "code_files.py"
    script.write_text(_CODE_FILES.replace("{ATTEMPT}", _ATTEMPT))
    (tmp_path / "run").mkdir()
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for label in ("open w", "open a", "os.open", "write_text", "rename", "a library", "set_data"):
        said = next(x for x in lines if x.startswith(label + " "))
        assert "refused: writing a code file" in said, said
    for label in ("before arming", "read", "data"):
        assert f"{label} allowed" in lines, lines
    assert not (tmp_path / "run" / "_notes.py").exists() and not (tmp_path / "run" / "n.py").exists()


_PROGRAMS = r'''
import os, subprocess, sys
from lmcourse.marking import confine
{ATTEMPT}
os.chdir(sys.argv[1])
open("cxx.txt", "w").write("#!/bin/sh\necho ran\n")
os.chmod("cxx.txt", 0o755)
confine.arm()
attempt("a written program", lambda: subprocess.run([os.path.abspath("cxx.txt")]))
attempt("a written program by name", lambda: subprocess.run("./cxx.txt", shell=False))
attempt("a system program", lambda: subprocess.run(["true"]))
'''


def test_an_armed_kernel_runs_no_program_from_a_folder_it_can_write(tmp_path):
    """The seventeenth red team gave torch.compile a shell script of its own as the C++ compiler
    (``options={"cpp.cxx": ...}``): the compiler may start processes, even inside a graded call, so whoever
    starts it, a program lying where the notebook writes (its folder, its temporary folder, its home) is
    refused, while a system program is refused only as a student's process."""
    import subprocess
    import sys

    script = tmp_path / "programs.py"
    script.write_text(_PROGRAMS.replace("{ATTEMPT}", _ATTEMPT))
    (tmp_path / "run").mkdir()
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=120, env={**__import__("os").environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for label in ("a written program", "a written program by name"):
        said = next(x for x in lines if x.startswith(label + " "))
        assert "refused: running a program that lies in a folder this notebook can write" in said, said
    said = next(x for x in lines if x.startswith("a system program "))
    assert "refused: starting a process (subprocess) from your code" in said, said
