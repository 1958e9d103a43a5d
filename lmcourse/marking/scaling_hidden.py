"""Notebook 10's hidden cases: inputs and calls only (the expected values are the reference's,
computed where the verdict is made). Not part of a student's release."""

from __future__ import annotations

from .scaling import (
    CHINCHILLA,
    EPOCH,
    Q_SIX_LETTER,
    Q_TREND_LETTER,
    SIZES,
    exponents_of,
    fitted,
    minima_of,
    numbers,
    optimal_of,
    parabola_compare,
    parabola_of,
    tokens_of,
)
from .spec import Case

__all__ = ["HIDDEN"]

# a law with the data exponent larger than the parameter one (Epoch's beta > alpha)
_STEEP = {"A": 300.0, "B": 900.0, "alpha": 0.25, "beta": 0.45}
_EXP_KEYS = {"a": 1e-6, "k_N": 1e-6, "b": 1e-6, "k_D": 1e-6}

HIDDEN = {
    "transformer_params": tuple(
        Case(f"non_embedding_params({n}, {d})", lambda names, n=n, d=d: names.non_embedding_params(n, d),
             compare=numbers(1e-12)) for n, d in ((12, 768), (3, 64), (8, 384), (40, 5120))) + tuple(
        Case(f"transformer_params({n}, {d}, d_attn={da}, d_ff={df})",
             lambda names, n=n, d=d, da=da, df=df: names.transformer_params(n, d, d_attn=da, d_ff=df),
             compare=numbers(1e-12)) for n, d, da, df in ((96, 12288, None, None), (3, 96, 48, 384), (2, 64, 128, None),
                                                         (24, 1024, 1024, 2048))),
    "training_flops": (
        Case("training_flops(2.7e9, 300e9)", lambda names: names.training_flops(2.7e9, 300e9), compare=numbers(1e-12)),
        Case("training_flops(12768, 1.3e6)", lambda names: names.training_flops(12768, 1.3e6), compare=numbers(1e-12)),
        Case("training_flops(85e6, 1e9, n_layer=12, n_ctx=2048, d_attn=768)",
             lambda names: names.training_flops(85e6, 1e9, n_layer=12, n_ctx=2048, d_attn=768), compare=numbers(1e-12)),
    ) + tuple(Case(f"pf_days({c:g})", lambda names, c=c: names.pf_days(c), compare=numbers(1e-12))
              for c in (4.86e21, 1e15, 3.14e23)),
    "q_six": (Q_SIX_LETTER,),
    "fit_power_law": (
        Case("fit_power_law, 9 points of 7 x^-0.076", fitted("fit_power_law", 0.0, 7.0, 0.076, lo=1e3, hi=1e9, n=9),
             compare=numbers(1e-6, ("A", "alpha"))),
        Case("fit_power_law, 5 % noise",
             fitted("fit_power_law", 0.0, 3.0, 1.2, lo=1.0, hi=1e3, n=20, noise=0.05, seed=4),
             compare=numbers(1e-6, ("A", "alpha"))),
    ),
    "fit_power_law_offset": (
        Case("fit_power_law_offset, noise-free 1.82 + 2085 x^-0.366 on 1e9..1e12",
             fitted("fit_power_law_offset", 1.82, 2085.0, 0.366, lo=1e9, hi=1e12, n=10),
             compare=numbers(1e-4, ("E", "A", "alpha"))),
        Case("fit_power_law_offset, 0.5 % noise, seed 3",
             fitted("fit_power_law_offset", 1.69, 406.4, 0.34, noise=0.005, seed=3),
             compare=numbers({"E": 0.03, "A": 0.25, "alpha": 0.10}, ("E", "A", "alpha"))),
    ),
    "isoflop_parabola": (
        Case("isoflop_parabola, minimum at 9e4", parabola_of(0.03, 9e4, 1.8), compare=parabola_compare()),
        Case("isoflop_parabola, 4 sizes, minimum at 1e5", parabola_of(0.2, 1e5, 3.0, (1e4, 5e4, 2e5, 1e6)),
             compare=parabola_compare()),
        Case("isoflop_parabola, a flat line", parabola_of(-1e-3, 1e4, 2.0)),
    ),
    "isoflop_minima": (
        Case("isoflop_minima, 4 budgets", minima_of([1e9, 1e10, 1e11, 1e12], SIZES, [4e3, 8e3, 1.6e4, 3.2e4]),
             compare=numbers(1e-6)),
    ),
    "fit_exponents": (
        Case("fit_exponents, N_opt = 0.6 C^0.46", exponents_of([1e20, 3e20, 1e21, 3e21, 1e22], 0.6, 0.46),
             compare=numbers(_EXP_KEYS)),
    ),
    "compute_optimal": (
        *(Case(f"compute_optimal({c:g}, {name})", optimal_of(c, law), compare=numbers(1e-9, ("N_opt", "D_opt")))
          for c, name, law in ((1e21, "Chinchilla", CHINCHILLA), (3.14e23, "Epoch", EPOCH),
                               (1e18, "a steep data term", _STEEP))),
    ),
    "tokens_per_parameter": (
        Case("tokens_per_parameter(1e21, Epoch)", tokens_of(1e21, EPOCH), compare=numbers(1e-9)),
        Case("tokens_per_parameter(1e18, steep)", tokens_of(1e18, _STEEP), compare=numbers(1e-9)),
    ),
    "q_trend": (Q_TREND_LETTER,),
}
