"""Notebook 07 (decoding): the course code that does one of its exercises' work (``REFERENCE``,
``MODULES``, ``PACKAGES``), the test cells' expected-value helper :func:`expected_top_p` (refused
to a graded answer like the reference), and :func:`small_gpt`, the small model the KV-cache tests
run (it computes no expected value, so it is not in ``REFERENCE``)."""

import math

import torch

from lmcourse import decoding
from lmcourse.nn import gpt

__all__ = ["REFERENCE", "MODULES", "PACKAGES", "expected_top_p", "small_gpt"]


def expected_top_p(row: list[float], p: float) -> list[float]:
    """Plain Python: one row of logits after top-p filtering (the kept positions as they were,
    the others -inf); the test cells' expected value."""
    m = max(row)
    e = [math.exp(v - m) for v in row]
    probs = [v / sum(e) for v in e]
    order = sorted(range(len(row)), key=lambda i: -probs[i])
    kept, mass = [], 0.0
    for i in order:
        kept.append(i)
        mass += probs[i]
        if mass >= p:
            break
    return [row[i] if i in kept else float("-inf") for i in range(len(row))]


def small_gpt(seed: int, perturb: bool = False, **overrides) -> gpt.GPT:
    """The KV-cache tests' model: the course's GPT in float64 and eval mode (vocabulary 11,
    block_size 8, 2 layers of 2 heads, width 16, unless ``overrides`` say otherwise), built after
    ``torch.manual_seed(seed)``, its token embeddings scaled by 20 (sharp logits, so that a wrong
    term shows); with ``perturb``, its biases and LayerNorm parameters moved by ``0.1 N(0, 1)`` so
    that each one matters."""
    torch.manual_seed(seed)
    cfg = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
    cfg.update(overrides)
    m = gpt.GPT(gpt.GPTConfig(**cfg)).double().eval()
    with torch.no_grad():
        m.wte.weight.mul_(20)
        if perturb:
            for name, p in m.named_parameters():
                if name.endswith("bias") or ".ln" in name or name.startswith("ln_f"):
                    p.add_(0.1 * torch.randn_like(p))
    return m


# the decoding references, and 05's sampling loop (the same work)
REFERENCE = decoding.REFERENCE + tuple(f for f in gpt.REFERENCE if "generate" in f.__name__) + (expected_top_p,)
# transformers' generation code does the same work: refused when imported, noticed when imported in a graded call
MODULES = ("transformers.generation.logits_process", "transformers.generation.utils")
PACKAGES = ("transformers",)
