"""Notebook 03 (attention): its graded functions answered by the rules of the notebook (basic
tensor operations, no ready-made softmax), for its test cells to stand in for a student's answers,
and ``REFERENCE``, the course code that does one of its exercises' work.

One mistake costs once: the tests of ``scaled_dot_product_attention`` and ``MultiHeadAttention``
run with these versions of the earlier exercises in place of the student's
(``lmcourse.checks.substitute``), so a slip in ``softmax`` or ``causal_mask`` loses the points of
that exercise only. They obey the rules the later tests enforce while they run: nothing here calls
a torch function named ``*softmax*`` or ``scaled_dot_product_attention``, or
:mod:`lmcourse.nn.attention`. The earlier exercises' own tests forbid calling this module.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

import lmcourse.nn.attention

__all__ = ["REFERENCE", "softmax", "attention_scores", "causal_mask", "scaled_dot_product_attention",
           "torch_twin"]


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """Softmax along ``dim`` with ``exp``, ``amax`` and ``sum``; the input's shape, dtype, device."""
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)


def attention_scores(Q: Tensor, K: Tensor) -> Tensor:
    """``Q K^T / sqrt(d_k)``: (..., T_q, d_k) x (..., T_k, d_k) -> (..., T_q, T_k)."""
    return Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))


def causal_mask(T: int) -> Tensor:
    """(T, T) float32: 0 on and below the diagonal, -inf above it."""
    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    return torch.zeros(T, T).masked_fill(future, float("-inf"))


def scaled_dot_product_attention(Q: Tensor, K: Tensor, V: Tensor,
                                 mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``softmax(Q K^T / sqrt(d_k) + mask) V`` and the weights, with this module's pieces."""
    scores = attention_scores(Q, K)  # (..., T_q, T_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, dim=-1)  # (..., T_q, T_k), rows sum to 1
    return weights @ V, weights  # (..., T_q, d_v), (..., T_q, T_k)


def torch_twin(mine: torch.nn.Module) -> torch.nn.MultiheadAttention:
    """``nn.MultiheadAttention`` (float64, eval mode) with the weights of a student's
    ``MultiHeadAttention`` (``W_q``, ``W_k``, ``W_v``, ``W_o``) copied in: the expected values of
    03's tests, built here and not in a test cell, where an answer could call it by name."""
    bias = mine.W_q.bias is not None
    ref = torch.nn.MultiheadAttention(mine.n_embd, mine.n_head, bias=bias, batch_first=True).double()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([mine.W_q.weight, mine.W_k.weight, mine.W_v.weight]))
        ref.out_proj.weight.copy_(mine.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([mine.W_q.bias, mine.W_k.bias, mine.W_v.bias]))
            ref.out_proj.bias.copy_(mine.W_o.bias)
    return ref.eval()


# the course's attention module (its causal_mask, scaled_dot_product_attention and attention
# module) does 03's work; the stand-ins above are refused where their own exercise is tested
REFERENCE = (lmcourse.nn.attention,)
