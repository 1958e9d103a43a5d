"""Notebook 05's hidden cases: inputs and calls only (the expected values are the reference's, computed where
the verdict is made). Not part of a student's release."""

from __future__ import annotations

import torch
from torch import nn

from .gpt import (
    Q1_LETTER,
    Q2_LETTER,
    Q3_LETTER,
    Cfg,
    FixedLogits,
    any_model,
    count_case,
    long_compare,
    long_prompt,
    model_case,
    model_compare,
    plain_tensor,
    shares,
    shares_close,
    spoiled,
    stats,
    tensor,
)
from .spec import Case
from .tensors import seed_cpu

__all__ = ["HIDDEN"]


def _init_wide(names):
    m = spoiled(names, n_layer=8, n_embd=64, bias=False)
    seed_cpu(506)
    names.init_weights(m, 8, std=0.05)
    return {"wte": stats(m.wte.weight), "c_fc": stats(m.blocks[5].mlp.c_fc.weight),
            "attn_proj": stats(m.blocks[7].attn.c_proj.weight), "mlp_proj": stats(m.blocks[2].mlp.c_proj.weight),
            "gains": [stats(ln.weight) for b in m.blocks for ln in (b.ln1, b.ln2)]}


def _init_wide_compare(got, want):
    for key, what in (("wte", "std of wte with std=0.05"), ("c_fc", "std of c_fc with std=0.05"),
                      ("attn_proj", "std of c_proj, n_layer 8, std=0.05"),
                      ("mlp_proj", "std of mlp c_proj, n_layer 8, std=0.05")):
        g, w = got[key]["std"], want[key]["std"]
        if abs(g - w) > 0.1 * w:
            return f"{what}: got {g:.4g}, expected about {w:.3g}"
    if got["gains"] != want["gains"]:
        return "LayerNorm gains 1 (no bias)"
    return None


def _init_plain(names):
    return any_model(names, [nn.Linear(30, 40), nn.LayerNorm(40), nn.Linear(40, 30)], 1, None)


def _init_plain_compare(got, want):
    if any((got[n]["min"], got[n]["max"]) != (want[n]["min"], want[n]["max"]) for n in ("1.weight", "1.bias")):
        return "nn.LayerNorm reset to 1 and 0"
    if any((got[n]["min"], got[n]["max"]) != (want[n]["min"], want[n]["max"]) for n in ("0.bias", "2.bias")):
        return "Linear biases 0 in any model"
    return None


def _no_new(names):
    m = FixedLogits([0.0, 3.0, 0.5], block_size=5)
    return names.generate(m, torch.tensor([[1, 2]]), 0, generator=torch.Generator().manual_seed(3))


def _hot(names):
    logits = [5.0, -5.0, 0.0, 1.0, 2.0]
    out = names.generate(FixedLogits(logits, block_size=3), torch.zeros(3000, 2, dtype=torch.long), 2,
                         temperature=3.0, generator=torch.Generator().manual_seed(12))
    return shares(plain_tensor(out, "generate's output")[:, 2:], len(logits))


def _hot_expect(names):
    p = torch.softmax(torch.tensor([5.0, -5.0, 0.0, 1.0, 2.0], dtype=torch.float64) / 3.0, -1).tolist()
    return dict(enumerate(p))


_CONFIGS = [Cfg(vocab_size=7, block_size=5, n_layer=3, n_head=1, n_embd=8),
            Cfg(vocab_size=13, block_size=6, n_layer=1, n_head=4, n_embd=12, bias=False),
            Cfg(vocab_size=5, block_size=4, n_layer=2, n_head=2, n_embd=4)]

HIDDEN = {
    "gpt": tuple(
        Case(f"GPT({c}) on T = {T}", model_case(c, T, 510 + i), compare=model_compare(f"{c}, T = {T}", c.bias))
        for i, (c, T) in enumerate((c, T) for c in _CONFIGS for T in (1, c.block_size))
    ),
    "init_weights": (
        Case("init_weights(model with bias=False, n_layer=8, std=0.05)", _init_wide, compare=_init_wide_compare),
        Case("init_weights(nn.Sequential(Linear, LayerNorm, Linear), 1)", _init_plain, compare=_init_plain_compare),
    ),
    "gpt_param_count": tuple(count_case(*c) for c in [(50257, 1024, 12, 768), (50257, 1024, 24, 1024), (3, 1, 0, 5)]),
    "generate": (
        Case("generate with T > block_size from the start, temperature 0.7", long_prompt(4, 0.7),
             compare=long_compare(4)),
        Case("generate with max_new_tokens = 0", _no_new, compare=tensor(what="max_new_tokens = 0 returns idx")),
        Case("generate at temperature 3: shares of 6000 draws", _hot, expect=_hot_expect,
             compare=shares_close("6000 draws at temperature 3", None)),
    ),
    "q1": (Q1_LETTER,),
    "q2": (Q2_LETTER,),
    "q3": (Q3_LETTER,),
}
