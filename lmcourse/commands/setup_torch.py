"""Install PyTorch into this Python: the CPU build where there is no NVIDIA GPU, the CUDA build
where there is one. Standard library only: the set-up runs it before lmcourse is installed.

    python lmcourse/commands/setup_torch.py [--variant auto|cpu|cuda] [--spec torch==2.13.0] [--dry-run]

Why: on Linux x86_64, ``pip install torch==2.13.0`` from the default package index resolves to
the CUDA build, which pulls several GB of NVIDIA libraries even on a laptop without a GPU. The
CPU build lives on PyTorch's own wheel index (``CPU_INDEX``). The choice:

- ``--variant`` (the Makefile's ``TORCH_VARIANT``, or ``LMCOURSE_TORCH``) wins: ``cpu`` or
  ``cuda``; ``auto`` (the default) means ``cpu`` on Linux without an NVIDIA GPU (no working
  ``nvidia-smi``, no ``/proc/driver/nvidia/version``) and ``cuda`` on Linux with one.
- On macOS and Windows the default index's wheel already is the CPU (and, on Apple silicon, MPS)
  build, so pip is called as it is.
- The CPU index is added with ``--extra-index-url``, so the other packages still come from the
  indexes pip is configured with (kept: pip's own settings would otherwise be replaced), and the
  CPU wheel wins because its version, ``2.13.0+cpu``, sorts after ``2.13.0``.
- Where the CPU index cannot be reached (offline, a proxy, a machine with a local wheelhouse),
  pip is asked for the CPU build with its own configuration only, so a local wheel
  (``find-links``) or a mirror still works; failing that, for the plain requirement (a message
  says that the result may then be the CUDA build).
- A torch that is already importable is kept (install your CUDA build first and it stays).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
DEFAULT_SPEC = "torch==2.13.0"
VARIANT_ENV = "LMCOURSE_TORCH"
VARIANTS = ("auto", "cpu", "cuda")


@dataclass
class Plan:
    """What to install and why: ``pip_args`` follow ``python -m pip``."""

    variant: str  # "cpu", "cuda" or "platform" (the default index's own build, macOS / Windows)
    pip_args: list[str]
    reason: str
    notes: list[str] = field(default_factory=list)


def has_nvidia_gpu(run=subprocess.run, exists=os.path.exists, which=shutil.which) -> bool:
    """An NVIDIA driver is loaded: ``nvidia-smi -L`` lists a GPU, or the kernel module answers."""
    if exists("/proc/driver/nvidia/version"):
        return True
    if which("nvidia-smi"):
        try:
            done = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0 and "GPU" in done.stdout
    return False


def index_reachable(url: str = CPU_INDEX, timeout: float = 5.0, opener=urllib.request.urlopen) -> bool:
    """True if ``url``'s torch page answers within ``timeout`` seconds."""
    try:
        with opener(urllib.request.Request(url.rstrip("/") + "/torch/", method="HEAD"), timeout=timeout) as r:
            return 200 <= getattr(r, "status", 200) < 400
    except (urllib.error.URLError, OSError, ValueError):
        return False


def configured_extra_indexes(config_lines: list[str]) -> list[str]:
    """The extra-index-url values in ``pip config list`` output (passing ``--extra-index-url``
    on the command line replaces them, so they are passed again)."""
    urls: list[str] = []
    for line in config_lines:
        key, _, value = line.partition("=")
        if key.strip().endswith(".extra-index-url"):
            for url in shlex.split(value.strip().strip("'\"")):
                if url not in urls:
                    urls.append(url)
    return urls


def decide(variant: str, system: str, machine: str, nvidia: bool, cpu_index_ok: bool,
           spec: str = DEFAULT_SPEC, extra_indexes: list[str] | None = None) -> Plan:
    """The pure decision: no network, no subprocess. ``system`` is ``platform.system()``."""
    if variant not in VARIANTS:
        raise ValueError(f"torch variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    plain = ["install", spec]
    if system != "Linux":
        reason = {"Darwin": "macOS: the default wheel is the CPU + Apple MPS build",
                  "Windows": "Windows: the default wheel is the CPU build"}.get(
                      system, f"{system}: the default index's build")
        notes = []
        if variant == "cuda":
            notes.append("a CUDA build for Windows comes from PyTorch's own install selector; "
                         "install it into .venv first and set-up keeps it" if system == "Windows"
                         else "there is no CUDA build for this platform")
        return Plan("platform", plain, reason, notes)
    if variant == "auto":
        variant = "cuda" if nvidia else "cpu"
        why = "an NVIDIA GPU was found" if nvidia else "no NVIDIA GPU was found"
    else:
        why = f"asked for ({VARIANT_ENV} / TORCH_VARIANT={variant})"
    if variant == "cuda":
        return Plan("cuda", plain, f"CUDA build: {why}")
    cpu_spec = spec
    if machine.lower() in ("x86_64", "amd64"):
        # a +cpu local version only exists for x86_64; on aarch64 the CPU index's plain wheel is CPU-only
        name, sep, version = spec.partition("==")
        if sep and "+" not in version:
            cpu_spec = f"{name}=={version}+cpu"
    if not cpu_index_ok:
        return Plan("cpu", ["install", cpu_spec],
                    f"CPU build wanted ({why}), but PyTorch's CPU wheel index cannot be reached",
                    [f"{CPU_INDEX} did not answer: asking pip's own settings (a local wheel, a mirror) "
                     f"for {cpu_spec}; if none has it, {spec} is installed, which from the default "
                     "index on Linux x86_64 is the CUDA build"])
    args = ["install", "--extra-index-url", CPU_INDEX]
    for url in extra_indexes or []:
        args += ["--extra-index-url", url]
    return Plan("cpu", args + [cpu_spec], f"CPU build: {why}")


def torch_importable(python: str) -> str | None:
    done = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", default=os.environ.get(VARIANT_ENV, "").strip() or "auto", choices=VARIANTS,
                   help=f"cpu, cuda or auto (default: ${VARIANT_ENV}, else auto)")
    p.add_argument("--spec", default=DEFAULT_SPEC, help=f"the requirement (default {DEFAULT_SPEC})")
    p.add_argument("--python", default=sys.executable, help="the Python to install into (default: this one)")
    p.add_argument("--dry-run", action="store_true", help="print the pip command, install nothing")
    p.add_argument("--quiet", action="store_true", help="pass --quiet to pip")
    args = p.parse_args(argv)

    have = torch_importable(args.python)
    if have and not args.dry_run:
        print(f"setup_torch: keeping the torch already installed ({have})")
        return 0
    system, machine = platform.system(), platform.machine()
    nvidia = has_nvidia_gpu() if system == "Linux" else False
    wants_cpu_index = system == "Linux" and (args.variant == "cpu" or (args.variant == "auto" and not nvidia))
    reachable = index_reachable() if wants_cpu_index else False
    extras: list[str] = []
    if wants_cpu_index and reachable:
        listed = subprocess.run([args.python, "-m", "pip", "config", "list"], capture_output=True, text=True)
        extras = configured_extra_indexes(listed.stdout.splitlines())
    plan = decide(args.variant, system, machine, nvidia, reachable, args.spec, extras)
    cmd = [args.python, "-m", "pip", *plan.pip_args] + (["--quiet"] if args.quiet else [])
    print(f"setup_torch: {plan.reason}")
    for note in plan.notes:
        print(f"setup_torch: note: {note}")
    print("setup_torch: " + " ".join(shlex.quote(c) for c in cmd))
    if args.dry_run:
        return 0
    done = subprocess.run(cmd)
    if done.returncode != 0 and plan.pip_args != ["install", args.spec]:
        print(f"setup_torch: that failed; trying {args.spec} with pip's own settings")
        done = subprocess.run([args.python, "-m", "pip", "install", args.spec] + (["--quiet"] if args.quiet else []))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
