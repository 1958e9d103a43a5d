"""The transformer block and position embeddings, given to the notebooks from 05 on.

Notebook 04 has students write these themselves; its hidden tests make sure a graded answer
does not simply call into this module.

The maths, in the lectures' notation (rows are positions, ``d = n_embd``)::

    LN(x)   = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta      over the last dimension,
              mu, sigma^2 the mean and the *biased* variance (divide by d, not d - 1)
    MLP(x)  = W2 GELU(W1 x + b1) + b2                            W1: d -> 4d, W2: 4d -> d
    pre-LN  h = x + attn(LN1(x));   out = h + MLP(LN2(h))        (GPT-2 and later)
    post-LN h = LN1(x + attn(x));   out = LN2(h + MLP(h))        (the 2017 transformer)
    PE(t, 2i) = sin(t / 10000^(2i/d)),  PE(t, 2i+1) = cos(t / 10000^(2i/d))

Every module takes a :class:`BlockConfig`, whose field names are the course's naming table
(``n_embd``, ``n_head``, ``n_layer``, ``block_size``, ``vocab_size``, ``dropout``, ``bias``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import AttentionConfig, SelfAttention

__all__ = ["BlockConfig", "LayerNorm", "MLP", "Block", "sinusoidal_positions", "rotation_matrix",
           "LearnedPositionEmbedding", "SinusoidalPositionEmbedding", "block_param_count"]


@dataclass
class BlockConfig:
    n_embd: int = 64  # d_model: width of the residual stream
    n_head: int = 4  # attention heads; each works on n_embd // n_head channels
    n_layer: int = 4  # blocks stacked by a model (a single Block ignores it)
    block_size: int = 128  # longest sequence: size of the causal mask and of the position table
    vocab_size: int = 65  # tokens a model embeds and predicts (a single Block ignores it)
    dropout: float = 0.0  # dropout on attention weights and on each sub-layer's output (training only)
    bias: bool = True  # biases in the linear layers and beta in the LayerNorms
    causal: bool = True  # True: a language model (no peeking); False: bidirectional (a masked LM)
    prenorm: bool = True  # True: pre-LN x + f(LN(x)); False: post-LN LN(x + f(x))
    mlp_ratio: int = 4  # hidden width of the MLP is mlp_ratio * n_embd
    ln_eps: float = 1e-5  # epsilon inside the LayerNorm's square root (nn.LayerNorm's default)
    fast: bool = True  # attention through F.scaled_dot_product_attention (see AttentionConfig)

    def __post_init__(self) -> None:
        # AttentionConfig validates n_embd / n_head and dropout
        self.attention()
        if self.mlp_ratio < 1:
            raise ValueError(f"mlp_ratio={self.mlp_ratio} must be at least 1")

    def attention(self) -> AttentionConfig:
        """The settings of the block's attention layer."""
        return AttentionConfig(n_embd=self.n_embd, n_head=self.n_head, block_size=self.block_size,
                               dropout=self.dropout, bias=self.bias, causal=self.causal, fast=self.fast)


class LayerNorm(nn.Module):
    """LayerNorm over the last dimension with gain ``weight`` (gamma) and an optional ``bias``
    (beta); the same names and defaults as ``nn.LayerNorm``, which has no ``bias=False``
    before torch 2.1."""

    def __init__(self, ndim: int, bias: bool = True, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(ndim))  # gamma
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None  # beta

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)  # (..., C)


class MLP(nn.Module):
    """The position-wise feed-forward network: ``Linear(d, 4d) -> GELU -> Linear(4d, d) -> dropout``."""

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        hidden = config.mlp_ratio * config.n_embd
        self.c_fc = nn.Linear(config.n_embd, hidden, bias=config.bias)  # W1, b1
        self.gelu = nn.GELU()  # the exact GELU, x * Phi(x)
        self.c_proj = nn.Linear(hidden, config.n_embd, bias=config.bias)  # W2, b2
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: Tensor) -> Tensor:
        h = self.gelu(self.c_fc(x))  # (B, T, 4C)
        return self.dropout(self.c_proj(h))  # (B, T, C)


class Block(nn.Module):
    """One transformer block: attention and MLP, each with a residual connection and a LayerNorm,
    pre-LN or post-LN (``config.prenorm``), causal or bidirectional (``config.causal``)."""

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        self.prenorm = config.prenorm
        self.ln1 = LayerNorm(config.n_embd, bias=config.bias, eps=config.ln_eps)
        self.attn = SelfAttention(config.attention())
        self.ln2 = LayerNorm(config.n_embd, bias=config.bias, eps=config.ln_eps)
        self.mlp = MLP(config)

    def forward(self, x: Tensor) -> Tensor:
        if self.prenorm:  # read from the stream through a LayerNorm, add the result back
            x = x + self.attn(self.ln1(x))  # (B, T, C)
            return x + self.mlp(self.ln2(x))  # (B, T, C)
        x = self.ln1(x + self.attn(x))  # (B, T, C): normalise after adding
        return self.ln2(x + self.mlp(x))  # (B, T, C)


def block_param_count(n_embd: int, bias: bool = True, mlp_ratio: int = 4) -> int:
    """Parameters of one :class:`Block`: attention ``4d^2 + 4d``, MLP ``8d^2 + 5d``, two
    LayerNorms ``4d`` (with biases; without them ``4d^2``, ``8d^2`` and ``2d``)."""
    d, h = n_embd, mlp_ratio * n_embd
    attn = 4 * d * d + (4 * d if bias else 0)
    mlp = 2 * d * h + ((h + d) if bias else 0)
    norms = 2 * (2 * d if bias else d)
    return attn + mlp + norms


def sinusoidal_positions(T: int, d: int, base: float = 10000.0,
                         dtype: torch.dtype | None = None, device=None) -> Tensor:
    """The table ``PE`` of shape ``(T, d)``: ``PE[t, 2i] = sin(t w_i)``, ``PE[t, 2i+1] = cos(t w_i)``
    with ``w_i = base^(-2i/d)``. ``d`` must be even. Computed in float64, returned in ``dtype``
    (default: torch's default dtype)."""
    if d % 2:
        raise ValueError(f"d={d} must be even: sines and cosines come in pairs")
    t = torch.arange(T, dtype=torch.float64, device=device)[:, None]  # (T, 1)
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)  # (d/2,)
    pe = torch.empty(T, d, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(t * w)
    pe[:, 1::2] = torch.cos(t * w)
    return pe.to(dtype or torch.get_default_dtype())


def rotation_matrix(k: float, d: int, base: float = 10000.0, dtype: torch.dtype | None = None) -> Tensor:
    """``R_k`` of shape ``(d, d)`` with ``PE[t + k] = R_k @ PE[t]`` for every ``t``: block-diagonal,
    block ``i`` is ``[[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]]``."""
    if d % 2:
        raise ValueError(f"d={d} must be even")
    w = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    c, s = torch.cos(k * w), torch.sin(k * w)
    R = torch.zeros(d, d, dtype=torch.float64)
    i = torch.arange(0, d, 2)
    R[i, i], R[i, i + 1] = c, s
    R[i + 1, i], R[i + 1, i + 1] = -s, c
    return R.to(dtype or torch.get_default_dtype())


class LearnedPositionEmbedding(nn.Module):
    """One learned vector ``p_t`` per position ``t < block_size``: ``forward(T)`` gives ``(T, C)``."""

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        self.block_size = config.block_size
        self.wpe = nn.Embedding(config.block_size, config.n_embd)

    def forward(self, T: int) -> Tensor:
        if T > self.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.block_size}")
        return self.wpe(torch.arange(T, device=self.wpe.weight.device))  # (T, C)


class SinusoidalPositionEmbedding(nn.Module):
    """The fixed sinusoidal table (no parameters): ``forward(T)`` gives its first ``T`` rows."""

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        self.register_buffer("pe", sinusoidal_positions(config.block_size, config.n_embd),
                             persistent=False)  # (block_size, C)

    def forward(self, T: int) -> Tensor:
        if T > self.pe.size(0):
            raise ValueError(f"sequence length {T} exceeds block_size {self.pe.size(0)}")
        return self.pe[:T]  # (T, C)

