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
clipping by global norm, periodic validation, checkpoints that a run can resume from, mixed
precision and the fused AdamW kernel on CUDA (only there: bf16 autocast from compute capability 8.0,
fp16 with a gradient scaler on a T4, V100 or P100), and a seed that makes a run repeatable:
the same seed, model initialisation and data give the same losses.

    cfg = TrainConfig.from_profile(rt.profile, lr=3e-3)
    hist = train(model, train_tokens, val_tokens, cfg)
    hist.val_loss[-1]        # the last validation loss, nats per token

A loss other than next-token cross-entropy is a parameter, not another loop: ``batch_fn`` makes
the batches (a masked LM's corrupted inputs and labels) and ``loss_fn`` scores them (a
cross-entropy that skips an encoder-decoder's padding). Data-parallel training on ``N``
processes is the same loop given a :class:`lmcourse.distributed.DistEnv` (see :func:`train`);
without one it is the one-process case.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.nn.functional as F

from .data import get_batch
from .distributed import (
    BatchSplitError,
    CheckpointError,
    DistEnv,
    all_sum,
    gather_objects,
    micro_seed,
    shard_count,
    shard_seed,
    shards_of,
)
from .nn.checkpoint import model_state, read_saved, write_checkpoint
from .runtime import is_autograding, pick_device
from .train_parts import StepOptimizer, TrainParts

__all__ = ["TrainConfig", "History", "train", "estimate_loss", "lr_at", "lm_cross_entropy", "model_logits",
           "make_optimizer", "autocast", "want_progress", "compile_ok", "load_checkpoint", "CHECKPOINT_FORMAT",
           "CheckpointError", "BatchSplitError", "val_note", "TrainParts", "attention_kernel", "COMPILE_MODES",
           "ATTENTION_KERNELS"]

# torch.compile's modes ("" leaves the step uncompiled); reduce-overhead captures the step as CUDA graphs
COMPILE_MODES = ("", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# SDPA's kernels by name ("" lets torch pick); every one but math runs only on a CUDA GPU
ATTENTION_KERNELS = ("", "flash", "efficient", "cudnn", "math")

CHECKPOINT_FORMAT = 2  # 1: train()'s and distributed's separate layouts (read, upgraded on load)


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
    amp: bool = True  # CUDA mixed precision as the card allows (runtime.choose_precision): bf16 or fp16+GradScaler
    checkpoint_path: str | None = None  # where to save model + optimizer + sampler state
    checkpoint_interval: int = 0  # save every this many steps (0: only at the end / on interrupt)
    resume: bool = False  # continue from checkpoint_path if it exists
    progress: bool | None = None  # tqdm bar; None: on in a terminal or notebook, off when autograding
    compile: bool = False  # run the training steps through torch.compile (worth it on a GPU; compiling takes a while)
    keep_best: bool = False  # end with the weights of the lowest validation loss (early stopping)
    tokens_on_device: bool = True  # ids kept on the device, each batch gathered there (get_batch's windows)
    quiet: bool = False  # no summary line at the end
    compile_mode: str = ""  # the step whole through torch.compile in this mode (reduce-overhead: CUDA graphs); "" off
    eval_sync_free: bool = False  # validation's windows copied in one go, losses summed on the device: one sync
    attention: str = ""  # SDPA's kernel: flash, efficient, cudnn (CUDA only) or math; "" torch picks

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
        if self.compile_mode not in COMPILE_MODES:
            raise ValueError(f"compile_mode must be one of {', '.join(repr(m) for m in COMPILE_MODES)}, "
                             f"not {self.compile_mode!r}")
        if self.attention not in ATTENTION_KERNELS:
            raise ValueError(f"attention must be one of {', '.join(repr(k) for k in ATTENTION_KERNELS)}, "
                             f"not {self.attention!r}")
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
    best_step: int | None = None  # keep_best: the validation step whose weights the model ends with

    @property
    def best_val_loss(self) -> float:
        """The validation loss at :attr:`best_step` (nan without keep_best or validation)."""
        if self.best_step is None or self.best_step not in self.val_steps:
            return float("nan")
        return self.val_loss[self.val_steps.index(self.best_step)]

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


def model_logits(out) -> torch.Tensor:
    """The logits of a model's output: the output itself, or the first item of a tuple such as a
    GPT's ``(logits, loss)``."""
    return out[0] if isinstance(out, (tuple, list)) else out


def _forward(model, x):
    """``model(x)``, or ``model(*x)`` when a batch's inputs are a tuple (an encoder-decoder's
    ``(source, target_in)``)."""
    return model(*x) if isinstance(x, (tuple, list)) else model(x)


def _rows(x, start: int, stop: int):
    """Rows ``start:stop`` of a batch's inputs or targets (each tensor of a tuple alike)."""
    return type(x)(t[start:stop] for t in x) if isinstance(x, (tuple, list)) else x[start:stop]


def _n_rows(x) -> int:
    return (x[0] if isinstance(x, (tuple, list)) else x).shape[0]


def autocast(device: torch.device | str, amp: bool = True):
    """Autocast on CUDA when ``amp``, in the dtype the card does fast (bf16 from compute capability 8.0,
    else fp16: :func:`lmcourse.runtime.choose_precision`); elsewhere a context that does nothing."""
    device = torch.device(device)
    dtype = _amp_dtype(device) if amp else None
    return torch.autocast(device_type="cuda", dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def _amp_dtype(device: torch.device) -> torch.dtype | None:
    if device.type != "cuda":
        return None
    from .runtime import choose_precision

    return choose_precision(device).dtype


def batch_on_device(tokens: torch.Tensor, batch_size: int, block_size: int, generator: torch.Generator,
                    device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`lmcourse.data.get_batch` for ids that already live on ``device``: the same windows
    (offsets drawn on the CPU by ``generator``, as there), gathered where the ids are, so a step
    copies ``batch_size`` offsets to the device instead of gathering windows on the host."""
    n_starts = tokens.numel() - block_size
    starts = torch.randint(n_starts, (batch_size,), generator=generator).to(tokens.device)  # (B,)
    windows = tokens[starts[:, None] + torch.arange(block_size + 1, device=tokens.device)]  # (B, T + 1)
    return windows[:, :-1], windows[:, 1:]


def _grad_scaler(device: torch.device, amp: bool) -> torch.amp.GradScaler:
    """A gradient scaler, enabled only for fp16 autocast (bf16 and float32 keep fp32's range and need none;
    disabled, each of its calls passes through unchanged)."""
    return torch.amp.GradScaler("cuda", enabled=amp and _amp_dtype(device) == torch.float16)


def _evaluate(model, tokens, batch_size: int, block_size: int, batches: int, seed: int, device: torch.device,
              amp: bool, batch_fn, loss_fn, micro: int, env: DistEnv, sync_free: bool = False) -> float:
    """Mean loss over ``batches`` batches drawn by a generator seeded ``seed``; rank ``r`` of ``N``
    scores batches ``r, r + N, ...`` in chunks of ``micro`` windows (equal chunks: the same mean),
    and the sum is all-reduced, so every rank gets what one process would. Reading the sum is the
    evaluation's one host sync; ``sync_free`` (:func:`_eval_total`) makes it the only one."""
    total = _eval_total(model, tokens, batch_size, block_size, batches, seed, device, amp, batch_fn, loss_fn,
                        micro, env, sync_free)
    return float(all_sum(total, env)) / batches


def _eval_total(model, tokens, batch_size: int, block_size: int, batches: int, seed: int, device: torch.device,
                amp: bool, batch_fn, loss_fn, micro: int, env: DistEnv, sync_free: bool = False) -> torch.Tensor:
    """This rank's summed batch losses, a float64 tensor on the device, not yet read by the host.

    ``sync_free`` with windows of ids on the device (:func:`batch_on_device`): every batch's offsets are
    drawn first, from the same generator in the same order, and copied to the device in one non-blocking
    copy, where each batch is then gathered; otherwise each batch's offsets are copied as it is drawn, and
    a CPU-to-GPU copy from ordinary memory waits for the GPU to finish its queue. The losses, and their
    sum, are the same either way."""
    gen = torch.Generator().manual_seed(seed)
    draw = batch_fn or get_batch
    if sync_free and draw is batch_on_device:
        draw = _prefetched_windows(tokens, batch_size, block_size, batches, gen)
    was_training = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=device)
    with torch.no_grad():
        for i in range(batches):
            x, y = draw(tokens, batch_size, block_size, gen, device)
            if i % env.world_size != env.rank:
                continue  # drawn anyway, so every rank's generator sees the same sequence
            for j in range(0, batch_size, micro):
                xj = _rows(x, j, j + micro)
                with autocast(device, amp):
                    logits = model_logits(_forward(model, xj))
                total += (loss_fn or lm_cross_entropy)(logits, _rows(y, j, j + micro)).double() * (
                    _n_rows(xj) / batch_size)
    model.train(was_training)
    return total


def _prefetched_windows(tokens: torch.Tensor, batch_size: int, block_size: int, batches: int,
                        generator: torch.Generator):
    """A drop-in for :func:`batch_on_device` that serves ``batches`` batches whose offsets were all drawn
    now (as that function draws them, one batch after another) and copied to the device at once."""
    n_starts = tokens.numel() - block_size
    starts = torch.stack([torch.randint(n_starts, (batch_size,), generator=generator) for _ in range(batches)])
    if tokens.device.type == "cuda":
        starts = starts.pin_memory()  # page-locked: the copy below can leave the host running
    starts = starts.to(tokens.device, non_blocking=True)  # (batches, B)
    offsets = torch.arange(block_size + 1, device=tokens.device)
    served = iter(range(batches))

    def draw(tokens, batch_size, block_size, generator, device):
        windows = tokens[starts[next(served)][:, None] + offsets]  # (B, T + 1)
        return windows[:, :-1], windows[:, 1:]

    return draw


def estimate_loss(model: torch.nn.Module, tokens: torch.Tensor, batch_size: int, block_size: int,
                  batches: int, seed: int = 0, device: torch.device | str = "cpu",
                  amp: bool = True, batch_fn=None, loss_fn=None) -> float:
    """Mean loss over ``batches`` random windows of ``tokens``, with the model in eval mode.

    The windows come from their own generator seeded with ``seed``, so every call sees the same
    windows (curves are comparable across steps) and the training sampler is left untouched.
    ``batch_fn`` and ``loss_fn`` are :func:`train`'s.
    """
    device = torch.device(device)
    return _evaluate(model, tokens, batch_size, block_size, batches, seed, device, amp, batch_fn, loss_fn,
                     micro=batch_size, env=DistEnv(device=device))


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig, device: torch.device,
                   adamw_step=None) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices only (fused kernel on CUDA), or plain SGD; ``adamw_step`` (a
    :class:`TrainParts`'s) takes AdamW's step, with the same groups and settings."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("the model has no trainable parameters")
    if cfg.optimizer == "sgd":
        if adamw_step is not None:
            raise ValueError("an adamw_step was given for a run whose optimizer is 'sgd'")
        return torch.optim.SGD(params, lr=cfg.lr)
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    if adamw_step is not None:
        return StepOptimizer(groups, adamw_step, lr=cfg.lr, betas=cfg.betas)
    extra = {"fused": True} if device.type == "cuda" else {}
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, **extra)


def want_progress(cfg: TrainConfig) -> bool:
    """Whether a run shows a progress bar: ``cfg.progress`` if set, else in a terminal or a
    notebook, never under the autograder nor in a headless run that sets ``LMCOURSE_PROGRESS=0``."""
    if cfg.progress is not None:
        return cfg.progress
    if is_autograding() or os.environ.get("LMCOURSE_PROGRESS") == "0":
        return False
    in_kernel = "ipykernel" in sys.modules
    return in_kernel or sys.stderr.isatty()


def compile_ok(cfg: TrainConfig, device: torch.device | None = None) -> bool:
    """torch.compile where it can work; elsewhere a message (unless ``cfg.quiet``), and False."""
    from .runtime import COMPILE_MIN_CAPABILITY, compile_support

    ok, why = compile_support()
    if ok and device is not None and device.type == "cuda":
        cap = tuple(torch.cuda.get_device_capability(device))
        ok = cap >= COMPILE_MIN_CAPABILITY
        why = f"torch.compile's GPU back end (Triton) needs compute capability 7.0; this GPU has {cap[0]}.{cap[1]}"
    if not ok and not cfg.quiet:
        print(f"lmcourse.train: {why}; training without torch.compile (only slower)")
    return ok


def attention_kernel(choice: str, device: torch.device | str, amp: bool = True):
    """A context in which ``F.scaled_dot_product_attention`` runs SDPA's kernel ``choice`` only
    (:data:`ATTENTION_KERNELS`; ``""``: a context that does nothing, torch picks). A kernel that cannot
    run here is a ``ValueError`` now, not torch's "no available kernel" at the first step. A model that
    computes attention without SDPA (``GPTConfig.fast=False``) is not affected."""
    device = torch.device(device)
    if not choice:
        return contextlib.nullcontext()
    if choice != "math" and device.type != "cuda":
        raise ValueError(f"attention={choice!r} chooses SDPA's {choice} kernel, which runs only on a CUDA GPU; "
                         f"this run is on {device.type}: leave attention unset (torch picks) or use 'math'")
    if choice == "flash" and (not amp or _amp_dtype(device) is None):
        raise ValueError("attention='flash': the flash kernel computes in fp16 or bf16 only, and this run's "
                         "attention is in float32 (amp off, or a card without fast fp16/bf16); use 'efficient' "
                         "or leave attention unset")
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
    return sdpa_kernel(backends[choice])


# --- checkpoints ------------------------------------------------------------------------------------

def load_checkpoint(path: str | Path) -> dict:
    """A checkpoint written by :func:`train`, on the CPU, in the current layout (see :func:`train`).

    Checkpoints of the two loops before format 2 are upgraded as they are read: the one-process
    loop's ``sampler`` and ``config`` (then a :class:`TrainConfig`) become ``samplers`` and
    ``train_config``; the data-parallel loop's lacked only the format and ``dropout_seeds``.
    """
    state = read_saved(path, "cpu", CheckpointError)
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(f"{path} is not a training checkpoint of lmcourse.train (no model weights); "
                              "pass another checkpoint_path")
    if state.get("format", 1) >= CHECKPOINT_FORMAT:
        return state
    if "sampler" in state:  # format 1, one process
        tc = state.pop("config")
        state.update(samplers=[state.pop("sampler")], train_config=tc, config=None,
                     micro_batch_size=tc["batch_size"], world_size=1, dropout_seeds="once")
    else:  # format 1, data-parallel
        state.setdefault("dropout_seeds", "per_step")
    state["format"] = CHECKPOINT_FORMAT
    return state


def _save(path: Path, model, opt, step: int, gens: dict[int, torch.Generator], n_shards: int, hist: History,
          cfg: TrainConfig, env: DistEnv, dropout_seeds: str, extra: dict, scaler=None, best=None) -> None:
    """Gather every shard's sampler state on rank 0 and write the checkpoint there (all ranks call this)."""
    mine = {}
    for part in gather_objects({k: g.get_state() for k, g in gens.items()}, env):
        mine.update(part)
    if not env.is_main:
        return
    state = {**model_state(model), **extra, "format": CHECKPOINT_FORMAT,
             "optimizer": opt.state_dict(), "step": step, "history": asdict(hist), "train_config": asdict(cfg),
             "samplers": [mine[k] for k in range(n_shards)], "micro_batch_size": cfg.batch_size // n_shards,
             "world_size": env.world_size, "dropout_seeds": dropout_seeds, "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
    if scaler is not None and scaler.is_enabled():  # fp16: the loss scale reached so far
        state["grad_scaler"] = scaler.state_dict()
    if best is not None:  # keep_best: the weights of the lowest validation loss so far
        state["best"] = best
    write_checkpoint(state, path)


def _check_tokens(train_tokens, val_tokens, cfg: TrainConfig) -> None:
    for name, toks in (("train_tokens", train_tokens), ("val_tokens", val_tokens)):
        if toks is None:
            continue
        if not isinstance(toks, torch.Tensor) or toks.dim() != 1 or toks.dtype != torch.long:
            got = f"{toks.dtype} {tuple(toks.shape)}" if isinstance(toks, torch.Tensor) else type(toks).__name__
            raise ValueError(f"{name} must be a 1-D LongTensor of token ids, got {got}")
        if toks.numel() <= cfg.block_size:
            raise ValueError(f"{name} has {toks.numel()} tokens; a window needs block_size + 1 = {cfg.block_size + 1}")


LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def train(model: torch.nn.Module, train_tokens, val_tokens, cfg: TrainConfig, stop_after: int | None = None,
          batch_fn=None, loss_fn: LossFn | None = None, *, env: DistEnv | None = None,
          micro_batch_size: int | None = None, checkpoint_extra: dict | None = None, check_checkpoint=None,
          on_eval: Callable[[int, History], None] | None = None, parts: TrainParts | None = None) -> History:
    """Train ``model`` on windows of ``train_tokens`` for ``cfg.steps`` steps; return the history.

    ``train_tokens`` / ``val_tokens`` are 1-D LongTensors of token ids (see
    :func:`lmcourse.data.encode_split`); ``val_tokens=None`` skips validation. The model is
    moved to the device and trained in place.

    ``stop_after=k`` stops after step ``k`` as if the run were interrupted there (the schedule
    still follows ``cfg.steps``); pressing the notebook's stop button does the same. Either way
    a checkpoint is written when ``cfg.checkpoint_path`` is set, and ``cfg.resume=True``
    continues from it, with exactly the batches and learning rates the uninterrupted run uses.

    ``batch_fn`` replaces :func:`lmcourse.data.get_batch` (same arguments: data, batch size,
    block size, the sampler's generator, device; same result ``(x, y)``), for training and
    validation batches alike: e.g. a masked LM's ``(corrupted inputs, labels)``. ``x`` may be a
    tuple of tensors, passed to the model as ``model(*x)`` (an encoder-decoder's source and
    shifted target). With a ``batch_fn`` the data can be anything it takes.

    ``loss_fn(logits, y)`` replaces the default :func:`lm_cross_entropy` (which skips the label
    ``-100``): e.g. a cross-entropy that skips an encoder-decoder's padding. It returns the mean
    over one micro-batch; a step's loss is the mean over its micro-batches.

    ``cfg.keep_best`` is early stopping judged after the run: at every validation whose loss is
    the lowest so far, a copy of the weights is kept (on the CPU), and when the run ends (finished,
    stopped or interrupted) the model gets those weights back; ``History.best_step`` says which
    validation they come from. Training itself is unchanged (the copies draw no random numbers),
    so where the last validation is the lowest the model ends exactly as without it.

    **Data parallel.** Every rank of a torchrun job calls ``train`` with its ``env``
    (:func:`lmcourse.distributed.setup`); ``cfg.device`` is then ignored for ``env.device``.
    ``cfg.batch_size`` stays the global batch of one step, cut into micro-batches of
    ``micro_batch_size`` windows (default: one per process); see :mod:`lmcourse.distributed`.
    Without ``env`` this is the one-rank case of the same loop. The one difference is dropout:
    given an ``env``, each micro-batch's dropout masks are seeded from (seed, step, micro-batch),
    so the losses do not depend on the number of processes; without one, torch is seeded once
    with ``cfg.seed``, as a notebook's single run expects. Only rank 0 prints and writes; each
    rank gets the same history. ``on_eval(step, history)`` is called on rank 0 after each
    validation. ``checkpoint_extra`` is written into every checkpoint (e.g. the vocabulary);
    ``check_checkpoint(state)`` may raise before a checkpoint is resumed from.

    ``parts`` (:class:`lmcourse.train_parts.TrainParts`) hands the AdamW step, the learning-rate schedule
    and the clipping to functions written elsewhere (notebook 02's students'); each one left ``None`` is the
    loop's own (``torch.optim.AdamW``, :func:`lr_at`, ``torch.nn.utils.clip_grad_norm_``).

    **Fast paths, each off by default** (a GPU run decides which earn a default): ``cfg.compile_mode``
    compiles the step whole (forward, loss and backward; the optimizer stays the fused AdamW) with
    ``torch.compile(mode=...)``, ``"reduce-overhead"`` replaying it as CUDA graphs; with dropout the
    compiled masks come from another random stream, so the losses differ from the plain path's.
    ``cfg.eval_sync_free`` reads the device once per validation (the same losses exactly), and
    ``cfg.attention`` names the SDPA kernel (:func:`attention_kernel`).

    **The checkpoint** (format :data:`CHECKPOINT_FORMAT`; :func:`load_checkpoint` reads it) is
    the model's saved form of :mod:`lmcourse.nn.checkpoint` — ``config`` (the model's config
    dict, or None for a model without one) and ``model`` (weights on the CPU), so
    :func:`lmcourse.nn.load_gpt` reads a GPT's — plus ``optimizer``, ``step``, ``history``,
    ``train_config`` (this :class:`TrainConfig`), ``samplers`` (every micro-batch's sampler
    state, whatever number of processes wrote it), ``micro_batch_size``, ``world_size``,
    ``dropout_seeds`` (``"once"`` or ``"per_step"``), ``torch_rng``, ``cuda_rng``, ``format``
    and ``checkpoint_extra``'s keys. ``model`` is always the last step's weights (what a resumed run
    continues from); with ``keep_best`` the best ones are under ``best``: ``{"step", "val_loss", "model"}``.
    """
    per_step_seeds = env is not None
    if env is None:
        env = DistEnv(device=torch.device(cfg.device) if cfg.device else pick_device())
    device = env.device
    if batch_fn is None:
        _check_tokens(train_tokens, val_tokens, cfg)
    ckpt = Path(cfg.checkpoint_path) if cfg.checkpoint_path else None
    state = load_checkpoint(ckpt) if cfg.resume and ckpt is not None and ckpt.exists() else None
    if env.distributed:  # every rank must resume from the same step, or none may (else they would hang)
        seen = gather_objects(None if state is None else state["step"], env)
        if len(set(seen)) > 1:
            raise CheckpointError(f"the ranks do not see the same checkpoint {ckpt} (steps by rank: {seen}); "
                                  "put it on storage every machine shares, or copy it to each")
    dropout_seeds = "per_step" if per_step_seeds else "once"
    if state is not None:
        if state["dropout_seeds"] != dropout_seeds:
            how = "with an env (lmcourse train, torchrun)" if state["dropout_seeds"] == "per_step" else \
                "without an env (one process, as a notebook)"
            raise CheckpointError(f"{ckpt} was written by a run {how}, which seeds dropout differently: resume "
                                  "it the same way, or start a new checkpoint")
        if check_checkpoint is not None:
            check_checkpoint(state)
    n_shards = shard_count(cfg.batch_size, cfg.block_size, micro_batch_size, env.world_size, state)
    micro = cfg.batch_size // n_shards
    mine = shards_of(env.rank, env.world_size, n_shards)

    model.to(device)
    model.train()
    if cfg.tokens_on_device and batch_fn is None:  # one copy now, none per step: the same batches
        train_tokens = train_tokens.to(device)
        val_tokens = None if val_tokens is None else val_tokens.to(device)
        batch_fn = batch_on_device
    if not per_step_seeds:
        torch.manual_seed(cfg.seed)
    parts = parts or TrainParts()
    opt = make_optimizer(model, cfg, device, adamw_step=parts.adamw_step)
    params = [p for g in opt.param_groups for p in g["params"]]
    gens = {k: torch.Generator().manual_seed(shard_seed(cfg.seed, k)) for k in mine}
    hist, start = History(), 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        for k in mine:
            gens[k].set_state(state["samplers"][k])
        if not per_step_seeds:  # dropout continues from where torch's generator stood
            torch.set_rng_state(state["torch_rng"])
            if state.get("cuda_rng") is not None and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state["cuda_rng"])
        names = {f.name for f in fields(History)}
        hist = History(**{k: v for k, v in state["history"].items() if k in names})
        hist.interrupted = False
        hist.best_step = hist.best_step if cfg.keep_best else None
        start = state["step"]
    best = state.get("best") if state is not None and cfg.keep_best else None  # {"step", "val_loss", "model"}
    extra = dict(checkpoint_extra or {})

    kernel = attention_kernel(cfg.attention, device, cfg.amp)  # before any step: a kernel that cannot run says so
    can_compile = (cfg.compile or bool(cfg.compile_mode)) and compile_ok(cfg, device)
    whole_step = can_compile and bool(cfg.compile_mode)  # the step's mode wins over compiling the model alone
    compile_model = can_compile and not cfg.compile_mode
    step_model = torch.compile(model) if compile_model else model  # shares the parameters
    scaler = _grad_scaler(device, cfg.amp)
    if state is not None and state.get("grad_scaler"):
        scaler.load_state_dict(state["grad_scaler"])
    ddp = None
    if env.distributed:
        from torch.nn.parallel import DistributedDataParallel

        ddp = DistributedDataParallel(step_model, device_ids=[device.index] if device.type == "cuda" else None)
        step_model = ddp
    weight = env.world_size / n_shards  # DDP averages over ranks: sum_k weight * loss_k / N = mean over shards

    def step_loss(x, y):
        with autocast(device, cfg.amp):
            logits = model_logits(_forward(step_model, x))
        return (loss_fn or lm_cross_entropy)(logits, y)

    if whole_step:  # forward, loss and (through AOTAutograd) backward as compiled graphs
        step_loss = torch.compile(step_loss, mode=cfg.compile_mode)
    graphs = whole_step and cfg.compile_mode == "reduce-overhead"

    def validate(step: int) -> None:
        nonlocal best
        if val_tokens is None or cfg.eval_batches <= 0 or (hist.val_steps and hist.val_steps[-1] == step):
            return
        hist.val_steps.append(step)
        hist.val_loss.append(_evaluate(model, val_tokens, cfg.batch_size, cfg.block_size, cfg.eval_batches,
                                       cfg.seed + 1, device, cfg.amp, batch_fn, loss_fn, micro, env,
                                       sync_free=cfg.eval_sync_free))
        if cfg.keep_best and (best is None or hist.val_loss[-1] < best["val_loss"]):
            best = {"step": step, "val_loss": hist.val_loss[-1],
                    "model": {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}}
        if on_eval is not None and env.is_main:
            on_eval(step, hist)

    def restore_best() -> None:
        """keep_best: the model gets the weights of its lowest validation loss back."""
        if best is not None:
            model.load_state_dict(best["model"])
            hist.best_step = best["step"]

    from tqdm.auto import tqdm

    last = cfg.steps if stop_after is None else min(cfg.steps, stop_after)
    t_start = time.perf_counter()
    train_time, tokens_done = 0.0, 0
    bar = tqdm(total=cfg.steps, initial=start, disable=not (env.is_main and want_progress(cfg)), unit="step",
               dynamic_ncols=True, leave=True)
    step, saved_at = start, None
    kernel.__enter__()
    try:
        if start == 0:
            validate(0)
        while step < last:
            t0 = time.perf_counter()
            lr = lr_at(step, cfg) if parts.lr_schedule is None else float(parts.lr_schedule(
                step, cfg.lr, cfg.lr * cfg.min_lr_ratio, cfg.warmup_steps, cfg.steps))
            for g in opt.param_groups:
                g["lr"] = lr
            opt.zero_grad(set_to_none=True)
            loss_sum = torch.zeros((), dtype=torch.float64, device=device)
            for i, k in enumerate(mine):
                x, y = (batch_fn or get_batch)(train_tokens, micro, cfg.block_size, gens[k], device)
                if per_step_seeds:
                    torch.manual_seed(micro_seed(cfg.seed, step, k))  # dropout: the same masks whatever N is
                sync = i == len(mine) - 1  # gradients are all-reduced on each rank's last backward
                with ddp.no_sync() if ddp is not None and not sync else contextlib.nullcontext():
                    if graphs:  # a new iteration: the graphs may reuse the last one's output memory
                        torch.compiler.cudagraph_mark_step_begin()
                    loss = step_loss(x, y)
                    scaler.scale(loss * weight).backward()
                loss_sum += loss.detach().double()
            loss_value = float(all_sum(loss_sum, env)) / n_shards  # synchronises: the timing is honest
            if not math.isfinite(loss_value):
                raise FloatingPointError(f"the loss became {loss_value} at step {step + 1}; "
                                         "try a smaller lr or a grad_clip")
            scaler.unscale_(opt)  # clipping and the norm see the true gradients
            if cfg.grad_clip is not None and parts.clip_grad_norm is not None:
                norm = parts.clip_grad_norm(params, cfg.grad_clip)
            elif cfg.grad_clip is not None:
                norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            else:
                norm = torch.linalg.vector_norm(
                    torch.stack([torch.linalg.vector_norm(p.grad) for p in params if p.grad is not None]))
            scaler.step(opt)  # skips the step when fp16 gradients overflowed
            scaler.update()
            step += 1
            if not ((cfg.compile or cfg.compile_mode) and step == start + 1):  # mostly compilation: untimed
                train_time += time.perf_counter() - t0
                tokens_done += cfg.batch_size * cfg.block_size
            hist.steps.append(step)
            hist.train_loss.append(loss_value)
            hist.lr.append(lr)
            hist.grad_norm.append(float(norm))
            if step % cfg.eval_interval == 0 or step == cfg.steps:
                validate(step)
            if ckpt is not None and cfg.checkpoint_interval and step % cfg.checkpoint_interval == 0:
                hist.tokens_per_sec = tokens_done / train_time if train_time > 0 else hist.tokens_per_sec
                _save(ckpt, model, opt, step, gens, n_shards, hist, cfg, env, dropout_seeds, extra, scaler, best)
                saved_at = step
            post = {"loss": f"{loss_value:.3f}", "tok/s": f"{tokens_done / max(train_time, 1e-9):,.0f}"}
            if hist.val_loss:
                post["val"] = f"{hist.val_loss[-1]:.3f}"
            bar.set_postfix(post, refresh=False)
            bar.update(1)
    except KeyboardInterrupt:
        hist.interrupted = True
        if env.distributed:  # the other ranks may be gone: no collective save
            bar.close()
            if env.is_main:
                kept = f"the checkpoint of step {saved_at} is kept" if saved_at else "no checkpoint was written"
                print(f"interrupted at step {step}; {kept}")
            hist.elapsed += time.perf_counter() - t_start
            restore_best()
            return hist
    finally:
        bar.close()
        kernel.__exit__(None, None, None)
    if step < cfg.steps:
        hist.interrupted = True
    hist.elapsed += time.perf_counter() - t_start
    hist.tokens_per_sec = tokens_done / train_time if train_time > 0 else hist.tokens_per_sec
    if best is not None:
        hist.best_step = best["step"]
    if ckpt is not None:
        _save(ckpt, model, opt, step, gens, n_shards, hist, cfg, env, dropout_seeds, extra, scaler, best)
    restore_best()  # after the save: the checkpoint's "model" stays the last step's, for --resume
    if not cfg.quiet and env.is_main:
        print(f"trained {step}/{cfg.steps} steps in {hist.elapsed:.1f} s "
              f"({hist.tokens_per_sec:,.0f} tokens/s on {device}){val_note(hist)}"
              f"{' (stopped early; resume=True continues)' if hist.interrupted else ''}")
    return hist


def val_note(hist: History, digits: int = 3) -> str:
    """``", val loss 3.142"`` for the summary line, with ``" (from step 0)"`` added when the last
    validation is older than the last step (a run stopped between evaluations); ``""`` without one."""
    if not hist.val_loss:
        return ""
    stale = hist.steps and hist.val_steps[-1] != hist.steps[-1]
    note = f", val loss {hist.final_val_loss:.{digits}f}" + (f" (from step {hist.val_steps[-1]})" if stale else "")
    if hist.best_step is not None and hist.best_step != hist.val_steps[-1]:
        note += f"; weights of step {hist.best_step} kept (val loss {hist.best_val_loss:.{digits}f}, the lowest)"
    return note
