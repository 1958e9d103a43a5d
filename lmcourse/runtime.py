"""Where and how big: device choice, seeding, and the tiny / cpu / gpu profiles.

Every training cell reads its sizes from :func:`get_profile`, so the same notebook
finishes in seconds under the autograder, in minutes on a laptop and at full size on a GPU.
"""

from __future__ import annotations

import linecache
import os
import random
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

PROFILE_ENV = "LMCOURSE_PROFILE"
THREADS_ENV = "LMCOURSE_THREADS"
PROFILES = ("tiny", "cpu", "gpu")


@dataclass(frozen=True)
class Profile:
    """Sizes several notebooks read (``rt.profile``). The fields are fixed; a notebook's own sizes and
    training recipe live in its module of :mod:`lmcourse.recipes`, by :attr:`name`."""

    name: str  # "tiny" | "cpu" | "gpu"
    max_sentences: int | None  # cap on corpus sentences used by counting notebooks (None = all)
    max_order: int  # largest n-gram order explored in sweeps
    train_steps: int  # optimisation steps for training cells
    batch_size: int  # sequences per batch
    block_size: int  # context length (tokens) for neural models
    n_embd: int  # embedding width for neural models
    n_layer: int  # layers for neural models
    n_head: int  # attention heads
    eval_interval: int  # steps between validation evaluations
    eval_batches: int  # batches averaged per validation estimate


_PROFILES = {
    "tiny": Profile("tiny", max_sentences=3_000, max_order=3, train_steps=30, batch_size=8,
                    block_size=32, n_embd=32, n_layer=1, n_head=2, eval_interval=15, eval_batches=2),
    "cpu": Profile("cpu", max_sentences=None, max_order=5, train_steps=1_500, batch_size=32,
                   block_size=64, n_embd=128, n_layer=4, n_head=4, eval_interval=250, eval_batches=20),
    "gpu": Profile("gpu", max_sentences=None, max_order=5, train_steps=5_000, batch_size=64,
                   block_size=256, n_embd=384, n_layer=6, n_head=6, eval_interval=500, eval_batches=50),
}


def same_device(a: "torch.device | str", b: "torch.device | str") -> bool:  # noqa: F821
    """Whether two devices are the same one: the same type, and the same index, a device written
    without one (``cuda``) meaning the current device of its type. ``torch.device`` objects compare
    ``cuda`` and ``cuda:0`` as different, which sent a CUDA generator's draws to the CPU."""
    import torch

    a, b = torch.device(a), torch.device(b)
    if a.type != b.type:
        return False
    if a.index is None or b.index is None:
        current = _current_index(a.type)
        return (a.index if a.index is not None else current) == (b.index if b.index is not None else current)
    return a.index == b.index


def _current_index(kind: str) -> int:
    import torch

    if kind == "cuda" and torch.cuda.is_available():
        return torch.cuda.current_device()
    return 0


def is_autograding() -> bool:
    """True when nbgrader is executing the notebook (it sets NBGRADER_EXECUTION)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def given(module: str, why: str = ""):
    """The course module ``module`` for a notebook's own (ungraded) cell, or ``None`` where this
    kernel has none: a graded kernel withholds the code that answers the notebook being graded, and
    a student release (``lmcourse release --through``) does not ship it. Says so in one line, with
    ``why`` (what the cell would have shown), so the cell can skip its work."""
    import importlib

    if not module.startswith("lmcourse."):     # a course module by its name, not any module a string names
        raise ValueError(f"given() returns a course module (lmcourse.*), not {module!r}")
    try:
        return importlib.import_module(module)
    except ImportError as err:
        # only the module itself (or a course module it needs) being absent; any other import error is a bug to show
        absent = (err.name or "").startswith("lmcourse") or "is not available while notebook" in str(err)
        if not absent:
            raise
        where = "while this notebook is graded" if is_autograding() else "in this copy of the course"
        print(f"(skipped: {module} is not available {where}{'; ' + why if why else ''})")
        return None


def pick_device(prefer: str | None = None) -> "torch.device":  # noqa: F821
    """CUDA, then Apple MPS, then CPU. ``prefer`` (or LMCOURSE_DEVICE) forces one."""
    import torch

    want = prefer or os.environ.get("LMCOURSE_DEVICE")
    if want:
        dev = torch.device(want)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"device {want!r} was asked for, but torch sees no CUDA GPU "
                               "(torch.cuda.is_available() is False). Unset LMCOURSE_DEVICE or "
                               "install a CUDA build of torch.")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def profile_name(device: "torch.device | None" = None, neural: bool = True) -> str:  # noqa: F821
    """The profile in force: LMCOURSE_PROFILE, else tiny under nbgrader, else by device."""
    name = os.environ.get(PROFILE_ENV, "").strip().lower()
    if name:
        if name not in PROFILES:
            raise ValueError(f"{PROFILE_ENV}={name!r} is not a profile; choose one of {', '.join(PROFILES)}")
        return name
    if is_autograding():
        return "tiny"
    if device is None and not neural:   # a counting notebook: no device to ask (torch not loaded)
        return "cpu"
    if device is None:
        device = pick_device()
    return "gpu" if device.type == "cuda" else "cpu"


def get_profile(name: str | None = None, **overrides) -> Profile:
    """The profile named, or the one in force; keyword overrides replace single fields."""
    prof = _PROFILES[name or profile_name()]
    return replace(prof, **overrides) if overrides else prof


def seed_everything(seed: int = 0) -> None:
    """Seed Python, NumPy and torch (all devices) so a run can be repeated."""
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:  # the n-gram notebook does not need torch
        return
    torch.manual_seed(seed)


def cpu_threads(device: "torch.device | None" = None) -> int | None:  # noqa: F821
    """How many CPU threads torch should use, or None for torch's own default.

    LMCOURSE_THREADS wins. Otherwise it is 1 when the model trains on the CPU (``device``, or
    the one :func:`pick_device` chooses) and under autograding: the course's models are small,
    so a second thread buys little, and when other programs (or the grader's other kernels)
    want the cores, torch's threads wait for each other and a run slows down several-fold.
    On a GPU the host threads only feed the device, and torch's default stays.
    """
    value = os.environ.get(THREADS_ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"{THREADS_ENV}={value!r} must be a positive whole number")
        return int(value)
    if is_autograding():
        return 1
    if device is None:
        device = pick_device()
    return 1 if device.type == "cpu" else None


def compile_support() -> tuple[bool, str]:
    """(can torch.compile work here, why not). The course never needs it: training asks for it
    only on a CUDA GPU (``TrainConfig.compile``), and where it cannot work it is skipped with
    this message instead of failing at the first step. Windows is refused: its compiler back end
    needs a C++ tool chain (and Triton for CUDA) that a learner's machine usually lacks."""
    import sys

    import torch

    if not hasattr(torch, "compile"):
        return False, f"torch {torch.__version__} has no torch.compile"
    if sys.platform == "win32":
        return False, "torch.compile is not set up on Windows (it needs a C++ compiler and Triton)"
    try:
        import torch._dynamo as dynamo
    except Exception as exc:  # a broken or partial install
        return False, f"torch._dynamo cannot be imported ({type(exc).__name__})"
    supported = getattr(dynamo, "is_dynamo_supported", lambda: True)
    if not supported():
        return False, f"torch.compile does not support Python {sys.version.split()[0]} in torch {torch.__version__}"
    return True, ""


# Mixed precision by what the card does fast. bf16 needs compute capability 8.0 (Ampere: A100, RTX 30xx,
# L4, H100); older cards emulate it slowly, so they get fp16, whose narrow range needs a gradient scaler.
# fp16 is fast from 7.0 (V100, T4) and on 6.0 / 6.2 (P100, Jetson TX2), not on 6.1 (GTX 10xx) or older.
# torch.compile's GPU back end (Triton) needs 7.0.
BF16_MIN_CAPABILITY = (8, 0)
FP16_FAST_CAPABILITIES = ((6, 0), (6, 2))
FP16_MIN_CAPABILITY = (7, 0)
COMPILE_MIN_CAPABILITY = (7, 0)


@dataclass(frozen=True)
class Precision:
    """How training computes on a device (:func:`choose_precision`)."""

    name: str  # "bf16" | "fp16" (autocast dtypes) | "fp32" (no autocast)
    grad_scaler: bool  # fp16 only: scale the loss so small gradients do not flush to zero
    compile: bool  # a CUDA GPU on which torch.compile can work (training still asks for it: TrainConfig.compile)
    reason: str  # why, for setup() and `lmcourse doctor`

    @property
    def dtype(self) -> "torch.dtype | None":  # noqa: F821
        import torch

        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.name)

    def __str__(self) -> str:
        return self.name + ("+GradScaler" if self.grad_scaler else "")


PRECISION_ENV = "LMCOURSE_PRECISION"
_PRECISIONS = ("bf16", "fp16", "fp32")


def forced_precision() -> str | None:
    """The precision LMCOURSE_PRECISION forces on a CUDA GPU (``bf16``, ``fp16``: with a gradient
    scaler, ``fp32``), or None; any other value is refused with a message."""
    value = os.environ.get(PRECISION_ENV, "").strip().lower()
    if not value:
        return None
    if value not in _PRECISIONS:
        raise ValueError(f"{PRECISION_ENV}={value!r}: choose one of {', '.join(_PRECISIONS)} (or leave it unset)")
    return value


def choose_precision(device: "torch.device | str | None" = None) -> Precision:  # noqa: F821
    """bf16 autocast where the GPU does bf16 fast (compute capability >= 8.0), fp16 autocast with a
    gradient scaler where it does fp16 fast but not bf16 (T4 7.5, V100 7.0, P100 6.0), float32
    elsewhere (older GPUs, Apple MPS, the CPU). ``compile``: on CUDA, :func:`compile_support` and
    compute capability >= 7.0; False off a CUDA GPU."""
    import torch

    device = torch.device(device) if device is not None else pick_device()
    if device.type != "cuda":
        # compile_support imports torch._dynamo, a second of start-up for a program that trains;
        # off a CUDA GPU training never asks for torch.compile, so it is not asked here either
        where = "Apple MPS computes in float32" if device.type == "mps" else "no GPU: the CPU computes in float32"
        return Precision("fp32", False, False, where)
    can_compile, why_not = compile_support()
    cap = tuple(torch.cuda.get_device_capability(device))
    card = f"{torch.cuda.get_device_name(device)}, compute capability {cap[0]}.{cap[1]}"
    compiles = can_compile and cap >= COMPILE_MIN_CAPABILITY
    forced = forced_precision()
    if forced:      # make gpu-check runs the T4's fp16 + scaler path on any card
        return Precision(forced, forced == "fp16", compiles, f"{card}: {forced} forced by {PRECISION_ENV}")
    if cap >= BF16_MIN_CAPABILITY and _native_bf16(torch):
        return Precision("bf16", False, compiles, f"{card}: fast bf16")
    if cap >= FP16_MIN_CAPABILITY or cap in FP16_FAST_CAPABILITIES:
        return Precision("fp16", True, compiles, f"{card}: no fast bf16 (it needs 8.0), fp16 with a gradient scaler")
    return Precision("fp32", False, compiles, f"{card}: neither bf16 nor fp16 is fast here")


def _native_bf16(torch) -> bool:
    try:  # torch >= 2.3 counts emulated bf16 (slow, on a T4) unless told not to
        return torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:
        return torch.cuda.is_bf16_supported()


@dataclass(frozen=True)
class Runtime:
    device: "torch.device | None"  # noqa: F821 (None: a counting notebook, torch not loaded)
    profile: Profile
    seed: int
    threads: int | None  # torch's CPU threads (None when torch is not loaded)
    precision: Precision | None = None  # what lmcourse.train uses on this device (amp=True)

    def __str__(self) -> str:
        if self.device is None:
            return f"profile={self.profile.name} seed={self.seed} (counting only: torch not loaded)"
        text = f"device={self.device} profile={self.profile.name} seed={self.seed} cpu_threads={self.threads}"
        return text + (f" precision={self.precision}" if self.precision is not None else "")


NOTEBOOK_ENV = "JPY_SESSION_NAME"     # the notebook's path, set by jupyter_server for its kernels
_EXERCISE_RE = re.compile(r"^#{1,6}\s+(Exercise\s+\d+[a-z]?\b.*?)\s*$", re.M)
_DEFINES_RE = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)", re.M)
_ANSWER_RE = re.compile(r'raise NotImplementedError\("set (answer_\w+) to')
_HEADING_RE = re.compile(r"^#{1,6}\s+(.*?)\s*$", re.M)
# what a cell that is no answer sets at its top level: assignments (a, b = ...), def/class, imports
_SETS_RE = re.compile(r"^((?:[A-Za-z_]\w*\s*,\s*)*[A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)", re.M)
_IMPORT_RE = re.compile(r"^(?:from\s+[\w.]+\s+)?import\s+([^\n#(]+)", re.M)


def notebook_path(user_ns: dict | None = None) -> Path | None:
    """The notebook this kernel runs, where the front end says (JupyterLab: ``JPY_SESSION_NAME``;
    VS Code: ``__vsc_ipynb_file__`` in the notebook's namespace)."""
    name = os.environ.get(NOTEBOOK_ENV, "")
    if not name.endswith(".ipynb") and user_ns is not None:
        name = user_ns.get("__vsc_ipynb_file__", "")
    if type(name) is not str or not name.endswith(".ipynb"):
        return None
    for path in (Path(name), Path.cwd() / Path(name).name):
        if path.is_file():
            return path
    return None


def exercise_names(notebook: Path) -> dict[str, str]:
    """``{name: where}`` for what the notebook's answer cells define: a top-level ``def`` /
    ``class`` gives the ``### Exercise N — ...`` heading above it, an ``answer_...`` variable
    its multiple-choice cell."""
    import json

    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    names, heading = {}, None
    for cell in cells:
        text = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            found = _EXERCISE_RE.findall(text)
            heading = found[-1] if found else heading
        elif cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            for name in _DEFINES_RE.findall(text):
                if heading:
                    names.setdefault(name, heading)
            for name in _ANSWER_RE.findall(text):
                names.setdefault(name, "its answer cell, just above its test cell")
    return names


def cell_names(notebook: Path) -> dict[str, str]:
    """``{name: heading}`` for what the notebook's other code cells (set-up, data, helpers) set
    at their top level: an assignment, a ``def`` / ``class``, an import. The heading is the last
    markdown heading above the first cell that sets it ("" where there is none)."""
    import json

    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    names, heading = {}, ""
    for cell in cells:
        text = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            found = _HEADING_RE.findall(text)
            heading = found[-1] if found else heading
        elif cell.get("cell_type") == "code" and not cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            found = [n.strip() for m in _SETS_RE.findall(text) for n in m.split(",")]
            found += _DEFINES_RE.findall(text)
            for m in _IMPORT_RE.findall(text):
                found += [part.split(" as ")[-1].strip().split(".")[0] for part in m.split(",")]
            for n in found:
                if n.isidentifier():
                    names.setdefault(n, heading)
    return names


def name_error_hint(name: str, notebook: Path | None, line: str = "") -> str | None:
    """The line added to a ``NameError`` for one of the notebook's exercise names, a name one of
    its other cells sets, or a bare letter given as a multiple-choice answer (``line``: the
    source line that failed), or None."""
    answer = re.match(rf"\s*(answer_\w+)\s*=\s*{re.escape(name)}\s*(#.*)?$", line or "")
    if answer and len(name) == 1:
        return f'A letter is text: write {answer.group(1)} = "{name}" (with the quotes)'
    if notebook is None:
        return None
    where = exercise_names(notebook).get(name)
    if where is not None:
        return (f"`{name}` is defined in {where}: run that cell first "
                "(Run > Run All Above Selected Cell), and look at its output if it fails")
    heading = cell_names(notebook).get(name)
    if heading is None:
        return None
    return (f"`{name}` is set by a cell" + (f" under \"{heading}\"" if heading else "") +
            ": run the cells above first (Run > Run All Above Selected Cell)")


def _name_error_handler(notebook: Path):
    def handler(shell, etype, value, tb, tb_offset=None):
        # the error is shown, and fails the cell, as without this handler: only its text grows
        try:
            line, last = "", tb
            while last is not None and last.tb_next is not None:
                last = last.tb_next
            if last is not None:
                line = linecache.getline(last.tb_frame.f_code.co_filename, last.tb_lineno)
            hint = name_error_hint(value.name, notebook, line) if type(value) is NameError else None
            if hint and len(value.args) == 1 and isinstance(value.args[0], str):
                value.args = (f"{value.args[0]}. {hint}",)
        except Exception:  # noqa: BLE001 (a notebook that cannot be read: the plain NameError)
            pass
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return []
    return handler


def install_name_error_hints() -> bool:
    """In a student's JupyterLab, a ``NameError`` for a name one of the notebook's exercises
    defines says which exercise to run first. Never under nbgrader (validate or autograde: a
    graded notebook shows the plain error) and never over another handler."""
    if is_autograding():
        return False
    ip = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    notebook = notebook_path(getattr(ip, "user_ns", None))
    if ip is None or notebook is None or getattr(ip, "custom_exceptions", ()) not in ((), (NameError,)):
        return False
    ip.set_custom_exc((NameError,), _name_error_handler(notebook))
    return True


def setup(seed: int = 0, quiet: bool = False, neural: bool = True) -> Runtime:
    """The first call of every notebook: seed everything and report device, profile, threads.

    ``neural=False`` is for a notebook that only counts (01): torch is not imported — seconds
    saved on every start, and on every submission the grader runs — ``rt.device`` and
    ``rt.threads`` are None, and the profile is the one in force without a device (``tiny``
    under the grader, else ``cpu``; the counting sizes of ``cpu`` and ``gpu`` are the same)."""
    install_name_error_hints()
    if not neural:
        random.seed(seed)
        np.random.seed(seed)
        rt = Runtime(device=None, profile=get_profile(profile_name(neural=False)), seed=seed, threads=None)
        if not quiet:
            print(f"lmcourse: {rt}")
        return rt
    import torch

    seed_everything(seed)
    device = pick_device()
    threads = cpu_threads(device)
    if threads is not None:
        torch.set_num_threads(threads)
    rt = Runtime(device=device, profile=get_profile(profile_name(device)), seed=seed,
                 threads=torch.get_num_threads(), precision=choose_precision(device))
    if not quiet:
        print(f"lmcourse: {rt}" + (f" ({rt.precision.reason})" if device.type == "cuda" else ""))
    return rt
