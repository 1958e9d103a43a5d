"""Notebook 06 (masked LM): the course code that does one of its exercises' work, and the
expected values its test cells compute (refused to a graded answer like the reference)."""

import torch

from lmcourse.nn import mlm

__all__ = ["REFERENCE", "expected_pll"]


def expected_pll(model, ids, mask_id) -> float:
    """The pseudo-log-likelihood of ``ids`` (1-D), one masked copy at a time: what
    ``pseudo_log_likelihood`` must return, for a model whose ``forward`` returns ``(logits, ...)``."""
    total = 0.0
    for i in range(len(ids)):
        x = ids.clone()
        x[i] = mask_id
        with torch.no_grad():
            logits = model.forward(x[None])[0][0, i]
        total += float(logits[ids[i]] - torch.logsumexp(logits, 0))
    return total


REFERENCE = mlm.REFERENCE + (expected_pll,)
