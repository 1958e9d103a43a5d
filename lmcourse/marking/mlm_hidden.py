"""Notebook 06's hidden cases: inputs and calls only (the expected values are the reference's, computed where
the verdict is made). Not part of a student's release."""

from __future__ import annotations

import torch

from .mlm import (
    Q1_LETTER,
    Q2_LETTER,
    fill_case,
    fill_compare,
    masking_case,
    masking_compare,
    model_case,
    model_compare,
    padded,
    pll_case,
    pll_compare,
)
from .spec import Case
from .tensors import equal

__all__ = ["HIDDEN"]

_SPECIALS = (0, 1, 2, 3, 29)


def _big():
    return padded(80, 300, 29, 4, seed=602)


def _nothing_chosen(names):
    tokens = _big()
    out = names.mask_tokens(tokens, 29, 30, set(_SPECIALS), 0.0, torch.Generator().manual_seed(6))
    if type(out) is not tuple or tuple.__len__(out) != 2:
        return "not a pair"
    inputs, labels = tuple.__getitem__(out, 0), tuple.__getitem__(out, 1)
    if type(inputs) is not torch.Tensor or type(labels) is not torch.Tensor:
        return "not tensors"
    return [torch.equal(inputs, tokens), bool((labels == -100).all())]


# the configurations of the hidden model tests, and their ids and targets: drawn in one sequence from the visible
# test's generator, after its ids (3, 8), as the test cell drew them
_CONFIGS = [dict(vocab_size=7, block_size=5, n_layer=3, n_head=1, n_embd=8),
            dict(vocab_size=11, block_size=6, n_layer=1, n_head=4, n_embd=12, bias=False),
            dict(vocab_size=5, block_size=4, n_layer=2, n_head=2, n_embd=4, causal=True)]


def _hidden_inputs(k: int, j: int):
    """The ids and targets of configuration ``k``, length ``j`` (0: T = 1, 1: T = block_size)."""
    def make():
        g = torch.Generator().manual_seed(601)
        torch.randint(13, (3, 8), generator=g)
        for c, cfg in enumerate(_CONFIGS):
            for i, T in enumerate((1, cfg["block_size"])):
                idx = torch.randint(cfg["vocab_size"], (2, T), generator=g)
                tgt = torch.where(torch.rand(2, T, generator=g) < 0.5, idx, torch.full_like(idx, -100))
                tgt[0, 0] = idx[0, 0]
                if (c, i) == (k, j):
                    return idx, tgt
        raise IndexError(k)
    return make


def _params(cfg: dict):
    def call(names):
        from lmcourse.nn import MLMConfig

        m = names.MaskedLM(MLMConfig(**cfg))
        return {"tied": m.lm_head.weight is m.wte.weight, "count": sum(p.numel() for p in m.parameters())}
    return call


def _model_cases():
    cases = []
    for k, cfg in enumerate(_CONFIGS):
        label = "MaskedLM(" + ", ".join(f"{a}={b}" for a, b in cfg.items()) + ")"
        cases.append(Case(f"the tied head and the parameters of {label}", _params(cfg),
                          compare=equal(f"the tied head and the number of parameters of {label}")))
        for j, T in enumerate((1, cfg["block_size"])):
            cases.append(Case(f"{label}, T = {T}", model_case(cfg, 611 + k, _hidden_inputs(k, j)),
                              compare=model_compare(f"{label}, T = {T}")))
    return tuple(cases)


HIDDEN = {
    "mask_tokens": (
        Case("mask_tokens with p = 0.3, [MASK] the last id",
             masking_case(_big, 29, 30, set(_SPECIALS), 0.3, 4), compare=masking_compare(0.3, "p = 0.3, [MASK] the "
                                                                                              "last id")),
        Case("mask_tokens with p = 0.05, specials as a tuple",
             masking_case(_big, 29, 30, _SPECIALS, 0.05, 5), compare=masking_compare(0.05, "p = 0.05, specials as a "
                                                                                            "tuple")),
        Case("mask_tokens with p = 0: nothing chosen", _nothing_chosen, compare=equal("p = 0: nothing chosen")),
    ),
    "masked_lm": _model_cases(),
    "fill_mask": (
        Case('fill_mask(model, tokenizer, "[MASK] dog [MASK] [MASK]", top_k=5)',
             fill_case("[MASK] dog [MASK] [MASK]", 5), compare=fill_compare(sums=True)),
    ),
    "pseudo_log_likelihood": (
        Case("PLL of [1]", pll_case(7, 5, 605, [1], 6), compare=pll_compare("PLL of [1]")),
        Case("PLL of [2, 0, 4, 4, 1]", pll_case(7, 5, 605, [2, 0, 4, 4, 1], 6),
             compare=pll_compare("PLL of [2, 0, 4, 4, 1]")),
    ),
    "q1": (Q1_LETTER,),
    "q2": (Q2_LETTER,),
}
