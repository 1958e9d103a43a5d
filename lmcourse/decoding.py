"""Decoding helpers that stay given code: the summed log-probability of a continuation and the
distinct-n diversity measure. Notebook 07.

Notebook 07's answers (temperature, the filters, sampling, greedy choice, generation, beam search
and the KV cache) moved to :mod:`lmcourse.reference.decoding`, which is absent while 07 is graded;
reading them from here still works where that module is installed (with a DeprecationWarning).
``REFERENCE`` (what a graded answer must not run) is that module's answers, and empty in a kernel
that has no reference to run (a notebook that withholds it, or a release without it).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .moved import answers_or_nothing, read_through

__all__ = ["sequence_logprob", "distinct_n"]   # and REFERENCE, read through __getattr__

# names that moved to lmcourse.reference.decoding
_MOVED = ("apply_temperature", "top_k_filter", "top_p_filter", "epsilon_filter", "sample_next", "greedy_next",
          "_filtered", "generate", "_generate", "beam_search", "_beam_search", "gpt_forward_cached",
          "_gpt_forward_cached", "cached_forward", "generate_cached", "_generate_cached", "generate_recompute",
          "Filter")


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


# old homes of the answers (see lmcourse.moved)
_ANSWERS = "lmcourse.reference.decoding"
__getattr__ = read_through(__name__, _ANSWERS, _MOVED, also=answers_or_nothing(_ANSWERS))
