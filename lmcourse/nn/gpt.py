"""The decoder-only transformer language model (GPT-2's architecture), given from notebook 05 on.

Notebook 05 has students write this themselves on top of the given :class:`~lmcourse.nn.Block`;
its hidden tests make sure a graded answer does not simply call into this module. Its sampling
loop lives in :mod:`lmcourse.nn.sampling` (still read here as ``generate``).

The model, in the lectures' notation (``w_1..w_T`` token ids, ``d = n_embd``, ``L = n_layer``)::

    x_t      = W_embed[w_t] + p_t                     token embedding + learned position
    h^(0)    = dropout(x)
    h^(l)    = Block_l(h^(l-1))                       l = 1..L, pre-LN, causal
    logits_t = LN_f(h_t^(L)) W_embed^T                the head *is* the embedding matrix (tied)
    loss     = mean_t -log softmax(logits_t)[y_t]     y_t = w_{t+1}: the targets come shifted

Initialisation follows GPT-2: every weight matrix and embedding ~ N(0, 0.02^2), biases 0,
LayerNorm gains 1, and the two projections that write into the residual stream in each block
(``attn.c_proj``, ``mlp.c_proj``) ~ N(0, (0.02 / sqrt(2 L))^2), so that the stream's variance
does not grow with depth (it receives 2 L such additions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .block import Block, BlockConfig, LayerNorm, block_param_count
from .checkpoint import load_model, save_model

__all__ = ["GPTConfig", "GPT", "init_gpt_weights", "gpt_param_count", "save_gpt", "load_gpt",
           "RESIDUAL_PROJECTIONS"]

# parameters that write into the residual stream: scaled by 1/sqrt(2 n_layer) at initialisation
RESIDUAL_PROJECTIONS = ("attn.c_proj.weight", "mlp.c_proj.weight")


@dataclass
class GPTConfig:
    vocab_size: int = 65  # V: tokens the model embeds and predicts (65 characters for Tiny Shakespeare)
    block_size: int = 256  # T_max: longest context; the number of learned position vectors
    n_layer: int = 6  # L: transformer blocks stacked
    n_head: int = 6  # attention heads per block; each works on n_embd // n_head channels
    n_embd: int = 384  # d: width of the residual stream (embeddings, blocks, head)
    dropout: float = 0.0  # dropout after the embeddings, on attention weights and sub-layer outputs
    bias: bool = True  # biases in the linear layers and LayerNorms (GPT-2: True)
    gelu: str = "none"  # the MLP's GELU: "none" exact x Phi(x), "tanh" GPT-2's approximation
    fast: bool = True  # attention through F.scaled_dot_product_attention (fused); False: explicit softmax
    ln_eps: float = 1e-5  # epsilon of every LayerNorm

    def __post_init__(self) -> None:
        if self.gelu not in ("none", "tanh"):
            raise ValueError(f"gelu={self.gelu!r} must be 'none' (exact) or 'tanh'")
        self.block_config()  # validates n_embd / n_head and dropout

    def block_config(self) -> BlockConfig:
        """The settings of every block: pre-LN, causal."""
        return BlockConfig(n_embd=self.n_embd, n_head=self.n_head, n_layer=self.n_layer,
                           block_size=self.block_size, vocab_size=self.vocab_size, dropout=self.dropout,
                           bias=self.bias, causal=True, prenorm=True, ln_eps=self.ln_eps, fast=self.fast)


class GPT(nn.Module):
    """Token + position embeddings, ``n_layer`` pre-LN blocks, a final LayerNorm and a tied LM head.

    ``forward(idx, targets=None)`` takes ids ``(B, T)`` with ``T <= block_size`` and returns
    ``(logits, loss)``: logits ``(B, T, V)`` for every position, and the mean cross-entropy
    against ``targets`` (the ids that follow, ``(B, T)``; ``-1`` is ignored) or ``None``.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # W_embed: (V, C)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # p_t: (block_size, C)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config.block_config()) for _ in range(config.n_layer))
        if config.gelu == "tanh":
            for block in self.blocks:
                block.mlp.gelu = nn.GELU(approximate="tanh")
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias, eps=config.ln_eps)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied: one tensor, two uses
        init_gpt_weights(self)

    def forward(self, idx: Tensor, targets: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        B, T = idx.shape  # batch, time
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)
        for block in self.blocks:
            x = block(x)  # (B, T, C)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            flat = logits.reshape(B * T, -1)  # (B*T, V), in at least float32 (bf16 under autocast)
            flat = flat.to(torch.promote_types(flat.dtype, torch.float32))
            loss = F.cross_entropy(flat, targets.reshape(B * T), ignore_index=-1)
        return logits, loss

    def num_params(self, non_embedding: bool = False) -> int:
        """Parameters, each tensor counted once (the tied head is the embedding); ``non_embedding``
        leaves out the token and position tables, as parameter counts in the literature do."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.wte.weight.numel() + self.wpe.weight.numel()
        return n


# No @torch.no_grad() decorators in this module: a decorator's wrapper shares one code object
# across every function it decorates, so refusals.forbid_calls would forbid them all.
def init_gpt_weights(model: nn.Module, std: float = 0.02) -> nn.Module:
    """GPT-2's initialisation, in place: linear and embedding weights ~ N(0, std^2), biases 0,
    LayerNorm gain 1 and shift 0, and the residual projections ~ N(0, (std / sqrt(2 L))^2)."""
    with torch.no_grad():
        return _init_gpt_weights(model, std)


def _init_gpt_weights(model: nn.Module, std: float) -> nn.Module:
    n_layer = model.config.n_layer
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, (LayerNorm, nn.LayerNorm)):
            nn.init.ones_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    for name, p in model.named_parameters():
        if name.endswith(RESIDUAL_PROJECTIONS):
            nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))
    return model


def gpt_param_count(vocab_size: int, block_size: int, n_layer: int, n_embd: int, bias: bool = True) -> int:
    """Parameters of :class:`GPT` with a tied head: ``V d + T d + L (12 d^2 + 13 d) + 2 d``
    (without biases ``L 12 d^2`` and ``d`` for the final LayerNorm)."""
    d = n_embd
    return vocab_size * d + block_size * d + n_layer * block_param_count(d, bias=bias) + (2 * d if bias else d)


def save_gpt(model: GPT, path: str | Path, vocabulary: list[str] | None = None, **extra) -> Path:
    """Write the config, the weights (on the CPU) and, optionally, the tokenizer's vocabulary
    (the format of :mod:`lmcourse.nn.checkpoint`)."""
    return save_model(model, path, vocabulary, **extra)


def load_gpt(path: str | Path, device: torch.device | str = "cpu") -> tuple[GPT, dict]:
    """A :class:`GPT` saved by :func:`save_gpt` (or a checkpoint of ``lmcourse train gpt``), in eval
    mode, and the rest of what was saved. A config or weight this GPT does not have, or lacks,
    raises :class:`~lmcourse.nn.checkpoint.ModelCheckpointError` naming them."""
    return load_model(path, GPT, GPTConfig, device)
