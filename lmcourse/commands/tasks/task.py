"""What a model `lmcourse train` trains is: a :class:`Task` (its flags, how it builds a :class:`Job` from
them and its notebook's recipe, the line it ends with), and the helpers the tasks share. Each task is
a module of this package (:func:`lmcourse.commands.tasks.discover` finds it); the driver that trains any
of them is :mod:`lmcourse.commands.train`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

__all__ = ["Job", "Task", "TrainInputError", "PEAK_TFLOPS", "peak_tflops", "mfu", "say", "wall_text", "wall",
           "recipe_with", "done_text", "by_profile", "sizes_text", "recipe_flags"]

# Dense (no sparsity) bf16 tensor-core peaks per GPU, in TFLOP/s, from NVIDIA's datasheets (the
# datasheets' "with sparsity" figures halved). Matched in order against torch.cuda.get_device_name().
PEAK_TFLOPS: tuple[tuple[str, float, str], ...] = (
    ("H200", 989.0, "H200"),
    ("H100 PCIe", 756.0, "H100 PCIe"),
    ("H100", 989.0, "H100 SXM"),
    ("A100", 312.0, "A100"),
    ("L40S", 362.0, "L40S"),
    ("L4", 121.0, "L4"),
    ("A10", 125.0, "A10"),
)


class TrainInputError(ValueError):
    """Bad input from the command line: printed as one line, exit status 2."""


def peak_tflops(device_name: str) -> tuple[float, str] | None:
    """The dense bf16 peak of the GPU called ``device_name`` and its label, or None if not in the table."""
    for key, tflops, label in PEAK_TFLOPS:
        if key.lower() in device_name.lower():
            return tflops, label
    return None


def mfu(tokens_per_sec: float, n_params: int, peak_flops: float) -> float:
    """Model-FLOPs utilisation: ``6 N`` FLOPs per token (forward 2 N, backward 4 N) over the peak."""
    return 6 * n_params * tokens_per_sec / peak_flops


@dataclass
class Job:
    """What a task built from the flags, for the driver to train."""

    model: Any  # the torch module, on the CPU; the loop moves it
    model_kind: str  # in messages: "a GPT", "a masked LM"
    config: dict  # the model's config: a checkpoint of other values is refused
    train_data: Any  # train()'s train_tokens (token ids, or pairs for a batch_fn)
    val_data: Any
    cfg: Any  # the TrainConfig; the driver sets device, compile, checkpoint, resume
    vocabulary: list | None  # a checkpoint with another vocabulary is refused
    vocabulary_hint: str  # what to do when it is
    header: list[str]  # printed before training
    batch_fn: Callable | None = None
    loss_fn: Callable | None = None
    extra: dict = field(default_factory=dict)  # stored in the checkpoint beside the model
    own: dict = field(default_factory=dict)  # the task's own, for its summary (tokenizer, test data, ...)
    run_seconds: float | None = None  # this process's training time (the history sums resumed runs)


@dataclass(frozen=True)
class Task:
    """One model ``lmcourse train`` trains."""

    name: str  # the subcommand
    summary: str  # its line in ``lmcourse train --help``
    description: Callable[[], str]  # the top of ``lmcourse train NAME --help``
    add_flags: Callable[[argparse.ArgumentParser, Any], None]  # (parser, its "run" group): its own flags
    prepare: Callable[[dict, str, str], Job]  # (flags given, profile name, prog): data, model and run
    summarise: Callable[[Job, Any, Any, dict], str]  # (job, history, env, flags): the last line
    checkpoint_stem: Callable[[dict], str]  # default checkpoint: checkpoints/<stem>_<profile>.pt
    epilog: Callable[[], str] | None = None
    data_parallel: bool = False  # may run under torchrun on several processes
    compile_on_cuda: bool = True  # torch.compile by default on CUDA
    checkpoint_note: str = ""  # more about its checkpoint, for --help


# --- what the tasks share -----------------------------------------------------------------------------

def say(env, *a, **k) -> None:
    """print, on the main process only (under torchrun every rank runs the task)."""
    if env.is_main:
        print(*a, **k, flush=True)


def wall_text(hist, job) -> str:
    """``wall 5.4 s``: this run's wall time; after --resume the history's sum over the runs too
    (train() adds each run's time to it), named as such."""
    this = job.run_seconds if job.run_seconds is not None else hist.elapsed
    if hist.elapsed - this > 0.05:
        return f"wall {wall(this)} ({wall(hist.elapsed)} with the run resumed)"
    return f"wall {wall(this)}"


def wall(seconds: float) -> str:
    m, s = divmod(seconds, 60)
    h, m = divmod(int(m), 60)
    return f"{h}h{m:02d}m{s:02.0f}s" if h else (f"{m}m{s:04.1f}s" if m else f"{s:.1f} s")


def recipe_with(recipe, a: dict):
    """The recipe with the flags that name its fields on top; a size below 1 is refused."""
    given = {f.name: a[f.name] for f in fields(recipe) if f.name in a and f.name != "profile"}
    bad = [f"--{k} {v}" for k, v in given.items() if isinstance(v, int) and not isinstance(v, bool) and v < 1]
    if bad:
        raise TrainInputError(f"{', '.join(bad)}: every size must be at least 1")
    return replace(recipe, **given)


def done_text(hist, steps: int) -> str:
    return f"done: {hist.steps[-1] if hist.steps else 0}/{steps} steps"


def by_profile(values: dict) -> str:
    """``"tiny 30, cpu 1000, gpu 5000"``, or the one value when every profile has it."""
    shown = {k: (f"{v:g}" if isinstance(v, float) else str(v)) for k, v in values.items()}
    return next(iter(shown.values())) if len(set(shown.values())) == 1 else \
        ", ".join(f"{k} {v}" for k, v in shown.items())


def sizes_text(module) -> str:
    """A recipe's sizes by profile, for --help: ``tiny: steps 30, ...; cpu: ...``."""
    from ...runtime import PROFILES

    def show(v):
        return f"{v:g}" if isinstance(v, float) else str(v)

    return "; ".join(f"{name}: " + ", ".join(f"{k} {show(v)}" for k, v in asdict(module.recipe(name)).items()
                                           if k != "profile") for name in PROFILES)


def recipe_flags(p: argparse.ArgumentParser, module, what: dict[str, str]) -> None:
    """A flag for each recipe field in ``what`` (its help), typed as the field, its default by profile."""
    from ...runtime import PROFILES

    defaults = {k: by_profile({n: getattr(module.recipe(n), k) for n in PROFILES}) for k in what}
    types = {f.name: f.type for f in fields(module.recipe("tiny"))}
    for name, help_ in what.items():
        kind = float if "float" in str(types[name]) else int
        p.add_argument(f"--{name}", type=kind, help=f"{help_} (default: {defaults[name]})")
