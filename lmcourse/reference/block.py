"""Notebook 04 (the transformer block): its answers in the notebook's own signatures (``layer_norm``,
``LayerNorm``, ``MLP``, ``sinusoidal_positions``, ``rotation_matrix``, ``Embeddings``, ``Block``,
``block_param_count`` and the quiz letters), the expected values of :mod:`lmcourse.marking.block`;
the course code that does some of its exercises' work (``REFERENCE``); and the name parts of torch's
ready-made normalisations.

This module is absent while notebook 04 is graded (``Notebook.withheld``); the stand-ins ("one
mistake costs once": ``LayerNorm``'s cases run with :func:`layer_norm`, ``Block``'s with
:class:`LayerNorm` and :class:`MLP`) arrive as source with the hidden test that needs them.
``lmcourse.nn.block`` stays in that kernel (04's experiments and 05-07 use it as given code): the
cases refuse it as a second line. :class:`DeviceLog` is a probe that 05-07's device checks import.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

import lmcourse.nn.block
import lmcourse.nn.gpt
import lmcourse.nn.seq2seq
import lmcourse.reference.mlm
from lmcourse.nn.attention import AttentionConfig, CausalSelfAttention

__all__ = ["BACK_DOORS", "MLP", "Block", "DeviceLog", "Embeddings", "HELPERS", "LayerNorm", "NORMS", "REFERENCE",
           "SCRIPTED", "answer_q_preln", "answer_q_swap_pos", "block_param_count", "layer_norm", "mlp_formula",
           "rotation_matrix", "sinusoidal_positions"]

NORMS = ("layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm")
# a scripted (TorchScript) copy of the reference runs through these classes' code
SCRIPTED = (torch.jit.RecursiveScriptModule, torch.jit.ScriptModule)


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5) -> Tensor:
    """``gamma * (x - mean) / sqrt(var + eps) + beta`` over the last dimension, biased variance."""
    mu = x.mean(dim=-1, keepdim=True)
    return gamma * (x - mu) / ((x - mu).pow(2).mean(dim=-1, keepdim=True) + eps).sqrt() + beta


def sinusoidal_positions(T: int, d: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """The (T, d) sinusoidal table, computed in float64: sines in even columns, cosines in odd ones."""
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angles = torch.arange(T, dtype=torch.float64)[:, None] * w  # (T, d/2)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(T, d).to(dtype)


class LayerNorm(nn.Module):
    """Notebook 04's LayerNorm: gain ``weight`` (ones), shift ``bias`` (zeros), ``eps``; forward is
    :func:`layer_norm`."""

    def __init__(self, n_embd: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))  # gamma
        self.bias = nn.Parameter(torch.zeros(n_embd))  # beta

    def forward(self, x: Tensor) -> Tensor:
        return layer_norm(x, self.weight, self.bias, self.eps)


class MLP(nn.Module):
    """Notebook 04's MLP: ``c_fc`` (d -> 4d), the exact GELU, ``c_proj`` (4d -> d), ``dropout`` last."""

    def __init__(self, n_embd: int, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)  # W_1, b_1
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)  # W_2, b_2
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(torch.nn.functional.gelu(self.c_fc(x))))  # (B, T, C)


def rotation_matrix(k: float, d: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """The (d, d) block-diagonal ``R_k`` with ``PE(t + k) = R_k PE(t)``, computed in float64."""
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        angle = k * 10000.0 ** (-2 * i / d)
        c, s = math.cos(angle), math.sin(angle)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, s
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s, c
    return R.to(dtype)


class Embeddings(nn.Module):
    """Notebook 04's embeddings: ``drop(wte(idx) + p)`` with learned ``wpe`` or the sinusoidal buffer ``pe``."""

    def __init__(self, vocab_size: int, n_embd: int, block_size: int, learned: bool = True,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.learned = learned
        self.wte = nn.Embedding(vocab_size, n_embd)
        if learned:
            self.wpe = nn.Embedding(block_size, n_embd)
        else:
            self.register_buffer("pe", sinusoidal_positions(block_size, n_embd), persistent=False)
        self.drop = nn.Dropout(dropout)

    def forward(self, idx: Tensor) -> Tensor:
        B, T = idx.shape
        p = self.wpe(torch.arange(T, device=idx.device)) if self.learned else self.pe[:T]  # (T, C)
        return self.drop(self.wte(idx) + p)  # (B, T, C)


class Block(nn.Module):
    """Notebook 04's block: pre-LN ``x + attn(ln1(x))``, ``h + mlp(ln2(h))``; post-LN ``ln1(x + attn(x))``,
    ``ln2(h + mlp(h))``."""

    def __init__(self, n_embd: int, n_head: int, block_size: int, prenorm: bool = True, causal: bool = True,
                 dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        self.prenorm = prenorm
        self.ln1 = LayerNorm(n_embd)
        self.attn = CausalSelfAttention(AttentionConfig(n_embd=n_embd, n_head=n_head, block_size=block_size,
                                                        dropout=dropout, bias=bias, causal=causal))
        self.ln2 = LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout=dropout, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        if self.prenorm:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


def block_param_count(d: int) -> int:
    """Attention ``4d^2 + 4d``, MLP ``8d^2 + 5d``, two LayerNorms ``4d``."""
    return (4 * d * d + 4 * d) + (8 * d * d + 5 * d) + 4 * d


answer_q_swap_pos = "A"
answer_q_preln = "C"


def mlp_formula(m: nn.Module, x: Tensor) -> Tensor:
    """``W_2 GELU(W_1 x + b_1) + b_2`` with the exact GELU, from ``m.c_fc`` and ``m.c_proj``'s
    weights: the expected output of an MLP without dropout."""
    h = x @ m.c_fc.weight.T + (m.c_fc.bias if m.c_fc.bias is not None else 0)
    h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
    return h @ m.c_proj.weight.T + (m.c_proj.bias if m.c_proj.bias is not None else 0)


class DeviceLog(TorchDispatchMode):
    """A dispatch mode that records (in ``mixed``) every operation given non-scalar tensors on
    more than one device: with a model and ids on 'meta', a CPU tensor made inside shows up here."""

    def __init__(self):
        super().__init__()
        self.mixed: list[str] = []

    @classmethod
    def _should_skip_dynamo(cls):       # never compiled: left True, torch imports torch._dynamo to wrap it
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        devices = {a.device.type for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor) and a.dim() > 0}
        if len(devices) > 1:
            self.mixed.append(func.__name__)
        return func(*args, **(kwargs or {}))


# the course's other models do some of 04's work in their own code, on any object with the
# right attributes: GPT.forward and MaskedLM.forward add embeddings (blocks and heads set to
# identities), seq2seq's EncoderBlock.forward is a pre-LN block and its encode embeds
BACK_DOORS = (lmcourse.nn.gpt.GPT, lmcourse.reference.mlm.MaskedLM, lmcourse.nn.seq2seq)
HELPERS = (layer_norm, sinusoidal_positions, mlp_formula)
REFERENCE = (lmcourse.nn.block, nn.TransformerEncoderLayer, *BACK_DOORS, *HELPERS)
