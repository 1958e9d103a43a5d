"""Notebook 03's hidden cases: inputs and calls only (the expected values are the reference's, computed where
the verdict is made). Not part of a student's release."""

from __future__ import annotations

import functools
import math

import torch

from .attention import MHA_ERRORS, Q_MASK_LETTER, Q_SOFTMAX_LETTER, Q_SWAP_LETTER, fields, mha_call, sdpa_pair, tensor
from .spec import Case, when

__all__ = ["HIDDEN"]

_F64 = torch.float64


def _random(seed: int, *shapes, scale: float = 1.0, dtype=_F64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g, dtype=_F64).mul(scale).to(dtype) for s in shapes]


def _scores(seed: int, shape_q: tuple, shape_k: tuple):
    return lambda names: names.attention_scores(*_random(seed, shape_q, shape_k))


def _mask(T: int, names):
    return names.causal_mask(T)


def _softmax_dim(dim: int):
    def call(names):
        (x,) = _random(301, (3, 4, 5), scale=5.0)
        x[0, 1, 2] = float("-inf")
        x[2, :3, 0] = float("-inf")   # along dim=1 one entry of that slice stays finite
        return names.softmax(x, dim=dim)
    return call


def _close(atol: float, rtol: float) -> object:
    return tensor(atol=atol, rtol=rtol)


def _sdpa_case(kind: str):
    def call(names):
        if kind == "large":
            q, k = _random(331, (2, 2, 9, 16), (2, 2, 9, 16), scale=30.0)
            (v,) = _random(332, (2, 2, 9, 16))
            mask = torch.zeros(9, 9, dtype=_F64).masked_fill(torch.ones(9, 9, dtype=torch.bool).triu(1), -math.inf)
        else:
            q, k, v = _random(333, (3, 4, 6), (3, 7, 6), (3, 7, 2))
            mask = None
            if kind == "padding":   # keys 5, 6 unseen
                mask = torch.zeros(4, 7, dtype=_F64)
                mask[:, 5:] = -math.inf
        return sdpa_pair(names.scaled_dot_product_attention(q, k, v, mask))
    return call


def _masked_zero(got, want) -> bool:
    return bool(((want["w"] == 0) & (got["w"] != 0)).any())


def _sdpa_causal(names):
    (x,) = _random(334, (1, 8, 4))
    x2 = x.clone()
    x2[:, 5:] = _random(335, (1, 3, 4))[0]
    mask = torch.zeros(8, 8, dtype=_F64).masked_fill(torch.ones(8, 8, dtype=torch.bool).triu(1), -math.inf)
    a = sdpa_pair(names.scaled_dot_product_attention(x, x, x, mask))["out"]
    b = sdpa_pair(names.scaled_dot_product_attention(x2, x2, x2, mask.clone()))["out"]
    return {"a": a[:, :5], "b": b[:, :5]}


def _same_past(got, want):
    a, b = got["a"], got["b"]
    return None if torch.equal(a, b) else "the outputs at positions 0..4 changed when only tokens 5..7 did"


_SDPA = fields(("out", tensor(atol=1e-10, rtol=1e-8, what="the output")),
               ("w", tensor(atol=1e-10, rtol=1e-8, what="the weights")))
_MASKED = when(_masked_zero, "masked weights must be exactly 0: add the -inf mask to the scores before the softmax")


def _mha_hidden(sizes, shape, seed):
    def call(names):
        got = mha_call(sizes, shape, seed)(names)
        got["finite"] = mha_call(sizes, shape, seed, grads=True)(names)["finite"]
        return got
    return call


def _mha_compare(got, want):
    diff = _SDPA({"out": got["y"], "w": got["w"]}, {"out": want["y"], "w": want["w"]})
    if diff:
        return diff
    bad = sorted(n for n, ok in got["finite"].items() if not ok)
    return None if not bad else ("every weight of MultiHeadAttention should receive a finite gradient "
                                 f"({', '.join(bad)} did not)")


HIDDEN = {
    "softmax": (
        Case("softmax is your own function", lambda names: names.softmax in (
            torch.softmax, torch.nn.functional.softmax, torch.special.softmax),
             compare=lambda got, want: None if got is False else "softmax must be your own function, not torch's"),
        *(Case(f"softmax(x, dim={d}) on a random (3, 4, 5) tensor", _softmax_dim(d), compare=_close(1e-12, 1e-10))
          for d in (0, 1, 2, -1)),
        Case("softmax of scores spread over ±1e4", lambda names: names.softmax(_random(302, (4, 6), scale=1e4)[0]),
             compare=_close(1e-12, 1e-10)),
        Case("softmax of a float32 tensor", lambda names: names.softmax(_random(303, (5, 7), dtype=torch.float32)[0],
                                                                        dim=1),
             compare=_close(1e-6, 1e-5)),
        Case("softmax of equal huge scores", lambda names: names.softmax(torch.full((2, 3), 1e4, dtype=_F64)),
             compare=_close(1e-12, 1e-12)),
    ),
    "attention_scores": (
        *(Case(f"attention_scores for Q {sq}, K {sk}", _scores(320 + i, sq, sk), compare=_close(1e-12, 1e-10))
          for i, (sq, sk) in enumerate([((7, 9), (5, 9)), ((3, 4, 1), (3, 8, 1)), ((2, 2, 6, 16), (2, 2, 6, 16))])),
        Case("attention_scores in float32", lambda names: names.attention_scores(
            *(2 * _random(324, (3, 5), dtype=torch.float32))), compare=_close(1e-5, 1e-5)),
    ),
    "q_mask": (Q_MASK_LETTER,),
    "q_softmax": (Q_SOFTMAX_LETTER,),
    "q_swap": (Q_SWAP_LETTER,),
    "causal_mask": tuple(Case(f"causal_mask({T})", functools.partial(_mask, T), compare=tensor()) for T in (2, 7, 16)),
    "scaled_dot_product_attention": (
        Case("cross-attention (T_q=4, T_k=7, d_v=2)", _sdpa_case("cross"), compare=_SDPA),
        Case("a padding mask", _sdpa_case("padding"), diagnoses=(_MASKED,), compare=_SDPA),
        Case("causal attention with large scores", _sdpa_case("large"), diagnoses=(_MASKED,), compare=_SDPA),
        Case("outputs 0..4 after changing tokens 5..7", _sdpa_causal, compare=lambda got, want: _same_past(got, want)),
    ),
    "multi_head_attention": tuple(
        Case(f"MultiHeadAttention({c}, {h}, causal={cz}, bias={bz}) on {shape}",
             _mha_hidden((c, h, cz, bz), shape, 350 + i), errors=MHA_ERRORS, compare=_mha_compare)
        for i, (c, h, cz, bz, shape) in enumerate([(24, 6, True, False, (3, 9, 24)), (24, 3, False, True, (2, 7, 24)),
                                                   (8, 2, True, True, (1, 1, 8)), (12, 12, True, True, (2, 4, 12))])),
}
