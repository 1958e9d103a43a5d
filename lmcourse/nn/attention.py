"""Multi-head self-attention (causal, or bidirectional with ``causal=False``), given to the
notebooks from 04 on.

Notebook 03 has students write all of this themselves; its hidden tests make sure a graded
answer does not simply call into this module.

The maths, in the lectures' notation (one head, rows are positions)::

    Q = X W_q,  K = X W_k,  V = X W_v
    S = Q K^T / sqrt(d_k)                 scores
    A = softmax(S + M)   (row-wise)       weights; M is 0 where attending is allowed, -inf elsewhere
    X' = A V                              output

:class:`SelfAttention` runs ``h`` such heads side by side on ``d_k = n_embd / h``
channels each, concatenates them and applies the output projection ``W_O``. It has two
code paths that compute the same function:

* the *explicit* path above, which materialises the ``T x T`` weights (easy to read, easy to
  plot, memory quadratic in ``T``);
* the *fast* path, :func:`torch.nn.functional.scaled_dot_product_attention`, a fused kernel
  that never stores the weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["AttentionConfig", "SelfAttention", "CausalSelfAttention", "scaled_dot_product_attention"]


@dataclass
class AttentionConfig:
    n_embd: int = 64  # d_model: width of every token vector, in and out
    n_head: int = 4  # h: number of heads; each works on d_k = n_embd // n_head channels
    block_size: int = 128  # longest sequence the layer accepts (the causal mask is built this big)
    dropout: float = 0.0  # dropout on the attention weights and on the output (training only)
    bias: bool = True  # biases in the q/k/v and output projections
    causal: bool = True  # mask out the future (a language model); False gives bidirectional attention
    fast: bool = True  # use F.scaled_dot_product_attention; False computes softmax(QK^T/sqrt(d_k)+M)V

    def __post_init__(self) -> None:
        if self.n_embd % self.n_head != 0:
            raise ValueError(f"n_embd={self.n_embd} must be divisible by n_head={self.n_head} "
                             "(each head gets n_embd // n_head channels)")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout={self.dropout} must be in [0, 1)")


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor,
                                 mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``softmax(q k^T / sqrt(d_k) + mask) v`` over the last two dimensions.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v). ``mask`` broadcasts to
    (..., T_q, T_k) and is either additive (0 / -inf, as from notebook 03's ``causal_mask``) or boolean
    (True where attending is allowed, as in ``F.scaled_dot_product_attention``).
    Returns the output (..., T_q, d_v) and the weights (..., T_q, T_k); each row of the
    weights sums to 1.
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T_q, T_k)
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
        else:
            scores = scores + mask
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k), rows sum to 1
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


class SelfAttention(nn.Module):
    """Multi-head self-attention on batch-first input ``(B, T, C)``, causal by default
    (``AttentionConfig(causal=False)``: bidirectional, as 06's masked LM uses it)."""

    def __init__(self, config: AttentionConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.causal = config.causal
        self.fast = config.fast
        # W_q, W_k, W_v for all heads in one matrix: (C) -> (3C)
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        # W_O: the concatenated heads back to the residual width
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        allowed = torch.ones(config.block_size, config.block_size, dtype=torch.bool).tril()
        self.register_buffer("allowed", allowed, persistent=False)  # (block_size, block_size)

    def _heads(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        B, T, C = x.shape  # batch, time, channels
        if T > self.allowed.size(0):
            raise ValueError(f"sequence length {T} exceeds block_size {self.allowed.size(0)}")
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)  # 3 x (B, T, C)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        return q, k, v

    def _explicit(self, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        T = q.size(-2)
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))  # (B, nh, T, T)
        if self.causal:
            att = att.masked_fill(~self.allowed[:T, :T], float("-inf"))
        att = torch.softmax(att, dim=-1)  # (B, nh, T, T)
        return self.attn_dropout(att) @ v, att  # (B, nh, T, hs), (B, nh, T, T)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.shape  # batch, time, channels
        q, k, v = self._heads(x)
        if self.fast:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=self.causal,
                                               dropout_p=self.dropout if self.training else 0.0)
        else:
            y, _ = self._explicit(q, k, v)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C): heads side by side
        return self.resid_dropout(self.c_proj(y))  # (B, T, C)

    @torch.no_grad()
    def attention_weights(self, x: Tensor) -> Tensor:
        """The weights every head puts on every position, ``(B, nh, T, T)``, for plotting.

        Always computed on the explicit path, without dropout, whatever ``fast`` says.
        """
        q, k, v = self._heads(x)
        return self._explicit(q, k, v)[1]


# the old name: the class was causal only at first; notebooks and students' code import it
CausalSelfAttention = SelfAttention
