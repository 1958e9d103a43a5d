"""Notebook 07 (decoding): the course code that does one of its exercises' work."""

import math

from lmcourse import decoding
from lmcourse.nn import gpt

__all__ = ["REFERENCE", "MODULES", "PACKAGES", "expected_top_p"]


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


# the decoding references, and 05's sampling loop (the same work)
REFERENCE = decoding.REFERENCE + tuple(f for f in gpt.REFERENCE if "generate" in f.__name__) + (expected_top_p,)
# transformers' generation code does the same work: refused when imported, noticed when imported in a graded call
MODULES = ("transformers.generation.logits_process", "transformers.generation.utils")
PACKAGES = ("transformers",)
