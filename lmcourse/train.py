"""The one training loop of the course: model, data, settings and a budget in; a history out.

The contract with a model is small:

* ``model(x)`` takes token ids ``x`` of shape ``(B, T)`` and returns logits ``(B, T, V)``,
  where ``logits[b, t]`` scores the token that comes *after* ``x[b, t]``.
* The loop computes the loss itself. A batch is ``(x, y)`` from :func:`lmcourse.data.get_batch`,
  with the targets already shifted by one (``y[b, t] = x[b, t + 1]`` inside the same text
  window), so the loss is the mean over all ``B * T`` positions of ``-log p(y[b, t] | x[b, :t+1])``::

      loss = F.cross_entropy(logits.reshape(B * T, V), y.reshape(B * T))   # nats per token

Everything else is settings (:class:`TrainConfig`): AdamW (or plain SGD, as in the lectures'
mini-batch SGD), a linear warm-up followed by a cosine decay of the learning rate, gradient
clipping by global norm, periodic validation, checkpoints that a run can resume from, bf16
autocast and the fused AdamW kernel on CUDA (only there), and a seed that makes a run
repeatable: the same seed, model initialisation and data give the same losses.

    cfg = TrainConfig.from_profile(rt.profile, lr=3e-3)
    hist = train(model, train_tokens, val_tokens, cfg)
    hist.val_loss[-1]        # the last validation loss, nats per token
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.nn.functional as F

from .data import get_batch
from .runtime import is_autograding, pick_device


@dataclass
class TrainConfig:
    """Settings of one training run. Sizes usually come from ``rt.profile`` via :meth:`from_profile`."""

    steps: int = 1_000  # optimisation steps: the budget (and the length of the LR schedule)
    batch_size: int = 32  # windows per batch (B)
    block_size: int = 64  # tokens per window (T); each window also yields T shifted targets
    lr: float = 3e-3  # peak learning rate, reached at the end of the warm-up
    min_lr_ratio: float = 0.1  # the cosine decays the LR to lr * min_lr_ratio at the last step
    warmup_steps: int = 50  # steps of linear warm-up from ~0 to lr (0: start at the peak)
    optimizer: str = "adamw"  # "adamw" or "sgd" (plain mini-batch SGD, no momentum)
    betas: tuple[float, float] = (0.9, 0.99)  # AdamW moment decay rates
    weight_decay: float = 0.0  # AdamW decoupled weight decay, applied to matrices only
    grad_clip: float | None = 1.0  # rescale gradients whose global L2 norm exceeds this (None: off)
    eval_interval: int = 250  # validate every this many steps (also at step 0 and at the end)
    eval_batches: int = 20  # batches averaged per validation estimate
    seed: int = 0  # seeds the batch sampler and torch's global RNG (e.g. dropout)
    device: str | None = None  # "cpu", "cuda", "mps"; None: lmcourse.runtime.pick_device()
    amp: bool = True  # bf16 autocast, used on CUDA only (ignored elsewhere)
    checkpoint_path: str | None = None  # where to save model + optimizer + sampler state
    checkpoint_interval: int = 0  # save every this many steps (0: only at the end / on interrupt)
    resume: bool = False  # continue from checkpoint_path if it exists
    progress: bool | None = None  # tqdm bar; None: on in a terminal or notebook, off when autograding
    compile: bool = False  # run the training steps through torch.compile (worth it on a GPU; compiling takes a while)
    quiet: bool = False  # no summary line at the end

    @classmethod
    def from_profile(cls, profile, **overrides) -> "TrainConfig":
        """Steps, batch and block size and the evaluation schedule from a runtime profile."""
        base = dict(steps=profile.train_steps, batch_size=profile.batch_size,
                    block_size=profile.block_size, eval_interval=profile.eval_interval,
                    eval_batches=profile.eval_batches)
        base["warmup_steps"] = min(50, max(profile.train_steps // 10, 0))
        base.update(overrides)
        return cls(**base)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.block_size < 1:
            raise ValueError("steps, batch_size and block_size must be positive")
        if self.optimizer not in ("adamw", "sgd"):
            raise ValueError(f"optimizer must be 'adamw' or 'sgd', not {self.optimizer!r}")
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise ValueError("grad_clip must be positive or None")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError("min_lr_ratio must be in [0, 1]")
        self.betas = tuple(self.betas)


@dataclass
class History:
    """What happened during a run. Losses are in nats per token (natural log)."""

    steps: list[int] = field(default_factory=list)  # 1, 2, ... (one entry per optimisation step)
    train_loss: list[float] = field(default_factory=list)  # the mini-batch loss at each step
    lr: list[float] = field(default_factory=list)  # learning rate used at each step
    grad_norm: list[float] = field(default_factory=list)  # global gradient norm *before* clipping
    val_steps: list[int] = field(default_factory=list)  # steps at which validation ran (0 = untrained)
    val_loss: list[float] = field(default_factory=list)  # validation loss at those steps
    tokens_per_sec: float = 0.0  # training throughput (validation time excluded)
    elapsed: float = 0.0  # wall-clock seconds, validation included (summed over resumed runs)
    interrupted: bool = False  # True if the run stopped early (KeyboardInterrupt or stop_after)

    @property
    def final_val_loss(self) -> float:
        return self.val_loss[-1] if self.val_loss else float("nan")

    def clipped_fraction(self, grad_clip: float) -> float:
        """Share of steps whose gradient was rescaled by clipping at ``grad_clip``."""
        return sum(g > grad_clip for g in self.grad_norm) / max(len(self.grad_norm), 1)


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimisation step ``step`` (0-based): linear warm-up, then cosine.

    During warm-up, ``lr * (step + 1) / warmup_steps``; afterwards a half cosine from ``lr``
    down to ``lr * min_lr_ratio``, reached at the last step ``cfg.steps - 1``.
    """
    peak, floor = cfg.lr, cfg.lr * cfg.min_lr_ratio
    if step < cfg.warmup_steps:
        return peak * (step + 1) / cfg.warmup_steps
    decay_steps = cfg.steps - 1 - cfg.warmup_steps
    if decay_steps <= 0:
        return peak
    progress = min(1.0, (step - cfg.warmup_steps) / decay_steps)
    return floor + 0.5 * (peak - floor) * (1.0 + math.cos(math.pi * progress))


def lm_cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of logits ``(B, T, V)`` against already-shifted targets ``(B, T)``."""
    if logits.dim() != 3 or logits.shape[:2] != y.shape:
        raise ValueError(f"the model must return logits of shape (B, T, V) = ({y.shape[0]}, {y.shape[1]}, V); "
                         f"got {tuple(logits.shape)}")
    B, T, V = logits.shape
    return F.cross_entropy(logits.reshape(B * T, V).float(), y.reshape(B * T))


@torch.no_grad()
def estimate_loss(model: torch.nn.Module, tokens: torch.Tensor, batch_size: int, block_size: int,
                  batches: int, seed: int = 0, device: torch.device | str = "cpu",
                  amp: bool = True, batch_fn=None) -> float:
    """Mean loss over ``batches`` random windows of ``tokens``, with the model in eval mode.

    The windows come from their own generator seeded with ``seed``, so every call sees the same
    windows (curves are comparable across steps) and the training sampler is left untouched.
    """
    device = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    total = 0.0
    for _ in range(batches):
        x, y = (batch_fn or get_batch)(tokens, batch_size, block_size, gen, device)
        with _autocast(device, amp):
            logits = model_logits(model(x))
        total += lm_cross_entropy(logits, y).item()
    model.train(was_training)
    return total / batches


def model_logits(out) -> torch.Tensor:
    """The logits of a model's output: the output itself, or the first item of a tuple such as a
    GPT's ``(logits, loss)``."""
    return out[0] if isinstance(out, (tuple, list)) else out


def _autocast(device: torch.device, amp: bool):
    return torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=amp and device.type == "cuda")


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig, device: torch.device) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices only (fused kernel on CUDA), or plain SGD."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr)
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    extra = {"fused": True} if device.type == "cuda" else {}
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, **extra)


def _want_progress(cfg: TrainConfig) -> bool:
    if cfg.progress is not None:
        return cfg.progress
    if is_autograding():
        return False
    in_kernel = "ipykernel" in sys.modules
    return in_kernel or sys.stderr.isatty()


def _save_checkpoint(path: Path, model, opt, step: int, gen: torch.Generator, hist: History,
                     cfg: TrainConfig) -> None:
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
             "sampler": gen.get_state(), "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
             "history": asdict(hist), "config": asdict(cfg)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # never leave a half-written checkpoint behind


def _load_checkpoint(path: Path, model, opt, gen: torch.Generator, device: torch.device) -> tuple[int, History]:
    state = torch.load(path, map_location=device, weights_only=False)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    gen.set_state(state["sampler"])
    torch.set_rng_state(state["torch_rng"])
    if state.get("cuda_rng") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    names = {f.name for f in fields(History)}
    hist = History(**{k: v for k, v in state["history"].items() if k in names})
    hist.interrupted = False
    return state["step"], hist


def _compile_ok(cfg: TrainConfig) -> bool:
    """torch.compile where it can work; elsewhere a message, and training runs uncompiled."""
    from .runtime import compile_support

    ok, why = compile_support()
    if not ok and not cfg.quiet:
        print(f"lmcourse.train: {why}; training without torch.compile (only slower)")
    return ok


def train(model: torch.nn.Module, train_tokens: torch.Tensor, val_tokens: torch.Tensor | None,
          cfg: TrainConfig, stop_after: int | None = None, batch_fn=None) -> History:
    """Train ``model`` on windows of ``train_tokens`` for ``cfg.steps`` steps; return the history.

    ``train_tokens`` / ``val_tokens`` are 1-D LongTensors of token ids (see
    :func:`lmcourse.data.encode_split`); ``val_tokens=None`` skips validation. The model is
    moved to the device and trained in place.

    ``stop_after=k`` stops after step ``k`` as if the run were interrupted there (the schedule
    still follows ``cfg.steps``); pressing the notebook's stop button does the same. Either way
    a checkpoint is written when ``cfg.checkpoint_path`` is set, and ``cfg.resume=True``
    continues from it, with exactly the batches and learning rates the uninterrupted run uses.

    ``batch_fn`` replaces :func:`lmcourse.data.get_batch` (same arguments: tokens, batch size,
    block size, the sampler's generator, device; same result ``(x, y)``), for training and
    validation batches alike: e.g. a masked LM's ``(corrupted inputs, labels)``, whose label
    ``-100`` the loss skips (``F.cross_entropy``'s ``ignore_index``).
    """
    device = torch.device(cfg.device) if cfg.device else pick_device()
    for name, toks in (("train_tokens", train_tokens), ("val_tokens", val_tokens)):
        if toks is None:
            continue
        if toks.dim() != 1 or toks.dtype != torch.long:
            raise ValueError(f"{name} must be a 1-D LongTensor of token ids, got {toks.dtype} {tuple(toks.shape)}")
        if toks.numel() <= cfg.block_size:
            raise ValueError(f"{name} has {toks.numel()} tokens; a window needs block_size + 1 = {cfg.block_size + 1}")
    model.to(device)
    model.train()
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)  # CPU generator drives the batch sampler
    opt = make_optimizer(model, cfg, device)
    params = [p for g in opt.param_groups for p in g["params"]]
    hist, start = History(), 0
    ckpt = Path(cfg.checkpoint_path) if cfg.checkpoint_path else None
    if cfg.resume and ckpt is not None and ckpt.exists():
        start, hist = _load_checkpoint(ckpt, model, opt, gen, device)
    last = cfg.steps if stop_after is None else min(cfg.steps, stop_after)
    step_model = torch.compile(model) if cfg.compile and _compile_ok(cfg) else model  # shares the parameters

    def validate(step: int) -> None:
        if val_tokens is None or cfg.eval_batches <= 0 or (hist.val_steps and hist.val_steps[-1] == step):
            return
        hist.val_steps.append(step)
        hist.val_loss.append(estimate_loss(model, val_tokens, cfg.batch_size, cfg.block_size,
                                           cfg.eval_batches, seed=cfg.seed + 1, device=device, amp=cfg.amp,
                                           batch_fn=batch_fn))

    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    train_time, tokens_done = 0.0, 0
    bar = tqdm(total=cfg.steps, initial=start, disable=not _want_progress(cfg), unit="step",
               dynamic_ncols=True, leave=True)
    step = start
    try:
        if start == 0:
            validate(0)
        while step < last:
            t0 = time.perf_counter()
            lr = lr_at(step, cfg)
            for g in opt.param_groups:
                g["lr"] = lr
            x, y = (batch_fn or get_batch)(train_tokens, cfg.batch_size, cfg.block_size, gen, device)
            with _autocast(device, cfg.amp):
                logits = model_logits(step_model(x))
            loss = lm_cross_entropy(logits, y)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"the loss became {loss.item()} at step {step + 1}; "
                                         "try a smaller lr or a grad_clip")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip is not None:
                norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            else:
                norm = torch.linalg.vector_norm(
                    torch.stack([torch.linalg.vector_norm(p.grad) for p in params if p.grad is not None]))
            opt.step()
            step += 1
            loss_value = loss.item()  # synchronises with the GPU, so the timing below is honest
            train_time += time.perf_counter() - t0
            tokens_done += cfg.batch_size * cfg.block_size
            hist.steps.append(step)
            hist.train_loss.append(loss_value)
            hist.lr.append(lr)
            hist.grad_norm.append(float(norm))
            if step % cfg.eval_interval == 0 or step == cfg.steps:
                validate(step)
            if ckpt is not None and cfg.checkpoint_interval and step % cfg.checkpoint_interval == 0:
                _save_checkpoint(ckpt, model, opt, step, gen, hist, cfg)
            post = {"loss": f"{loss_value:.3f}", "tok/s": f"{tokens_done / max(train_time, 1e-9):,.0f}"}
            if hist.val_loss:
                post["val"] = f"{hist.val_loss[-1]:.3f}"
            bar.set_postfix(post, refresh=False)
            bar.update(1)
    except KeyboardInterrupt:
        hist.interrupted = True
    finally:
        bar.close()
    if step < cfg.steps:
        hist.interrupted = True
    hist.elapsed += time.perf_counter() - t_start
    hist.tokens_per_sec = tokens_done / train_time if train_time > 0 else hist.tokens_per_sec
    if ckpt is not None:
        _save_checkpoint(ckpt, model, opt, step, gen, hist, cfg)
    if not cfg.quiet:
        val = f", val loss {hist.final_val_loss:.3f}" if hist.val_loss else ""
        status = " (stopped early; resume=True continues)" if hist.interrupted else ""
        print(f"trained {step}/{cfg.steps} steps in {hist.elapsed:.1f} s "
              f"({hist.tokens_per_sec:,.0f} tokens/s on {device}){val}{status}")
    return hist


if __name__ == "__main__":  # python -m lmcourse.train gpt ...: the command-line trainer (lmcourse.train_cli)
    from lmcourse.train_cli import main as _main

    raise SystemExit(_main(prog="python -m lmcourse.train"))
