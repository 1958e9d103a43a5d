"""Notebook 03 (attention): its graded functions answered by the rules of the notebook (basic
tensor operations, no ready-made softmax), for its test cells to stand in for a student's answers,
and ``REFERENCE``, the course code that does one of its exercises' work.

One mistake costs once: the tests of ``scaled_dot_product_attention`` and ``MultiHeadAttention``
run with these versions of the earlier exercises in place of the student's
(``lmcourse.marking.refusals.substitute``), so a slip in ``softmax`` or ``causal_mask`` loses the points of
that exercise only. They obey the rules the later tests enforce while they run: nothing here calls
a torch function named ``*softmax*`` or ``scaled_dot_product_attention``, or
:mod:`lmcourse.nn.attention`. The earlier exercises' own tests forbid calling this module.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

import lmcourse.nn.attention

__all__ = ["REFERENCE", "softmax", "attention_scores", "causal_mask", "scaled_dot_product_attention",
           "MultiHeadAttention", "answer_q_mask", "answer_q_softmax", "answer_q_swap", "torch_twin"]


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    """Softmax along ``dim`` with ``exp``, ``amax`` and ``sum``; the input's shape, dtype, device."""
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)


def attention_scores(Q: Tensor, K: Tensor) -> Tensor:
    """``Q K^T / sqrt(d_k)``: (..., T_q, d_k) x (..., T_k, d_k) -> (..., T_q, T_k)."""
    return Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))


def causal_mask(T: int, device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> Tensor:
    """The additive causal mask M of the lectures, (T, T): 0 on and below the diagonal, -inf above it
    (row i is query position i; column j is key position j; position i may look at j <= i)."""
    future = torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)
    return torch.zeros(T, T, dtype=dtype, device=device).masked_fill(future, float("-inf"))


def scaled_dot_product_attention(Q: Tensor, K: Tensor, V: Tensor,
                                 mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``softmax(Q K^T / sqrt(d_k) + mask) V`` and the weights, with this module's pieces."""
    scores = attention_scores(Q, K)  # (..., T_q, T_k)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, dim=-1)  # (..., T_q, T_k), rows sum to 1
    return weights @ V, weights  # (..., T_q, d_v), (..., T_q, T_k)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention on (B, T, C), causal or not, with the notebook's names (``W_q``, ``W_k``,
    ``W_v``, ``W_o``), built from this module's pieces."""

    def __init__(self, n_embd: int, n_head: int, causal: bool = True, bias: bool = True):
        super().__init__()
        if n_embd % n_head != 0:
            raise ValueError(f"n_embd={n_embd} must be divisible by n_head={n_head}")
        self.n_embd, self.n_head, self.d_k = n_embd, n_head, n_embd // n_head
        self.causal = causal
        self.W_q = nn.Linear(n_embd, n_embd, bias=bias)
        self.W_k = nn.Linear(n_embd, n_embd, bias=bias)
        self.W_v = nn.Linear(n_embd, n_embd, bias=bias)
        self.W_o = nn.Linear(n_embd, n_embd, bias=bias)

    def forward(self, x: Tensor, return_weights: bool = False):
        B, T, C = x.shape
        q = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)  # (B, h, T, d_k)
        k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)  # (B, h, T, d_k)
        v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)  # (B, h, T, d_k)
        mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
        out, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, h, T, d_k), (B, h, T, T)
        y = self.W_o(out.transpose(1, 2).contiguous().view(B, T, C))  # (B, T, C)
        return (y, weights) if return_weights else y


# the multiple-choice questions' answers (judged by the grader, never shown in a graded kernel)
answer_q_mask = "C"
answer_q_softmax = "A"
answer_q_swap = "B"


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
