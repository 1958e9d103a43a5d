"""Notebook 02 (RNN): the reference answers of its exercises, withheld from its graded kernel. Its test
cases (:mod:`lmcourse.marking.rnn`) take their expected values from here, and the stand-ins of the earlier
exercises (one mistake costs once) are this module's source.

None of it runs a torch recurrent kernel (``RECURRENT``), which the tests refuse in the student's code."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["RECURRENT", "REFERENCE", "RNNLM", "adamw_step", "answer_q1", "answer_q2", "answer_q3", "answer_q4",
           "clip_grad_norm", "elman_step", "lm_loss", "lr_schedule", "perplexity", "rnn_forward", "sample",
           "train_step"]

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


@torch.no_grad()
def adamw_step(params, state, lr, betas, eps, weight_decay):
    """One AdamW step, in place, on every parameter of the list ``params`` that has a ``.grad``: the decoupled
    decay ``p <- p (1 - lr wd)``, then ``p <- p - lr m_hat / (sqrt(v_hat) + eps)`` with bias-corrected moments.
    ``state`` (a dict, empty before the first step) keeps each parameter's step count and moments, by position."""
    beta1, beta2 = betas
    for i, p in enumerate(params):
        if p.grad is None:
            continue
        s = state.setdefault(i, {"step": 0, "m": torch.zeros_like(p), "v": torch.zeros_like(p)})
        s["step"] += 1
        s["m"] = beta1 * s["m"] + (1 - beta1) * p.grad
        s["v"] = beta2 * s["v"] + (1 - beta2) * p.grad * p.grad
        m_hat = s["m"] / (1 - beta1 ** s["step"])
        v_hat = s["v"] / (1 - beta2 ** s["step"])
        p.mul_(1 - lr * weight_decay)
        p.sub_(lr * m_hat / (v_hat.sqrt() + eps))


def lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps):
    """The learning rate of step ``step`` (0-based): ``max_lr (step + 1) / warmup_steps`` while warming up, then
    a half cosine from ``max_lr`` down to ``min_lr``, reached at the last step ``total_steps - 1`` (and kept)."""
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - 1 - warmup_steps))
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def clip_grad_norm(params, max_norm):
    """Rescale the gradients of ``params`` in place so that their global L2 norm is at most ``max_norm``
    (untouched when it already is); the norm before clipping, as a Python float."""
    grads = [p.grad for p in params if p.grad is not None]
    norm = math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / norm)
    return norm


answer_q1 = "B"
answer_q2 = "C"
answer_q3 = "A"
answer_q4 = "D"

REFERENCE = (elman_step, rnn_forward, lm_loss, RNNLM, perplexity, sample, train_step, adamw_step, lr_schedule,
             clip_grad_norm)
