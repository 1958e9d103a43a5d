"""Notebook 02's tests of the pieces of training: an AdamW step, the warm-up + cosine schedule and clipping by
the global norm (the visible cases, with the hints that teach).

The expected values are the reference's (:mod:`lmcourse.reference.rnn`, itself checked against
``torch.optim.AdamW``, ``lmcourse.train.lr_at`` and ``torch.nn.utils.clip_grad_norm_`` in the course's tests).
A diagnosis names a slip by what it does to a small input whose right answer is written in the test cell's
comment: a first AdamW step is ``lr * g / (|g| + eps)`` whatever the gradient's size, so a step of another
length says which part of the formula went missing.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .rules import exercise_rules
from .show import show
from .spec import Case, Compare, Exercise, close, when
from .tensors import plain_tensor

__all__ = ["ADAMW_STEP", "CLIP_GRAD_NORM", "LR_SCHEDULE", "adamw_run", "clip_run", "trajectory", "clipped"]

F64 = torch.float64


def _tensors(xs: Any) -> bool:
    return type(xs) is list and all(type(x) is torch.Tensor for x in xs)


def _near(got: Any, values: list[list[float]], atol: float = 1e-9) -> bool:
    """``got`` (a list of tensors) equals ``values``, tensor by tensor."""
    return _tensors(got) and len(got) == len(values) and all(
        g.shape == torch.Size([len(v)]) and float((g.double() - torch.tensor(v, dtype=F64)).abs().max()) < atol
        for g, v in zip(got, values) if v)


# ------------------------------------------------------------------ 8. adamw_step

# one step from an empty state, no decay: the worked example of the test cell
_P0, _G0, _FROZEN = [1.0, -2.0, 0.5, 3.0], [0.2, -0.4, 1e-4, 0.0], [7.0]
_LR, _BETAS, _EPS = 0.1, (0.9, 0.999), 1e-8


def adamw_run(params: list[list[float]], grads: list[list[list[float] | None]], lr: float | list[float],
              betas: tuple[float, float], eps: float, weight_decay: float, dtype=F64):
    """A case: the parameters ``params`` (1-D), and for each step each parameter's gradient (None: none), given
    to ``adamw_step`` with one state dict; what comes back is the parameters after each step."""
    def call(names):
        ps = [torch.tensor(p, dtype=dtype) for p in params]
        state: dict = {}
        after = []
        for k, step_grads in enumerate(grads):
            for p, g in zip(ps, step_grads):
                p.grad = None if g is None else torch.tensor(g, dtype=dtype)
            names.adamw_step(ps, state, lr[k] if type(lr) is list else lr, betas, eps, weight_decay)
            after.append([plain_tensor(p, "a parameter").detach().clone() for p in ps])
        return after
    return call


def trajectory(atol: float, hint: str) -> Compare:
    """The parameters after each step (a list of lists of tensors), each within ``atol`` of the reference's."""
    def compare(got: Any, want: Any) -> str | None:
        for k, (g_step, w_step) in enumerate(zip(got, want)):
            for i, (g, w) in enumerate(zip(g_step, w_step)):
                if type(g) is not torch.Tensor or g.shape != w.shape or g.dtype != w.dtype:
                    return (f"parameter {i} after step {k + 1} is {show(g)}, expected a {w.dtype} tensor of shape "
                            f"{tuple(w.shape)}: change each parameter in place and keep its dtype")
                err = float((g.double() - w.double()).abs().nan_to_num(float("inf")).max())
                if err > atol:
                    return (f"parameter {i} after step {k + 1} differs from torch.optim.AdamW's by up to {err:.3g} — "
                            f"{hint}")
        return None
    return compare


def _first(got: Any) -> Any:
    return got[0] if type(got) is list and got else None


def _step_is(step: list[float], params: list[float] = _P0) -> Any:
    """The first step moved parameter 0 by ``-step`` (entry by entry) and left the frozen one alone."""
    return lambda got, want: _near(_first(got), [[p - s for p, s in zip(params, step)], []])


_SIGN = [_LR * g / (abs(g) + _EPS) for g in _G0]          # the right first step: lr * sign(g), nearly
_NO_BIAS = [_LR * (1 - _BETAS[0]) * g / (math.sqrt(1 - _BETAS[1]) * abs(g) + _EPS) for g in _G0]
_ONLY_M = [_LR * g / (math.sqrt(1 - _BETAS[1]) * abs(g) + _EPS) for g in _G0]
_ONLY_V = [_LR * (1 - _BETAS[0]) * g / (abs(g) + _EPS) for g in _G0]
_EPS_IN = [_LR * g / math.sqrt(g * g + _EPS) for g in _G0]
_RAW = [_LR * g for g in _G0]

# one step with decay 0.1: p (1 - lr wd) - lr g / (|g| + eps)
_P1, _G1, _WD = [1.0, -2.0], [0.2, -0.4], 0.1
_STEP1 = [_LR * g / (abs(g) + _EPS) for g in _G1]


def _decayed(factor: float, after: bool = False) -> Any:
    want = [(p - s) * factor if after else p * factor - s for p, s in zip(_P1, _STEP1)]
    return lambda got, want_: _near(_first(got), [want], atol=1e-7)


def _first_right_later_wrong(got: Any, want: Any) -> bool:
    return (type(got) is list and len(got) > 1 and all(_tensors(s) for s in got)
            and all(torch.allclose(g.double(), w.double(), atol=1e-10, rtol=0) for g, w in zip(got[0], want[0]))
            and not all(torch.allclose(g.double(), w.double(), atol=1e-10, rtol=0) for g, w in zip(got[1], want[1])))


_STATE = ("keep each parameter's m, v and step count in `state` between calls: it is the same dict at every step "
          "(fill it, e.g. state[i] = {...}; rebinding the name state = {...} inside the function loses it), and the "
          "bias correction uses this step's count t, 1 - beta**t")
_NONE = "skip the parameters whose .grad is None (a frozen parameter gets none): leave them unchanged"

ADAMW_STEP = Exercise("adamw_step", (
    Case("adamw_step: the first step from an empty state (lr 0.1, betas (0.9, 0.999), eps 1e-8, no decay)",
         adamw_run([_P0, _FROZEN], [[_G0, None]], _LR, _BETAS, _EPS, 0.0),
         compare=trajectory(1e-12, "the first step is lr * m_hat / (sqrt(v_hat) + eps) with m_hat = g, v_hat = g²"),
         diagnoses=(
             when(lambda got, want: _near(_first(got), [_P0, _FROZEN]),
                  "no parameter changed: update each one in place under torch.no_grad() (p -= ..., p.sub_(...)); "
                  "p = p - ... only rebinds the name"),
             when(_step_is([-s for s in _SIGN]), "the parameters moved uphill: the step is p -= lr * m_hat / "
                                                 "(sqrt(v_hat) + eps)"),
             when(_step_is(_NO_BIAS), "the first step is 3.16 times too long (0.1 / sqrt(0.001)): the moments are "
                                      "not bias-corrected — divide m by 1 - beta1**t and v by 1 - beta2**t"),
             when(_step_is(_ONLY_M), "the first step is 31.6 times too long: m is bias-corrected but v is not — "
                                     "divide v by 1 - beta2**t too"),
             when(_step_is(_ONLY_V), "the first step is 10 times too short: v is bias-corrected but m is not — "
                                     "divide m by 1 - beta1**t too"),
             when(_step_is(_EPS_IN), "the step of the tiny gradient 1e-4 is 0.707 lr instead of lr: eps went inside "
                                     "the square root — it is added to sqrt(v_hat), lr * m_hat / (sqrt(v_hat) + eps)"),
             when(_step_is(_RAW), "the step is lr * g, plain SGD: AdamW steps by lr * m_hat / (sqrt(v_hat) + eps), "
                                  "about lr * sign(g) on the first step")),
         errors=(("NoneType", _NONE),)),
    Case("adamw_step: one step with weight decay 0.1 (lr 0.1)",
         adamw_run([_P1], [[_G1]], _LR, _BETAS, _EPS, _WD),
         compare=trajectory(1e-12, "decay the weight first, p *= 1 - lr * weight_decay, then take Adam's step"),
         diagnoses=(
             when(_decayed(1.0), "the weights show no decay: AdamW's decay is decoupled, p *= 1 - lr * weight_decay, "
                                 "apart from the moments (adding weight_decay * p to the gradient, Adam's L2, or "
                                 "scaling the gradient by it is divided away by sqrt(v_hat))"),
             when(_decayed(1 - _WD), "the decay is p *= 1 - weight_decay: it is scaled by the learning rate too, "
                                     "p *= 1 - lr * weight_decay"),
             when(_decayed(1 - _LR * _WD, after=True), "the decay was applied after Adam's step: decay the weight "
                                                       "first, then step (as torch.optim.AdamW)"))),
    Case("adamw_step: 6 steps vs torch.optim.AdamW (float64; lr 0.05, betas (0.9, 0.99), weight decay 0.1, two "
         "parameters and a frozen one)",
         adamw_run([[0.5, -1.0, 2.0], [0.3, 0.1], [4.0]],
                   [[[0.1 * (k + 1), -0.2, 0.05 * (-1) ** k], [0.3 - 0.1 * k, 0.02 * k], None] for k in range(6)],
                   0.05, (0.9, 0.99), 1e-8, 0.1),
         compare=trajectory(1e-12, "m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g², bias-corrected by "
                                   "this step's count t"),
         diagnoses=(when(_first_right_later_wrong, "the first step is right, later ones are not: " + _STATE
                         + "; and m decays with beta1 = betas[0], v with beta2 = betas[1] (swapped, the first step "
                           "is still right)"),),
         errors=(("NoneType", _NONE),)),
), rules=exercise_rules("write the update yourself, not with torch.optim", torch.optim.Optimizer,
                            "torch.optim.adamw", "torch.optim.adam", torch=("adam",)))


# ------------------------------------------------------------------ 9. lr_schedule

def _schedule(steps, *args):
    return lambda names: [names.lr_schedule(s, *args) for s in steps]


def _at(i: int, value: float) -> Any:
    return lambda got, want: type(got) is list and type(got[i]) in (int, float) and math.isclose(got[i], value,
                                                                                                 abs_tol=1e-12)


def _late_by_one(got: Any, want: Any) -> bool:
    return type(got) is list and all(type(g) in (int, float) for g in got) and all(
        math.isclose(g, w, rel_tol=1e-9) for g, w in zip(got[1:], want[:-1])) and got[0] != want[0]


_FLOOR = ("the cosine reaches min_lr at the last step, total_steps - 1: progress = (step - warmup_steps) / "
          "(total_steps - 1 - warmup_steps)")

LR_SCHEDULE = Exercise("lr_schedule", (
    Case("lr_schedule over 12 steps: max_lr 1.0, min_lr 0.1, 3 warm-up steps",
         _schedule(range(12), 1.0, 0.1, 3, 12), compare=close(rel=1e-9),
         diagnoses=(
             when(lambda got, want: type(got) is list and any(type(g) not in (int, float) for g in got),
                  "lr_schedule should return a Python float (math.cos, not torch.cos)"),
             when(_at(0, 0.0), "the first step's learning rate is 0: steps count from 0, so the warm-up is "
                               "max_lr * (step + 1) / warmup_steps (1/3, 2/3, 1)"),
             when(_late_by_one, "the schedule runs one step late: step counts from 0, warm-up max_lr * (step + 1) / "
                                "warmup_steps, and the cosine starts at step warmup_steps"),
             when(_at(11, 0.0), "the cosine decays to 0: it decays to min_lr, min_lr + (max_lr - min_lr) * "
                                "(1 + cos(pi * progress)) / 2"),
             when(_at(11, 1.0), "the learning rate comes back to max_lr at the end: half a cosine, cos(pi * progress) "
                                "with progress from 0 to 1"),
             when(lambda got, want: type(got) is list and type(got[-1]) is float and got[-1] > 0.1 + 1e-9, _FLOOR)),
         hint="warm-up max_lr * (step + 1) / warmup_steps; then min_lr + (max_lr - min_lr) * (1 + cos(pi * progress)) "
              "/ 2, progress = (step - warmup_steps) / (total_steps - 1 - warmup_steps)"),
    Case("lr_schedule(step, 3e-3, 3e-4, 50, 1000) at steps 0, 24, 49, 50, 51, 500, 998, 999",
         _schedule([0, 24, 49, 50, 51, 500, 998, 999], 3e-3, 3e-4, 50, 1000), compare=close(rel=1e-9),
         diagnoses=(when(lambda got, want: type(got) is list and type(got[-1]) is float and got[-1] > 3e-4 * (1 + 1e-9),
                         _FLOOR),)),
    Case("lr_schedule without warm-up (warmup_steps=0) over 5 steps", _schedule(range(5), 1.0, 0.1, 0, 5),
         compare=close(rel=1e-9), errors=(("division by zero", "with warmup_steps = 0 there is no warm-up: the "
                                                                 "first step (step 0) is already the cosine's, "
                                                                 "max_lr"),)),
), rules=exercise_rules("write the schedule yourself, not with torch.optim.lr_scheduler or the course's lr_at",
                            "torch.optim.lr_scheduler", "lmcourse.train:lr_at"))


# ------------------------------------------------------------------ 10. clip_grad_norm

def clip_run(grads: list[list[float] | list[list[float]] | None], max_norm: float):
    """A case: parameters with these gradients (None: none), clipped; what comes back is the returned norm and
    every gradient after the call."""
    def call(names):
        ps = [torch.zeros(torch.tensor(g).shape if g is not None else (2,), dtype=F64) for g in grads]
        for p, g in zip(ps, grads):
            p.grad = None if g is None else torch.tensor(g, dtype=F64)
        ret = names.clip_grad_norm(ps, max_norm)
        if type(ret) is torch.Tensor:
            ret = plain_tensor(ret, "the norm").detach().clone()
        return {"norm": ret, "grads": [None if p.grad is None else plain_tensor(p.grad, "a gradient").detach().clone()
                                       for p in ps]}
    return call


def _norm_of(x: Any) -> float | None:
    if type(x) in (int, float):
        return float(x)
    if type(x) is torch.Tensor and x.numel() == 1:
        return float(x)
    return None


def clipped() -> Compare:
    """The returned norm (a float, or a tensor of one number) within 1e-9, and every gradient within 1e-5 of the
    reference's (torch's clip_grad_norm_ divides by norm + 1e-6: that way is right too)."""
    def compare(got: Any, want: Any) -> str | None:
        norm = _norm_of(got["norm"])
        if norm is None:
            return f"clip_grad_norm returned {show(got['norm'])}: return the global norm before clipping, a float"
        if not math.isclose(norm, want["norm"], rel_tol=1e-9):
            return f"clip_grad_norm returned {norm:.6g}, expected the global norm before clipping, {want['norm']:.6g}"
        for i, (g, w) in enumerate(zip(got["grads"], want["grads"])):
            if w is None:
                if g is not None:
                    return f"parameter {i} had no gradient and got one: leave .grad None where it is"
                continue
            if type(g) is not torch.Tensor or g.shape != w.shape or not torch.allclose(g.double(), w, rtol=1e-5,
                                                                                        atol=1e-12):
                return (f"the gradient of parameter {i} is {show(g)} after clipping, expected {show(w)}: multiply "
                        "every gradient in place by max_norm / norm when norm > max_norm")
        return None
    return compare


_G_CLIP = [[2.0, 1.0, 2.0], [[0.0, 4.0]]]      # norms 3 and 4: the global norm is 5


def _grads_are(values: list) -> Any:
    def predicate(got, want):
        return all(type(g) is torch.Tensor and torch.allclose(g, torch.tensor(v, dtype=F64), atol=1e-9)
                   for g, v in zip(got["grads"], values))
    return predicate


def _returned(value: float) -> Any:
    return lambda got, want: _norm_of(got["norm"]) is not None and math.isclose(_norm_of(got["norm"]), value,
                                                                                 rel_tol=1e-6)


CLIP_GRAD_NORM = Exercise("clip_grad_norm", (
    Case("clip_grad_norm: gradients [2, 1, 2] and [[0, 4]] (norms 3 and 4, global norm 5), max_norm 1",
         clip_run(_G_CLIP, 1.0), compare=clipped(),
         diagnoses=(
             when(_grads_are([[2 / 3, 1 / 3, 2 / 3], [[0.0, 1.0]]]),
                  "each tensor was clipped to its own norm: the norm is global, the square root of the sum of "
                  "every gradient's squared entries (sqrt(3² + 4²) = 5), and one factor max_norm / 5 scales them all"),
             when(_grads_are([[1.0, 1.0, 1.0], [[0.0, 1.0]]]),
                  "each entry was clamped to [-1, 1]: that is clipping by value; clipping by norm rescales the whole "
                  "gradient, keeping its direction"),
             when(_grads_are(_G_CLIP), "the gradients are unchanged: rescale them in place, p.grad.mul_(max_norm / "
                                       "norm) (p.grad = p.grad * ... works too)"),
             when(_returned(1.0), "clip_grad_norm returned the norm after clipping: return the one before (5 here), "
                                  "what a training loop plots"),
             when(_returned(7.0), "the global norm is sqrt(3² + 4²) = 5, not the sum of the tensors' norms (7)"),
             when(_returned(25.0), "25 is the squared norm: take its square root")),
         errors=(("NoneType", _NONE.replace("leave them unchanged", "they take no part in the norm")),)),
    Case("clip_grad_norm: the same gradients (global norm 5) with max_norm 10: nothing to clip",
         clip_run(_G_CLIP, 10.0), compare=clipped(),
         diagnoses=(when(_grads_are([[4.0, 2.0, 4.0], [[0.0, 8.0]]]),
                         "the gradients were scaled up to norm 10 although their norm, 5, is below max_norm: rescale "
                         "only when norm > max_norm"),)),
    Case("clip_grad_norm vs torch.nn.utils.clip_grad_norm_ (float64, three parameters, one without a gradient), "
         "max_norm 0.5",
         clip_run([[0.3, -0.2, 0.1, 0.4], None, [[0.25, -0.5], [0.05, 0.0]]], 0.5), compare=clipped(),
         errors=(("NoneType", _NONE.replace("leave them unchanged", "they take no part in the norm")),)),
), rules=exercise_rules("compute the norm and rescale the gradients yourself, not with "
                            "torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad"))
