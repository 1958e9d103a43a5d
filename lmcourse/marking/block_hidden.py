"""Notebook 04's hidden cases: inputs and calls only (the expected values are the reference's, computed where
the verdict is made). Not part of a student's release."""

from __future__ import annotations

import torch

from .block import (
    Q_PRELN_LETTER,
    Q_SWAP_POS_LETTER,
    block_case,
    block_compare,
    equal,
    mlp_case,
    mlp_compare,
    plain_tensor,
    seeded,
    tensor,
)
from .spec import Case
from .tensors import seed_cpu

__all__ = ["HIDDEN"]

_F64 = torch.float64


def _ln_case(shape, eps, seed):
    def call(names):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(*shape, generator=g, dtype=_F64) * 5 - 1
        gamma = torch.randn(shape[-1], generator=g, dtype=_F64)
        beta = torch.randn(shape[-1], generator=g, dtype=_F64)
        return names.layer_norm(x, gamma, beta, eps)
    return call


def _ln32(names):
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(420)) * 10
    return names.layer_norm(x, torch.ones(16), torch.zeros(16))


def _ln_module_init(names):
    ln = names.LayerNorm(10)
    x = torch.randn(3, 10, generator=torch.Generator().manual_seed(421)) * 3
    with torch.no_grad():
        y = plain_tensor(ln(x), "the output")
    return {"weight": tuple(ln.weight.shape), "bias": tuple(ln.bias.shape), "y": y}


def _mlp32(names):
    with torch.no_grad():
        return str(plain_tensor(names.MLP(6)(torch.randn(2, 3, 6, generator=torch.Generator().manual_seed(422))),
                                "the output").dtype)


def _emb_single(names):
    m = seeded(names.Embeddings(11, 6, 8), 407, scale=1.0, dtype=torch.float32)
    with torch.no_grad():
        return plain_tensor(m(torch.tensor([[7]])), "the output")


def _emb_full(names):
    m = seeded(names.Embeddings(11, 6, 8, learned=False), 407, scale=1.0, dtype=torch.float32)
    with torch.no_grad():
        return plain_tensor(m(torch.arange(8)[None]), "the output")


def _block32(names):
    seed_cpu(414)
    with torch.no_grad():
        y = names.Block(8, 2, block_size=6)(torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(414)))
    return str(plain_tensor(y, "the output").dtype)


def _int_count(d):
    def call(names):
        n = names.block_param_count(d)
        return {"type": type(n).__name__, "n": n if type(n) is int else None}
    return call


HIDDEN = {
    "layer_norm": tuple(
        Case(f"layer_norm on {shape} with eps={eps}", _ln_case(shape, eps, 430 + i),
             compare=tensor(atol=1e-10, rtol=1e-10, what=f"layer_norm on {shape}"))
        for i, (shape, eps) in enumerate([((7,), 1e-5), ((5, 9), 1e-3), ((2, 3, 4, 8), 1e-5), ((4, 1, 3), 0.5)])
    ) + (
        Case("layer_norm of a constant (3, 4) input",
             lambda names: names.layer_norm(torch.full((3, 4), 2.0, dtype=_F64), torch.ones(4, dtype=_F64),
                                            torch.zeros(4, dtype=_F64)),
             compare=tensor(what="layer_norm of a constant vector")),
        Case("layer_norm in float32", _ln32, compare=tensor(atol=1e-5, rtol=1e-5, what="layer_norm in float32")),
    ),
    "layer_norm_module": (
        Case("LayerNorm(10) at initialisation on a float32 input", _ln_module_init,
             compare=lambda got, want: (equal("shape of LayerNorm(10).weight")(got["weight"], want["weight"])
                                        or equal("shape of LayerNorm(10).bias")(got["bias"], want["bias"])
                                        or tensor(atol=1e-5, rtol=1e-5, what="LayerNorm(10)")(got["y"], want["y"]))),
    ),
    "mlp": tuple(
        Case(f"MLP({c}, bias={bias}) with the test's weights", mlp_case(c, bias=bias, seed=406 + c, shape=(3, 4)),
             compare=mlp_compare(f"MLP({c}, bias={bias})"))
        for c, bias in [(4, True), (12, False), (1, True)]
    ) + (Case("dtype of the MLP on float32", _mlp32, compare=equal("the dtype")),),
    "sinusoidal_positions": tuple(
        Case(f"sinusoidal_positions({T}, {d}, dtype=torch.float64)",
             lambda names, T=T, d=d: names.sinusoidal_positions(T, d, dtype=_F64),
             compare=tensor(atol=1e-10, what=f"sinusoidal_positions({T}, {d})"))
        for T, d in [(1, 2), (50, 16), (200, 64), (7, 10), (1500, 6), (2, 1026)]
    ),
    "rotation_matrix": tuple(
        Case(f"rotation_matrix({k}, {d}, dtype=torch.float64)",
             lambda names, k=k, d=d: names.rotation_matrix(k, d, dtype=_F64),
             compare=tensor(atol=1e-9, what=f"R_{k} for d = {d}"))
        for k, d in [(2, 32), (17, 32), (100, 32), (333, 32), (1234, 34)]
    ),
    "embeddings": (
        Case("Embeddings on a single token", _emb_single, compare=tensor(atol=1e-6, rtol=1e-6,
                                                                         what="Embeddings on a single token")),
        Case("sinusoidal Embeddings on T = block_size", _emb_full,
             compare=tensor(atol=1e-6, rtol=1e-6, what="sinusoidal Embeddings on T = block_size")),
    ),
    "q_swap_pos": (Q_SWAP_POS_LETTER,),
    "q_preln": (Q_PRELN_LETTER,),
    "block": tuple(
        Case(f"Block({c}, {h}, prenorm={pre}, causal={causal}) on T = {T}",
             block_case(c, h, T, pre, causal, seed, True),
             compare=block_compare(f"Block({c}, {h}, prenorm={pre}, causal={causal})",
                                   "pre-LN or post-LN as the table"))
        for c, h, T, pre, causal, seed in [(12, 3, 7, True, True, 410), (12, 4, 6, False, True, 411),
                                           (16, 2, 9, False, False, 412), (4, 1, 1, True, True, 413)]
    ) + (Case("dtype of the block's output for float32", _block32, compare=equal("the dtype")),),
    "block_param_count": tuple(
        Case(f"block_param_count({d})", _int_count(d), compare=equal(f"block_param_count({d})"))
        for d in (1, 2, 7, 64, 12288, 1600)
    ),
}
