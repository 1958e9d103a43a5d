"""``lmcourse train gpt``: notebook 05's GPT on the course corpus or a text file, on one process or many."""

from __future__ import annotations

import argparse
import inspect
import math
import os
import re
from dataclasses import asdict, fields
from pathlib import Path

from .task import Job, Task, TrainInputError, by_profile, done_text, mfu, peak_tflops, recipe_with, say, wall_text

__all__ = ["TASK"]


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


def _defaults() -> dict[str, str]:
    """Each flag's default as --help shows it: notebook 05's recipe, by profile."""
    from ...nn.gpt import GPTConfig
    from ...recipes import gpt
    from ...runtime import PROFILES

    out: dict[str, dict] = {}
    for name in PROFILES:
        r = gpt.recipe(name)
        values = {f.name: f.default for f in fields(GPTConfig)}
        values.update(asdict(r.train_config()), **r.model_sizes(), sample_tokens=r.sample_chars)
        values["betas"] = " ".join(f"{b:g}" for b in values["betas"])
        for k, v in values.items():
            out.setdefault(k, {})[name] = v
    shown = {k: by_profile(v) for k, v in out.items()}
    shown["warmup_steps"] = f"5 %% of --steps: {shown['warmup_steps']}"
    return shown


def _description() -> str:
    return ("Train notebook 05's GPT on the course corpus or a text file, on one process or under torchrun on many "
            "(data-parallel), with the notebook's recipe (lmcourse.recipes.gpt).")


def _epilog() -> str:
    from ...recipes import gpt
    from ...runtime import PROFILES

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


def _flags(p: argparse.ArgumentParser, g) -> None:
    from ...nn.gpt import GPTConfig
    from ...train import TrainConfig

    defaults = _defaults()
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


def _prepare(a: dict, profile: str, prog: str) -> Job:
    import torch

    from ...data import encode_split, load_corpus, load_shakespeare
    from ...nn.gpt import GPT, GPTConfig
    from ...recipes import gpt
    from ...tokenizers import CharTokenizer
    from ...train import TrainConfig

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

    r = recipe_with(gpt.recipe(profile), a)
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

    from ...plot import loss_curves

    fig = Figure(figsize=(7, 4.5))
    loss_curves({"GPT": hist}, ax=fig.subplots(), title=f"lmcourse train gpt ({profile}), steps 1-{hist.steps[-1]}")
    out = ckpt.with_suffix(".png")
    fig.savefig(out, dpi=100, bbox_inches="tight")
    return out


def _summary(job: Job, hist, env, a: dict) -> str:
    import torch

    from ...nn.sampling import generate

    cfg, model, tok, device = job.cfg, job.model, job.own["tok"], env.device
    ckpt = Path(cfg.checkpoint_path)
    if env.is_main and hist.steps:
        say(env, f"  loss curve {_plot_curve(hist, ckpt, job.extra['profile'])}")
    n_samples = a.get("sample_tokens", job.own["sample_chars"])
    if env.is_main and n_samples > 0:
        model.eval()
        gen = torch.Generator(device=device).manual_seed(cfg.seed)
        prompt = torch.tensor([tok.encode("\n")], device=device)
        out = generate(model, prompt, n_samples, temperature=a.get("temperature", 1.0), generator=gen)
        print("--- sample ---\n" + tok.decode(out[0].tolist()).strip() + "\n--------------", flush=True)
    stale = hist.val_steps and hist.steps and hist.val_steps[-1] != hist.steps[-1]
    when = f", from step {hist.val_steps[-1]}: not re-evaluated since" if stale else ""
    line = (f"{done_text(hist, cfg.steps)}, "
            f"val loss {hist.final_val_loss:.4f} ({hist.final_val_loss / math.log(2):.3f} bits/char{when}), "
            f"{hist.tokens_per_sec:,.0f} tokens/s, {wall_text(hist, job)}, "
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


def _checkpoint_stem(a: dict) -> str:
    return "train_gpt"


TASK = Task("gpt", "notebook 05's GPT on the course's Shakespeare or any text file, on one process or under "
            "torchrun on many", _description, _flags, _prepare, _summary, _checkpoint_stem, epilog=_epilog,
            data_parallel=True)
