"""Notebook 06 (masked LM): the course code that does one of its exercises' work, and the
expected values its test cells compute (refused to a graded answer like the reference)."""

import torch

from lmcourse.nn import mlm

__all__ = ["REFERENCE", "expected_pll", "reference_mlm"]


def reference_mlm(cfg, dtype: torch.dtype = torch.float64, seed: int = 0) -> mlm.MaskedLM:
    """The course's ``MaskedLM(cfg)``, seeded, in ``dtype`` and eval mode, its biases and LayerNorm
    parameters moved by ``0.1 N(0, 1)`` away from 0 and 1 so that each one matters: the model whose
    weights the ``MaskedLM`` tests copy into the student's, by name, and whose logits they expect."""
    torch.manual_seed(seed)
    ref = mlm.MaskedLM(cfg).to(dtype).eval()
    with torch.no_grad():
        for p in ref.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return ref


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


REFERENCE = mlm.REFERENCE + (expected_pll, reference_mlm)
