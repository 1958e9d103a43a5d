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
progress bar), and the last line. A new model adds a :class:`Task` to :data:`TASKS`.

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
import inspect
import math
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

__all__ = ["main", "build_parser", "task_parser", "parse_args", "run_task", "Task", "TASKS", "PEAK_TFLOPS",
           "peak_tflops", "mfu", "TrainInputError"]

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


# --- what a task is ----------------------------------------------------------------------------------

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


def _say(env, *a, **k) -> None:
    if env.is_main:
        print(*a, **k, flush=True)


def _wall_text(hist, job) -> str:
    """``wall 5.4 s``: this run's wall time; after --resume the history's sum over the runs too
    (train() adds each run's time to it), named as such."""
    this = job.run_seconds if job.run_seconds is not None else hist.elapsed
    if hist.elapsed - this > 0.05:
        return f"wall {_wall(this)} ({_wall(hist.elapsed)} with the run resumed)"
    return f"wall {_wall(this)}"


def _wall(seconds: float) -> str:
    m, s = divmod(seconds, 60)
    h, m = divmod(int(m), 60)
    return f"{h}h{m:02d}m{s:02.0f}s" if h else (f"{m}m{s:04.1f}s" if m else f"{s:.1f} s")


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


def _recipe_with(recipe, a: dict):
    """The recipe with the flags that name its fields on top; a size below 1 is refused."""
    given = {f.name: a[f.name] for f in fields(recipe) if f.name in a and f.name != "profile"}
    bad = [f"--{k} {v}" for k, v in given.items() if isinstance(v, int) and not isinstance(v, bool) and v < 1]
    if bad:
        raise TrainInputError(f"{', '.join(bad)}: every size must be at least 1")
    return replace(recipe, **given)


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
            _say(env, line)
        amp = str(choose_precision(device)) if cfg.amp and device.type == "cuda" else "off"  # bf16, or fp16 on a T4
        _say(env, f"  {cfg.steps} steps of {cfg.batch_size} x {cfg.block_size}, lr {cfg.lr:g}, {env.world_size} "
                  f"process(es) on {device.type}{f' ({env.backend})' if env.backend else ''}, "
                  f"{torch.get_num_threads()} thread(s) each, compile {'on' if cfg.compile else 'off'}, amp {amp}")
        _say(env, f"  checkpoint {ckpt}{' (resuming)' if resume else ''}")
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
        _say(env, line)
        return 0
    finally:
        D.teardown(env)


def _done(hist, steps: int) -> str:
    return f"done: {hist.steps[-1] if hist.steps else 0}/{steps} steps"


# --- gpt: notebook 05's GPT on the course corpus or a text file, one process or many -----------------

def _field_help(cls) -> dict[str, str]:
    """The comment after each field of a dataclass, as help text."""
    out = {}
    for line in inspect.getsource(cls).splitlines():
        m = re.match(r"\s+(\w+): [^=]+=.*?#\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).replace("%", "%%")
    return out


def _grad_clip(text: str):
    return None if text.lower() in ("none", "off", "0") else float(text)


_TRAIN_SKIP = ("device", "checkpoint_path", "resume", "progress", "quiet", "compile", "amp")  # added by hand


def _by_profile(values: dict) -> str:
    """``"tiny 30, cpu 1000, gpu 5000"``, or the one value when every profile has it."""
    shown = {k: (f"{v:g}" if isinstance(v, float) else str(v)) for k, v in values.items()}
    return next(iter(shown.values())) if len(set(shown.values())) == 1 else \
        ", ".join(f"{k} {v}" for k, v in shown.items())


def _gpt_defaults() -> dict[str, str]:
    """Each flag's default as --help shows it: notebook 05's recipe, by profile."""
    from ..nn.gpt import GPTConfig
    from ..recipes import gpt
    from ..runtime import PROFILES

    out: dict[str, dict] = {}
    for name in PROFILES:
        r = gpt.recipe(name)
        values = {f.name: f.default for f in fields(GPTConfig)}
        values.update(asdict(r.train_config()), **r.model_sizes(), sample_tokens=r.sample_chars)
        values["betas"] = " ".join(f"{b:g}" for b in values["betas"])
        for k, v in values.items():
            out.setdefault(k, {})[name] = v
    shown = {k: _by_profile(v) for k, v in out.items()}
    shown["warmup_steps"] = f"5 %% of --steps: {shown['warmup_steps']}"
    return shown


def _gpt_description() -> str:
    return ("Train notebook 05's GPT on the course corpus or a text file, on one process or under torchrun on many "
            "(data-parallel), with the notebook's recipe (lmcourse.recipes.gpt).")


def _gpt_epilog() -> str:
    from ..recipes import gpt
    from ..runtime import PROFILES

    lines = ["profiles: a profile is a set of sizes, the same as notebook 05's (lmcourse.recipes.gpt); "
             "every flag overrides its part"]
    for name in PROFILES:
        r = gpt.recipe(name)
        c = r.train_config()
        lines.append(f"  {name:<4} {c.steps:>5} steps of {c.batch_size} x {c.block_size} tokens, "
                     f"GPT of {r.n_layer} layer(s) x {r.n_head} heads x {r.n_embd} wide, lr {c.lr:g}, "
                     f"dropout {r.dropout:g}, validation every {c.eval_interval} steps")
    lines.append("  default: gpu on CUDA, else cpu (tiny: seconds, to try the command)")
    return "\n".join(lines)


def _gpt_flags(p: argparse.ArgumentParser, g) -> None:
    from ..nn.gpt import GPTConfig
    from ..train import TrainConfig

    defaults = _gpt_defaults()
    g.add_argument("--text", metavar="FILE", help="train on this UTF-8 text file, split by position "
                   "(default: the course's Shakespeare, split by play)")
    g.add_argument("--val_fraction", type=float, help="share of --text held out for validation (default 0.1)")
    g.add_argument("--micro_batch_size", type=int, help="windows per forward pass; batch_size / micro_batch_size "
                   "micro-batches make a step (default: batch_size / number of processes)")
    g.add_argument("--amp", action=argparse.BooleanOptionalAction, help="mixed precision on CUDA: bf16, "
                   "fp16 + GradScaler before compute capability 8.0 (default: on)")
    g.add_argument("--sample_tokens", type=int, help=f"characters sampled at the end (default: "
                   f"{defaults['sample_tokens']}; 0: none)")
    g.add_argument("--temperature", type=float, help="sampling temperature (default 1.0)")
    g.add_argument("--peak_tflops", type=float, help="the device's peak TFLOP/s, for the MFU estimate when the "
                   "GPU is not in the built-in table")

    helps = _field_help(TrainConfig)
    t = p.add_argument_group("training (lmcourse.train.TrainConfig); defaults by profile")
    for f in fields(TrainConfig):
        if f.name in _TRAIN_SKIP:
            continue
        h = f"{helps.get(f.name, '')} (default: {defaults[f.name]})"
        if f.name == "betas":
            t.add_argument("--betas", type=float, nargs=2, metavar=("BETA1", "BETA2"), help=h)
        elif f.name == "grad_clip":
            t.add_argument("--grad_clip", type=_grad_clip, help=h.replace("None", "none"))
        elif f.name == "batch_size":
            t.add_argument("--batch_size", type=int, help=h + "; the global batch of one step, however many "
                           "processes share it")
        elif f.name == "optimizer":
            t.add_argument("--optimizer", choices=("adamw", "sgd"), help=h)
        elif f.name == "block_size":
            t.add_argument("--block_size", type=int, help=h + "; also the GPT's context length")
        elif isinstance(f.default, bool):
            t.add_argument(f"--{f.name}", action=argparse.BooleanOptionalAction, help=h)
        else:
            t.add_argument(f"--{f.name}", type=type(f.default), help=h)
    helps = _field_help(GPTConfig)
    m = p.add_argument_group("model (lmcourse.nn.GPTConfig); defaults by profile")
    for f in fields(GPTConfig):
        if f.name == "block_size":
            continue
        h = f"{helps.get(f.name, '')} (default: {defaults[f.name]})"
        if isinstance(f.default, bool):
            m.add_argument(f"--{f.name}", action=argparse.BooleanOptionalAction, help=h)
        elif f.name == "gelu":
            m.add_argument("--gelu", choices=("none", "tanh"), help=h)
        elif f.name == "vocab_size":
            m.add_argument("--vocab_size", type=int, help="V (default: the characters of the training text; "
                           "larger leaves unused rows)")
        else:
            m.add_argument(f"--{f.name}", type=type(f.default), help=h)


def _gpt_prepare(a: dict, profile: str, prog: str) -> Job:
    import torch

    from ..data import encode_split, load_corpus, load_shakespeare
    from ..nn.gpt import GPT, GPTConfig
    from ..recipes import gpt
    from ..tokenizers import CharTokenizer
    from ..train import TrainConfig

    if "text" in a:
        path = Path(a["text"]).expanduser()
        if not path.is_file():
            raise TrainInputError(f"--text {a['text']}: no such file" if not path.exists()
                                  else f"--text {a['text']}: not a regular file")
        corpus = load_corpus(path, val_fraction=a.get("val_fraction", 0.1))
        source = str(path)
    else:
        corpus = load_shakespeare(quiet=os.environ.get("RANK", "0") != "0")  # a first download: rank 0 says so
        source = "the course corpus (Shakespeare, split by play)"
    tok = CharTokenizer.from_text(corpus.text("train"))
    train_ids = encode_split(corpus, "train", tok)
    val_ids = encode_split(corpus, "val", tok) if corpus.splits.get("val") else None

    r = _recipe_with(gpt.recipe(profile), a)
    train_fields = {f.name for f in fields(TrainConfig)} - {f.name for f in fields(r)}
    gpt_fields = {f.name for f in fields(GPTConfig)} - {f.name for f in fields(r)}
    try:
        cfg = r.train_config(**{k: v for k, v in a.items() if k in train_fields})
        sizes = {**r.model_sizes(), "vocab_size": tok.vocab_size, **{k: v for k, v in a.items() if k in gpt_fields}}
        if sizes["vocab_size"] < tok.vocab_size:
            raise ValueError(f"--vocab_size {sizes['vocab_size']} is smaller than the text's "
                             f"{tok.vocab_size} characters")
        config = GPTConfig(**sizes)
    except ValueError as exc:
        raise TrainInputError(str(exc)) from exc
    for split, ids in (("training", train_ids), ("validation", val_ids)):
        if ids is not None and ids.numel() <= cfg.block_size:
            raise TrainInputError(f"--block_size {cfg.block_size} is larger than the text: the {split} split of "
                                  f"{source} has {ids.numel()} characters, and a window needs block_size + 1 = "
                                  f"{cfg.block_size + 1}; use a smaller --block_size or a longer text")
    torch.manual_seed(cfg.seed)
    model = GPT(config)
    header = [f"{prog} gpt: {profile} profile, {source}", f"  {config}",
              f"  {model.num_params():,} parameters; {train_ids.numel():,} training and "
              f"{0 if val_ids is None else val_ids.numel():,} validation characters; {tok.vocab_size} in the "
              "vocabulary"]
    return Job(model, "a GPT", asdict(config), train_ids, val_ids, cfg, list(tok.itos),
               "pass the same --text", header, extra={"vocabulary": list(tok.itos), "text": source},
               own={"tok": tok, "sample_chars": r.sample_chars})


def _plot_curve(hist, ckpt: Path, profile: str) -> Path:
    """The run's loss curves (lmcourse.plot.loss_curves, as the notebooks draw them) as a PNG beside the
    checkpoint: ``run.pt`` -> ``run.png``."""
    from matplotlib.figure import Figure  # drawn off-screen, with no pyplot backend involved

    from ..plot import loss_curves

    fig = Figure(figsize=(7, 4.5))
    loss_curves({"GPT": hist}, ax=fig.subplots(), title=f"lmcourse train gpt ({profile}), steps 1-{hist.steps[-1]}")
    out = ckpt.with_suffix(".png")
    fig.savefig(out, dpi=100, bbox_inches="tight")
    return out


def _gpt_summary(job: Job, hist, env, a: dict) -> str:
    import torch

    from ..nn.sampling import generate

    cfg, model, tok, device = job.cfg, job.model, job.own["tok"], env.device
    ckpt = Path(cfg.checkpoint_path)
    if env.is_main and hist.steps:
        _say(env, f"  loss curve {_plot_curve(hist, ckpt, job.extra['profile'])}")
    n_samples = a.get("sample_tokens", job.own["sample_chars"])
    if env.is_main and n_samples > 0:
        model.eval()
        gen = torch.Generator(device=device).manual_seed(cfg.seed)
        prompt = torch.tensor([tok.encode("\n")], device=device)
        out = generate(model, prompt, n_samples, temperature=a.get("temperature", 1.0), generator=gen)
        print("--- sample ---\n" + tok.decode(out[0].tolist()).strip() + "\n--------------", flush=True)
    stale = hist.val_steps and hist.steps and hist.val_steps[-1] != hist.steps[-1]
    when = f", from step {hist.val_steps[-1]}: not re-evaluated since" if stale else ""
    line = (f"{_done(hist, cfg.steps)}, "
            f"val loss {hist.final_val_loss:.4f} ({hist.final_val_loss / math.log(2):.3f} bits/char{when}), "
            f"{hist.tokens_per_sec:,.0f} tokens/s, {_wall_text(hist, job)}, "
            f"{env.world_size} x {device.type}")
    peak = None
    if "peak_tflops" in a:
        peak = (a["peak_tflops"], "given")
    elif device.type == "cuda":
        peak = peak_tflops(torch.cuda.get_device_name(device))
    if peak is not None:
        n_matmul = model.num_params() - model.wpe.weight.numel()  # all but the position table take part in a product
        u = mfu(hist.tokens_per_sec, n_matmul, peak[0] * 1e12 * env.world_size)
        line += f", MFU {u:.1%} (6 N FLOPs/token over {env.world_size} x {peak[0]:g} TFLOP/s, {peak[1]})"
    elif device.type == "cuda":
        line += ", MFU unknown (GPU not in the peak table: pass --peak_tflops)"
    if hist.best_step is not None and hist.best_step != hist.val_steps[-1]:  # --keep_best
        line += (f"; the sample used the weights of step {hist.best_step} (val loss {hist.best_val_loss:.4f}, the "
                 "lowest; the checkpoint's 'best', its 'model' is the last step's)")
    return line


def _gpt_checkpoint_stem(a: dict) -> str:
    return "train_gpt"


# --- mlm: notebook 06's masked LM on the course corpus, word by word ------------------------------------

def _sizes_text(module) -> str:
    """A recipe's sizes by profile, for --help: ``tiny: steps 30, ...; cpu: ...``."""
    from ..runtime import PROFILES

    def show(v):
        return f"{v:g}" if isinstance(v, float) else str(v)

    return "; ".join(f"{name}: " + ", ".join(f"{k} {show(v)}" for k, v in asdict(module.recipe(name)).items()
                                           if k != "profile") for name in PROFILES)


def _recipe_flags(p: argparse.ArgumentParser, module, what: dict[str, str]) -> None:
    """A flag for each recipe field in ``what`` (its help), typed as the field, its default by profile."""
    from ..runtime import PROFILES

    by_profile = {k: _by_profile({n: getattr(module.recipe(n), k) for n in PROFILES}) for k in what}
    types = {f.name: f.type for f in fields(module.recipe("tiny"))}
    for name, help_ in what.items():
        kind = float if "float" in str(types[name]) else int
        p.add_argument(f"--{name}", type=kind, help=f"{help_} (default: {by_profile[name]})")


def _mlm_description() -> str:
    from ..recipes import mlm

    return ("Train notebook 06's masked language model (lmcourse.reference.mlm.MaskedLM, BERT's 80/10/10 masking of "
            "15 % of the words) on the course corpus, one token per word, split by play, with the course's one loop; "
            "then score it on blanks of the validation plays (top-1 and top-5, against guessing the most frequent "
            "words), as the notebook does. Sizes by profile (the notebook's, lmcourse.recipes.mlm): "
            + _sizes_text(mlm) + ".")


def _mlm_epilog() -> str:
    return ("The notebook's cpu run (800 steps of 32 windows) ends on the plateau where a masked LM predicts the "
            "word frequencies; in the runs the notebook describes, the validation loss dropped after 120,000 to "
            "480,000 windows: try --profile cpu --steps 20000, or --batch_size 128 --steps 10000.")


def _mlm_flags(p: argparse.ArgumentParser, g) -> None:
    from ..recipes import mlm

    _recipe_flags(p, mlm, {
        "steps": "optimisation steps", "batch_size": "windows per step", "block": "words per window",
        "vocab": "words kept in the vocabulary (the rest: <unk>)", "n_embd": "model width", "n_layer": "blocks",
        "n_head": "attention heads", "evals": "validations in the run (every steps // evals steps)",
        "n_blanks": "validation blanks scored at the end", "lr": "peak learning rate",
        "dropout": "dropout after the embeddings and in the blocks"})
    p.add_argument("--causal", action="store_true", help="train the same network left to right instead (the "
                   "notebook's opponent: next-word batches, blanks scored from the word before)")
    p.add_argument("--keep_best", action=argparse.BooleanOptionalAction, help="end with the weights of the "
                   "lowest validation loss, as the notebook does (default: on)")
    p.add_argument("--seed", type=int, help="seed of the initialisation, the batches and the masks (default 0)")


def _mlm_prepare(a: dict, profile: str, prog: str) -> Job:
    import torch

    from ..data import encode_text, get_batch, load_shakespeare
    from ..nn.mlm import MLMConfig
    from ..recipes import mlm
    from ..reference.mlm import MaskedLM, mask_tokens
    from ..tokenizers import SPECIALS, WordTokenizer

    r = _recipe_with(mlm.recipe(profile), a)
    if r.n_embd % r.n_head:
        raise TrainInputError(f"--n_embd {r.n_embd} must be divisible by --n_head {r.n_head} (each head "
                              "gets n_embd / n_head dimensions)")
    causal, seed = bool(a.get("causal")), a.get("seed", 0)
    corpus = load_shakespeare()  # CorpusUnavailable (no network, no cache) says what to do
    train_text, val_text = corpus.text("train"), corpus.text("val")
    if r.chars is not None:  # tiny: the first part of the text, as the notebook
        train_text, val_text = train_text[:r.chars], val_text[:r.chars // 5]
    tok = WordTokenizer.from_text(train_text, max_size=r.vocab, specials=list(SPECIALS) + [mlm.MASK_TOKEN])
    train_ids, val_ids = encode_text(train_text, tok), encode_text(val_text, tok)
    V, mask_id = tok.vocab_size, tok.stoi[mlm.MASK_TOKEN]
    special_ids = [tok.stoi[s] for s in SPECIALS] + [mask_id]
    if min(len(train_ids), len(val_ids)) <= r.block:
        raise TrainInputError(f"--block {r.block} is longer than the text ({len(val_ids):,} validation "
                              "words); use a smaller --block")
    try:
        config = MLMConfig(vocab_size=V, **r.model_sizes(causal=causal))
        torch.manual_seed(seed)
        model = MaskedLM(config)
    except (ValueError, AssertionError) as exc:
        raise TrainInputError(str(exc)) from exc

    def mlm_batch(tokens, batch_size, block_size, generator, dev):
        x, _ = get_batch(tokens, batch_size, block_size, generator)
        inputs, labels = mask_tokens(x, mask_id, V, special_ids, p=0.15, generator=generator)
        return inputs.to(dev), labels.to(dev)

    cfg = r.train_config(seed=seed, keep_best=a.get("keep_best", True))
    what = "left to right (causal)" if causal else "masked LM"
    header = [f"{prog} mlm: {what}, {profile} profile, {sum(q.numel() for q in model.parameters()):,} parameters "
              f"({config.n_layer} layers x {config.n_embd} wide, {config.n_head} heads), {V:,} words in the "
              f"vocabulary, {len(train_ids):,} training and {len(val_ids):,} validation words"]
    return Job(model, "a masked LM", asdict(config), train_ids, val_ids, cfg, list(tok.itos),
               "pass the same --vocab and --profile", header, batch_fn=None if causal else mlm_batch,
               extra={"vocabulary": list(tok.itos), "task": "mlm"},
               own={"recipe": r, "train_ids": train_ids, "val_ids": val_ids, "mask_id": mask_id,
                    "special_ids": special_ids, "causal": causal, "seed": seed, "V": V})


def _blanks(ids, n: int, block: int, special_ids: list[int], seed: int):
    """Notebook 06's blanks: ``n`` windows of ``ids`` and one position in each holding an ordinary word
    (never the first, so a left-to-right model has a word before it): ``(windows (n, T), positions (n,))``."""
    import torch

    from ..data import get_batch

    g = torch.Generator().manual_seed(seed)
    x, _ = get_batch(ids, n, block, g)
    ordinary = ~torch.isin(x, torch.tensor(special_ids))
    ordinary[:, 0] = False
    return x, torch.multinomial(ordinary.double(), 1, generator=g)[:, 0]


def _blank_scores(model, x, pos, mask_id: int, causal: bool, device) -> dict[int, float]:
    """Top-1 and top-5 accuracy at the blanks: the word hidden behind [MASK], or predicted from the word
    before it when ``causal``."""
    import torch

    from ..train import model_logits

    model.eval()
    logits = []
    with torch.no_grad():
        for i in range(0, len(x), 256):  # a few hundred windows per forward pass: memory stays small
            xi, pi = x[i:i + 256].clone(), pos[i:i + 256]
            r = torch.arange(len(xi))
            if not causal:
                xi[r, pi] = mask_id
            out = model_logits(model(xi.to(device)))
            logits.append(out[r, pi - 1 if causal else pi].float().cpu())
    top = torch.cat(logits).topk(5, dim=-1).indices  # (n, 5)
    true = x[torch.arange(len(x)), pos]
    return {k: float((top[:, :k] == true[:, None]).any(dim=1).double().mean()) for k in (1, 5)}


def _mlm_summary(job: Job, hist, env, a: dict) -> str:
    import torch

    o = job.own
    r, special_ids = o["recipe"], o["special_ids"]
    x, pos = _blanks(o["val_ids"], r.n_blanks, r.block, special_ids, o["seed"] + 6)
    scores = _blank_scores(job.model, x, pos, o["mask_id"], o["causal"], env.device)
    freq = torch.bincount(o["train_ids"], minlength=o["V"]).double()  # the baseline: training's most frequent words
    freq[special_ids] = 0
    true = x[torch.arange(r.n_blanks), pos]
    base = {k: float(torch.isin(true, freq.topk(k).indices).double().mean()) for k in (1, 5)}
    kept = f" (weights of step {hist.best_step}, the lowest)" if hist.best_step is not None else ""
    return (f"{_done(hist, job.cfg.steps)}, val loss "
            f"{hist.best_val_loss if hist.best_step is not None else hist.final_val_loss:.4f}{kept}, "
            f"top-1 {scores[1]:.1%}, top-5 {scores[5]:.1%} on {r.n_blanks:,} validation blanks (most frequent "
            f"words: {base[1]:.1%}, {base[5]:.1%}), {_wall_text(hist, job)}")


def _mlm_checkpoint_stem(a: dict) -> str:
    return "train_mlm_causal" if a.get("causal") else "train_mlm"


# --- seq2seq: notebook 09's encoder-decoder on the generated date task -----------------------------------

def _seq2seq_description() -> str:
    from ..recipes import seq2seq

    return ("Train notebook 09's encoder-decoder (lmcourse.nn.seq2seq) on the generated date task (lmcourse.dates) "
            "with the course's one loop, then measure exact match on the test dates. Sizes by profile (the "
            "notebook's, lmcourse.recipes.seq2seq): " + _sizes_text(seq2seq) + ".")


def _seq2seq_flags(p: argparse.ArgumentParser, g) -> None:
    from ..recipes import seq2seq

    _recipe_flags(p, seq2seq, {
        "n_embd": "width of both stacks", "n_layer": "blocks in each stack", "n_head": "attention heads",
        "steps": "optimisation steps", "batch_size": "pairs per step", "n_train": "training pairs",
        "n_val": "validation pairs", "n_test": "test pairs, for the exact match",
        "evals": "validations in the run (every steps // evals steps)", "lr": "peak learning rate"})
    p.add_argument("--seed", type=int, help="seed of the data, the initialisation and the batches (default 0)")


def _seq2seq_prepare(a: dict, profile: str, prog: str) -> Job:
    import torch

    from .. import dates
    from ..nn.seq2seq import EncoderDecoder, Seq2SeqConfig
    from ..recipes import seq2seq

    r = _recipe_with(seq2seq.recipe(profile), a)
    seed = a.get("seed", 0)
    vocab = dates.CharVocab()
    try:
        config = Seq2SeqConfig(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), pad_id=dates.PAD_ID,
                               **r.model_sizes())
    except ValueError as exc:
        raise TrainInputError(str(exc)) from exc
    splits = dates.make_splits(r.n_train, r.n_val, r.n_test, seed=seed)
    torch.manual_seed(seed)
    model = EncoderDecoder(config)
    header = [f"{prog} seq2seq: {profile} profile, {model.num_params():,} parameters ({config.n_enc_layer}+"
              f"{config.n_dec_layer} layers x {config.n_embd} wide, {config.n_head} heads), {len(splits['train']):,} "
              "training pairs"]
    return Job(model, "an encoder-decoder", asdict(config), splits["train"], splits["val"],
               r.train_config(seed=seed), vocab.itos, "train anew (--overwrite)", header,
               batch_fn=dates.sample_batch, loss_fn=dates.padded_cross_entropy,
               extra={"vocabulary": vocab.itos, "task": "lmcourse.dates"}, own={"splits": splits, "vocab": vocab})


def _seq2seq_summary(job: Job, hist, env, a: dict) -> str:
    from .. import dates
    from ..nn.seq2seq import exact_match, greedy_decode

    model, vocab, test = job.model, job.own["vocab"], job.own["splits"]["test"]
    model.eval()
    sources, targets = [s for s, _ in test], [t for _, t in test]
    outputs = []
    for i in range(0, len(sources), 500):
        src = dates.make_batch([(s, "0") for s in sources[i:i + 500]], vocab, env.device).src
        outputs += [vocab.decode(r) for r in greedy_decode(model, src, dates.BOS_ID, dates.EOS_ID, 11).cpu()]
    for s, o, t in list(zip(sources, outputs, targets))[:5]:
        print(f"  {s:<36} -> {o:<12} {'ok' if o == t else 'expected ' + t}")
    return (f"{_done(hist, job.cfg.steps)}, val loss {hist.final_val_loss:.4f}, exact match "
            f"{exact_match(outputs, targets):.1%} on {len(targets)} test dates, {_wall_text(hist, job)}")


def _seq2seq_checkpoint_stem(a: dict) -> str:
    return "train_seq2seq"


# --- the tasks and the entry point -------------------------------------------------------------------------

TASKS: dict[str, Task] = {t.name: t for t in (
    Task("gpt", "notebook 05's GPT on the course's Shakespeare or any text file, on one process or under "
         "torchrun on many", _gpt_description, _gpt_flags, _gpt_prepare, _gpt_summary,
         _gpt_checkpoint_stem, epilog=_gpt_epilog, data_parallel=True),
    Task("mlm", "notebook 06's masked language model on Shakespeare's words, then its fill-in-the-blank accuracy",
         _mlm_description, _mlm_flags, _mlm_prepare, _mlm_summary, _mlm_checkpoint_stem, epilog=_mlm_epilog,
         checkpoint_note=" (with --causal: train_mlm_causal_<profile>.pt); lmcourse.nn.load_mlm reads the last "
         "step's weights from it, the kept ones (--keep_best) are under its key 'best'"),
    Task("seq2seq", "notebook 09's encoder-decoder on the generated date task, then its exact match",
         _seq2seq_description, _seq2seq_flags, _seq2seq_prepare, _seq2seq_summary, _seq2seq_checkpoint_stem,
         compile_on_cuda=False),
)}


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
