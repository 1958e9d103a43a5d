"""Notebook 02 (RNN): the stand-ins its test cells run in place of a student's earlier answers
(one mistake costs once), the torch functions that would do an exercise's work, and the test
cells' expected-value helpers (here, not in a test cell, where an answer could call them by name).

The stand-ins obey the rules the later tests enforce: no torch recurrent kernel
(``RECURRENT``) runs inside them."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["RECURRENT", "REFERENCE", "elman_step", "lm_loss", "rnn_forward"]

# name parts of torch's recurrent kernels (nn.RNN, nn.RNNCell, nn.LSTM, nn.GRU and their functions)
RECURRENT = ("rnn_tanh", "rnn_relu", "lstm", "gru")


def elman_step(x_t: Tensor, h_prev: Tensor, W_xh: Tensor, W_hh: Tensor, b_h: Tensor) -> Tensor:
    """``tanh(W_xh x_t + W_hh h_prev + b_h)`` for a batch: (B, I), (B, H) -> (B, H)."""
    return torch.tanh(F.linear(x_t, W_xh, b_h) + F.linear(h_prev, W_hh))


def rnn_forward(x: Tensor, h0: Tensor | None, W_xh: Tensor, W_hh: Tensor, b_h: Tensor) -> Tensor:
    """Every hidden state, (B, T, I) -> (B, T, H); ``h0=None`` starts from zeros."""
    h = x.new_zeros(x.shape[0], W_hh.shape[0]) if h0 is None else h0
    hs = []
    for t in range(x.shape[1]):
        h = elman_step(x[:, t], h, W_xh, W_hh, b_h)
        hs.append(h)
    return torch.stack(hs, dim=1)


def lm_loss(logits: Tensor, idx: Tensor) -> Tensor:
    """Mean next-token cross-entropy: ``logits[:, t]`` (B, T, V) predicts ``idx[:, t + 1]``."""
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), idx[:, 1:].reshape(-1))


REFERENCE = (elman_step, rnn_forward, lm_loss)
