"""Time to a validation loss: the course's training loop against nanoGPT's own ``train.py``, side by side.

    python bench/bench_nanogpt.py --nanogpt ~/src/nanoGPT            # on a CUDA GPU: both, then the ratio
    python bench/bench_nanogpt.py --nanogpt ~/src/nanoGPT --fast     # the course side with its fast paths
    python bench/bench_nanogpt.py --baby                             # CPU-sized, the course side alone

Nothing of nanoGPT is in this repository: ``--nanogpt`` is a checkout the user gives (github.com/karpathy/
nanoGPT), run as it is, its ``train.py`` driven by its own ``--key=value`` flags. Without one, the peer's
row says so and only the course side runs.

The same on both sides:

* **text and split**: ``--text FILE``, else nanoGPT's ``data/shakespeare_char/input.txt`` when the
  checkout has it (Tiny Shakespeare, which its ``prepare.py`` downloads), each cut as that script cuts
  it, the first 90 % to train and the last 10 % to validate; else the course's plays with the course's
  split (3 plays to validate: notebook 05's data). Characters are the ids (the vocabulary: every
  character of both parts, sorted). This bench writes ``train.bin``, ``val.bin`` and ``meta.pkl`` in
  nanoGPT's layout into a scratch folder that both sides read;
* **model and schedule**: nanoGPT's ``config/train_shakespeare_char.py`` (6 layers x 6 heads x 384,
  256 positions, batch 64, dropout 0.2, no biases, AdamW lr 1e-3 to 1e-4 with beta2 0.99 and weight
  decay 0.1, 100 warm-up steps, clipping at 1.0), given to both as flags (``--baby``: 2 layers x 2 x 64,
  64 positions, batch 16, no dropout, every 50 steps, for a CPU);
* **evaluation**: every 250 steps, 200 batches (nanoGPT also scores 200 training batches each time, its
  own loop's choice, and that time is in its figure).

Each side is a process of its own, timed from its start (Python, torch, data, compilation included) to
the line of the first evaluation at or below ``--target`` (1.47 nats per character), then stopped. The
table gives both times, the steps they took and the ratio course / nanoGPT (below 1: the course is
faster). On a CUDA GPU both use bf16 autocast where the card has it and nanoGPT compiles its model
(its default); ``--fast`` turns on the course loop's fast paths (``lmcourse.train.TrainConfig``'s
``compile_mode``, ``eval_sync_free``, ``attention``), which are off by default until a GPU run proves them.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.47


@dataclass(frozen=True)
class Sizes:
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    block_size: int = 256
    batch_size: int = 64
    dropout: float = 0.2
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    max_steps: int = 5000      # the schedule's length on both sides (nanoGPT's max_iters = lr_decay_iters)
    eval_interval: int = 250
    eval_batches: int = 200


FULL = Sizes()
BABY = Sizes(n_layer=2, n_head=2, n_embd=64, block_size=64, batch_size=16, dropout=0.0, lr=3e-3, min_lr=3e-4,
             warmup=20, max_steps=600, eval_interval=50, eval_batches=20)


# --- the text and its split ------------------------------------------------------------------------------

def split_90_10(text: str) -> tuple[str, str]:
    """nanoGPT's ``prepare.py`` cut: the first 90 % of the characters to train, the rest to validate."""
    cut = int(len(text) * 0.9)
    return text[:cut], text[cut:]


def choose_text(nanogpt: Path | None, text_file: Path | None) -> tuple[str, str, str]:
    """(training text, validation text, where they came from): ``--text`` or nanoGPT's Tiny Shakespeare
    (when its checkout has it) cut 90/10, or the course's plays with the course's split."""
    if text_file is None and nanogpt is not None and (nanogpt / "data" / "shakespeare_char" / "input.txt").is_file():
        text_file = nanogpt / "data" / "shakespeare_char" / "input.txt"
    if text_file is not None:
        return (*split_90_10(text_file.read_text(encoding="utf-8")), f"{text_file}, cut 90/10")
    from lmcourse.data import load_shakespeare

    corpus = load_shakespeare(quiet=True)
    return corpus.text("train"), corpus.text("val"), "the course's plays, the course's split (3 plays to validate)"


def prepare_data(train_text: str, val_text: str, folder: Path) -> dict:
    """``train.bin`` / ``val.bin`` (uint16 ids) and ``meta.pkl`` (``vocab_size``, ``itos``, ``stoi``) in
    ``folder``, nanoGPT's layout; their sizes."""
    import numpy as np

    chars = sorted(set(train_text) | set(val_text))
    if len(chars) > 65535:
        raise ValueError(f"{len(chars)} distinct characters do not fit nanoGPT's uint16 ids")
    stoi = {ch: i for i, ch in enumerate(chars)}
    folder.mkdir(parents=True, exist_ok=True)
    for split, text in (("train", train_text), ("val", val_text)):
        np.array([stoi[ch] for ch in text], dtype=np.uint16).tofile(folder / f"{split}.bin")
    with open(folder / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)
    return {"vocab_size": len(chars), "train": len(train_text), "val": len(val_text)}


def read_split(folder: Path, split: str):
    """A split written by :func:`prepare_data` as a 1-D LongTensor."""
    import numpy as np
    import torch

    return torch.from_numpy(np.fromfile(folder / f"{split}.bin", dtype=np.uint16).astype(np.int64))


# --- the two sides ----------------------------------------------------------------------------------------

def nanogpt_command(checkout: Path, data: Path, out: Path, sizes: Sizes, device: str) -> list[str]:
    """nanoGPT's ``train.py`` with the sizes as its own flags (run with the checkout as the working folder:
    its configurator is read from there); ``dataset`` is the absolute data folder (``os.path.join('data',
    dataset)`` is then that folder)."""
    s = sizes
    flags = dict(out_dir=str(out), dataset=str(data), eval_interval=s.eval_interval, eval_iters=s.eval_batches,
                 log_interval=s.eval_interval, always_save_checkpoint=False, gradient_accumulation_steps=1,
                 batch_size=s.batch_size, block_size=s.block_size, n_layer=s.n_layer, n_head=s.n_head,
                 n_embd=s.n_embd, dropout=s.dropout, bias=False, learning_rate=s.lr, max_iters=s.max_steps,
                 lr_decay_iters=s.max_steps, min_lr=s.min_lr, beta2=0.99, warmup_iters=s.warmup,
                 weight_decay=0.1, grad_clip=1.0, device=device, compile=device.startswith("cuda"))
    if not device.startswith("cuda"):
        flags["dtype"] = "float32"  # its default off CUDA is float16 with a scaler that has no CUDA to run on
    return [sys.executable, "-u", str(checkout / "train.py")] + [f"--{k}={v}" for k, v in flags.items()]


def course_command(data: Path, sizes: Sizes, device: str, fast: bool) -> list[str]:
    return [sys.executable, "-u", str(Path(__file__).resolve()), "--side", "course", "--data", str(data),
            "--sizes", json.dumps(asdict(sizes)), "--device", device] + (["--fast"] if fast else [])


def fast_options(device: str) -> dict:
    """The course loop's fast paths, as a GPU run would try them (the kernel named only on CUDA)."""
    options = {"compile_mode": "max-autotune-no-cudagraphs", "eval_sync_free": True}
    if device.startswith("cuda"):
        options["attention"] = "flash"
    return options


def course_side(data: Path, sizes: Sizes, device: str, fast: bool) -> None:
    """The course's GPT trained by ``lmcourse.train`` on the prepared data, printing nanoGPT's evaluation
    line (``step N: val loss X``) at each evaluation."""
    import torch

    from lmcourse.nn import GPT, GPTConfig
    from lmcourse.train import TrainConfig, train

    with open(data / "meta.pkl", "rb") as f:
        vocab_size = pickle.load(f)["vocab_size"]
    train_ids, val_ids = read_split(data, "train"), read_split(data, "val")
    s = sizes
    torch.manual_seed(1337)
    model = GPT(GPTConfig(vocab_size=vocab_size, block_size=s.block_size, n_layer=s.n_layer, n_head=s.n_head,
                          n_embd=s.n_embd, dropout=s.dropout, bias=False))
    cfg = TrainConfig(steps=s.max_steps, batch_size=s.batch_size, block_size=s.block_size, lr=s.lr,
                      min_lr_ratio=s.min_lr / s.lr, warmup_steps=s.warmup, betas=(0.9, 0.99), weight_decay=0.1,
                      grad_clip=1.0, eval_interval=s.eval_interval, eval_batches=s.eval_batches, seed=1337,
                      device=device, progress=False, quiet=True, **(fast_options(device) if fast else {}))
    print(f"course: {model.num_params():,} parameters on {device}, fast paths "
          f"{fast_options(device) if fast else 'off'}", flush=True)
    train(model, train_ids, val_ids, cfg,
          on_eval=lambda step, hist: print(f"step {step}: val loss {hist.val_loss[-1]:.4f}", flush=True))


_EVAL_LINE = re.compile(r"^step (\d+):.*val loss ([\d.]+)")


@dataclass
class SideResult:
    name: str
    seconds: float | None = None   # to the first evaluation at or below the target; None: not reached
    step: int | None = None
    val_loss: float | None = None  # at that evaluation (or the last one seen)
    note: str = ""


def time_to_target(name: str, cmd: list[str], cwd: Path, target: float, timeout: float) -> SideResult:
    """Run ``cmd``, reading its lines as they come; stop it at the first evaluation line whose validation
    loss is at most ``target``, and give the seconds from its start to that line."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    result, tail = SideResult(name), []
    try:
        for line in proc.stdout:
            tail = (tail + [line.rstrip()])[-5:]
            m = _EVAL_LINE.match(line.strip())
            if m:
                result.step, result.val_loss = int(m.group(1)), float(m.group(2))
                if result.val_loss <= target:
                    result.seconds = time.perf_counter() - t0
                    break
            if time.perf_counter() - t0 > timeout:
                result.note = f"stopped after {timeout:.0f} s"
                break
    finally:
        if proc.poll() is None:
            proc.kill()  # ours: the run has told us what we came for
        proc.wait()
    if result.seconds is None and not result.note:
        result.note = (f"ended (exit {proc.returncode}) without reaching {target}: " + " | ".join(tail)[-300:])
    return result


def result_table(course: SideResult, peer: SideResult, target: float) -> str:
    lines = [f"{'side':<10} {'seconds to val <= ' + format(target, 'g'):>22} {'at step':>8} {'val loss':>9}  note"]
    for r in (course, peer):
        secs = f"{r.seconds:.1f}" if r.seconds is not None else "-"
        lines.append(f"{r.name:<10} {secs:>22} {r.step if r.step is not None else '-':>8} "
                     f"{format(r.val_loss, '.4f') if r.val_loss is not None else '-':>9}  {r.note}")
    lines.append(f"ratio course / nanoGPT: {ratio_text(course, peer)}")
    return "\n".join(lines)


def ratio_text(course: SideResult, peer: SideResult) -> str:
    if course.seconds is None or peer.seconds is None:
        return "- (a side did not reach the target)"
    return f"{course.seconds / peer.seconds:.2f}x"


def compare(nanogpt: Path | None, sizes: Sizes, device: str, target: float, fast: bool, timeout: float,
            text_file: Path | None = None, log=print) -> tuple[SideResult, SideResult]:
    """Both sides on the same prepared data; the peer's result says why when it did not run."""
    train_text, val_text, source = choose_text(nanogpt, text_file)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        info = prepare_data(train_text, val_text, data)
        log(f"text: {source}; {info['vocab_size']} characters, {info['train']:,} to train, {info['val']:,} "
            f"to validate; {sizes}")
        course = time_to_target("course", course_command(data, sizes, device, fast), ROOT, target, timeout)
        if nanogpt is None:
            peer = SideResult("nanoGPT", note="not run: no checkout given (--nanogpt PATH, a clone of "
                                              "github.com/karpathy/nanoGPT)")
        elif not (nanogpt / "train.py").is_file():
            peer = SideResult("nanoGPT", note=f"not run: {nanogpt} has no train.py (is it a nanoGPT checkout?)")
        else:
            peer = time_to_target("nanoGPT", nanogpt_command(nanogpt, data, Path(tmp) / "out", sizes, device),
                                  nanogpt, target, timeout)
    return course, peer


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nanogpt", type=Path, default=None, help="a nanoGPT checkout (its train.py is run as is)")
    ap.add_argument("--text", type=Path, default=None, help="a UTF-8 text instead of Tiny Shakespeare / the plays")
    ap.add_argument("--baby", action="store_true", help="CPU sizes (2 x 2 x 64, 64 positions, batch 16)")
    ap.add_argument("--target", type=float, default=None, help=f"validation loss to reach (default {TARGET}; "
                    "--baby: 2.5)")
    ap.add_argument("--fast", action="store_true", help="the course loop's fast paths on")
    ap.add_argument("--device", default=None, help="default: cuda when there is one, else cpu")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per side")
    ap.add_argument("--side", choices=["course"], help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.side == "course":
        course_side(args.data, Sizes(**json.loads(args.sizes)), device, args.fast)
        return 0
    sizes = BABY if args.baby else FULL
    target = args.target if args.target is not None else (2.5 if args.baby else TARGET)
    course, peer = compare(args.nanogpt, sizes, device, target, args.fast, args.timeout, args.text)
    print(result_table(course, peer, target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
