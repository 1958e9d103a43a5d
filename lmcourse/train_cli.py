"""``lmcourse train gpt``: notebook 05's GPT trained from the command line, on one process or many.

    python -m lmcourse.train_cli gpt --profile cpu                       # the course corpus, cpu sizes
    python -m lmcourse.train_cli gpt --profile cpu --steps 200 --n_layer 2
    python -m lmcourse.train_cli gpt --text my.txt --block_size 128      # any UTF-8 text file
    python -m lmcourse.train_cli gpt --profile cpu --resume              # continue the last checkpoint
    torchrun --nproc_per_node 8 -m lmcourse.train_cli gpt --profile gpu  # 8 GPUs, data-parallel
    python -m lmcourse.train_cli seq2seq --profile cpu                   # notebook 09's encoder-decoder on dates
    python -m lmcourse.train_cli mlm --profile cpu --steps 20000         # notebook 06's masked LM, the long run

Sizes start from a runtime profile (``tiny``, ``cpu``, ``gpu``) and notebook 05's recipe (AdamW
with betas (0.9, 0.99) and weight decay 0.1, peak lr 5e-3, or 1e-3 with dropout 0.2 at the
``gpu`` profile's size, warm-up over 5 % of the steps, cosine to a tenth, clipping at 1);
every field of :class:`lmcourse.train.TrainConfig` and :class:`lmcourse.nn.GPTConfig` can be
overridden with ``--field value`` (``--help`` lists them). ``--batch_size`` is the global batch
of one step, whatever the number of processes (see :mod:`lmcourse.distributed`).

On CUDA: mixed precision (bf16; fp16 + GradScaler on a T4, V100 or P100), the fused AdamW kernel,
TF32 matrix products, the fused attention kernel (``F.scaled_dot_product_attention``; ``--no-fast``
for the explicit softmax) and ``torch.compile`` (``--no-compile`` to skip it). Without a terminal (no progress bar) each
validation prints one line. The last line gives the validation loss (marked with its step when
a ``--stop_after`` ends between validations), tokens/s, the wall time and, on a GPU in
:data:`PEAK_TFLOPS`, the model-FLOPs utilisation. A loss-curve PNG is written beside the
checkpoint. A checkpoint that exists is continued with ``--resume`` or replaced with
``--overwrite``; without either the run refuses to start.
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
from dataclasses import asdict, fields
from pathlib import Path

__all__ = ["main", "build_parser", "PEAK_TFLOPS", "peak_tflops", "mfu", "TrainInputError", "run_seq2seq",
           "SEQ2SEQ_SIZES", "run_mlm", "MLM_SIZES"]

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

MODELS = ("gpt",)  # and "seq2seq" and "mlm", which have flags of their own (see run_seq2seq, run_mlm)


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


# --- flags ---------------------------------------------------------------------------------------

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
_FROM_PROFILE = {"steps": "train_steps", "batch_size": "batch_size", "block_size": "block_size",
                 "eval_interval": "eval_interval", "eval_batches": "eval_batches", "n_layer": "n_layer",
                 "n_head": "n_head", "n_embd": "n_embd"}


def _by_profile(values: dict) -> str:
    """``"tiny 30, cpu 1500, gpu 5000"``, or the one value when every profile has it."""
    shown = {k: (f"{v:g}" if isinstance(v, float) else str(v)) for k, v in values.items()}
    return next(iter(shown.values())) if len(set(shown.values())) == 1 else \
        ", ".join(f"{k} {v}" for k, v in shown.items())


def _defaults() -> dict[str, str]:
    """Each flag's default as --help shows it: the profile's size or notebook 05's recipe, by profile."""
    from .nn.gpt import GPTConfig
    from .runtime import PROFILES, get_profile
    from .train import TrainConfig

    out: dict[str, dict] = {}
    for name in PROFILES:
        prof = get_profile(name)
        values = {f.name: f.default for cls in (TrainConfig, GPTConfig) for f in fields(cls)}
        values.update({k: getattr(prof, v) for k, v in _FROM_PROFILE.items()})
        values.update(_recipe(prof, prof.train_steps), dropout=_dropout(prof))
        values["betas"] = " ".join(f"{b:g}" for b in values["betas"])
        for k, v in values.items():
            out.setdefault(k, {})[name] = v
    shown = {k: _by_profile(v) for k, v in out.items()}
    shown["warmup_steps"] = f"5 %% of --steps: {shown['warmup_steps']}"
    return shown


def _profiles_text() -> str:
    from .runtime import PROFILES, get_profile

    lines = ["profiles: a profile is a set of sizes, the same as the notebooks' (lmcourse.runtime); "
             "every flag overrides its part"]
    for name in PROFILES:
        p = get_profile(name)
        r = _recipe(p, p.train_steps)
        lines.append(f"  {name:<4} {p.train_steps:>5} steps of {p.batch_size} x {p.block_size} tokens, "
                     f"GPT of {p.n_layer} layer(s) x {p.n_head} heads x {p.n_embd} wide, lr {r['lr']:g}, "
                     f"dropout {_dropout(p):g}, validation every {p.eval_interval} steps")
    lines.append("  default: gpu on CUDA, else cpu (tiny: seconds, to try the command)")
    return "\n".join(lines)


def build_parser(prog: str = "lmcourse train") -> argparse.ArgumentParser:
    from .nn.gpt import GPTConfig
    from .runtime import PROFILES
    from .train import TrainConfig

    p = argparse.ArgumentParser(prog=prog, description="Train notebook 05's GPT on the course corpus or a text "
                                "file, on one process or under torchrun on many (data-parallel).",
                                argument_default=argparse.SUPPRESS, epilog=_profiles_text(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = _defaults()
    p.add_argument("model", choices=MODELS, help="the model to train: gpt (notebook 05's reference GPT)")
    g = p.add_argument_group("run")
    g.add_argument("--profile", choices=PROFILES, help="sizes to start from (default: gpu on CUDA, else cpu)")
    g.add_argument("--text", metavar="FILE", help="train on this UTF-8 text file, split by position "
                   "(default: the course's Shakespeare, split by play)")
    g.add_argument("--val_fraction", type=float, help="share of --text held out for validation (default 0.1)")
    g.add_argument("--checkpoint_path", metavar="FILE", help="checkpoint to write (and --resume from); default: "
                   "checkpoints/train_gpt_<profile>.pt in the course cache")
    g.add_argument("--resume", action="store_true", help="continue from --checkpoint_path if it exists")
    g.add_argument("--overwrite", action="store_true", help="replace --checkpoint_path if it exists (without "
                   "--resume or --overwrite, an existing checkpoint stops the run)")
    g.add_argument("--stop_after", type=int, metavar="STEP", help="stop after this step as if interrupted (the "
                   "schedule still follows --steps); --resume continues")
    g.add_argument("--micro_batch_size", type=int, help="windows per forward pass; batch_size / micro_batch_size "
                   "micro-batches make a step (default: batch_size / number of processes)")
    g.add_argument("--device", help="cpu, cuda, mps (default: CUDA, then MPS, then CPU; under torchrun: "
                   "GPU LOCAL_RANK, else CPU)")
    g.add_argument("--threads", type=int, help="CPU threads per process (default: as the notebooks, "
                   "LMCOURSE_THREADS or 1 on the CPU)")
    g.add_argument("--compile", action=argparse.BooleanOptionalAction, help="torch.compile the model "
                   "(default: on with CUDA)")
    g.add_argument("--amp", action=argparse.BooleanOptionalAction, help="mixed precision on CUDA: bf16, "
                   "fp16 + GradScaler before compute capability 8.0 (default: on)")
    g.add_argument("--progress", action=argparse.BooleanOptionalAction, help="progress bar (default: in a "
                   "terminal; without one, a line per validation)")
    g.add_argument("--sample_tokens", type=int, help="characters sampled at the end (default 300, tiny 40; "
                   "0: none)")
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
    return p


def parse_args(argv: list[str] | None, prog: str = "lmcourse train") -> argparse.Namespace:
    """The flags given (absent ones are absent), or :class:`TrainInputError` naming a flag not known."""
    p = build_parser(prog)
    args, unknown = p.parse_known_args(argv)
    if unknown:
        known = [s for a in p._actions for s in a.option_strings]
        flag = next((u for u in unknown if u.startswith("-")), unknown[0])
        close = difflib.get_close_matches(flag.split("=")[0], known, n=2, cutoff=0.75)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise TrainInputError(f"unknown flag {flag}{hint}; {prog} gpt --help lists the flags"
                              if flag.startswith("-") else f"unexpected argument {flag!r}")
    return args


def _task_args(p: argparse.ArgumentParser, argv: list[str] | None, prog: str, task: str, table: dict):
    """A task's flags (``seq2seq``, ``mlm``), its device and profile, and its sizes: the profile's
    row of ``table`` with the flags given on top. :class:`TrainInputError` for an unknown flag."""
    import torch

    from .runtime import get_profile, pick_device

    args, unknown = p.parse_known_args(argv)
    if unknown:
        raise TrainInputError(f"unknown flag {unknown[0]}; {prog} {task} --help lists the flags")
    a = vars(args)
    device = torch.device(a["device"]) if "device" in a else pick_device()
    profile = get_profile(a.get("profile", "gpu" if device.type == "cuda" else "cpu"))
    return a, device, profile, {**table[profile.name], **{k: a[k] for k in table["cpu"] if k in a}}


# --- the run ---------------------------------------------------------------------------------------

def _recipe(profile, steps: int) -> dict:
    """Notebook 05's recipe at this profile's size."""
    gpu = profile.name == "gpu"
    return dict(lr=1e-3 if gpu else 5e-3, betas=(0.9, 0.99), weight_decay=0.1, warmup_steps=max(1, steps // 20),
                min_lr_ratio=0.1, grad_clip=1.0)


def _dropout(profile) -> float:
    return 0.2 if profile.name == "gpu" else 0.0


def _say(env, *a, **k) -> None:
    if env.is_main:
        print(*a, **k, flush=True)


def _wall(seconds: float) -> str:
    m, s = divmod(seconds, 60)
    h, m = divmod(int(m), 60)
    return f"{h}h{m:02d}m{s:02.0f}s" if h else (f"{m}m{s:04.1f}s" if m else f"{s:.1f} s")


def _check_same_model(path: Path, want_config: dict, vocabulary: list[str]):
    def check(state: dict) -> None:
        have = state.get("config")
        if have is None or "samplers" not in state:
            raise TrainInputError(f"{path} is not a checkpoint of `lmcourse train` (no model config or sampler "
                                  "states); pass another --checkpoint_path")
        diff = [k for k in sorted(set(have) | set(want_config)) if have.get(k) != want_config.get(k)]
        if diff:
            theirs = ", ".join(f"{k}={have.get(k)!r}" for k in diff)
            ours = ", ".join(f"{k}={want_config.get(k)!r}" for k in diff)
            raise TrainInputError(f"the checkpoint {path} holds a GPT with {theirs}, but this run asks for {ours}: "
                                  "pass the checkpoint's sizes, or a new --checkpoint_path (or leave out --resume)")
        if state.get("vocabulary") is not None and list(state["vocabulary"]) != list(vocabulary):
            raise TrainInputError(f"the checkpoint {path} was trained with another vocabulary (another text): "
                                  "pass the same --text, or a new --checkpoint_path")
    return check


def _plot_curve(hist, ckpt: Path, profile: str) -> Path:
    """The run's loss curves (lmcourse.plot.loss_curves, as the notebooks draw them) as a PNG beside the
    checkpoint: ``run.pt`` -> ``run.png``."""
    from matplotlib.figure import Figure  # drawn off-screen, with no pyplot backend involved

    from .plot import loss_curves

    fig = Figure(figsize=(7, 4.5))
    loss_curves({"GPT": hist}, ax=fig.subplots(), title=f"lmcourse train gpt ({profile}), steps 1-{hist.steps[-1]}")
    out = ckpt.with_suffix(".png")
    fig.savefig(out, dpi=100, bbox_inches="tight")
    return out


def run(args: argparse.Namespace) -> int:
    import torch

    from . import distributed as D
    from .data import data_dir, encode_split, load_corpus, load_shakespeare
    from .nn.gpt import GPT, GPTConfig, generate
    from .runtime import choose_precision, cpu_threads, get_profile, pick_device
    from .tokenizers import CharTokenizer
    from .train import TrainConfig, load_checkpoint, train, want_progress

    a = vars(args)
    prof_name = a.get("profile")
    if prof_name is None:
        want = a.get("device")
        prof_name = "gpu" if (torch.device(want).type if want else pick_device().type) == "cuda" else "cpu"
    profile = get_profile(prof_name)

    # everything the user gave is checked before any process group is joined
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

    steps = a.get("steps", profile.train_steps)
    train_fields = {f.name for f in fields(TrainConfig)}
    given = {k: v for k, v in a.items() if k in train_fields}
    overrides = {**_recipe(profile, steps), **given}
    ckpt = Path(a["checkpoint_path"]) if "checkpoint_path" in a else (
        data_dir() / "checkpoints" / f"train_gpt_{profile.name}.pt")
    overrides.update(checkpoint_path=str(ckpt), quiet=True)
    try:
        cfg = TrainConfig.from_profile(profile, **overrides)
        gpt_fields = {f.name for f in fields(GPTConfig)}
        gcfg = dict(vocab_size=tok.vocab_size, block_size=cfg.block_size, n_layer=profile.n_layer,
                    n_head=profile.n_head, n_embd=profile.n_embd, dropout=_dropout(profile))
        gcfg.update({k: v for k, v in a.items() if k in gpt_fields and k != "block_size"})
        if gcfg["vocab_size"] < tok.vocab_size:
            raise ValueError(f"--vocab_size {gcfg['vocab_size']} is smaller than the text's "
                             f"{tok.vocab_size} characters")
        config = GPTConfig(**gcfg)
    except ValueError as exc:
        raise TrainInputError(str(exc)) from exc
    for split, ids in (("training", train_ids), ("validation", val_ids)):
        if ids is not None and ids.numel() <= cfg.block_size:
            raise TrainInputError(f"--block_size {cfg.block_size} is larger than the text: the {split} split of "
                                  f"{source} has {ids.numel()} characters, and a window needs block_size + 1 = "
                                  f"{cfg.block_size + 1}; use a smaller --block_size or a longer text")
    stop_after = a.get("stop_after")
    if stop_after is not None and stop_after < 1:
        raise TrainInputError(f"--stop_after {stop_after} must be a positive step")
    check = _check_same_model(ckpt, asdict(config), list(tok.itos))
    if ckpt.exists() and not (cfg.resume or a.get("overwrite")):
        raise TrainInputError(f"the checkpoint {ckpt} exists: pass --resume to continue it, --overwrite to "
                              "replace it, or another --checkpoint_path")
    if cfg.resume and ckpt.exists():
        check(load_checkpoint(ckpt))  # fail here, before any process joins a group

    env = D.setup(a.get("device"))
    try:
        device = env.device
        threads = a.get("threads") or cpu_threads(device)
        if threads:
            torch.set_num_threads(threads)
        compile_ = a.get("compile", device.type == "cuda")
        cfg.compile = compile_
        cfg.device = str(device)
        if device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True  # TF32 for any float32 matrix product left
            torch.backends.cudnn.allow_tf32 = True
        torch.manual_seed(cfg.seed)
        model = GPT(config)
        n_params = model.num_params()
        n_matmul = n_params - model.wpe.weight.numel()  # every weight but the position table takes part in a product
        _say(env, f"lmcourse train gpt: {profile.name} profile, {source}")
        _say(env, f"  {config}")
        _say(env, f"  {n_params:,} parameters; {train_ids.numel():,} training and "
                  f"{0 if val_ids is None else val_ids.numel():,} validation characters; {tok.vocab_size} in the "
                  "vocabulary")
        amp = str(choose_precision(device)) if cfg.amp and device.type == "cuda" else "off"  # bf16, or fp16 on a T4
        _say(env, f"  {cfg.steps} steps of {cfg.batch_size} x {cfg.block_size} tokens, lr {cfg.lr:g}, "
                  f"{env.world_size} process(es) on {device.type}"
                  f"{f' ({env.backend})' if env.backend else ''}, {torch.get_num_threads()} thread(s) each, "
                  f"compile {'on' if compile_ else 'off'}, amp {amp}")
        _say(env, f"  checkpoint {ckpt}{' (resuming)' if cfg.resume and ckpt.exists() else ''}")
        extra = {"vocabulary": list(tok.itos), "profile": profile.name, "text": source}
        lines = not want_progress(cfg)  # no progress bar (no terminal): a line per validation instead

        def report(step: int, h) -> None:
            if lines:
                trained = f"train loss {h.train_loss[-1]:.4f}, " if h.train_loss and h.steps[-1] == step else ""
                print(f"step {step}/{cfg.steps}: {trained}val loss {h.val_loss[-1]:.4f}", flush=True)

        hist = train(model, train_ids, val_ids, cfg, stop_after=stop_after, env=env,
                     micro_batch_size=a.get("micro_batch_size"), checkpoint_extra=extra, check_checkpoint=check,
                     on_eval=report)
        if env.is_main and hist.steps:
            _say(env, f"  loss curve {_plot_curve(hist, ckpt, profile.name)}")
        n_samples = a.get("sample_tokens", 40 if profile.name == "tiny" else 300)
        if env.is_main and n_samples > 0:
            model.eval()
            gen = torch.Generator(device=device).manual_seed(cfg.seed)
            prompt = torch.tensor([tok.encode("\n")], device=device)
            out = generate(model, prompt, n_samples, temperature=a.get("temperature", 1.0), generator=gen)
            print("--- sample ---\n" + tok.decode(out[0].tolist()).strip() + "\n--------------", flush=True)
        stale = hist.val_steps and hist.steps and hist.val_steps[-1] != hist.steps[-1]
        when = f", from step {hist.val_steps[-1]}: not re-evaluated since" if stale else ""
        line = (f"done: {hist.steps[-1] if hist.steps else 0}/{cfg.steps} steps, "
                f"val loss {hist.final_val_loss:.4f} ({hist.final_val_loss / math.log(2):.3f} bits/char{when}), "
                f"{hist.tokens_per_sec:,.0f} tokens/s, wall {_wall(hist.elapsed)}, "
                f"{env.world_size} x {device.type}")
        peak = None
        if "peak_tflops" in a:
            peak = (a["peak_tflops"], "given")
        elif device.type == "cuda":
            peak = peak_tflops(torch.cuda.get_device_name(device))
        if peak is not None:
            u = mfu(hist.tokens_per_sec, n_matmul, peak[0] * 1e12 * env.world_size)
            line += f", MFU {u:.1%} (6 N FLOPs/token over {env.world_size} x {peak[0]:g} TFLOP/s, {peak[1]})"
        elif device.type == "cuda":
            line += ", MFU unknown (GPU not in the peak table: pass --peak_tflops)"
        if hist.best_step is not None and hist.best_step != hist.val_steps[-1]:  # --keep_best
            line += (f"; the sample used the weights of step {hist.best_step} (val loss {hist.best_val_loss:.4f}, the "
                     "lowest; the checkpoint's 'best', its 'model' is the last step's)")
        if hist.interrupted:
            line += "; stopped early, --resume continues"
        _say(env, line)
        return 0
    finally:
        D.teardown(env)


# --- lmcourse train seq2seq: notebook 09's encoder-decoder on the generated date task -----------------

# sizes by profile, as notebook 09 trains them: model width, layers per stack, heads, steps, batch, pairs
SEQ2SEQ_SIZES = {"tiny": dict(n_embd=32, n_layer=1, n_head=2, steps=30, batch_size=16, n_train=2_000, n_test=100),
                 "cpu": dict(n_embd=64, n_layer=2, n_head=4, steps=1_500, batch_size=64, n_train=40_000,
                             n_test=1_000),
                 "gpu": dict(n_embd=128, n_layer=3, n_head=4, steps=4_000, batch_size=128, n_train=100_000,
                             n_test=3_000)}


def seq2seq_parser(prog: str = "lmcourse train") -> argparse.ArgumentParser:
    from .runtime import PROFILES

    p = argparse.ArgumentParser(prog=f"{prog} seq2seq", argument_default=argparse.SUPPRESS,
                                description="Train notebook 09's encoder-decoder (lmcourse.nn.seq2seq) on the "
                                "generated date task (lmcourse.dates) with the course's one loop, then measure "
                                "exact match on the test dates. Sizes by profile: " + "; ".join(
                                    f"{k}: " + ", ".join(f"{f} {v}" for f, v in d.items())
                                    for k, d in SEQ2SEQ_SIZES.items()))
    p.add_argument("--profile", choices=PROFILES, help="sizes to start from (default: gpu on CUDA, else cpu)")
    for name in ("n_embd", "n_layer", "n_head", "steps", "batch_size", "n_train", "n_test"):
        p.add_argument(f"--{name}", type=int, help=f"override the profile's {name} (n_layer: each stack)")
    p.add_argument("--lr", type=float, help="peak learning rate (default 3e-3)")
    p.add_argument("--seed", type=int, help="seed of the data, the initialisation and the batches (default 0)")
    p.add_argument("--device", help="cpu, cuda, mps (default: CUDA, then MPS, then CPU)")
    p.add_argument("--threads", type=int, help="CPU threads (default: LMCOURSE_THREADS or 1 on the CPU)")
    p.add_argument("--checkpoint_path", metavar="FILE", help="default: checkpoints/train_seq2seq_<profile>.pt in "
                   "the course cache")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint_path if it exists")
    p.add_argument("--overwrite", action="store_true", help="replace --checkpoint_path if it exists")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, help="progress bar (default: in a "
                   "terminal)")
    return p


def run_seq2seq(argv: list[str], prog: str = "lmcourse train") -> int:
    """Train the encoder-decoder with :func:`lmcourse.train.train` (``batch_fn=dates.sample_batch``,
    ``loss_fn=dates.padded_cross_entropy``), print the validation loss, a few translations and the
    exact match of greedy decoding on the test dates."""
    import torch

    from . import dates
    from .data import data_dir
    from .nn.seq2seq import EncoderDecoder, Seq2SeqConfig, exact_match, greedy_decode
    from .runtime import cpu_threads
    from .train import TrainConfig, train

    a, device, profile, sizes = _task_args(seq2seq_parser(prog), argv, prog, "seq2seq", SEQ2SEQ_SIZES)
    bad = [f"--{k} {v}" for k, v in sizes.items() if v < 1]
    if bad:
        raise TrainInputError(f"{', '.join(bad)}: every size must be at least 1")
    seed = a.get("seed", 0)
    ckpt = Path(a["checkpoint_path"]) if "checkpoint_path" in a else (
        data_dir() / "checkpoints" / f"train_seq2seq_{profile.name}.pt")
    if ckpt.exists() and not (a.get("resume") or a.get("overwrite")):
        raise TrainInputError(f"the checkpoint {ckpt} exists: pass --resume to continue it, --overwrite to "
                              "replace it, or another --checkpoint_path")
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    threads = a.get("threads") or cpu_threads(device)
    if threads:
        torch.set_num_threads(threads)
    vocab = dates.CharVocab()
    splits = dates.make_splits(sizes["n_train"], 500, sizes["n_test"], seed=seed)
    try:
        config = Seq2SeqConfig(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), src_block_size=48,
                               tgt_block_size=12, n_enc_layer=sizes["n_layer"], n_dec_layer=sizes["n_layer"],
                               n_head=sizes["n_head"], n_embd=sizes["n_embd"], pad_id=dates.PAD_ID)
    except ValueError as exc:
        raise TrainInputError(str(exc)) from exc
    cfg = TrainConfig.from_profile(profile, steps=sizes["steps"], batch_size=sizes["batch_size"], block_size=48,
                                   lr=a.get("lr", 3e-3), warmup_steps=max(1, sizes["steps"] // 30),
                                   weight_decay=0.01, eval_interval=max(1, sizes["steps"] // 6), eval_batches=4,
                                   seed=seed, device=str(device), checkpoint_path=str(ckpt),
                                   resume=bool(a.get("resume")), quiet=True, progress=a.get("progress"))
    torch.manual_seed(seed)
    model = EncoderDecoder(config)
    print(f"{prog} seq2seq: {profile.name} profile, {model.num_params():,} parameters "
          f"({config.n_enc_layer}+{config.n_dec_layer} layers x {config.n_embd} wide, {config.n_head} heads), "
          f"{cfg.steps} steps of {cfg.batch_size} pairs, {len(splits['train']):,} training pairs, on "
          f"{device.type}; checkpoint {ckpt}", flush=True)
    hist = train(model, splits["train"], splits["val"], cfg, batch_fn=dates.sample_batch,
                 loss_fn=dates.padded_cross_entropy,
                 checkpoint_extra={"vocabulary": vocab.itos, "task": "lmcourse.dates"})
    model.eval()
    sources, targets = [s for s, _ in splits["test"]], [t for _, t in splits["test"]]
    outputs = []
    for i in range(0, len(sources), 500):
        src = dates.make_batch([(s, "0") for s in sources[i:i + 500]], vocab, device).src
        outputs += [vocab.decode(r) for r in greedy_decode(model, src, dates.BOS_ID, dates.EOS_ID, 11).cpu()]
    for s, o, t in list(zip(sources, outputs, targets))[:5]:
        print(f"  {s:<36} -> {o:<12} {'ok' if o == t else 'expected ' + t}")
    print(f"done: {hist.steps[-1] if hist.steps else 0}/{cfg.steps} steps, val loss {hist.final_val_loss:.4f}, "
          f"exact match {exact_match(outputs, targets):.1%} on {len(targets)} test dates, "
          f"wall {_wall(hist.elapsed)}", flush=True)
    return 0


# --- lmcourse train mlm: notebook 06's masked LM on the course corpus, word by word ----------------------

# sizes by profile, as notebook 06 trains them (its SIZES; tests/test_train_cli.py checks they agree): words
# kept in the vocabulary, training characters (None: all), window, steps, batch, model, validations per run
MLM_SIZES = {"tiny": dict(vocab=600, chars=300_000, block=32, steps=30, batch_size=8, n_embd=32, n_layer=1,
                          n_head=2, evals=4),
             "cpu": dict(vocab=2000, chars=None, block=32, steps=800, batch_size=32, n_embd=64, n_layer=2, n_head=4,
                         evals=4),
             "gpu": dict(vocab=8000, chars=None, block=128, steps=5_000, batch_size=64, n_embd=256, n_layer=4,
                         n_head=8, evals=20)}
MLM_BLANKS = {"tiny": 256, "cpu": 2000, "gpu": 4000}  # validation blanks scored at the end, as the notebook
MASK_TOKEN = "[MASK]"


def mlm_parser(prog: str = "lmcourse train") -> argparse.ArgumentParser:
    from .runtime import PROFILES

    sizes = "; ".join(f"{k}: " + ", ".join(f"{f} {v}" for f, v in d.items()) for k, d in MLM_SIZES.items())
    p = argparse.ArgumentParser(
        prog=f"{prog} mlm", argument_default=argparse.SUPPRESS,
        description="Train notebook 06's masked language model (lmcourse.nn.mlm.MaskedLM, BERT's 80/10/10 "
        "masking of 15 % of the words) on the course corpus, one token per word, split by play, with the "
        "course's one loop; then score it on blanks of the validation plays (top-1 and top-5, against guessing "
        "the most frequent words), as the notebook does. Sizes by profile (the notebook's): " + sizes + ".",
        epilog="The notebook's cpu run (800 steps of 32 windows) ends on the plateau where a masked LM predicts "
        "the word frequencies; in the runs the notebook describes, the validation loss dropped after 120,000 to "
        "480,000 windows: try --profile cpu --steps 20000, or --batch_size 128 --steps 10000.")
    p.add_argument("--profile", choices=PROFILES, help="sizes to start from (default: gpu on CUDA, else cpu)")
    for name, what in (("steps", "optimisation steps"), ("batch_size", "windows per step"),
                       ("block", "words per window"), ("vocab", "words kept in the vocabulary (the rest: <unk>)"),
                       ("n_embd", "model width"), ("n_layer", "blocks"), ("n_head", "attention heads"),
                       ("evals", "validations in the run (every steps // evals steps)"),
                       ("n_blanks", "validation blanks scored at the end")):
        p.add_argument(f"--{name}", type=int, help=f"{what} (default: the profile's)")
    p.add_argument("--lr", type=float, help="peak learning rate (default 3e-3, gpu 1e-3)")
    p.add_argument("--dropout", type=float, help="dropout after the embeddings and in the blocks (default 0)")
    p.add_argument("--causal", action="store_true", help="train the same network left to right instead (the "
                   "notebook's opponent: next-word batches, blanks scored from the word before)")
    p.add_argument("--keep_best", action=argparse.BooleanOptionalAction, help="end with the weights of the "
                   "lowest validation loss, as the notebook does (default: on)")
    p.add_argument("--seed", type=int, help="seed of the initialisation, the batches and the masks (default 0)")
    p.add_argument("--stop_after", type=int, metavar="STEP", help="stop after this step as if interrupted; "
                   "--resume continues")
    p.add_argument("--device", help="cpu, cuda, mps (default: CUDA, then MPS, then CPU)")
    p.add_argument("--threads", type=int, help="CPU threads (default: LMCOURSE_THREADS or 1 on the CPU)")
    p.add_argument("--compile", action=argparse.BooleanOptionalAction, help="torch.compile (default: on with CUDA)")
    p.add_argument("--checkpoint_path", metavar="FILE", help="default: checkpoints/train_mlm_<profile>.pt (with "
                   "--causal train_mlm_causal_<profile>.pt) in the course cache; lmcourse.nn.load_mlm reads the last "
                   "step's weights from it, the kept ones (--keep_best) are under its key 'best'")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint_path if it exists")
    p.add_argument("--overwrite", action="store_true", help="replace --checkpoint_path if it exists")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, help="progress bar (default: in a "
                   "terminal; without one, a line per validation)")
    return p


def _check_same_mlm(path: Path, want_config: dict, vocabulary: list[str]):
    def check(state: dict) -> None:
        have = state.get("config") or {}
        diff = [k for k in sorted(set(have) | set(want_config)) if have.get(k) != want_config.get(k)]
        if diff:
            theirs = ", ".join(f"{k}={have.get(k)!r}" for k in diff)
            ours = ", ".join(f"{k}={want_config.get(k)!r}" for k in diff)
            raise TrainInputError(f"the checkpoint {path} holds a masked LM with {theirs}, but this run asks for "
                                  f"{ours}: pass the checkpoint's sizes, or a new --checkpoint_path")
        if list(state.get("vocabulary") or []) != list(vocabulary):
            raise TrainInputError(f"the checkpoint {path} was trained with another vocabulary (--vocab or the "
                                  "profile's text differ): pass the same, or a new --checkpoint_path")
    return check


def _blanks(ids, n: int, block: int, special_ids: list[int], seed: int):
    """Notebook 06's blanks: ``n`` windows of ``ids`` and one position in each holding an ordinary word
    (never the first, so a left-to-right model has a word before it): ``(windows (n, T), positions (n,))``."""
    import torch

    from .data import get_batch

    g = torch.Generator().manual_seed(seed)
    x, _ = get_batch(ids, n, block, g)
    ordinary = ~torch.isin(x, torch.tensor(special_ids))
    ordinary[:, 0] = False
    return x, torch.multinomial(ordinary.double(), 1, generator=g)[:, 0]


def _blank_scores(model, x, pos, mask_id: int, causal: bool, device) -> dict[int, float]:
    """Top-1 and top-5 accuracy at the blanks: the word hidden behind [MASK], or predicted from the word
    before it when ``causal``."""
    import torch

    from .train import model_logits

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


def run_mlm(argv: list[str], prog: str = "lmcourse train") -> int:
    """Train notebook 06's masked LM (or, ``--causal``, the same network left to right) with
    :func:`lmcourse.train.train`, then print its fill-in-the-blank accuracy on the validation plays."""
    import torch

    from .data import data_dir, encode_text, get_batch, load_shakespeare
    from .nn.mlm import MaskedLM, MLMConfig, mask_tokens
    from .runtime import cpu_threads
    from .tokenizers import SPECIALS, WordTokenizer
    from .train import TrainConfig, load_checkpoint, train, want_progress

    a, device, profile, sizes = _task_args(mlm_parser(prog), argv, prog, "mlm", MLM_SIZES)
    n_blanks = a.get("n_blanks", MLM_BLANKS[profile.name])
    bad = [f"--{k} {v}" for k, v in {**sizes, "n_blanks": n_blanks}.items() if v is not None and v < 1]
    if bad:
        raise TrainInputError(f"{', '.join(bad)}: every size must be at least 1")
    if "stop_after" in a and a["stop_after"] < 1:
        raise TrainInputError(f"--stop_after {a['stop_after']} must be a positive step")
    if sizes["n_embd"] % sizes["n_head"]:
        raise TrainInputError(f"--n_embd {sizes['n_embd']} must be divisible by --n_head {sizes['n_head']} (each head "
                              "gets n_embd / n_head dimensions)")
    causal, seed = bool(a.get("causal")), a.get("seed", 0)
    ckpt = Path(a["checkpoint_path"]) if "checkpoint_path" in a else (
        data_dir() / "checkpoints" / f"train_mlm{'_causal' if causal else ''}_{profile.name}.pt")
    if ckpt.exists() and not (a.get("resume") or a.get("overwrite")):
        raise TrainInputError(f"the checkpoint {ckpt} exists: pass --resume to continue it, --overwrite to "
                              "replace it, or another --checkpoint_path")
    threads = a.get("threads") or cpu_threads(device)
    if threads:
        torch.set_num_threads(threads)

    corpus = load_shakespeare()  # CorpusUnavailable (no network, no cache) says what to do
    train_text, val_text = corpus.text("train"), corpus.text("val")
    if sizes["chars"] is not None:  # tiny: the first part of the text, as the notebook
        train_text, val_text = train_text[:sizes["chars"]], val_text[:sizes["chars"] // 5]
    tok = WordTokenizer.from_text(train_text, max_size=sizes["vocab"], specials=list(SPECIALS) + [MASK_TOKEN])
    train_ids, val_ids = encode_text(train_text, tok), encode_text(val_text, tok)
    V, mask_id = tok.vocab_size, tok.stoi[MASK_TOKEN]
    special_ids = [tok.stoi[s] for s in SPECIALS] + [mask_id]
    if min(len(train_ids), len(val_ids)) <= sizes["block"]:
        raise TrainInputError(f"--block {sizes['block']} is longer than the text ({len(val_ids):,} validation "
                              "words); use a smaller --block")
    try:
        config = MLMConfig(vocab_size=V, block_size=sizes["block"], n_layer=sizes["n_layer"],
                           n_head=sizes["n_head"], n_embd=sizes["n_embd"], dropout=a.get("dropout", 0.0),
                           causal=causal)
        torch.manual_seed(seed)
        model = MaskedLM(config)
    except (ValueError, AssertionError) as exc:
        raise TrainInputError(str(exc)) from exc

    def mlm_batch(tokens, batch_size, block_size, generator, dev):
        x, _ = get_batch(tokens, batch_size, block_size, generator)
        inputs, labels = mask_tokens(x, mask_id, V, special_ids, p=0.15, generator=generator)
        return inputs.to(dev), labels.to(dev)

    steps = sizes["steps"]
    cfg = TrainConfig.from_profile(profile, steps=steps, batch_size=sizes["batch_size"], block_size=sizes["block"],
                                   lr=a.get("lr", 1e-3 if profile.name == "gpu" else 3e-3),
                                   warmup_steps=max(1, steps // 20), weight_decay=0.01,
                                   eval_interval=max(1, steps // sizes["evals"]), seed=seed, device=str(device),
                                   keep_best=a.get("keep_best", True), compile=a.get("compile", device.type == "cuda"),
                                   checkpoint_path=str(ckpt), resume=bool(a.get("resume")), quiet=True,
                                   progress=a.get("progress"))
    check = _check_same_mlm(ckpt, asdict(config), list(tok.itos))
    if cfg.resume and ckpt.exists():
        check(load_checkpoint(ckpt))  # before any training: a mismatch is one line
    what = "left to right (causal)" if causal else "masked LM"
    print(f"{prog} mlm: {what}, {profile.name} profile, {sum(q.numel() for q in model.parameters()):,} "
          f"parameters ({config.n_layer} layers x {config.n_embd} wide, {config.n_head} heads), {V:,} words in the "
          f"vocabulary, {len(train_ids):,} training and {len(val_ids):,} validation words; {steps} steps of "
          f"{cfg.batch_size} windows of {cfg.block_size} words on {device.type}; checkpoint {ckpt}"
          f"{' (resuming)' if cfg.resume and ckpt.exists() else ''}", flush=True)
    lines = not want_progress(cfg)

    def report(step: int, h) -> None:
        if lines:
            trained = f"train loss {h.train_loss[-1]:.4f}, " if h.train_loss and h.steps[-1] == step else ""
            print(f"step {step}/{steps}: {trained}val loss {h.val_loss[-1]:.4f}", flush=True)

    hist = train(model, train_ids, val_ids, cfg, stop_after=a.get("stop_after"),
                 batch_fn=None if causal else mlm_batch, on_eval=report, check_checkpoint=check,
                 checkpoint_extra={"vocabulary": list(tok.itos), "profile": profile.name, "task": "mlm"})
    x, pos = _blanks(val_ids, n_blanks, sizes["block"], special_ids, seed + 6)
    scores = _blank_scores(model, x, pos, mask_id, causal, device)
    freq = torch.bincount(train_ids, minlength=V).double()  # the baseline: the most frequent words of training
    freq[special_ids] = 0
    true = x[torch.arange(n_blanks), pos]
    base = {k: float(torch.isin(true, freq.topk(k).indices).double().mean()) for k in (1, 5)}
    kept = f" (weights of step {hist.best_step}, the lowest)" if hist.best_step is not None else ""
    line = (f"done: {hist.steps[-1] if hist.steps else 0}/{steps} steps, val loss "
            f"{hist.best_val_loss if hist.best_step is not None else hist.final_val_loss:.4f}{kept}, "
            f"top-1 {scores[1]:.1%}, top-5 {scores[5]:.1%} on {n_blanks:,} validation blanks (most frequent "
            f"words: {base[1]:.1%}, {base[5]:.1%}), wall {_wall(hist.elapsed)}")
    if hist.interrupted:
        line += "; stopped early, --resume continues"
    print(line, flush=True)
    return 0


def main(argv: list[str] | None = None, prog: str = "lmcourse train") -> int:
    """``lmcourse train gpt [flags]``: 0 when the run finished, 2 on bad input (one line on stderr)."""
    from .data import CorpusUnavailable
    from .train import BatchSplitError, CheckpointError

    t0 = time.perf_counter()
    try:
        argv = sys.argv[1:] if argv is None else argv
        if argv[:1] == ["seq2seq"]:
            return run_seq2seq(argv[1:], prog)
        if argv[:1] == ["mlm"]:
            return run_mlm(argv[1:], prog)
        return run(parse_args(argv, prog))
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
