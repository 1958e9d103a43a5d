"""Notebook 10 (scaling laws): the reference answers, and ``REFERENCE``, the names that do its exercises.

1. parameters: the lectures' non-embedding count ``12 n_layer d^2`` and the general
   ``2 d n_layer (2 d_attn + d_ff)``;
2. compute: training FLOPs ``6 N D`` (forward 2, backward 4 per parameter per token), with Kaplan's
   attention term as an option, and petaflop/s-days;
3. power laws ``L = E + A x^(-alpha)``: a line in log space when ``E = 0``, else a Huber fit in log space
   (Hoffmann et al.'s objective) by L-BFGS from a grid of starting points;
4. IsoFLOP analysis (Chinchilla's approach 2): a parabola in ``log N`` per budget, then
   ``N_opt = k_N C^a`` and ``D_opt = k_D C^b`` with ``D = C / (6 N)``, so ``a + b = 1``;
5. the closed-form compute-optimal split of ``L(N, D) = E + A / N^alpha + B / D^beta`` (approach 3).

Plain floats and lists in, plain floats out; numpy and torch only (no scipy). Written for clarity.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import torch

__all__ = ["REFERENCE", "PF_DAY", "non_embedding_params", "transformer_params", "training_flops", "pf_days",
           "fit_power_law", "fit_power_law_offset", "power_law", "isoflop_parabola", "isoflop_minima",
           "fit_exponents", "compute_optimal", "tokens_per_parameter", "answer_q_six", "answer_q_trend"]

PF_DAY = 1e15 * 86_400  # FLOPs in one petaflop/s-day: 1e15 FLOPs a second for a day


# --- 1. parameters ---------------------------------------------------------------------------------

def transformer_params(n_layer: int, d_model: int, d_attn: int | None = None, d_ff: int | None = None) -> int:
    """Kaplan's non-embedding count ``2 d n_layer (2 d_attn + d_ff)``: per block the four attention
    projections (``4 d d_attn``) and the MLP's two (``2 d d_ff``); biases and LayerNorms left out.
    ``d_attn`` defaults to ``d``, ``d_ff`` to ``4 d``."""
    d_attn = d_model if d_attn is None else d_attn
    d_ff = 4 * d_model if d_ff is None else d_ff
    return 2 * d_model * n_layer * (2 * d_attn + d_ff)


def non_embedding_params(n_layer: int, d_model: int) -> int:
    """``12 n_layer d^2``: :func:`transformer_params` with ``d_attn = d_ff / 4 = d``."""
    return 12 * n_layer * d_model ** 2


# --- 2. compute --------------------------------------------------------------------------------------

def training_flops(n_params: float, n_tokens: float, n_layer: int | None = None, n_ctx: int | None = None,
                   d_attn: int | None = None) -> float:
    """Training FLOPs ``6 N D``: per parameter per token 2 forward (a multiply and an add) and 4 backward
    (the gradients of the inputs and of the weights). Given ``n_layer``, ``n_ctx`` and ``d_attn``, Kaplan's
    attention term is added: ``2 n_layer n_ctx d_attn`` per token forward (scores and the weighted sum),
    three times that for training."""
    flops = 6.0 * n_params * n_tokens
    given = [v is not None for v in (n_layer, n_ctx, d_attn)]
    if any(given) and not all(given):
        raise ValueError("the attention term needs n_layer, n_ctx and d_attn together")
    if all(given):
        flops += 3 * 2.0 * n_layer * n_ctx * d_attn * n_tokens
    return flops


def pf_days(flops: float) -> float:
    """FLOPs in petaflop/s-days (``1 PF-day = 1e15 * 86400 = 8.64e19`` FLOPs)."""
    return flops / PF_DAY


# --- 3. power laws -----------------------------------------------------------------------------------

def power_law(x, E: float, A: float, alpha: float):
    """``E + A x^(-alpha)`` (a float, or an array for an array ``x``)."""
    if np.isscalar(x):
        return E + A * float(x) ** (-alpha)
    return E + A * np.asarray(x, dtype=float) ** (-alpha)


def fit_power_law(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """``(A, alpha)`` of ``y = A x^(-alpha)``: least squares of ``log y = log A - alpha log x``."""
    lx, ly = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    slope, intercept = np.polyfit(lx, ly, 1)
    return float(math.exp(intercept)), float(-slope)


def _huber(r: torch.Tensor, delta: float) -> torch.Tensor:
    a = r.abs()
    return torch.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def _lbfgs_from(start, lx: torch.Tensor, ly: torch.Tensor, delta: float) -> tuple[tuple[float, float, float], float]:
    """One L-BFGS run of :func:`fit_power_law_offset`'s objective from ``start = (e, a, alpha)``:
    the parameters it ends at and the objective there."""
    theta = torch.tensor(start, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([theta], lr=1.0, max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15,
                            line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = _objective(theta, lx, ly, delta)
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return tuple(theta.tolist()), float(_objective(theta, lx, ly, delta))


def _objective(theta: torch.Tensor, lx: torch.Tensor, ly: torch.Tensor, delta: float) -> torch.Tensor:
    """Huber loss of ``log(exp(e) + exp(a - alpha log x)) - log y``, summed over the points."""
    e, a, alpha = theta[0], theta[1], theta[2]
    pred = torch.logsumexp(torch.stack([e.expand_as(lx), a - alpha * lx]), dim=0)  # (n,) log of the law's value
    return _huber(pred - ly, delta).sum()


def fit_power_law_offset(x: Sequence[float], y: Sequence[float], delta: float = 1e-3,
                         starts: Sequence[tuple[float, float, float]] | None = None) -> tuple[float, float, float]:
    """``(E, A, alpha)`` of ``y = E + A x^(-alpha)``, Hoffmann et al.'s way: with ``E = exp(e)`` and
    ``A = exp(a)``, minimise the Huber loss (``delta``) of ``log(exp(e) + exp(a - alpha log x)) - log y``
    with L-BFGS from every start on a grid of ``(e, a, alpha)`` and keep the best. The log-sum-exp form
    keeps both terms positive and the objective on one scale whatever the size of ``x``."""
    lx = torch.as_tensor(np.log(np.asarray(x, dtype=float)), dtype=torch.float64)
    ly = torch.as_tensor(np.log(np.asarray(y, dtype=float)), dtype=torch.float64)
    if starts is None:
        y_min = float(np.min(y))
        es = [math.log(y_min * f) for f in (0.1, 0.5, 0.9)]
        alphas = [0.05, 0.2, 0.5, 1.0]
        starts = []
        for e0, al in itertools.product(es, alphas):  # a start whose first point sits on the data
            gap = max(math.exp(float(ly[0])) - math.exp(e0), 1e-6)
            starts.append((e0, math.log(gap) + al * float(lx[0]), al))
    best, best_loss = None, math.inf
    for start in starts:
        theta, loss = _lbfgs_from(start, lx, ly, delta)
        if math.isfinite(loss) and loss < best_loss:
            best, best_loss = theta, loss
    e, a, alpha = best
    return math.exp(e), math.exp(a), alpha


# --- 4. IsoFLOP analysis ----------------------------------------------------------------------------

def isoflop_parabola(params: Sequence[float], losses: Sequence[float]) -> tuple[tuple[float, float, float], float]:
    """The parabola ``L = a (ln N)^2 + b ln N + c`` through one budget's runs (least squares) and its
    minimiser ``N_opt = exp(-b / (2 a))``: ``((a, b, c), N_opt)``. A parabola open downwards (``a <= 0``)
    has no minimum: ValueError."""
    a, b, c = np.polyfit(np.log(np.asarray(params, dtype=float)), np.asarray(losses, dtype=float), 2)
    if a <= 0:
        raise ValueError("the losses of this budget do not bend upwards: no minimum in log N")
    return (float(a), float(b), float(c)), float(math.exp(-b / (2 * a)))


def isoflop_minima(budgets: Sequence[float], params: Sequence[float], losses: Sequence[float]) -> dict[float, float]:
    """``{budget: N_opt}``: the runs grouped by budget (parallel lists), one parabola each."""
    out = {}
    for budget in sorted(set(budgets)):
        mine = [(n, lo) for c, n, lo in zip(budgets, params, losses) if c == budget]
        out[budget] = isoflop_parabola([n for n, _ in mine], [lo for _, lo in mine])[1]
    return out


def fit_exponents(budgets: Sequence[float], n_opt: Sequence[float]) -> dict[str, float]:
    """``N_opt = k_N C^a`` by least squares in log space, and ``D_opt = C / (6 N_opt) = k_D C^b``:
    ``{"a", "k_N", "b", "k_D"}``. Since ``log D = log C - log 6 - log N``, ``b = 1 - a`` exactly."""
    k_n, minus_a = fit_power_law(budgets, n_opt)
    d_opt = [c / (6 * n) for c, n in zip(budgets, n_opt)]
    k_d, minus_b = fit_power_law(budgets, d_opt)
    return {"a": -minus_a, "k_N": k_n, "b": -minus_b, "k_D": k_d}


# --- 5. the compute-optimal split of a parametric fit ------------------------------------------------

def compute_optimal(C: float, A: float, B: float, alpha: float, beta: float) -> tuple[float, float]:
    """``(N_opt, D_opt)`` minimising ``E + A / N^alpha + B / D^beta`` under ``C = 6 N D``:
    ``N_opt = G (C/6)^(beta / (alpha + beta))``, ``G = (alpha A / (beta B))^(1 / (alpha + beta))``,
    ``D_opt = (C/6) / N_opt`` (E does not move the optimum)."""
    G = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
    n_opt = G * (C / 6) ** (beta / (alpha + beta))
    return n_opt, (C / 6) / n_opt


def tokens_per_parameter(C: float, A: float, B: float, alpha: float, beta: float) -> float:
    """``D_opt / N_opt`` at compute ``C``."""
    n, d = compute_optimal(C, A, B, alpha, beta)
    return d / n


# the multiple-choice questions: 6 = 2 forward + 4 backward FLOPs per parameter per token; with beta > alpha
# the data exponent b = alpha / (alpha + beta) is below 1/2, so tokens per parameter shrink as C grows
answer_q_six = "B"
answer_q_trend = "C"


REFERENCE = (transformer_params, non_embedding_params, training_flops, pf_days, power_law, fit_power_law, _huber,
             _lbfgs_from, _objective, fit_power_law_offset, isoflop_parabola, isoflop_minima, fit_exponents,
             compute_optimal, tokens_per_parameter)
