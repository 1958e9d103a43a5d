"""Confinement of a graded call: no other thread or process, no reading of the course's source.

The rules of a graded call (:mod:`lmcourse.marking.rules`) watch the thread the test runs on
(``sys.setprofile`` is per thread): work handed to another thread or process runs unseen, and a
copy of the reference made from its source (``exec(inspect.getsource(ref))``, shifted a line)
is new code the rules cannot recognise. Within :func:`graded_call`, on its thread, this module
refuses:

- starting a thread (``threading``, ``concurrent.futures``, ``_thread.start_new_thread``) or a
  process (``os.fork`` / ``forkpty``, ``subprocess``, ``multiprocessing``, ``os.system``,
  ``os.posix_spawn``, ``os.spawn*``, ``os.exec*``, ``pty.spawn``);
- opening a source file of the ``lmcourse`` package from a graded answer's code
  (``inspect.getsource``, ``linecache``, ``open``, a loader's ``get_source``), while importing a
  module and the check helpers' own error messages (which quote source lines) still read them.
  A library's read (a warning, or torch's lazy CUDA calls, quoting the lines of the running
  frames through ``traceback`` / ``linecache``) is withheld without failing the answer: it gets
  :class:`SourceWithheld`, an ``OSError``, which ``linecache`` answers as a file it cannot read.

It is a ``sys.addaudithook`` hook (CPython raises these audit events for every one of those
operations, Python or C, and an audit hook cannot be removed), plus, for threads, a gate in
``_thread.start_new_thread`` (Python 3.11 audits no thread start), installed once on import and
gated by a per-thread table held in its closure (a student who digs that closure out with ``gc``
before the graded call can still empty it; what that lets through is a third-party equivalent,
for the source scan and the similarity report: the verdict is made outside the kernel).
The refusal is a :class:`Confined` error that says what was refused and why.

A thread that a student's code started *before* the graded call (a worker pool warmed at the top
of an answer cell, fed inside the call) would run the reference unseen too: every thread started
from a student's code (not from a library's or the course's) is watched from its first line, and
a graded call during which such a thread ran Python code fails when it ends; such a thread may
not switch off its watch (``sys.setprofile`` / ``sys.settrace`` are refused on it). Code counts as
course code only when its frame's globals are a loaded ``lmcourse`` module's own and its file is
that module's file (code compiled under a course file name into other globals is a student's).

A *process* that a student's code started before the graded call (``os.fork()`` at the top of an
answer cell, the child fed through a pipe inside the call) would run the reference unseen too, and
no rule can watch another process: in a graded kernel the grader's preamble calls :func:`arm`, and
from then on starting a process from a student's code is refused at any time, inside a graded call
or not (the same events, and ``_posixsubprocess.fork_exec``, which multiprocessing's ``spawn``
context calls unaudited). Who starts it is decided as for threads, by the nearest frame that is
neither the standard library nor a library that starts processes on request (IPython's ``!`` and
``system``, ``ipykernel``, ``jupyter_client``, ``pexpect``, ``ptyprocess``, ``joblib``, ``loky``,
``multiprocess``, ``torch.multiprocessing``, torch's ``DataLoader`` workers): the course's code and
other libraries (a font cache, torch's compiler workers) still start theirs. Arming is one audit
event the hook itself answers, with its state in the hook's closure only: nothing disarms it.

Limits: a copy made outside a graded call (at the top of an answer cell) or typed by hand is
not refused here; that is for the TA's similarity report. Outside a graded kernel (``arm`` not
called: a student's own JupyterLab, these tests) a process started before a graded call is not
refused; a process started through ``ctypes`` (``libc.fork``) is not (the scan flags ``ctypes``).
"""

from __future__ import annotations

import _compat_pickle
import _posixsubprocess
import _thread
import contextlib
import importlib.util
import linecache
import os
import sys
import sysconfig
import threading

__all__ = ["Confined", "SourceWithheld", "arm", "graded_call"]

WHY = ("a graded call runs on its own thread only, and never reads the course's source: the "
       "rules check the work done on this thread, and a copy of the reference is not your own code")

_EVENTS = {
    "_thread.start_new_thread": "starting a thread",
    "os.fork": "starting a process (os.fork)",
    "os.forkpty": "starting a process (os.forkpty)",
    "os.posix_spawn": "starting a process (os.posix_spawn)",
    "os.spawn": "starting a process (os.spawn*)",
    "os.exec": "replacing the process (os.exec*)",
    "os.system": "running a shell command (os.system)",
    "subprocess.Popen": "starting a process (subprocess)",
    "pty.spawn": "starting a process (pty.spawn)",
    "_posixsubprocess.fork_exec": "starting a process (_posixsubprocess.fork_exec: multiprocessing's spawn)",
    # a sub-interpreter's own audit hooks are not this one: a process it starts would pass unseen
    "cpython.PyInterpreterState_New": "starting a sub-interpreter",
}
_PROCESS = frozenset(e for e in _EVENTS if e != "_thread.start_new_thread")
_ARM = "lmcourse.confine.arm"
WHY_PROCESS = ("your code starts no process at any time, not only inside a graded call: the rules watch the work "
               "done in this kernel, and another process could run the course's reference where they cannot see it")
# libraries that start a process when asked to (a shell escape, a kernel, a worker pool): a process they
# start is the student's who asked, as if the standard library had started it
_LAUNCHERS = ("IPython", "ipykernel", "jupyter_client", "pexpect", "ptyprocess", "joblib", "loky", "multiprocess",
              "torch/multiprocessing", "torch/utils/data")


# what a pickle may name in a graded kernel: data only (tensors, arrays, plain containers), the names torch's own
# weights-only loader and numpy's array pickles use. A pickle (torch.load of a file the cell wrote, a loader that
# unpickles) is a program, and the standard library alone holds many functions that run a text (timeit, cProfile,
# pkgutil.resolve_name, ...): a list of refused names cannot be complete, a list of data names can.
_UNPICKLE_DATA_NAMES = frozenset((
    "builtins.set", "builtins.frozenset", "builtins.complex", "builtins.bytearray", "builtins.slice",
    "builtins.range", "builtins.dict", "builtins.list", "builtins.tuple", "builtins.int", "builtins.float",
    "builtins.str", "builtins.bytes", "builtins.bool", "_codecs.encode", "copyreg._reconstructor",
    "collections.OrderedDict", "collections.Counter", "collections.defaultdict", "collections.deque",
    "torch._tensor._rebuild_from_type_v2", "torch.nn.parameter.Parameter", "torch.serialization._get_layout",
    "torch.storage.TypedStorage", "torch.storage.UntypedStorage", "torch.storage._load_from_bytes",
    "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar", "numpy.core.numeric._frombuffer",
    "numpy._core.numeric._frombuffer"))
# modules whose data names follow a pattern: torch's rebuild functions, tensor and storage types, dtypes and
# layouts (values); numpy's dtype classes. (torch.storage._load_from_bytes reads a pickle in a pickle, which
# comes through this same check.)
_UNPICKLE_DATA_MODULES = ("torch", "torch.cuda", "torch.sparse", "torch._utils", "numpy.dtypes")
WHY_UNPICKLE = ("a pickle in a graded notebook may rebuild data (tensors, arrays, plain containers), nothing else: "
                "save weights with torch.save(model.state_dict(), path) and read them with torch.load(path) "
                "(weights_only, the default)")


# files a module is imported from: a graded notebook's own code never writes one (a cell that wrote one and had it
# imported would run code no reading of the cells sees); a library's (torch's compiler caches) may
_CODE_SUFFIXES = (".py", ".pyw", ".pyc", ".pth", ".so", ".pyd")
# the code that may write one in a graded kernel: torch's compiler, writing the kernels it generated (with its
# on-disk caches off in a graded kernel, it reads back no file it did not write in this run)
_COMPILERS = ("torch/_inductor", "torch/_dynamo", "triton")
_PLACING = ("os.rename", "os.link", "os.symlink")
WHY_CODE_FILE = ("a module written by the notebook would run code that no reading of its cells sees; keep data in "
                 "other files (.txt, .json, .pt, .npy)")


WHY_PROGRAM = ("a program the notebook could have written would run code that no reading of its cells sees; "
               "leave a library's programs (its compiler) at their defaults")


class Confined(RuntimeError):
    """A graded call did something it must not: start a thread or process, or read course source."""


class SourceWithheld(Confined, OSError):
    """A library read course source inside a graded call (a warning or a stack trace quoting the
    running frames' lines): an OSError, so ``linecache`` and ``traceback`` go on without the lines
    and a correct answer that makes a library warn is not failed for it."""


def _library_dirs(names: tuple[str, ...]) -> tuple[str, ...]:
    # where each of these installed libraries (or parts: "torch/_inductor") lies, found without importing it
    dirs = []
    for name in names:
        top, _, rest = name.partition("/")
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            spec = None
        for d in (spec.submodule_search_locations or []) if spec is not None else []:
            for base in (d, os.path.realpath(d)):
                dirs.append(os.path.join(base, *rest.split("/"), "") if rest else os.path.join(base, ""))
    return tuple(dict.fromkeys(dirs))


def _install():
    # the lmcourse package: this module lives in lmcourse/marking/
    package_raw = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    package = os.path.realpath(package_raw) + os.sep
    libraries = tuple({p + os.sep for k in ("purelib", "platlib")
                       for p in (sysconfig.get_paths()[k], os.path.realpath(sysconfig.get_paths()[k]))})
    stdlib = tuple({os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep,
                    sysconfig.get_paths()["stdlib"] + os.sep, os.path.dirname(os.__file__) + os.sep})
    inside: dict[int, object] = {}          # thread id -> the frame that entered the graded call
    watched_threads: set[int] = set()        # threads a student's code started (see the docstring)
    ran_beside: list[int] = []               # watched threads that ran code while a graded call was open
    armed: list[bool] = []                   # a graded kernel: no process from a student's code, ever (arm())
    launchers, compilers = _library_dirs(_LAUNCHERS), _library_dirs(_COMPILERS)
    get_ident, getframe, realpath, fspath = threading.get_ident, sys._getframe, os.path.realpath, os.fspath
    str_, bytes_, isinstance_, type_ = str, bytes, isinstance, type
    # bound here: rebinding the module's names later changes nothing the hook reads
    events, why, confined, withheld = dict(_EVENTS), WHY, Confined, SourceWithheld
    process, arm_event, why_process, audit = _PROCESS, _ARM, WHY_PROCESS, sys.audit
    data_names, data_modules, why_unpickle = _UNPICKLE_DATA_NAMES, _UNPICKLE_DATA_MODULES, WHY_UNPICKLE
    code_suffixes, why_code_file, placing = _CODE_SUFFIXES, WHY_CODE_FILE, _PLACING
    why_program, environ, sep, pathsep = WHY_PROGRAM, os.environ, os.sep, os.pathsep
    join, exists, dirname, getcwd = os.path.join, os.path.exists, os.path.dirname, os.getcwd
    # the interpreter's own installation: the grader's, read-only in a sandbox, wherever a home folder puts it
    environment = tuple({os.path.join(os.path.realpath(p), "") for p in (sys.prefix, sys.base_prefix,
                                                                          sys.exec_prefix)})
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    py2_names, py2_modules = _compat_pickle.NAME_MAPPING, _compat_pickle.IMPORT_MAPPING
    watched = frozenset(events) | {"open", "sys.setprofile", "sys.settrace", arm_event, "pickle.find_class",
                                   *placing}
    modules, setprofile = sys.modules, sys.setprofile

    def is_course_frame(f) -> bool:
        # the file name alone can be forged (compile(src, lmcourse.x.__file__, "exec")): the frame
        # must also run in that module's own globals
        fn, g = f.f_code.co_filename, f.f_globals
        if not (fn.startswith(package) or fn.startswith(package_raw)):
            return False
        name = g.get("__name__")
        module = modules.get(name) if type_(name) is str_ else None
        file = getattr(module, "__file__", None) if module is not None else None
        return (module is not None and getattr(module, "__dict__", None) is g and type_(file) is str_
                and realpath(file) == realpath(fn))

    def source_of_lmcourse(path) -> bool:
        try:
            p = fspath(path)
        except TypeError:
            return False                     # a file descriptor
        if isinstance_(p, bytes_):
            p = p.decode(errors="replace")
        if type_(p) is not str_ or not p.endswith((".py", ".pyw", ".ipynb", ".pyx", ".txt", ".md")):
            return False
        return p.startswith(package_raw) or realpath(p).startswith(package)

    def reader(stop) -> str:
        # the nearest frame that is neither the standard library nor the import system decides:
        # "course" (lmcourse: a check helper quoting a line) may read; an import may (the import
        # system compiling a module, or a library's import-time code); "library" (a warning or
        # torch's lazy calls formatting the stack) gets nothing; "student" (a graded answer's
        # code, calling inspect / linecache / open itself or with a library's help) is refused
        f, nearest = getframe(2), None
        while f is not None and f is not stop:
            fn = f.f_code.co_filename
            if f.f_code.co_name == "_find_and_load" and fn == "<frozen importlib._bootstrap>":
                return "course" if nearest is None or nearest.startswith(libraries) else "student"
            if nearest is None and not (fn.startswith(stdlib) or fn.startswith("<frozen ")):
                if is_course_frame(f):
                    return "course"
                nearest = fn
            f = f.f_back
        return "library" if nearest is not None and nearest.startswith(libraries) else "student"

    def started_by_student(depth: int = 2, skip: tuple[str, ...] = ()) -> bool:
        # the nearest frame that is neither the standard library nor frozen import code (nor one of
        # `skip`: the launchers, for a process) decides
        f = getframe(depth)
        while f is not None:
            fn = f.f_code.co_filename
            if not (fn.startswith(stdlib) or fn.startswith("<frozen ") or (skip and fn.startswith(skip))):
                return not (fn.startswith(libraries) or is_course_frame(f))
            f = f.f_back
        return False

    def is_data_name(module, name) -> bool:
        if type_(module) is not str_ or type_(name) is not str_ or "." in name or "__" in name:
            return False                     # a dotted name walks attributes: from a data type to anything
        # protocol 2 pickles name Python 2's homes (__builtin__.xrange): read them as pickle does
        module, name = py2_names.get((module, name), (py2_modules.get(module, module), name))
        if f"{module}.{name}" in data_names:
            return True
        if module not in data_modules:
            return False
        if module == "torch._utils":
            return name.startswith("_rebuild_")
        if module == "numpy.dtypes":
            return name.endswith("DType")
        if name in ("Size", "device", "Tensor") or name.endswith(("Storage", "Tensor")):
            return True
        torch = modules.get("torch")
        value = getattr(modules.get(module), name, None)
        return torch is not None and isinstance_(value, (torch.dtype, torch.layout, torch.qscheme,
                                                         torch.memory_format))

    def program_of(event, args):
        # the program a process event runs: Popen's executable or first argument, exec's and spawn's path, the
        # first word of a shell command
        first = args[0] if args else None
        if event == "subprocess.Popen" and first is None and len(args) > 1:
            first = args[1]
            first = first.split()[0] if isinstance_(first, (str_, bytes_)) and first.split() else (
                first[0] if isinstance_(first, (list, tuple)) and first else None)
        elif event == "os.system" and isinstance_(first, (str_, bytes_)):
            first = first.split()[0] if first.split() else None
        if isinstance_(first, bytes_):
            first = first.decode(errors="replace")
        try:
            return fspath(first) if first is not None else None
        except TypeError:
            return None

    def writable_program(event, args) -> bool:
        # a program the notebook could have written (a script given to a library as its compiler): what it
        # runs is text no reading of the cells sees; programs on the system's PATH are the system's
        program = program_of(event, args)
        if type_(program) is not str_ or not program:
            return False
        if sep not in program:
            found = [join(d, program) for d in environ.get("PATH", "").split(pathsep) if d]
            program = next((f for f in found if exists(f)), None)
            if program is None:
                return False
        real = realpath(program)
        return any(real.startswith(place) for place in writable_places()) and not real.startswith(environment)

    def writable_places() -> list[str]:
        # where a graded kernel writes: its folder, its temporary folder and home, the system's temporary
        # folders, and the sandbox's world (the folder above its course cache)
        places = [getcwd(), environ.get("TMPDIR", ""), environ.get("HOME", ""), "/tmp", "/var/tmp", "/dev/shm"]
        data = environ.get("LMCOURSE_DATA_DIR", "")
        places += [dirname(data.rstrip(sep))] if data else []
        return [join(realpath(p), "") for p in places if p and realpath(p) != sep]

    def compiling(path, depth: int = 2) -> bool:
        # the nearest frame that is neither the standard library nor frozen import code decides: the course's,
        # or torch's compiler writing what it generated (a student's code and any other library's may not). The
        # import system writes bytecode caches only (its loaders' set_data writes anywhere it is told to)
        cache = type_(path) is str_ and path.endswith(".pyc") and "__pycache__" in path
        f = getframe(depth)
        while f is not None:
            fn = f.f_code.co_filename
            if fn.startswith("<frozen importlib") and cache:
                return True
            if not (fn.startswith(stdlib) or fn.startswith("<frozen ")):
                return fn.startswith(compilers) or is_course_frame(f)
            f = f.f_back
        return False

    def code_path(event, args):
        path = args[1] if event in placing else args[0] if args else None
        if isinstance_(path, bytes_):
            return path.decode(errors="replace")
        if type_(path) is not str_:
            try:
                return fspath(path)
            except TypeError:
                return None                  # a file descriptor
        return path

    def writes_code(event, args) -> bool:
        # open(path, mode, flags) for writing, or a file renamed or linked to, whose name a module would import
        path = code_path(event, args)
        if type_(path) is not str_ or not path.lower().endswith(code_suffixes):
            return False
        if event in placing:
            return True
        mode, flags = (args[1], args[2]) if len(args) >= 3 else (None, 0)
        return any(c in mode for c in "wax+") if type_(mode) is str_ else bool(flags & writing)

    def watch(frame, event, arg):
        # the profile function of a student's thread: any call while a graded call is open is noted,
        # and the graded call fails when it ends (raising here would only stop this thread)
        if inside and event == "call":
            ran_beside.append(get_ident())

    def watched_thread(function):
        def run(*a, **k):
            setprofile(watch)                # before the thread counts as watched: this call is ours
            watched_threads.add(get_ident())
            try:
                return function(*a, **k)
            finally:
                watched_threads.discard(get_ident())
        return run

    def start_new_thread(function, args, kwargs=None, /):
        # Python 3.11 raises no audit event for a new thread (3.13 does): threading, _thread and
        # concurrent.futures all start theirs through this one function
        if get_ident() in inside and not compiling(None):      # torch's compiler's own workers may start
            raise confined(f"{events['_thread.start_new_thread']} inside a graded call is refused: {why}.")
        if started_by_student():
            function = watched_thread(function)
        return start(function, args) if kwargs is None else start(function, args, kwargs)

    def hook(event, args):
        # every audit event of the process comes here (id(), attribute reads, compile, ...):
        # the events it does not watch return before any call
        if event not in watched:
            return
        if event == arm_event:
            if not armed:
                armed.append(True)
            return
        if event == "pickle.find_class":
            if armed and not (len(args) == 2 and is_data_name(*args)):
                whole = ".".join(str_(a) for a in args)
                raise confined(f"a pickle naming {whole} is refused in a graded notebook: {why_unpickle}.")
            return
        if event in ("sys.setprofile", "sys.settrace"):
            if get_ident() in watched_threads:
                raise confined(f"switching off the watch of a thread your code started ({event}) is refused: {why}.")
            return
        if armed and (event in placing or event == "open") and writes_code(event, args) and not compiling(
                code_path(event, args)):
            raise confined(f"writing a code file ({args[1] if event in placing else args[0]}) from your code is "
                           f"refused in a graded notebook: {why_code_file}.")
        if armed and event in process and writable_program(event, args):
            raise confined(f"running a program that lies in a folder this notebook can write "
                           f"({program_of(event, args)}) is refused in a graded notebook: {why_program}.")
        stop = inside.get(get_ident(), inside)
        if stop is not inside and event in process and compiling(None, 3 if event == "_posixsubprocess.fork_exec"
                                                                 else 2):
            return                           # torch's compiler running the C++ compiler for a graded answer
        if stop is inside:
            # (frames: 0 started_by_student, 1 this hook, 2 what raised the event; 3 past the fork_exec gate)
            if armed and event in process and started_by_student(3 if event == "_posixsubprocess.fork_exec" else 2,
                                                                 launchers):
                raise confined(f"{events[event]} from your code is refused in a graded notebook: {why_process}.")
            return
        what = events.get(event)
        if what is None and event == "open" and args and source_of_lmcourse(args[0]):
            who = reader(stop)
            if who == "library":         # read as a file that cannot be opened: nothing leaks, nothing fails
                raise withheld(f"reading the course's source ({args[0]}) inside a graded call is withheld "
                               f"from a library: {why}.")
            if who != "course":
                what = f"reading the course's source ({args[0]})"
        if what is not None:
            raise confined(f"{what} inside a graded call is refused: {why}.")

    def enter(frame) -> int:
        me = get_ident()
        if me in inside:
            raise confined("a graded call inside a graded call: leave the first block before entering another")
        if not inside:
            ran_beside.clear()
        inside[me] = frame
        return me

    def leave(me: int, frame) -> None:
        if inside.get(me) is frame:          # only the block that entered, with its own frame
            del inside[me]
        if ran_beside and not inside:
            ran_beside.clear()
            raise confined(f"work done during a graded call on a thread your code started before it is "
                           f"refused: {why}.")

    def fork_exec(*args, **kwargs):
        # multiprocessing's spawn and forkserver contexts start their process with this unaudited
        # call (subprocess audits its own before it): audited here, the hook decides
        audit("_posixsubprocess.fork_exec")
        return forked(*args, **kwargs)

    start, forked = _thread.start_new_thread, _posixsubprocess.fork_exec
    _thread.start_new_thread = _thread.start_new = threading._start_new_thread = start_new_thread
    _posixsubprocess.fork_exec = fork_exec
    sys.addaudithook(hook)
    return enter, leave, package


_enter, _leave, _PACKAGE = _install()


def arm() -> None:
    """Make this kernel a graded one (the grader's preamble calls it before any student code): from
    now on a process started from a student's code is refused at any time, not only inside a graded
    call (see the module's docstring). There is no way back: the state is the hook's own."""
    sys.audit(_ARM)


def _forget_cached_source() -> None:
    # linecache answers from memory without opening the file: drop the package's lines so a
    # read in the graded call goes through `open`, which the hook sees (re-read on demand)
    for name in [n for n in list(linecache.cache) if isinstance(n, str) and n.startswith(_PACKAGE)]:
        linecache.cache.pop(name, None)


@contextlib.contextmanager
def graded_call(frame=None):
    """Within the block, on this thread: no thread or process starts, no course source is read
    (see the module's docstring). ``frame``: the test cell's frame, where the search for the
    code that reads a file stops (default: the caller's)."""
    frame = frame if frame is not None else sys._getframe(2)
    _forget_cached_source()
    me = _enter(frame)
    try:
        yield
    except BaseException:
        with contextlib.suppress(Confined):   # the block's own error is the one to report
            _leave(me, frame)
        raise
    _leave(me, frame)
