"""Decoding helpers that stay given code: the summed log-probability of a continuation and the
distinct-n diversity measure. Notebook 07.

Notebook 07's answers (temperature, the filters, sampling, greedy choice, generation, beam search
and the KV cache) are :mod:`lmcourse.reference.decoding`, which is absent while 07 is graded.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

__all__ = ["sequence_logprob", "distinct_n"]


def sequence_logprob(model: nn.Module, ids: Tensor, n_prompt: int) -> Tensor:
    """Summed log-probability of ``ids[:, n_prompt:]`` given what precedes them, ``(B,)``
    (in one forward pass; the sequence must fit in ``block_size``)."""
    with torch.no_grad():
        logits, _ = model(ids[:, :-1])  # (B, T-1, V)
        logp = torch.log_softmax(logits.double(), dim=-1)
        tok = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)  # (B, T-1)
        return tok[:, n_prompt - 1:].sum(-1)


def distinct_n(sequences: Sequence[Sequence], n: int) -> float:
    """Distinct n-grams over all n-grams of ``sequences`` (1.0: no n-gram repeats)."""
    grams = [tuple(s[i:i + n]) for s in sequences for i in range(len(s) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0
