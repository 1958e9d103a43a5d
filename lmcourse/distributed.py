"""Data-parallel training: the course's loop (:mod:`lmcourse.train`) on N processes.

One optimisation step uses a *global batch* of ``cfg.batch_size`` windows, cut into ``S``
equal *shards* of ``micro_batch_size`` windows. Shard ``k`` has a batch sampler of its own,
seeded from the run seed and ``k`` (:func:`shard_seed`), and its dropout masks come from a seed
of the run seed, the step and ``k`` (:func:`micro_seed`). Process (rank) ``r`` of ``N`` works
on the shards ``r, r + N, r + 2N, ...``: a forward and backward pass per shard, gradients
accumulated locally, then one all-reduce (``DistributedDataParallel``) that averages them over
the processes. Each shard's loss is weighted so that the gradient is the mean over the ``S``
shards::

    g = (1 / S) * sum_k grad loss_k          the same for N = 1, 2, ..., S processes

So the number of processes changes where the work runs, not what is computed: the losses of
a run depend on ``(seed, batch_size, micro_batch_size)``, never on ``N``, up to the order in
which floating-point sums are taken. With ``N = S`` each rank draws its own batches from a
seed derived from the run seed and its rank; with ``N = 1`` and ``S = 1`` a step is exactly
one step of :func:`lmcourse.train.train` with the same settings.

Validation is split too: the windows are drawn as :func:`lmcourse.train.estimate_loss` draws
them (one generator seeded ``seed + 1``), rank ``r`` scores batches ``r, r + N, ...``, and
the sum is all-reduced, so every rank gets the same value as one process would.

Only rank 0 prints and writes checkpoints. A checkpoint holds the model (in the layout of
:func:`lmcourse.nn.save_gpt`, so :func:`lmcourse.nn.load_gpt` reads it), the optimizer, the
step, the history and the state of all ``S`` batch samplers, whatever ``N`` wrote it: a run
written by ``N`` processes resumes on any ``M <= S`` processes with the same next batches.

Process groups follow torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``): NCCL with one GPU per process on CUDA, gloo on the CPU.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch

from .data import get_batch
from .train import (
    History,
    TrainConfig,
    _autocast,
    _want_progress,
    lm_cross_entropy,
    lr_at,
    make_optimizer,
    model_logits,
)

__all__ = ["DistEnv", "setup", "teardown", "shard_seed", "micro_seed", "shards_of", "train_parallel",
           "CheckpointError", "BatchSplitError", "load_checkpoint"]

_SHARD_STRIDE = 1_000_003  # shard k's sampler seed is seed + k * this (shard 0: the run seed itself)


class CheckpointError(ValueError):
    """A checkpoint cannot continue this run; the message says why and what to change."""


class BatchSplitError(ValueError):
    """The global batch does not split into micro-batches over the processes; the message says how."""


@dataclass(frozen=True)
class DistEnv:
    """Where this process stands: its rank among ``world_size`` processes, and its device."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")
    backend: str | None = None  # "nccl" or "gloo" when a process group is up, else None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def setup(device: str | None = None) -> DistEnv:
    """Join the process group torchrun describes (a single process when ``WORLD_SIZE`` is unset or 1).

    ``device`` is ``"cpu"``, ``"cuda"`` or ``None`` (CUDA when there is a GPU). With several
    processes on CUDA, process ``LOCAL_RANK`` takes GPU ``LOCAL_RANK`` and the backend is NCCL;
    on the CPU it is gloo.
    """
    from .runtime import pick_device

    world = _env_int("WORLD_SIZE", 1)
    rank, local_rank = _env_int("RANK", 0), _env_int("LOCAL_RANK", 0)
    if world <= 1:
        return DistEnv(device=pick_device(device))
    import torch.distributed as dist

    want = torch.device(device) if device else None
    use_cuda = torch.cuda.is_available() and (want is None or want.type == "cuda")
    if want is not None and want.type not in ("cpu", "cuda"):
        raise ValueError(f"data-parallel training runs on 'cpu' or 'cuda' devices, not {device!r}")
    if want is not None and want.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was asked for, but torch sees no CUDA GPU")
    if use_cuda:
        if local_rank >= torch.cuda.device_count():
            raise RuntimeError(f"LOCAL_RANK={local_rank} but this machine has {torch.cuda.device_count()} GPU(s): "
                               "start at most one process per GPU (torchrun --nproc_per_node)")
        dev = torch.device("cuda", local_rank)
        torch.cuda.set_device(dev)
        backend = "nccl"
    else:
        dev, backend = torch.device("cpu"), "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend, rank=rank, world_size=world)
    return DistEnv(rank=rank, world_size=world, local_rank=local_rank, device=dev, backend=backend)


def teardown(env: DistEnv) -> None:
    """Leave the process group (if this process joined one)."""
    import torch.distributed as dist

    if env.distributed and dist.is_initialized():
        dist.destroy_process_group()


def shard_seed(seed: int, shard: int) -> int:
    """Seed of shard ``shard``'s batch sampler: the run seed for shard 0, distinct for the others."""
    return seed + shard * _SHARD_STRIDE


def micro_seed(seed: int, step: int, shard: int) -> int:
    """Seed of torch's RNG (dropout) for shard ``shard`` at step ``step`` (0-based)."""
    return (seed * 0x9E3779B1 + (step + 1) * 0x85EBCA6B + shard * 0xC2B2AE35) % (2**63 - 1)


def shards_of(rank: int, world_size: int, n_shards: int) -> list[int]:
    """The shards rank ``rank`` of ``world_size`` works on: ``rank, rank + world_size, ...``."""
    return list(range(rank, n_shards, world_size))


def _all_sum(value: torch.Tensor, env: DistEnv) -> torch.Tensor:
    if env.distributed:
        import torch.distributed as dist

        dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return value


def _validate(model, tokens: torch.Tensor, cfg: TrainConfig, micro: int, env: DistEnv, batch_fn) -> float:
    """The mean loss :func:`lmcourse.train.estimate_loss` computes, with the batches split over ranks
    and each batch scored in chunks of ``micro`` windows (chunks of equal size: same mean)."""
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    was_training = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=env.device)
    with torch.no_grad():
        for i in range(cfg.eval_batches):
            x, y = (batch_fn or get_batch)(tokens, cfg.batch_size, cfg.block_size, gen, env.device)
            if i % env.world_size != env.rank:
                continue  # drawn anyway, so every rank's generator sees the same sequence
            for j in range(0, cfg.batch_size, micro):
                with _autocast(env.device, cfg.amp):
                    logits = model_logits(model(x[j:j + micro]))
                total += lm_cross_entropy(logits, y[j:j + micro]).double() * (x[j:j + micro].shape[0] / cfg.batch_size)
    model.train(was_training)
    return float(_all_sum(total, env)) / cfg.eval_batches


def load_checkpoint(path: str | Path) -> dict:
    """A checkpoint written by :func:`train_parallel`, on the CPU."""
    return torch.load(path, map_location="cpu", weights_only=False)


def _save(path: Path, model, opt, step: int, gens: dict[int, torch.Generator], n_shards: int, hist: History,
          cfg: TrainConfig, env: DistEnv, extra: dict) -> None:
    """Gather every shard's sampler state on rank 0 and write the checkpoint there (all ranks call this)."""
    mine = {k: g.get_state() for k, g in gens.items()}
    if env.distributed:
        import torch.distributed as dist

        parts: list = [None] * env.world_size
        dist.all_gather_object(parts, mine)
        for part in parts:
            mine.update(part)
    if not env.is_main:
        return
    state = {**extra,
             "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
             "optimizer": opt.state_dict(), "step": step,
             "samplers": [mine[k] for k in range(n_shards)],
             "micro_batch_size": cfg.batch_size // n_shards, "world_size": env.world_size,
             "history": asdict(hist), "train_config": asdict(cfg)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # never leave a half-written checkpoint behind


def _shards_for(cfg: TrainConfig, micro_batch_size: int | None, env: DistEnv, state: dict | None) -> int:
    """How many shards the global batch is cut into (from the checkpoint when resuming)."""
    B = cfg.batch_size
    if state is not None:
        n = len(state["samplers"])
        saved = state.get("train_config", {})
        for name in ("batch_size", "block_size"):
            if name in saved and saved[name] != getattr(cfg, name):
                raise CheckpointError(f"the checkpoint was trained with {name}={saved[name]}, this run asks for "
                                      f"{name}={getattr(cfg, name)}: the batches would not continue; pass "
                                      f"--{name} {saved[name]} or start a new checkpoint")
        if micro_batch_size is not None and micro_batch_size * n != B:
            raise CheckpointError(f"the checkpoint cuts each batch of {B} windows into {n} micro-batches of "
                                  f"{B // n}; pass --micro_batch_size {B // n} (or leave it out)")
    elif micro_batch_size is not None:
        if micro_batch_size < 1 or B % micro_batch_size:
            raise BatchSplitError(f"micro_batch_size={micro_batch_size} must divide batch_size={B}")
        n = B // micro_batch_size
    else:
        if B % env.world_size:
            raise BatchSplitError(f"batch_size={B} windows do not split evenly over {env.world_size} processes; "
                             "choose a batch_size divisible by the number of processes, or a micro_batch_size")
        n = env.world_size
    if env.world_size > n:
        raise BatchSplitError(f"{env.world_size} processes but only {n} micro-batches of {B // n} windows per step: "
                         f"run at most {n} processes, or a smaller micro_batch_size")
    return n


def train_parallel(model: torch.nn.Module, train_tokens: torch.Tensor, val_tokens: torch.Tensor | None,
                   cfg: TrainConfig, env: DistEnv | None = None, micro_batch_size: int | None = None,
                   stop_after: int | None = None, batch_fn=None, checkpoint_extra: dict | None = None,
                   check_checkpoint=None) -> History:
    """:func:`lmcourse.train.train` on ``env.world_size`` processes; every rank calls it and gets the history.

    Tokens/s count the training steps only (not validation, not checkpoints; with
    ``cfg.compile``, not the first step, which compiles). ``micro_batch_size`` windows go through
    the model at a time (default: ``cfg.batch_size``
    over the number of processes); ``cfg.batch_size`` stays the global batch of one step.
    ``checkpoint_extra`` is written into every checkpoint (e.g. the model's config and the
    vocabulary); ``check_checkpoint(state)`` may raise :class:`CheckpointError` before a
    checkpoint is resumed from. ``cfg.device`` is ignored: the device is ``env.device``.
    """
    env = env or DistEnv(device=torch.device(cfg.device) if cfg.device else torch.device("cpu"))
    device = env.device
    for name, toks in (("train_tokens", train_tokens), ("val_tokens", val_tokens)):
        if toks is None:
            continue
        if toks.dim() != 1 or toks.dtype != torch.long:
            raise ValueError(f"{name} must be a 1-D LongTensor of token ids, got {toks.dtype} {tuple(toks.shape)}")
        if toks.numel() <= cfg.block_size:
            raise ValueError(f"{name} has {toks.numel()} tokens; a window needs block_size + 1 = {cfg.block_size + 1}")
    ckpt = Path(cfg.checkpoint_path) if cfg.checkpoint_path else None
    state = load_checkpoint(ckpt) if cfg.resume and ckpt is not None and ckpt.exists() else None
    if env.distributed:  # every rank must resume from the same step, or none may (else they would hang)
        import torch.distributed as dist

        seen: list = [None] * env.world_size
        dist.all_gather_object(seen, None if state is None else state["step"])
        if len(set(seen)) > 1:
            raise CheckpointError(f"the ranks do not see the same checkpoint {ckpt} (steps by rank: {seen}); "
                                  "put it on storage every machine shares, or copy it to each")
    if state is not None and check_checkpoint is not None:
        check_checkpoint(state)
    n_shards = _shards_for(cfg, micro_batch_size, env, state)
    micro = cfg.batch_size // n_shards
    mine = shards_of(env.rank, env.world_size, n_shards)

    model.to(device)
    model.train()
    opt = make_optimizer(model, cfg, device)
    params = [p for g in opt.param_groups for p in g["params"]]
    gens = {k: torch.Generator().manual_seed(shard_seed(cfg.seed, k)) for k in mine}
    hist, start = History(), 0
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        for k in mine:
            gens[k].set_state(state["samplers"][k])
        names = {f.name for f in fields(History)}
        hist = History(**{k: v for k, v in state["history"].items() if k in names})
        hist.interrupted = False
        start = state["step"]
    extra = dict(checkpoint_extra or {})

    step_model = torch.compile(model) if cfg.compile else model  # shares the parameters with model
    ddp = None
    if env.distributed:
        from torch.nn.parallel import DistributedDataParallel

        ddp = DistributedDataParallel(step_model, device_ids=[device.index] if device.type == "cuda" else None)
        step_model = ddp
    weight = env.world_size / n_shards  # DDP averages over ranks: sum_k weight * loss_k / N = mean over shards

    def validate(step: int) -> None:
        if val_tokens is None or cfg.eval_batches <= 0 or (hist.val_steps and hist.val_steps[-1] == step):
            return
        hist.val_steps.append(step)
        hist.val_loss.append(_validate(model, val_tokens, cfg, micro, env, batch_fn))

    from tqdm.auto import tqdm

    last = cfg.steps if stop_after is None else min(cfg.steps, stop_after)
    t_start = time.perf_counter()
    train_time, tokens_done = 0.0, 0
    bar = tqdm(total=cfg.steps, initial=start, disable=not (env.is_main and _want_progress(cfg)), unit="step",
               dynamic_ncols=True, leave=True)
    step, saved_at = start, None
    try:
        if start == 0:
            validate(0)
        while step < last:
            t0 = time.perf_counter()
            lr = lr_at(step, cfg)
            for g in opt.param_groups:
                g["lr"] = lr
            opt.zero_grad(set_to_none=True)
            loss_sum = torch.zeros((), dtype=torch.float64, device=device)
            for i, k in enumerate(mine):
                x, y = (batch_fn or get_batch)(train_tokens, micro, cfg.block_size, gens[k], device)
                torch.manual_seed(micro_seed(cfg.seed, step, k))  # dropout: the same masks whatever N is
                sync = i == len(mine) - 1  # gradients are all-reduced on each rank's last backward
                with ddp.no_sync() if ddp is not None and not sync else contextlib.nullcontext():
                    with _autocast(device, cfg.amp):
                        logits = model_logits(step_model(x))
                    loss = lm_cross_entropy(logits, y)
                    (loss * weight).backward()
                loss_sum += loss.detach().double()
            loss_value = float(_all_sum(loss_sum, env)) / n_shards  # synchronises: the timing is honest
            if not math.isfinite(loss_value):
                raise FloatingPointError(f"the loss became {loss_value} at step {step + 1}; "
                                         "try a smaller lr or a grad_clip")
            if cfg.grad_clip is not None:
                norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            else:
                norm = torch.linalg.vector_norm(
                    torch.stack([torch.linalg.vector_norm(p.grad) for p in params if p.grad is not None]))
            opt.step()
            step += 1
            if not (cfg.compile and step == start + 1):  # the first compiled step is mostly compilation
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
                _save(ckpt, model, opt, step, gens, n_shards, hist, cfg, env, extra)
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
            return hist
    finally:
        bar.close()
    if step < cfg.steps:
        hist.interrupted = True
    hist.elapsed += time.perf_counter() - t_start
    hist.tokens_per_sec = tokens_done / train_time if train_time > 0 else hist.tokens_per_sec
    if ckpt is not None:
        _save(ckpt, model, opt, step, gens, n_shards, hist, cfg, env, extra)
    return hist
