"""Data-parallel training's process side: the process group, the shards of a batch, and their seeds.

The training loop itself is :func:`lmcourse.train.train`; given a :class:`DistEnv` it runs as
one rank of ``N`` (nanoGPT's habit: data parallelism is a branch of the one loop, not a second
loop). This module holds what that branch needs and nothing of the loop, so it imports nothing
from :mod:`lmcourse.train`.

One optimisation step uses a *global batch* of ``cfg.batch_size`` windows, cut into ``S``
equal *shards* of ``micro_batch_size`` windows (:func:`shard_count`). Shard ``k`` has a batch
sampler of its own, seeded from the run seed and ``k`` (:func:`shard_seed`), and its dropout
masks come from a seed of the run seed, the step and ``k`` (:func:`micro_seed`). Process (rank)
``r`` of ``N`` works on the shards ``r, r + N, r + 2N, ...`` (:func:`shards_of`): a forward and
backward pass per shard, gradients accumulated locally, then one all-reduce
(``DistributedDataParallel``) that averages them over the processes. Each shard's loss is
weighted so that the gradient is the mean over the ``S`` shards::

    g = (1 / S) * sum_k grad loss_k          the same for N = 1, 2, ..., S processes

So the number of processes changes where the work runs, not what is computed: the losses of
a run depend on ``(seed, batch_size, micro_batch_size)``, never on ``N``, up to the order in
which floating-point sums are taken. A checkpoint keeps all ``S`` samplers, whatever ``N``
wrote it, so a run resumes on any ``M <= S`` processes with the same next batches.

Process groups follow torchrun's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``): NCCL with one GPU per process on CUDA, gloo on the CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

__all__ = ["DistEnv", "setup", "teardown", "shard_seed", "micro_seed", "shards_of", "shard_count", "all_sum",
           "gather_objects", "CheckpointError", "BatchSplitError"]

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


def all_sum(value: torch.Tensor, env: DistEnv) -> torch.Tensor:
    """``value`` summed over the processes, in place (itself with one process)."""
    if env.distributed:
        import torch.distributed as dist

        dist.all_reduce(value, op=dist.ReduceOp.SUM)
    return value


def gather_objects(obj, env: DistEnv) -> list:
    """``obj`` of every rank, in rank order (``[obj]`` with one process)."""
    if not env.distributed:
        return [obj]
    import torch.distributed as dist

    out: list = [None] * env.world_size
    dist.all_gather_object(out, obj)
    return out


def shard_count(batch_size: int, block_size: int, micro_batch_size: int | None, world_size: int,
                state: dict | None = None) -> int:
    """How many shards (micro-batches) a global batch of ``batch_size`` windows is cut into.

    Resuming (``state`` is the checkpoint), the checkpoint's count; else ``batch_size //
    micro_batch_size``, or one shard per process when no ``micro_batch_size`` is given.
    """
    B = batch_size
    if state is not None:
        n = len(state["samplers"])
        saved = state.get("train_config", {})
        for name, value in (("batch_size", batch_size), ("block_size", block_size)):
            if name in saved and saved[name] != value:
                raise CheckpointError(f"the checkpoint was trained with {name}={saved[name]}, this run asks for "
                                      f"{name}={value}: the batches would not continue; pass "
                                      f"--{name} {saved[name]} or start a new checkpoint")
        if micro_batch_size is not None and micro_batch_size * n != B:
            raise CheckpointError(f"the checkpoint cuts each batch of {B} windows into {n} micro-batches of "
                                  f"{B // n}; pass --micro_batch_size {B // n} (or leave it out)")
    elif micro_batch_size is not None:
        if micro_batch_size < 1 or B % micro_batch_size:
            raise BatchSplitError(f"micro_batch_size={micro_batch_size} must divide batch_size={B}")
        n = B // micro_batch_size
    else:
        if B % world_size:
            raise BatchSplitError(f"batch_size={B} windows do not split evenly over {world_size} processes; "
                                  "choose a batch_size divisible by the number of processes, or a micro_batch_size")
        n = world_size
    if world_size > n:
        raise BatchSplitError(f"{world_size} processes but only {n} micro-batches of {B // n} windows per step: "
                              f"run at most {n} processes, or a smaller micro_batch_size")
    return n
