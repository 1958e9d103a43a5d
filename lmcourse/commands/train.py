"""``lmcourse train``: a notebook's model trained from the command line, with its notebook's recipe.

    lmcourse train --help                                                # the models, one line each
    lmcourse train gpt --help                                            # one model's flags
    python -m lmcourse.commands.train gpt --profile cpu                       # notebook 05's GPT, cpu sizes
    python -m lmcourse.commands.train gpt --profile cpu --steps 200 --n_layer 2
    python -m lmcourse.commands.train gpt --text my.txt --block_size 128      # any UTF-8 text file
    python -m lmcourse.commands.train gpt --profile cpu --resume              # continue the last checkpoint
    torchrun --nproc_per_node 8 -m lmcourse.commands.train gpt --profile gpu  # 8 GPUs, data-parallel
    python -m lmcourse.commands.train seq2seq --profile cpu                   # notebook 09's encoder-decoder on dates
    python -m lmcourse.commands.train mlm --profile cpu --steps 20000         # notebook 06's masked LM, the long run

Each model is a :class:`Task`: its flags, how it builds its data, model and run from the flags and its
notebook's recipe (:mod:`lmcourse.recipes`, per profile: ``tiny``, ``cpu``, ``gpu``), and the summary it
ends with. One driver (:func:`run_task`) does the rest for every task: the profile and the device, the
checkpoint (an existing one is continued with ``--resume`` or replaced with ``--overwrite``, else the run
refuses to start; one of other sizes or another vocabulary is refused before any training), the threads,
the course's one loop (:func:`lmcourse.train.train`), a line per validation without a terminal (no
progress bar), and the last line. A new model is a module of :mod:`lmcourse.commands.tasks` that
defines its ``TASK``; :data:`TASKS` finds it.

The GPT runs on one process or under torchrun on many (``--batch_size`` is the global batch of one step,
whatever the number of processes, see :mod:`lmcourse.distributed`); every field of
:class:`lmcourse.train.TrainConfig` and :class:`lmcourse.nn.GPTConfig` is a flag. On CUDA: mixed
precision (bf16; fp16 + GradScaler on a T4, V100 or P100), the fused AdamW kernel, TF32 matrix products,
the fused attention kernel (``--no-fast`` for the explicit softmax) and ``torch.compile``
(``--no-compile`` to skip it). Its last line gives the validation loss (marked with its step when a
``--stop_after`` ends between validations), tokens/s, the wall time and, on a GPU in
:data:`PEAK_TFLOPS`, the model-FLOPs utilisation; a loss-curve PNG is written beside the checkpoint.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import time
from pathlib import Path

from .tasks import discover
from .tasks.task import PEAK_TFLOPS, Job, Task, TrainInputError, mfu, peak_tflops, say

__all__ = ["main", "build_parser", "task_parser", "parse_args", "run_task", "Task", "TASKS", "PEAK_TFLOPS",
           "peak_tflops", "mfu", "TrainInputError"]

# --- the driver ----------------------------------------------------------------------------------------

def _common_flags(p: argparse.ArgumentParser, task: Task):
    """The flags every task has; returns the "run" group for the task's own."""
    from ..runtime import PROFILES

    g = p.add_argument_group("run")
    g.add_argument("--profile", choices=PROFILES, help="sizes to start from (default: gpu on CUDA, else cpu)")
    g.add_argument("--checkpoint_path", metavar="FILE", help=f"checkpoint to write (and --resume from); default: "
                   f"checkpoints/train_{task.name}_<profile>.pt in the course cache{task.checkpoint_note}")
    g.add_argument("--resume", action="store_true", help="continue from --checkpoint_path if it exists")
    g.add_argument("--overwrite", action="store_true", help="replace --checkpoint_path if it exists (without "
                   "--resume or --overwrite, an existing checkpoint stops the run)")
    g.add_argument("--stop_after", type=int, metavar="STEP", help="stop after this step as if interrupted (the "
                   "schedule still follows --steps); --resume continues")
    g.add_argument("--device", help="cpu, cuda, mps (default: CUDA, then MPS, then CPU" +
                   ("; under torchrun: GPU LOCAL_RANK, else CPU)" if task.data_parallel else ")"))
    g.add_argument("--threads", type=int, help="CPU threads per process (default: as the notebooks, "
                   "LMCOURSE_THREADS or 1 on the CPU)")
    g.add_argument("--compile", action=argparse.BooleanOptionalAction, help="torch.compile the model (default: "
                   + ("on with CUDA)" if task.compile_on_cuda else "off)"))
    g.add_argument("--progress", action=argparse.BooleanOptionalAction, help="progress bar (default: in a "
                   "terminal; without one, a line per validation)")
    return g


def task_parser(name: str, prog: str = "lmcourse train") -> argparse.ArgumentParser:
    """``lmcourse train NAME``'s parser: the common flags and the task's own."""
    task = TASKS[name]
    p = argparse.ArgumentParser(prog=f"{prog} {name}", description=task.description(),
                                epilog=task.epilog() if task.epilog else None, argument_default=argparse.SUPPRESS,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    task.add_flags(p, _common_flags(p, task))
    return p


def build_parser(prog: str = "lmcourse train") -> argparse.ArgumentParser:
    """``lmcourse train``'s parser: one sub-command per task, each with its flags."""
    p = argparse.ArgumentParser(prog=prog, description="Train a notebook's model from the command line, with the "
                                "notebook's recipe at a profile's sizes (lmcourse.recipes); every size is a flag.",
                                epilog=f"{prog} MODEL --help lists a model's flags and its sizes by profile.")
    sub = p.add_subparsers(dest="task", metavar="MODEL", title="models")
    for name, task in TASKS.items():
        one = task_parser(name, prog)
        sub.add_parser(name, help=task.summary, parents=[one], add_help=False, description=one.description,
                       epilog=one.epilog, formatter_class=argparse.RawDescriptionHelpFormatter,
                       argument_default=argparse.SUPPRESS)
    sweep = _sweep_parser(prog)
    sub.add_parser("sweep", help=SWEEP_SUMMARY, parents=[sweep], add_help=False, description=sweep.description)
    return p


def parse_args(argv: list[str], prog: str = "lmcourse train") -> argparse.Namespace:
    """``[task, flags...]``: the flags given (absent ones are absent) and ``task``, or
    :class:`TrainInputError` naming a task or flag not known."""
    if not argv or argv[0] not in TASKS:
        if argv and argv[0] in ("-h", "--help"):
            build_parser(prog).parse_args(["--help"])  # prints the models; exits
        models = "|".join([*TASKS, "sweep"])
        what = f"{argv[0]!r} is not a model" if argv and not argv[0].startswith("-") else "name the model first"
        raise TrainInputError(f"{what}: {prog} {{{models}}} [flags] ({prog} --help lists the models, "
                              f"{prog} MODEL --help a model's flags)")
    p = task_parser(argv[0], prog)
    args, unknown = p.parse_known_args(argv[1:])
    if unknown:
        known = [s for a in p._actions for s in a.option_strings]
        flag = next((u for u in unknown if u.startswith("-")), unknown[0])
        close = difflib.get_close_matches(flag.split("=")[0], known, n=2, cutoff=0.75)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise TrainInputError(f"unknown flag {flag}{hint}; {prog} {argv[0]} --help lists the flags"
                              if flag.startswith("-") else f"unexpected argument {flag!r}")
    args.task = argv[0]
    return args








def _check_same_model(path: Path, job: Job):
    """A check of a checkpoint before training continues it: the same model config and vocabulary."""
    def check(state: dict) -> None:
        have = state.get("config")
        if have is None or "samplers" not in state:
            raise TrainInputError(f"{path} is not a checkpoint of `lmcourse train` (no model config or sampler "
                                  "states); pass another --checkpoint_path")
        want = job.config
        diff = [k for k in sorted(set(have) | set(want)) if have.get(k) != want.get(k)]
        if diff:
            theirs = ", ".join(f"{k}={have.get(k)!r}" for k in diff)
            ours = ", ".join(f"{k}={want.get(k)!r}" for k in diff)
            raise TrainInputError(f"the checkpoint {path} holds {job.model_kind} with {theirs}, but this run asks for "
                                  f"{ours}: pass the checkpoint's sizes, or a new --checkpoint_path (or leave out "
                                  "--resume)")
        if job.vocabulary is not None and state.get("vocabulary") is not None \
                and list(state["vocabulary"]) != list(job.vocabulary):
            raise TrainInputError(f"the checkpoint {path} was trained with another vocabulary: "
                                  f"{job.vocabulary_hint}, or a new --checkpoint_path")
    return check




def run_task(a: dict, prog: str = "lmcourse train") -> int:
    """Train the task ``a["task"]`` with the flags in ``a``: everything the user gave is checked (and the
    data read) before any process group is joined or any training starts."""
    import torch

    from .. import distributed as D
    from ..data import data_dir
    from ..runtime import choose_precision, cpu_threads, pick_device
    from ..train import load_checkpoint, train, want_progress

    task = TASKS[a["task"]]
    profile = a.get("profile")
    if profile is None:
        want = a.get("device")
        profile = "gpu" if (torch.device(want).type if want else pick_device().type) == "cuda" else "cpu"
    if "stop_after" in a and a["stop_after"] < 1:
        raise TrainInputError(f"--stop_after {a['stop_after']} must be a positive step")
    if not task.data_parallel and int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        raise TrainInputError(f"{prog} {task.name} runs on one process; start it without torchrun")
    ckpt = Path(a["checkpoint_path"]) if "checkpoint_path" in a else (
        data_dir() / "checkpoints" / f"{task.checkpoint_stem(a)}_{profile}.pt")
    if ckpt.exists() and not (a.get("resume") or a.get("overwrite")):
        raise TrainInputError(f"the checkpoint {ckpt} exists: pass --resume to continue it, --overwrite to "
                              "replace it, or another --checkpoint_path")
    job = task.prepare(a, profile, prog)
    job.extra["profile"] = profile
    resume = bool(a.get("resume")) and ckpt.exists()
    check = _check_same_model(ckpt, job)
    if resume:
        check(load_checkpoint(ckpt))  # a mismatch is one line, before any process joins a group

    env = D.setup(a.get("device"))
    try:
        device = env.device
        threads = a.get("threads") or cpu_threads(device)
        if threads:
            torch.set_num_threads(threads)
        cfg = job.cfg
        cfg.device, cfg.checkpoint_path, cfg.resume = str(device), str(ckpt), bool(a.get("resume"))
        cfg.compile = a.get("compile", device.type == "cuda" and task.compile_on_cuda)
        cfg.progress, cfg.quiet = a.get("progress"), True
        if device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True  # TF32 for any float32 matrix product left
            torch.backends.cudnn.allow_tf32 = True
        for line in job.header:
            say(env, line)
        amp = str(choose_precision(device)) if cfg.amp and device.type == "cuda" else "off"  # bf16, or fp16 on a T4
        say(env, f"  {cfg.steps} steps of {cfg.batch_size} x {cfg.block_size}, lr {cfg.lr:g}, {env.world_size} "
                  f"process(es) on {device.type}{f' ({env.backend})' if env.backend else ''}, "
                  f"{torch.get_num_threads()} thread(s) each, compile {'on' if cfg.compile else 'off'}, amp {amp}")
        say(env, f"  checkpoint {ckpt}{' (resuming)' if resume else ''}")
        lines = not want_progress(cfg)  # no progress bar (no terminal): a line per validation instead

        def report(step: int, h) -> None:
            if lines and env.is_main:
                trained = f"train loss {h.train_loss[-1]:.4f}, " if h.train_loss and h.steps[-1] == step else ""
                print(f"step {step}/{cfg.steps}: {trained}val loss {h.val_loss[-1]:.4f}", flush=True)

        started = time.perf_counter()
        hist = train(job.model, job.train_data, job.val_data, cfg, stop_after=a.get("stop_after"),
                     batch_fn=job.batch_fn, loss_fn=job.loss_fn, env=env, micro_batch_size=a.get("micro_batch_size"),
                     checkpoint_extra=job.extra, check_checkpoint=check, on_eval=report)
        job.run_seconds = min(time.perf_counter() - started, hist.elapsed)
        line = task.summarise(job, hist, env, a)
        if hist.interrupted:
            line += "; stopped early, --resume continues"
        say(env, line)
        return 0
    finally:
        D.teardown(env)




# --- the tasks and the entry point -------------------------------------------------------------------------

TASKS: dict[str, Task] = discover()   # each a module of lmcourse.commands.tasks


SWEEP_SUMMARY = ("notebook 10's scaling sweep: 05's GPT at several sizes, each trained at several FLOP budgets "
                 "(lmcourse.train's loop, one run per point), written as one table")


def _sweep_parser(prog: str) -> argparse.ArgumentParser:
    from ..runtime import PROFILES

    p = argparse.ArgumentParser(prog=f"{prog} sweep", description=SWEEP_SUMMARY + ". The sizes and budgets are "
                                "lmcourse.recipes.scaling's for the profile; notebook 10 reads the table "
                                "(lmcourse.scaling.read_csv).")
    p.add_argument("--profile", choices=PROFILES, help="sizes and budgets (default: gpu on CUDA, else cpu)")
    p.add_argument("--out", metavar="FILE", help="the table to write (default: sweeps/sweep_<profile>.csv in the "
                   "course cache)")
    p.add_argument("--heldout", metavar="FILE", help="also train the held-out runs (the recipe's predict_factor "
                   "times the largest budget) and write them here")
    p.add_argument("--device", help="cpu, cuda, mps (default: cuda with the gpu profile, else cpu)")
    p.add_argument("--overwrite", action="store_true", help="replace --out (and --heldout) if they exist")
    return p


def run_sweep_command(argv: list[str], prog: str = "lmcourse train") -> int:
    """``lmcourse train sweep``: lmcourse.scaling's sweep with a profile's recipe; an existing table is kept
    unless --overwrite."""
    from ..data import data_dir
    from ..runtime import pick_device
    from ..scaling import main as sweep_main

    a = _sweep_parser(prog).parse_args(argv)
    profile = a.profile or ("gpu" if pick_device().type == "cuda" else "cpu")
    out = Path(a.out) if a.out else data_dir() / "sweeps" / f"sweep_{profile}.csv"
    for path in (out, Path(a.heldout) if a.heldout else None):
        if path is not None and path.exists() and not a.overwrite:
            raise TrainInputError(f"{path} exists: pass --overwrite to replace it, or another --out/--heldout")
    out.parent.mkdir(parents=True, exist_ok=True)
    device = a.device or ("cuda" if profile == "gpu" else "cpu")
    import shlex

    code = sweep_main([profile, str(out), "--device", device] + (["--heldout", a.heldout] if a.heldout else []),
                      command=shlex.join([*prog.split(), "sweep", *argv]))
    print(f"wrote {out}" + (f" and {a.heldout}" if a.heldout else ""))
    return code


def main(argv: list[str] | None = None, prog: str = "lmcourse train") -> int:
    """``lmcourse train MODEL [flags]``: 0 when the run finished, 2 on bad input (one line on stderr)."""
    from ..data import CorpusUnavailable
    from ..train import BatchSplitError, CheckpointError

    t0 = time.perf_counter()
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        if argv[:1] == ["sweep"]:  # many runs into one table: no checkpoint, its own flags
            return run_sweep_command(argv[1:], prog)
        return run_task(vars(parse_args(argv, prog)), prog)
    except SystemExit as exc:  # --help, or argparse's own usage errors (it has printed them)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except (TrainInputError, CheckpointError, BatchSplitError, CorpusUnavailable) as exc:
        where = f" (rank {os.environ['RANK']})" if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1 else ""
        print(f"{prog}: error{where}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted after {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
