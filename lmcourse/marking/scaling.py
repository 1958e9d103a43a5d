"""Notebook 10's tests (scaling laws): the visible cases, with the hints that teach.

Every case builds its own inputs: sizes from the lectures (GPT-3: 96 layers, d = 12,288), synthetic
losses drawn from a law with known constants (Chinchilla's published fit), seeded noise, and rows
shaped like the course's sweep table. Nothing depends on a training run. The hidden cases are in
:mod:`.scaling_hidden`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .show import show
from .spec import Case, Compare, Exercise, Notebook, question, when

__all__ = ["CHINCHILLA", "EPOCH", "NOTEBOOK", "Q_SIX_LETTER", "Q_TREND_LETTER", "SIZES", "exponents_of", "fitted",
           "law_points",
           "minima_of", "numbers", "optimal_of", "parabola_compare", "parabola_of", "parabola_points", "sweep_like",
           "tokens_of"]

# Chinchilla's published parametric fit (Hoffmann et al. 2022) and Epoch's refit (Besiroglu et al. 2024)
CHINCHILLA = {"E": 1.69, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}
EPOCH = {"E": 1.82, "A": 482.0, "B": 2085.0, "alpha": 0.348, "beta": 0.366}


def _number(x: Any) -> float | None:
    """A recorded number as a float: int, float, or a one-element tensor or array (else None)."""
    if type(x) in (int, float):
        return float(x)
    try:
        import torch

        if isinstance(x, torch.Tensor) and x.numel() == 1:
            return float(x.reshape(()).item())
    except ImportError:     # pragma: no cover (torch is a dependency)
        pass
    if isinstance(x, np.ndarray) and x.size == 1:
        return float(x.reshape(()))
    return None


def numbers(tols: dict[str, float] | float = 1e-9, names: tuple[str, ...] | None = None) -> Compare:
    """A number, a tuple/list of numbers (``names`` label them in messages) or a dict of numbers,
    each within its relative tolerance (``tols``: one for all, or per name)."""
    def tol(name: str) -> float:
        return tols if not isinstance(tols, dict) else tols.get(name, 1e-9)

    def one(g: Any, w: float, name: str) -> str | None:
        x = _number(g)
        if x is None:
            return f"{name} is {show(g)}, expected a number close to {w:.6g}"
        if math.isnan(x) or not math.isclose(x, w, rel_tol=tol(name), abs_tol=1e-12):
            within = f" (within {tol(name):.0%})" if tol(name) >= 0.01 else ""
            return f"{name} = {x:.6g}, expected {w:.6g}{within}"
        return None

    def compare(got: Any, want: Any) -> str | None:
        if type(want) in (int, float):
            return one(got, want, "the value")
        if isinstance(want, dict):
            if not isinstance(got, dict) or set(got) != set(want):
                return f"got {show(got)}, expected a dict with the keys {sorted(want, key=repr)}"
            return next((m for k in want if (m := one(got[k], want[k], f"[{k!r}]"))), None)
        labels = names or tuple(f"item {i}" for i in range(len(want)))
        if type(got) not in (tuple, list) or len(got) != len(want):
            return f"got {show(got)}, expected {len(want)} numbers ({', '.join(labels)})"
        return next((m for g, w, n in zip(got, want, labels) if (m := one(g, w, n))), None)
    return compare


def _is(value: float, rel: float = 1e-6):
    """A predicate for :func:`when`: the student's number is ``value`` (a known slip's result)."""
    return lambda got, want: _number(got) is not None and math.isclose(_number(got), value, rel_tol=rel)


def _ratio(factor: float, at: int | str | None = None, rel: float = 1e-6):
    """A predicate: the student's number (or its item ``at``) is the right one times ``factor``."""
    def predicate(got, want):
        g, w = (got, want) if at is None else (got[at], want[at])
        return _number(g) is not None and math.isclose(_number(g), factor * w, rel_tol=rel)
    return predicate


# ------------------------------------------------------------------ 1. parameters

def _not_int(got, want) -> bool:
    """The right count, but not an int."""
    return type(got) is not int and _number(got) is not None and math.isclose(_number(got), want, rel_tol=1e-9)


_ONE_BLOCK_SHORT = ("one block's worth short: the count is per block, times n_layer blocks (not n_layer - 1: "
                    "range(n_layer) has n_layer of them)")

# the two counts of exercise 1 are one unit: the usual shape first, then the general count
TRANSFORMER_PARAMS = Exercise("transformer_params", (
    Case("non_embedding_params(2, 64)", lambda names: names.non_embedding_params(2, 64), compare=numbers(1e-12),
         diagnoses=(when(_not_int, "the count is right in size but not an int (a float, or a one-number tensor or "
                                   "array): the exercise asks for an int — 12 * n_layer * d_model ** 2 of ints stays "
                                   "an int, while 12.0, math.pow, / or 1e... make a float"),
                    when(_ratio(1 / 2), _ONE_BLOCK_SHORT + ": 12 d² per block, 2 blocks"),
                    when(_ratio(1 / 64), "12 n_layer d is missing a factor d: each projection is a d × d matrix, "
                                         "so the count is 12 n_layer d²"),
                    when(_ratio(1 / 3), "4 n_layer d² counts the attention projections only: the MLP's two "
                                        "d × 4d matrices add 8 d² per block"),
                    when(_ratio(2 / 3), "8 n_layer d² counts the MLP only: the four attention projections "
                                        "(Q, K, V, output) add 4 d² per block")),
         hint="12 n_layer d²: 4 d² for Q, K, V and the output projection, 8 d² for the MLP (d → 4d → d)"),
    Case("non_embedding_params(96, 12288), GPT-3", lambda names: names.non_embedding_params(96, 12288),
         compare=numbers(1e-12), hint="12 · 96 · 12288² ≈ 1.74e11, the 175 B of the lecture"),
    Case("non_embedding_params(1, 16)", lambda names: names.non_embedding_params(1, 16), compare=numbers(1e-12),
         hint="12 · 1 · 16² = 3072"),
    Case("transformer_params(3, 64), the defaults", lambda names: names.transformer_params(3, 64),
         compare=numbers(1e-12),
         diagnoses=(when(_ratio(2 / 3), _ONE_BLOCK_SHORT + ": 2 d (2 d_attn + d_ff) per block, 3 blocks"),
                    when(_ratio(1 / 2), "half of it: each attention projection and each MLP layer has d on one side, "
                                        "so 2 d n_layer (2 d_attn + d_ff)")),
         hint="with d_attn = d and d_ff = 4 d it is 12 n_layer d²"),
    Case("transformer_params(2, 64), the defaults", lambda names: names.transformer_params(2, 64),
         compare=numbers(1e-12),
         diagnoses=(when(_ratio(1 / 2), "half of it: a factor 2 is missing (each attention projection and each "
                                        "MLP layer has d on one side, so 2 d n_layer (2 d_attn + d_ff)), or one of "
                                        "the two blocks is"),),
         hint="with d_attn = d and d_ff = 4 d it is 12 n_layer d²"),
    Case("transformer_params(2, 64, d_attn=32, d_ff=128)",
         lambda names: names.transformer_params(2, 64, d_attn=32, d_ff=128), compare=numbers(1e-12),
         diagnoses=(when(_is(12 * 2 * 64 ** 2), "that is 12 n_layer d², whatever d_attn and d_ff: use the ones "
                                                "you are given, 2 d n_layer (2 d_attn + d_ff)"),
                    when(_is(2 * 64 * 2 * (2 * 32 + 4 * 64)), "d_ff was ignored (4 d used): use the d_ff you are "
                                                             "given"),
                    when(_is(2 * 64 * 2 * (2 * 64 + 128)), "d_attn was ignored (d used): use the d_attn you are "
                                                          "given"),
                    when(_is(64 * 2 * (2 * 32 + 128)), "half of it: each attention projection and each MLP layer "
                                                       "has d on one side, so 2 d n_layer (2 d_attn + d_ff)")),
         hint="2 d n_layer (2 d_attn + d_ff) = 2 · 64 · 2 · (64 + 128)"),
    Case("transformer_params(1, 48, d_ff=96)", lambda names: names.transformer_params(1, 48, d_ff=96),
         compare=numbers(1e-12), hint="d_attn defaults to d = 48 when only d_ff is given"),
))


# ------------------------------------------------------------------ 2. compute

def _flops(*args, **kwargs):
    return lambda names: names.training_flops(*args, **kwargs)


# the cost and its unit are one unit too: 6 N D, then the same FLOPs in PF-days
TRAINING_FLOPS = Exercise("training_flops", (
    Case("training_flops(1e6, 1e9)", _flops(1e6, 1e9), compare=numbers(1e-12),
         diagnoses=(when(_ratio(1 / 3), "2 N D is the forward pass only: the backward pass costs twice the forward "
                                        "(gradients of the inputs and of the weights), 6 N D in all"),
                    when(_ratio(2 / 3), "4 N D is the backward pass only: add the forward's 2 N D (6 N D in all)"),
                    when(_ratio(1 / 6), "N D counts one FLOP per parameter per token: training costs 6 (2 forward, "
                                        "4 backward)")),
         hint="C ≈ 6 N D"),
    Case("training_flops(175e9, 300e9), GPT-3", _flops(175e9, 300e9), compare=numbers(1e-12),
         hint="6 · 175e9 · 300e9 = 3.15e23 FLOPs"),
    Case("training_flops(1e6, 1e9, n_layer=4, n_ctx=1024, d_attn=256), with the attention term",
         _flops(1e6, 1e9, n_layer=4, n_ctx=1024, d_attn=256), compare=numbers(1e-12),
         diagnoses=(when(_is(6e15), "the attention term is missing: given n_layer, n_ctx and d_attn, add "
                                    "3 · 2 n_layer n_ctx d_attn per token"),
                    when(_is(6e15 + 2 * 4 * 1024 * 256 * 1e9), "2 n_layer n_ctx d_attn is the attention's forward "
                                                                "cost per token: training costs three times it"),
                    when(_is(6e15 + 6 * 4 * 1024 * 256), "the attention term is per token: multiply it by D")),
         hint="6 N D + 6 n_layer n_ctx d_attn D"),
    Case("pf_days(8.64e19)", lambda names: names.pf_days(8.64e19), compare=numbers(1e-12),
         diagnoses=(when(_is(24.0), "a day has 86,400 seconds: you divided by 1e15 · 3600 (an hour)"),
                    when(_is(1000.0), "a petaflop is 1e15 FLOPs, not 1e12"),
                    when(_is(8.64e4), "you divided by 1e15 only: a PF-day is 1e15 FLOPs a second for 86,400 seconds")),
         hint="1 PF-day = 1e15 · 86400 = 8.64e19 FLOPs, so this is exactly 1"),
    Case("pf_days(3.15e23), GPT-3's training", lambda names: names.pf_days(3.15e23), compare=numbers(1e-12),
         hint="about 3,646 PF-days"),
))


# ------------------------------------------------------------------ 3. power laws

def law_points(E: float, A: float, alpha: float, lo: float = 1e6, hi: float = 1e10, n: int = 12,
               noise: float = 0.0, seed: int = 0) -> tuple[list[float], list[float]]:
    """``n`` points of ``E + A x^-alpha`` at log-spaced ``x`` in [lo, hi], times ``1 + noise · z`` (z a
    seeded standard normal): plain lists."""
    x = np.logspace(math.log10(lo), math.log10(hi), n)
    y = E + A * x ** (-alpha)
    if noise:
        y = y * (1 + noise * np.random.default_rng(seed).standard_normal(n))
    return [float(v) for v in x], [float(v) for v in y]


def fitted(fn: str, *args, **kwargs):
    def call(names):
        x, y = law_points(*args, **kwargs)
        return getattr(names, fn)(x, y)
    return call


def _wrong_sign(got, want) -> bool:
    return _number(got[1]) is not None and math.isclose(_number(got[1]), -want[1], rel_tol=1e-6)


def _log10_slip(got, want) -> bool:
    """exp of an intercept fitted with log10 (or 10 ** of a natural-log one)."""
    a = _number(got[0])
    return a is not None and any(math.isclose(a, v, rel_tol=1e-4) for v in (
        math.exp(math.log10(want[0])), 10 ** math.log(want[0])))


FIT_POWER_LAW = Exercise("fit_power_law", (
    Case("fit_power_law on 12 points of y = 400 x^-0.3", fitted("fit_power_law", 0.0, 400.0, 0.3),
         compare=numbers(1e-6, ("A", "alpha")),
         diagnoses=(when(lambda got, want: type(got) not in (tuple, list) or len(got) != 2,
                         "return a tuple (A, alpha) of two numbers"),
                    when(_wrong_sign, "alpha has the wrong sign: the slope of log y against log x is -alpha"),
                    when(_log10_slip, "A is off, alpha is right: the intercept is log A in the base you took the "
                                      "logs in — with np.log (natural), A = exp(intercept); with log10, "
                                      "A = 10 ** intercept")),
         hint="fit the line log y = log A - alpha log x (np.polyfit(np.log(x), np.log(y), 1)): alpha = -slope, "
              "A = exp(intercept)"),
    Case("fit_power_law on Chinchilla's data term, 2.1e3 x^-0.28, x from 1e9 to 1e12",
         fitted("fit_power_law", 0.0, 2085.0, 0.28, lo=1e9, hi=1e12, n=7), compare=numbers(1e-6, ("A", "alpha")),
         diagnoses=(when(_wrong_sign, "alpha has the wrong sign: the slope is -alpha"),)),
    Case("fit_power_law on 12 points with 1 % noise (least squares in log space)",
         fitted("fit_power_law", 0.0, 50.0, 0.5, noise=0.01, seed=1), compare=numbers(1e-6, ("A", "alpha")),
         hint="least squares of log y on log x: the noise moves the answer, so only the log-space line gives it"),
))


def _is_log(at: int):
    """A predicate: item ``at`` of the student's tuple is the natural log of the right one."""
    def predicate(got, want):
        g = _number(got[at])
        return g is not None and math.isclose(g, math.log(want[at]), rel_tol=1e-3)
    return predicate


FIT_POWER_LAW_OFFSET = Exercise("fit_power_law_offset", (
    Case("fit_power_law_offset on noise-free points of 1.69 + 406.4 x^-0.34",
         fitted("fit_power_law_offset", 1.69, 406.4, 0.34), compare=numbers(1e-4, ("E", "A", "alpha")),
         diagnoses=(when(lambda got, want: type(got) not in (tuple, list) or len(got) != 3,
                         "return a tuple (E, A, alpha) of three numbers"),
                    when(_is_log(1), "A came out as its natural log (ln 406.4 = 6.007): the fit works with log A, so "
                                     "return A = exp of it"),
                    when(_is_log(0), "E came out as its natural log (ln 1.69 = 0.525): the fit works with log E, so "
                                     "return E = exp of it"),
                    when(_ratio(math.log(10), at=2, rel=1e-3),
                         "alpha is ln 10 = 2.303 times too large (0.783 = 0.34 · ln 10): log10 on one side of the fit "
                         "and natural logs on the other (exp, logsumexp) — take every log with np.log"),
                    when(_ratio(1 / math.log(10), at=2, rel=1e-3),
                         "alpha is ln 10 = 2.303 times too small: natural logs on one side of the fit and log10 on "
                         "the other — take every log with np.log"),
                    when(lambda got, want: _number(got[0]) is not None and abs(_number(got[0])) < 1e-3 * want[0],
                         "E came out 0: the irreducible term must be fitted, not left out (that is fit_power_law)"),
                    when(lambda got, want: _number(got[2]) is not None and _number(got[2]) < 0,
                         "alpha is negative: the law is E + A x^(-alpha)")),
         hint="minimise the Huber loss of log(E + A x^-alpha) - log y from several starting points and keep "
              "the best; noise-free data must give the constants back to 1e-4"),
    Case("fit_power_law_offset on 2 + 30 x^-0.5, x from 10 to 1e5",
         fitted("fit_power_law_offset", 2.0, 30.0, 0.5, lo=10.0, hi=1e5, n=10),
         compare=numbers(1e-4, ("E", "A", "alpha")),
         hint="a start near the data (E below the smallest y) and a few values of alpha: a single start can stop "
              "in a flat valley where A and alpha trade off"),
    Case("fit_power_law_offset with 0.5 % noise: E within 3 %, alpha within 10 %, A within 25 %",
         fitted("fit_power_law_offset", 1.69, 406.4, 0.34, noise=0.005, seed=0),
         compare=numbers({"E": 0.03, "A": 0.25, "alpha": 0.10}, ("E", "A", "alpha")),
         hint="the tolerances are those of the fit's noise; a fit far outside them stopped at a poor start"),
))


# ------------------------------------------------------------------ 4. IsoFLOP

def parabola_points(a: float, n_opt: float, c0: float, sizes: list[float]) -> list[float]:
    """Losses ``a (ln N - ln n_opt)^2 + c0`` at ``sizes``: a parabola in ln N with its minimum at ``n_opt``."""
    return [a * (math.log(n) - math.log(n_opt)) ** 2 + c0 for n in sizes]


SIZES = [3.3e3, 1.3e4, 2.5e4, 5.7e4, 1.5e5]


def parabola_of(a, n_opt, c0, sizes=tuple(SIZES)):
    return lambda names: names.isoflop_parabola(list(sizes), parabola_points(a, n_opt, c0, list(sizes)))


def _n_opt_is(f):
    """A predicate: the student's N_opt is ``f(right N_opt)``."""
    return lambda got, want: (_number(got[1]) is not None
                              and math.isclose(_number(got[1]), f(want[1]), rel_tol=1e-4))


def parabola_compare() -> Compare:
    coefs, value = numbers(1e-6, ("a", "b", "c")), numbers(1e-6, ("N_opt",))

    def compare(got, want):
        if type(got) not in (tuple, list) or len(got) != 2:
            return f"got {show(got)}, expected ((a, b, c), N_opt)"
        return coefs(got[0], want[0]) or value((got[1],), (want[1],))
    return compare


ISOFLOP_PARABOLA = Exercise("isoflop_parabola", (
    Case("isoflop_parabola on 5 sizes, minimum at N = 2e4", parabola_of(0.05, 2e4, 1.9), compare=parabola_compare(),
         diagnoses=(when(_n_opt_is(lambda n: 1 / n), "N_opt = 1 / the right one: the vertex of a x² + b x + c is "
                                                     "at x = -b / (2a), minus sign included"),
                    when(_n_opt_is(lambda n: math.log(n)), "that is ln N_opt: return N_opt = exp(-b / (2a))"),
                    when(_n_opt_is(lambda n: 10 ** math.log(n)), "the parabola is in ln N (natural log), so "
                                                                 "N_opt = exp(-b / (2a)), not 10 ** (-b / (2a))"),
                    when(_n_opt_is(lambda n: math.e ** math.log10(n)),
                         "you fitted in log10 N but took exp of the vertex: fit in ln N (np.log) — a, b, c are "
                         "the natural-log coefficients"),
                    when(lambda got, want: _number(got[0][0]) is not None and math.isclose(
                        _number(got[0][0]), want[0][2], rel_tol=1e-6), "(a, b, c) is reversed: a is the coefficient "
                                                                       "of (ln N)², c the constant")),
         hint="np.polyfit(np.log(params), losses, 2) gives (a, b, c); N_opt = exp(-b / (2a))"),
    Case("isoflop_parabola, minimum at N = 5e3, near the smallest size", parabola_of(0.12, 5e3, 2.1),
         compare=parabola_compare(), hint="N_opt = exp(-b / (2a)), wherever the minimum falls"),
    Case("isoflop_parabola on losses that bend downwards (no minimum)", parabola_of(-0.05, 2e4, 1.9),
         hint="a parabola with a <= 0 has no minimum: raise ValueError"),
))


def sweep_like(budgets: list[float], sizes: list[float], n_opts: list[float], a: float = 0.08,
               floor: float = 1.9) -> tuple[list[float], list[float], list[float]]:
    """Rows shaped like the sweep table (parallel lists budget, params, loss; budgets interleaved as a
    table read by size would be): one parabola per budget, its minimum at ``n_opts[i]``."""
    rows = []
    for n in sizes:
        for i, c in enumerate(budgets):
            rows.append((c, n, parabola_points(a, n_opts[i], floor - 0.05 * i, [n])[0]))
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def minima_of(budgets, sizes, n_opts):
    return lambda names: names.isoflop_minima(*sweep_like(budgets, sizes, n_opts))


def _argmin_sizes(got, want) -> bool:
    return isinstance(got, dict) and set(got) == set(want) and all(
        _number(v) is not None and any(math.isclose(_number(v), s, rel_tol=1e-9) for s in SIZES)
        for v in got.values()) and not all(math.isclose(_number(got[k]), want[k], rel_tol=1e-4) for k in want)


ISOFLOP_MINIMA = Exercise("isoflop_minima", (
    Case("isoflop_minima on 3 budgets × 5 sizes", minima_of([1e11, 2e11, 4e11], SIZES, [6e3, 1.2e4, 2.2e4]),
         compare=numbers(1e-6),
         diagnoses=(when(lambda got, want: not isinstance(got, dict), "return a dict {budget: N_opt}"),
                    when(_argmin_sizes, "these are the sizes with the lowest loss: N_opt is the parabola's minimum "
                                        "(isoflop_parabola), between the sizes swept")),
         hint="group the rows by budget, one isoflop_parabola per group"),
    Case("isoflop_minima with rows not grouped by budget, 2 budgets × 4 sizes",
         minima_of([3e10, 1e12], SIZES[:4], [4e3, 3e4]), compare=numbers(1e-6),
         hint="collect every row of a budget wherever it is in the lists"),
), standins=("isoflop_parabola",))


def exponents_of(budgets, k, a):
    return lambda names: names.fit_exponents(list(budgets), [k * c ** a for c in budgets])


_EXP_KEYS = {"a": 1e-6, "k_N": 1e-6, "b": 1e-6, "k_D": 1e-6}

FIT_EXPONENTS = Exercise("fit_exponents", (
    Case("fit_exponents on N_opt = 0.1 C^0.5", exponents_of([1e18, 1e19, 1e20, 1e21], 0.1, 0.5),
         compare=numbers(_EXP_KEYS),
         diagnoses=(when(lambda got, want: not isinstance(got, dict) or set(got) != set(want),
                         'return a dict with the keys "a", "k_N", "b", "k_D"'),
                    when(_ratio(6.0, "k_D"), "k_D is 6 times too big: D_opt = C / (6 N_opt), the 6 of C = 6 N D"),
                    when(lambda got, want: math.isclose(got["a"], -want["a"], rel_tol=1e-6),
                         "a has the wrong sign: N_opt grows with C, so a > 0 (fit_power_law returns minus the "
                         "exponent of x)")),
         hint="N_opt = k_N C^a from the log-space line; D_opt = C / (6 N_opt) = k_D C^b"),
    Case("fit_exponents on N_opt = 2e-2 C^0.73 (Kaplan's exponent)", exponents_of([1e15, 1e17, 1e19], 2e-2, 0.73),
         compare=numbers(_EXP_KEYS),
         diagnoses=(when(lambda got, want: math.isclose(got["b"], got["a"], rel_tol=1e-6),
                         "b = a: b is the exponent of D_opt = C / (6 N_opt), so b = 1 - a"),),
         hint="a + b = 1 and k_N k_D = 1/6 exactly"),
), standins=("fit_power_law",))


# ------------------------------------------------------------------ 5. the closed form

def optimal_of(C, law):
    return lambda names: names.compute_optimal(C, law["A"], law["B"], law["alpha"], law["beta"])


def _opt_slip(got, want, C, law, which) -> bool:
    A, B, al, be = law["A"], law["B"], law["alpha"], law["beta"]
    G = (al * A / (be * B)) ** (1 / (al + be))
    n = {"C": G * C ** (be / (al + be)), "swap": G * (C / 6) ** (al / (al + be))}[which]
    return _number(got[0]) is not None and math.isclose(_number(got[0]), n, rel_tol=1e-6)


def _optimal_case(C, law, label):
    return Case(label, optimal_of(C, law), compare=numbers(1e-9, ("N_opt", "D_opt")),
                diagnoses=(when(lambda got, want: type(got) not in (tuple, list) or len(got) != 2,
                                "return a tuple (N_opt, D_opt)"),
                           when(lambda got, want: _opt_slip(got, want, C, law, "C"),
                                "you used C where the formula has C / 6: N D = C / 6 from C = 6 N D"),
                           when(lambda got, want: _opt_slip(got, want, C, law, "swap"),
                                "the exponent of N_opt is beta / (alpha + beta), not alpha / (alpha + beta): a "
                                "larger data exponent beta makes parameters the better buy"),
                           when(lambda got, want: _number(got[0]) is not None and _number(got[1]) is not None
                                and not math.isclose(_number(got[0]) * _number(got[1]), C / 6, rel_tol=1e-6),
                                "N_opt · D_opt must be C / 6: D_opt = (C / 6) / N_opt")),
                hint="N_opt = G (C/6)^(beta/(alpha+beta)), G = (alpha A / (beta B))^(1/(alpha+beta)), "
                     "D_opt = (C/6) / N_opt")


COMPUTE_OPTIMAL = Exercise("compute_optimal", (
    _optimal_case(5.76e23, CHINCHILLA, "compute_optimal(5.76e23, Chinchilla's published constants)"),
    _optimal_case(5.76e23, EPOCH, "compute_optimal(5.76e23, Epoch's refit)"),
))


def tokens_of(C, law):
    return lambda names: names.tokens_per_parameter(C, law["A"], law["B"], law["alpha"], law["beta"])


TOKENS_PER_PARAMETER = Exercise("tokens_per_parameter", (
    Case("tokens_per_parameter(5.76e23, Epoch's refit)", tokens_of(5.76e23, EPOCH), compare=numbers(1e-9),
         diagnoses=(when(lambda got, want: _number(got) is not None and math.isclose(_number(got) * want, 1,
                                                                                      rel_tol=1e-6),
                         "that is N_opt / D_opt, parameters per token: tokens per parameter is D_opt / N_opt"),),
         hint="D_opt / N_opt from compute_optimal: about 18 here"),
    Case("tokens_per_parameter(1e21, Chinchilla's published constants)", tokens_of(1e21, CHINCHILLA),
         compare=numbers(1e-9), hint="about 50 here"),
), standins=("compute_optimal",))


# ------------------------------------------------------------------ the multiple-choice questions

Q_SIX, Q_SIX_LETTER = question("q_six", "answer_q_six", "ABCD")
Q_TREND, Q_TREND_LETTER = question("q_trend", "answer_q_trend", "ABC")


NOTEBOOK = Notebook(
    "10_scaling", reference="lmcourse.reference.scaling", hidden="lmcourse.marking.scaling_hidden",
    exercises=(TRANSFORMER_PARAMS, TRAINING_FLOPS, Q_SIX, FIT_POWER_LAW,
               FIT_POWER_LAW_OFFSET, ISOFLOP_PARABOLA, ISOFLOP_MINIMA, FIT_EXPONENTS, COMPUTE_OPTIMAL,
               TOKENS_PER_PARAMETER, Q_TREND),
    withheld=("lmcourse.reference.scaling",))
