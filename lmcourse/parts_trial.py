"""Which of a notebook's own AdamW step, schedule and clipping a training run can use: each is tried once against
the course's (``torch.optim.AdamW``, :func:`lmcourse.train.lr_at`, ``torch.nn.utils.clip_grad_norm_``) on a small
input, and the ones that agree go into the run's :class:`lmcourse.train_parts.TrainParts`. One that is missing,
raises or disagrees is left to the loop, with a line saying why: notebook 02's training run costs nothing for a
mistake its exercise's test cell already charges."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .train import TrainConfig, lr_at
from .train_parts import TrainParts

__all__ = ["yours_where_they_work"]


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
