"""A training run's optimizer step, learning-rate schedule and gradient clipping, written by someone else:
notebook 02's students write all three, then train their RNN with them.

:class:`TrainParts` holds the three functions (each ``None``: the loop's own) and :func:`lmcourse.train.train`
takes it as ``parts=``; the loop stays one loop, only these three calls change hands. Their contracts are the
exercises' (and :mod:`lmcourse.reference.rnn`'s):

* ``adamw_step(params, state, lr, betas, eps, weight_decay)``: one AdamW step, in place, on every parameter of
  the list that has a ``.grad``; ``state`` is one dict per parameter group, empty before the first step;
* ``lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps)``: the learning rate of the 0-based ``step``;
* ``clip_grad_norm(params, max_norm)``: the gradients rescaled in place to a global norm of at most
  ``max_norm``; the norm before clipping.

:func:`yours_where_they_work` tries each function once against the course's (``torch.optim.AdamW``,
:func:`lmcourse.train.lr_at`, ``torch.nn.utils.clip_grad_norm_``) and keeps the ones that agree, so a missing
or broken exercise costs its own points and never the notebook's training run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = ["StepOptimizer", "TrainParts", "yours_where_they_work"]


@dataclass(frozen=True)
class TrainParts:
    """The run's own optimizer step, schedule and clipping; each ``None`` is the loop's."""

    adamw_step: Callable | None = None  # adamw_step(params, state, lr, betas, eps, weight_decay), in place
    lr_schedule: Callable | None = None  # lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps) -> float
    clip_grad_norm: Callable | None = None  # clip_grad_norm(params, max_norm) -> the norm before clipping


class StepOptimizer(torch.optim.Optimizer):
    """A torch optimizer whose ``step`` is a function: ``step_fn(params, state, lr, betas, eps, weight_decay)``
    for each parameter group, with the group's own state dict (kept in ``self.state`` under the group's first
    parameter, so ``state_dict`` saves it) and the group's current settings (the loop sets ``lr`` every step)."""

    def __init__(self, param_groups, step_fn: Callable, lr: float, betas: tuple[float, float], eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(param_groups, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))
        self.step_fn = step_fn

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = group["params"]
            self.step_fn(params, self.state[params[0]], group["lr"], group["betas"], group["eps"],
                         group["weight_decay"])
        return loss


# ------------------------------------------------------------------ the trial

def _adamw_differs(step_fn: Callable) -> float:
    """The largest difference between ``step_fn`` and ``torch.optim.AdamW`` over four steps (float64)."""
    g = torch.Generator().manual_seed(0)
    mine = [torch.randn(3, 2, generator=g, dtype=torch.float64), torch.randn(4, generator=g, dtype=torch.float64)]
    theirs = [p.clone().requires_grad_() for p in mine]
    opt = torch.optim.AdamW(theirs, lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    state: dict = {}
    for _ in range(4):
        for a, b in zip(mine, theirs):
            a.grad = torch.randn(a.shape, generator=g, dtype=torch.float64)
            b.grad = a.grad.clone()
        with torch.no_grad():
            step_fn(mine, state, 0.01, (0.9, 0.99), 1e-8, 0.1)
        opt.step()
    return max(float((a - b.detach()).abs().max()) for a, b in zip(mine, theirs))


def _schedule_differs(schedule: Callable) -> float:
    from .train import TrainConfig, lr_at

    cfg = TrainConfig(steps=30, lr=3e-3, warmup_steps=4, min_lr_ratio=0.1)
    return max(abs(float(schedule(s, cfg.lr, cfg.lr * cfg.min_lr_ratio, cfg.warmup_steps, cfg.steps)) - lr_at(s, cfg))
               / cfg.lr for s in range(cfg.steps))


def _clip_differs(clip: Callable) -> float:
    g = torch.Generator().manual_seed(1)
    differs = 0.0
    for max_norm in (0.5, 100.0):
        mine = [torch.zeros(3, 2, dtype=torch.float64), torch.zeros(5, dtype=torch.float64)]
        for p in mine:
            p.grad = torch.randn(p.shape, generator=g, dtype=torch.float64)
        theirs = [p.clone().requires_grad_() for p in mine]
        for a, b in zip(mine, theirs):
            b.grad = a.grad.clone()
        norm = float(clip(mine, max_norm))
        want = float(torch.nn.utils.clip_grad_norm_(theirs, max_norm))
        differs = max(differs, abs(norm - want) / want,
                      *(float((a.grad - b.grad).abs().max()) / max_norm for a, b in zip(mine, theirs)))
    return differs


_TRIALS = {"adamw_step": (_adamw_differs, 1e-9, "torch.optim.AdamW"),
           "lr_schedule": (_schedule_differs, 1e-9, "the course's schedule"),
           "clip_grad_norm": (_clip_differs, 1e-5, "torch.nn.utils.clip_grad_norm_")}


def yours_where_they_work(*, quiet: bool = False, **functions: Callable | None) -> TrainParts:
    """The :class:`TrainParts` of ``functions`` (``adamw_step=``, ``lr_schedule=``, ``clip_grad_norm=``) that
    agree with the course's on a small trial; one that is missing, raises or disagrees is left to the loop,
    with a line saying why (unless ``quiet``)."""
    kept = {}
    for name, fn in functions.items():
        if name not in _TRIALS:
            raise TypeError(f"yours_where_they_work() takes adamw_step, lr_schedule and clip_grad_norm, not {name}")
        trial, tol, theirs = _TRIALS[name]
        why = None
        if fn is None:
            why = "not defined"
        else:
            try:
                differs = trial(fn)
            except Exception as err:    # noqa: BLE001 (an unfinished or broken exercise: the course's runs)
                why = f"it raised {type(err).__name__}" + (f": {err}" if str(err) else "")
            else:
                if not differs <= tol:
                    why = f"it differs from {theirs} by up to {differs:.2g} on a small trial"
        if why is None:
            kept[name] = fn
        if not quiet:
            print(f"{name}: " + ("yours" if why is None else f"the course's ({why}; your test cell says more)"))
    return TrainParts(**kept)
