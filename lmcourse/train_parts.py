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

:func:`lmcourse.parts_trial.yours_where_they_work` makes one from the functions that agree with the course's on
a small trial, so a missing or broken exercise costs its own points and never the notebook's training run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = ["StepOptimizer", "TrainParts"]


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
