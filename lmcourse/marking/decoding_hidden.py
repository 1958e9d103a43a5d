"""Notebook 07's hidden cases: inputs and calls only (the expected values are the reference's, or the
uncached generation's, computed where the verdict is made). Not part of a student's release."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import nn

from .decoding import (
    Q1_LETTER,
    Q2_LETTER,
    FixedLogits,
    Table,
    beam_case,
    cached_run,
    drawn,
    plain_pair,
    same_ids,
    same_score,
    small_gpt,
)
from .spec import Case
from .tensors import equal, fields, plain_tensor, seeded_generator, tensor

__all__ = ["HIDDEN"]

_INF = float("-inf")


def _random(seed: int, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=seeded_generator(seed)) * scale


# ------------------------------------------------------------------ filters

def _temperature(tau: float) -> Case:
    return Case(f"apply_temperature(random (5, 13), {tau})",
                lambda names: names.apply_temperature(_random(7, 5, 13), tau), compare=tensor(atol=1e-7, rtol=1e-6))


def _top_k(k: int) -> Case:
    return Case(f"top_k_filter(random (6, 30), {k})", lambda names: names.top_k_filter(_random(3, 6, 30), k),
                compare=tensor())


def _filtered_before(names):
    m = _random(3, 6, 30)
    m[:, :10] = _INF  # already filtered words stay out
    return names.top_k_filter(m, 3)


def _top_p(p: float) -> Case:
    return Case(f"top_p_filter(random (8, 25), {p})", lambda names: names.top_p_filter(_random(5, 8, 25, scale=2), p),
                compare=tensor(atol=1e-6))


def _epsilon(eps: float) -> Case:
    return Case(f"epsilon_filter(random, {eps})", lambda names: names.epsilon_filter(_random(9, 7, 20, scale=2), eps),
                compare=tensor())


# ------------------------------------------------------------------ generate

def _generate_long_prompt(names):
    m = FixedLogits([0.0, 3.0, 0.5], block_size=2)
    out = names.generate(m, torch.tensor([[1, 2, 0, 1, 2]]), 4, generator=seeded_generator(3))
    return {"wrong": m.wrong[:1], "shape": list(plain_tensor(out, "generate's output").shape),
            "cropped": all(c.size(1) == 2 for c in m.seen)}


# ------------------------------------------------------------------ beam search

class _Bigram(nn.Module):
    """A random bigram table in float32: 60 words, each next word's probability small."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(block_size=400)
        self.table = torch.randn(60, 60, generator=seeded_generator(4)) * 0.5

    def forward(self, ids, targets=None):
        return self.table[ids], None  # (B, T, 60)


# ------------------------------------------------------------------ the KV cache

def _chunks(names):
    m = small_gpt(5, perturb=True, n_layer=3, n_head=4, n_embd=16, block_size=12, fast=False)
    ids = torch.randint(0, 11, (3, 12), generator=seeded_generator(2))
    cache, parts = None, []
    for a, b in ((0, 1), (1, 5), (5, 6), (6, 12)):
        lg, cache = plain_pair(names.cached_forward(m, ids[:, a:b], cache), "cached_forward")
        parts.append(plain_tensor(lg, "cached_forward's logits"))
    return torch.cat(parts, 1)


def _p2():
    return torch.randint(0, 11, (3, 9), generator=seeded_generator(4))


def _gc_long(names, cached: bool = True):
    if cached:
        out, fed = cached_run(names, small_gpt(3, block_size=6), _p2(), 13, 6)
        return {"first": fed[0] if fed else None, "out": out}
    return {"out": names.generate_recompute(small_gpt(3, block_size=6), _p2(), 13, generator=seeded_generator(6))}


def _gc_one(names):
    out, fed = cached_run(names, small_gpt(3, block_size=6), _p2()[:, :2], 1, 6)
    return {"shape": list(plain_tensor(out, "generate_cached's output").shape), "calls": len(fed)}


HIDDEN = {
    "top_k_filter": (*(_top_k(k) for k in (1, 4, 29, 30)),
                     Case("top_k_filter on logits that hold -inf", _filtered_before, compare=tensor())),
    "top_p_filter": (*(_top_p(p) for p in (0.1, 0.5, 0.83, 0.99)),
                     Case("top_p_filter keeps the most likely word",
                          lambda names: names.top_p_filter(torch.tensor([10.0, 0.0, 0.0]), 0.01), compare=tensor())),
    "epsilon_filter": tuple(_epsilon(eps) for eps in (1e-3, 0.03, 0.2, 1.0)),
    "next_token": (
        *(_temperature(tau) for tau in (0.1, 0.9, 1.0, 3.7)),
        Case("greedy_next on float64 logits",
             lambda names: names.greedy_next(torch.tensor([[1.0, 1.5], [2.0, -1.0]], dtype=torch.float64)),
             compare=tensor()),
        drawn([0.0, 1.0, 2.0, 3.0], 3000, 5, dtype=torch.float64),
    ),
    "generate": (
        Case("generate with T > block_size from the start", _generate_long_prompt, compare=fields(
            ("wrong", lambda got, want: got[0] if got else None),
            ("shape", equal("the shape of generate's output")),
            ("cropped", equal("context cropped to block_size = 2 from the first step")))),
        Case("generate with max_new_tokens = 0 returns the prompt",
             lambda names: names.generate(FixedLogits([0.0, 3.0], 5), torch.tensor([[1, 0]]), 0,
                                          generator=seeded_generator(3)),
             compare=tensor()),
    ),
    "beam_search": (
        beam_case(_Bigram, [3], 3, 250, checks=(
            same_ids("the best of 250 steps of beam search (a float32 model, probabilities ~1/60: their product "
                     "underflows)", None, 0),
            same_score("its score", None, 0, abs_=1e-9))),
        beam_case(_Bigram, [3, 5], 1, 20, checks=(same_ids("beam_size 1 on the bigram model"),)),
        beam_case(Table, [2], 2, 12, length_penalty=2.0, eos_id=2, checks=(same_ids("length_penalty 2", None, 0),)),
    ),
    "cached_forward": (
        Case("cached_forward in chunks 1, 4, 1, 6 on a 3-block model", _chunks, compare=tensor(atol=1e-10, rtol=1e-10)),
    ),
    "generate_cached": (
        Case("a prompt longer than block_size, 13 new ids", _gc_long,
             expect=lambda names: {**_gc_long(names), **_gc_long(names, cached=False)}, compare=fields(
                 ("first", equal("the first call: the last block_size ids of the prompt")),
                 ("out", tensor(values="the same ids as the uncached generation on the same windows")))),
        Case("one new id", _gc_one, compare=fields(("shape", equal("one new id")),
                                                   ("calls", equal("one new id needs one call")))),
    ),
    "q1": (Q1_LETTER,),
    "q2": (Q2_LETTER,),
}
