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


def __getattr__(name: str):
    import importlib

    if name == "REFERENCE":
        # 09's and 05's rules name 07's answers through here: where they are withheld there is nothing to refuse
        try:
            return importlib.import_module("lmcourse.reference.decoding").ANSWERS
        except ImportError:
            return ()
    # notebooks in students' hands, and code written against older versions, read the reference
    # answers from here: they moved to lmcourse.reference.decoding (absent while 07 is graded)
    if name in _MOVED:
        import warnings

        warnings.warn(f"lmcourse.decoding.{name} moved to lmcourse.reference.decoding.{name}", DeprecationWarning,
                      stacklevel=2)
        return getattr(importlib.import_module("lmcourse.reference.decoding"), name)
    raise AttributeError(f"module 'lmcourse.decoding' has no attribute {name!r}")
