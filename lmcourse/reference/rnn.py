"""Notebook 02 (RNN): the reference answers of its exercises, withheld from its graded kernel. Its test
cases (:mod:`lmcourse.marking.rnn`) take their expected values from here, and the stand-ins of the earlier
exercises (one mistake costs once) are this module's source.

None of it runs a torch recurrent kernel (``RECURRENT``), which the tests refuse in the student's code."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["RECURRENT", "REFERENCE", "RNNLM", "answer_q1", "answer_q2", "answer_q3", "answer_q4", "elman_step",
           "lm_loss", "perplexity", "rnn_forward", "sample", "train_step"]

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


class RNNLM(nn.Module):
    """Embedding -> the Elman recurrence (``rnn_forward``) -> output layer; the parameter names the prose states."""

    def __init__(self, vocab_size: int, n_embd: int, n_hidden: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        bound = 1 / math.sqrt(n_hidden)
        self.W_xh = nn.Parameter(torch.empty(n_hidden, n_embd).uniform_(-bound, bound))
        self.W_hh = nn.Parameter(torch.empty(n_hidden, n_hidden).uniform_(-bound, bound))
        self.b_h = nn.Parameter(torch.zeros(n_hidden))
        self.lm_head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx, h0=None):
        return self.forward_state(idx, h0)[0]

    def forward_state(self, idx, h0=None):
        hs = rnn_forward(self.wte(idx), h0, self.W_xh, self.W_hh, self.b_h)
        return self.lm_head(hs), hs[:, -1]


def perplexity(token_losses: Tensor) -> float:
    """``exp`` of the mean per-token loss (nats), as a Python float."""
    return math.exp(float(token_losses.double().mean()))


@torch.no_grad()
def sample(model, prompt_ids, n_new, generator, temperature=1.0):
    """``n_new`` token ids drawn one at a time from ``softmax(last logits / temperature)``, the state carried."""
    device = next(model.parameters()).device
    logits, state = model.forward_state(torch.tensor([prompt_ids], device=device))
    out = []
    for _ in range(n_new):
        probs = F.softmax(logits[0, -1].float().cpu() / temperature, dim=-1)
        nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))
        out.append(nxt)
        logits, state = model.forward_state(torch.tensor([[nxt]], device=device), state)
    return out


def train_step(model, idx, lr):
    """One step of plain SGD on ``lm_loss(model(idx), idx)``; the loss before the update as a float."""
    loss = lm_loss(model(idx), idx)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    model.zero_grad()
    return loss.item()


answer_q1 = "B"
answer_q2 = "C"
answer_q3 = "A"
answer_q4 = "D"

REFERENCE = (elman_step, rnn_forward, lm_loss, RNNLM, perplexity, sample, train_step)
