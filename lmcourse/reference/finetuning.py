"""Notebook 11 (using a language model): the reference answers, and ``REFERENCE``, the names that do its
exercises.

1. scoring a continuation: ``log P(c | p) = sum_j log P(c_j | p, c_<j)``, the first continuation token
   predicted from the prompt's last position, many pairs in one right-padded batch;
2. zero-shot classification as word prediction: the labels' log-probabilities, optionally divided by
   the verbalisers' lengths, optionally calibrated by the labels' log-probabilities after a content-free
   input (Zhao et al. 2021), renormalised over the labels;
3. a classifier on a pretrained GPT: the final hidden states pooled over the real (non-pad) positions,
   last-token or mean, then a linear head; which parameters train (head, last blocks, all);
4. LoRA (Hu et al. 2021): ``W x + (alpha / r) B A x`` with ``B = 0`` at the start, merged into one
   linear layer for inference, put on the attention projections of every block.

Written for clarity; the notebook's training loop and data are :mod:`lmcourse.finetune` and
:mod:`lmcourse.tasks_data`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["REFERENCE", "LoRALinear", "SequenceClassifier", "add_lora", "answer_q_calibrate", "answer_q_lora_b",
           "answer_q_unfreeze", "freeze", "pool_hidden", "score_continuations", "zero_shot_scores"]


# --- 1. scoring a continuation ----------------------------------------------------------------------

def score_continuations(model: nn.Module, prompts: list[list[int]], continuations: list[list[int]],
                        pad_id: int = 0) -> Tensor:
    """``(N,)`` float64: ``log P(continuations[i] | prompts[i])`` summed over the continuation's tokens, all
    pairs in one forward pass over ``prompt + continuation`` right-padded with ``pad_id``."""
    seqs = [list(p) + list(c) for p, c in zip(prompts, continuations)]
    device = next(model.parameters()).device
    idx = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long, device=device)
    for i, s in enumerate(seqs):
        idx[i, :len(s)] = torch.tensor(s, dtype=torch.long, device=device)
    logits, _ = model(idx)                                  # (N, T, V)
    logp = torch.log_softmax(logits.double(), dim=-1)       # (N, T, V)
    scores = []
    for i, (p, c) in enumerate(zip(prompts, continuations)):
        start, end = len(p), len(p) + len(c)
        # position t predicts token t + 1: the continuation's tokens start..end-1 come from start-1..end-2
        predicted = logp[i, start - 1:end - 1]              # (len(c), V)
        scores.append(predicted.gather(-1, idx[i, start:end, None]).sum())
    return torch.stack(scores)


# --- 2. zero-shot classification ----------------------------------------------------------------------

def zero_shot_scores(logprobs: Tensor, lengths: Tensor | None = None, content_free: Tensor | None = None) -> Tensor:
    """``(N, K)`` log-probabilities over the K labels: the labels' summed log-probabilities ``logprobs``
    ``(N, K)``, each divided by its verbaliser's length ``lengths`` ``(K,)`` when given, minus the same
    (length-normalised) scores after a content-free input ``content_free`` ``(K,)`` when given, then
    renormalised over the labels."""
    scores, free = logprobs, content_free
    if lengths is not None:
        scores = scores / lengths
        free = None if free is None else free / lengths
    if free is not None:
        scores = scores - free          # p(label | x) / p(label | content-free), in log space
    return torch.log_softmax(scores, dim=-1)


# --- 3. a classifier on a pretrained backbone -------------------------------------------------------

def pool_hidden(hidden: Tensor, mask: Tensor, how: str) -> Tensor:
    """``(B, d)``: ``hidden`` ``(B, T, d)`` pooled over the positions where ``mask`` ``(B, T)`` is true (real
    tokens first, then pads): ``"last"`` the last real position, ``"mean"`` the mean over the real ones."""
    if how == "last":
        last = mask.long().sum(dim=1) - 1                                   # (B,)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    if how == "mean":
        weights = mask.to(hidden.dtype).unsqueeze(-1)                       # (B, T, 1)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1)
    raise ValueError(f"how must be 'last' or 'mean', not {how!r}")


class SequenceClassifier(nn.Module):
    """The GPT ``backbone`` without its LM head, pooled (``pooling``: "last" or "mean"), then
    ``head = nn.Linear(n_embd, n_classes)``; ``forward(idx, mask)`` returns the class logits ``(B, K)``."""

    def __init__(self, backbone: nn.Module, n_classes: int, pooling: str = "last") -> None:
        super().__init__()
        self.backbone = backbone
        self.pooling = pooling
        self.head = nn.Linear(backbone.config.n_embd, n_classes)

    def hidden(self, idx: Tensor) -> Tensor:
        g = self.backbone
        pos = torch.arange(idx.shape[1], device=idx.device)              # (T,)
        x = g.drop(g.wte(idx) + g.wpe(pos))                              # (B, T, C)
        for block in g.blocks:
            x = block(x)
        return g.ln_f(x)                                                 # (B, T, C)

    def forward(self, idx: Tensor, mask: Tensor) -> Tensor:
        return self.head(pool_hidden(self.hidden(idx), mask, self.pooling))   # (B, K)


def freeze(model: SequenceClassifier, what: str, k: int = 1) -> int:
    """Make trainable only ``what`` of ``model``: "head", "last" (the last ``k`` blocks, the final LayerNorm
    and the head) or "all"; everything else frozen. Returns the number of trainable parameters (a tied
    tensor once)."""
    if what not in ("head", "last", "all"):
        raise ValueError(f"what must be 'head', 'last' or 'all', not {what!r}")
    train = {id(p) for p in model.head.parameters()}
    if what == "last":
        for module in [*list(model.backbone.blocks)[len(model.backbone.blocks) - k:], model.backbone.ln_f]:
            train |= {id(p) for p in module.parameters()}
    for p in model.parameters():
        p.requires_grad_(what == "all" or id(p) in train)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# --- 4. LoRA ------------------------------------------------------------------------------------------

class LoRALinear(nn.Module):
    """``base(x) + (alpha / r) x A^T B^T`` around a frozen ``base`` (an ``nn.Linear``): ``lora_A`` ``(r, in)``
    small random, ``lora_B`` ``(out, r)`` zero, so the layer starts as ``base``."""

    def __init__(self, base: nn.Linear, r: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        self.r, self.alpha, self.scaling = r, alpha, alpha / r
        w = base.weight
        self.lora_A = nn.Parameter(torch.randn(r, base.in_features, dtype=w.dtype, device=w.device)
                                   / math.sqrt(base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, dtype=w.dtype, device=w.device))

    def forward(self, x: Tensor) -> Tensor:
        return self.base(x) + self.scaling * F.linear(F.linear(x, self.lora_A), self.lora_B)

    def merge(self) -> nn.Linear:
        """One plain ``nn.Linear`` with ``W + (alpha / r) B A`` and the base's bias: the same outputs."""
        base = self.base
        merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None,
                           device=base.weight.device, dtype=base.weight.dtype)
        with torch.no_grad():
            merged.weight.copy_(base.weight + self.scaling * self.lora_B @ self.lora_A)
            if base.bias is not None:
                merged.bias.copy_(base.bias)
        return merged


def add_lora(model: SequenceClassifier, r: int, alpha: float) -> int:
    """Wrap ``attn.c_attn`` and ``attn.c_proj`` of every block of ``model.backbone`` in a :class:`LoRALinear`,
    freeze everything but the LoRA matrices and ``model.head``; returns the number of trainable parameters."""
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.backbone.blocks:
        block.attn.c_attn = LoRALinear(block.attn.c_attn, r, alpha)
        block.attn.c_proj = LoRALinear(block.attn.c_proj, r, alpha)
    for p in model.head.parameters():
        p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# the multiple-choice questions: calibration removes the label bias a content-free input shows; B = 0 makes the
# wrapped model the pretrained one at step 0; the last blocks are the most task-specific
answer_q_calibrate = "C"
answer_q_lora_b = "A"
answer_q_unfreeze = "D"


REFERENCE = (score_continuations, zero_shot_scores, pool_hidden, SequenceClassifier, freeze, LoRALinear, add_lora)
