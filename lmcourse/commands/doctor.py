"""`lmcourse doctor`: what this machine has for the course, each line with what to do when it is
missing (versions, device, threads, the grading sandbox, disk, the notebooks' kernel, the corpus).

Its own module because it is the one command that reads every part of the machine; the entry point
(:mod:`lmcourse.commands.main`) only parses its flags and calls :func:`doctor`.
"""

from __future__ import annotations

import importlib
import platform
import sys
from pathlib import Path

PLATFORM_NOTES = {
    "Darwin": ("macOS: Apple silicon trains on the `mps` device in float32 (it has no float64); the "
               "test cells compare on the CPU in float64 whatever the device, and numbers differ from "
               "a CPU run in the last digits. LMCOURSE_DEVICE=cpu if something looks wrong on mps."),
    "Windows": ("Windows: torch.compile is not available and the course never needs it (off unless "
                "asked). No sandbox for `lmcourse grade`: TAs grade in WSL 2 or a Linux container."),
}



def _kernel_python() -> tuple[str, str]:
    """(python the notebooks' `python3` kernel runs, where its spec lives), as JupyterLab started
    from this environment resolves it (a bare `python` in the spec means jupyter's own Python)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("python3")
    exe = spec.argv[0]
    if exe in {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}:
        exe = sys.executable
    return exe, spec.resource_dir


def _precision_line(p) -> str:
    """What training computes in here, and the rule (docs/gpus.md, "Mixed precision by card")."""
    rule = "bf16 autocast from compute capability 8.0, fp16 with a gradient scaler below (T4, V100, P100)"
    return f"{p} for training ({p.reason}); on a GPU: {rule}"


def doctor(args) -> int:
    """Versions, device, threads, sandbox, disk, kernel and corpus, each with what to do when it is
    missing. Lines marked '!' are problems (exit status 1, except a missing sandbox: TAs only);
    lines marked '-' are for information."""
    import os
    import shutil
    import subprocess

    from .. import __version__, data, runtime

    problems = 0
    ta_problems = 0     # grading only: marked '!', no exit status (make lab goes on for students)

    def problem(text: str) -> None:
        nonlocal problems
        problems += 1
        print(f"  ! {text}")

    print(f"lmcourse {__version__} on Python {platform.python_version()} ({sys.executable})")
    print(f"  platform    {platform.system()} {platform.machine()}")
    if platform.system() in PLATFORM_NOTES:
        print(f"  - {PLATFORM_NOTES[platform.system()]}")
    for mod, fix in [("torch", "make setup (or python lmcourse/commands/setup_torch.py: the CPU build without a GPU)"),
                     ("numpy", "pip install -e ."), ("matplotlib", "pip install -e ."),
                     ("tqdm", "pip install -e ."), ("nbgrader", "pip install -e ."),
                     ("jupytext", "pip install -e ."), ("nbclient", "pip install -e ."),
                     ("jupyterlab", "pip install -e .")]:
        try:
            m = importlib.import_module(mod)
            version = getattr(m, "__version__", "?")
            if mod == "torch":
                cuda = getattr(m.version, "cuda", None)
                version += f"  ({'CUDA ' + cuda if cuda else 'CPU'} build)"
            print(f"  {mod:<11} {version}")
        except ImportError:
            problem(f"{mod} is not installed: {fix}")
    device = None
    try:
        device = runtime.pick_device()
        print(f"  device      {device}" + ("" if device.type != "cpu" else
                                           "  (no GPU found: training cells use the cpu profile)"))
        print(f"  profile     {runtime.profile_name(device)}  (set LMCOURSE_PROFILE=tiny|cpu|gpu to override)")
        print(f"  precision   {_precision_line(runtime.choose_precision(device))}")
    except Exception as exc:  # doctor must report, not crash
        problem(f"device/profile: {exc}")
    try:
        threads = runtime.cpu_threads(device) if device is not None else None
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        told = f"LMCOURSE_THREADS={os.environ[runtime.THREADS_ENV]}" if os.environ.get(runtime.THREADS_ENV) \
            else "the default: 1 when training on the CPU, torch's own with a GPU"
        shown = threads if threads is not None else "torch's default"
        print(f"  threads     {shown} for torch in the notebooks ({told}); {usable} CPU core(s) usable here")
    except ValueError as exc:
        problem(str(exc))
    try:
        can, why = runtime.compile_support()
        if can and device is not None and device.type == "cuda" and not runtime.choose_precision(device).compile:
            can, why = False, "torch.compile's GPU back end (Triton) needs compute capability 7.0 or newer"
        print(f"  compile     {'torch.compile available' if can else why}  (off unless asked; the course "
              "never needs it)")
    except ImportError:
        pass  # no torch: reported above
    if (Path(__file__).resolve().parents[1] / "grading").is_dir():   # a student release ships no grader
        from ..grading import sandbox

        try:
            kind, why = sandbox.mode()
        except ValueError as exc:
            kind, why = "unavailable", str(exc)
        if kind == "bubblewrap":
            print(f"  sandbox     bubblewrap works ({why}): `lmcourse grade` can run")
        elif kind == "unavailable":
            # `lmcourse grade` refuses to start: a problem for a TA, none for a student (exit status kept)
            ta_problems += 1
            print(f"  ! sandbox: {kind} ({why}): for TAs only (students are not affected): `lmcourse grade` "
                  "refuses to start without one. Install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap; "
                  "macOS/Windows: grade in a Linux container or VM), or on a trusted machine grading trusted "
                  "submissions pass `--sandbox none` (or LMCOURSE_SANDBOX=none)")
        else:
            print(f"  - sandbox   {kind} ({why}): `lmcourse grade` runs the students' code without a sandbox")
    for label, folder in [("disk", Path.cwd()), ("cache disk", data.data_dir())]:
        probe = folder
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        free_gb = shutil.disk_usage(probe).free / 1e9
        line = f"{free_gb:.1f} GB free in {probe}"
        if free_gb < 1.5:
            problem(f"{label}: only {line}; the set-up needs about 1.4 GB (.venv) and the course a few hundred MB")
        else:
            print(f"  {label:<11} {line}")
    try:
        exe, spec_dir = _kernel_python()
        same = Path(exe).resolve() == Path(sys.executable).resolve()
        if same:
            print(f"  kernel      python3 runs {exe} (this environment; spec in {spec_dir})")
        else:
            ok = subprocess.run([exe, "-c", "import lmcourse"], capture_output=True).returncode == 0 \
                if shutil.which(exe) or Path(exe).exists() else False
            if ok:
                print(f"  kernel      python3 runs {exe} (spec in {spec_dir}), which can import lmcourse")
            else:
                problem(f"kernel: the notebooks' python3 kernel runs {exe} (spec in {spec_dir}), which cannot "
                        f"import lmcourse; remove that kernel spec or run `{sys.executable} -m ipykernel "
                        "install --user --name python3`")
    except Exception as exc:  # no jupyter_client, a broken kernel spec, ...
        problem(f"kernel: no usable python3 kernel ({type(exc).__name__}: {exc}); pip install -e .")
    status = data.corpus_status()
    if args.fetch:
        try:
            folder = data.ensure_shakespeare()
            print(f"  corpus      ready in {folder}")
        except data.CorpusUnavailable as exc:
            problem(str(exc))
    elif (data.shakespeare_dir() / "SOURCE").exists():
        print(f"  corpus      {status}")
    else:
        problem(f"corpus: {status}. `make lab` or `lmcourse doctor --fetch` fetches it now (5 MB); "
                "offline, see the README's corpus section")
    if problems:
        print(f"{problems} problem(s) found; see the lines marked '!'"
              + (f" ({ta_problems} more for TAs only)" if ta_problems else ""))
    elif ta_problems:
        print(f"{ta_problems} problem(s) for TAs (grading), none for students: see the lines marked '!'")
    else:
        print("all good")
    return 0 if problems == 0 else 1
