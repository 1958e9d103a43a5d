"""Notebook 04 (the transformer block): the course code that does one of its exercises' work,
the stand-ins and expected-value helpers of its test cells, and the name parts of torch's
ready-made normalisations (refused in ``layer_norm``).

One mistake costs once: ``LayerNorm``'s test runs it with :func:`layer_norm` below in place of
the student's, ``rotation_matrix``'s with :func:`sinusoidal_positions`. They are written from
basic tensor operations (no torch normalisation runs inside), and are in ``REFERENCE`` with
:func:`mlp_formula` (the MLP's expected output): a graded answer that calls one by name is
refused like the reference (a test cell lets its own stand-in through, ``_rules(layer_norm)``).
:class:`DeviceLog` is a probe that runs inside graded calls (04's and 05-07's device checks), so
it is not.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

import lmcourse.nn.block
import lmcourse.nn.gpt
import lmcourse.nn.mlm
import lmcourse.nn.seq2seq

__all__ = ["BACK_DOORS", "DeviceLog", "HELPERS", "NORMS", "REFERENCE", "SCRIPTED", "layer_norm", "mlp_formula",
           "sinusoidal_positions"]

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

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        devices = {a.device.type for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor) and a.dim() > 0}
        if len(devices) > 1:
            self.mixed.append(func.__name__)
        return func(*args, **(kwargs or {}))


# the course's other models do some of 04's work in their own code, on any object with the
# right attributes: GPT.forward and MaskedLM.forward add embeddings (blocks and heads set to
# identities), seq2seq's EncoderBlock.forward is a pre-LN block and its encode embeds
BACK_DOORS = (lmcourse.nn.gpt.GPT, lmcourse.nn.mlm.MaskedLM, lmcourse.nn.seq2seq)
HELPERS = (layer_norm, sinusoidal_positions, mlp_formula)
REFERENCE = (lmcourse.nn.block, nn.TransformerEncoderLayer, *BACK_DOORS, *HELPERS)
