"""Notebook 07 (decoding): the course code that does one of its exercises' work."""

from lmcourse import decoding
from lmcourse.nn import gpt

__all__ = ["REFERENCE", "MODULES", "PACKAGES"]

# the decoding references, and 05's sampling loop (the same work)
REFERENCE = decoding.REFERENCE + tuple(f for f in gpt.REFERENCE if "generate" in f.__name__)
# transformers' generation code does the same work: refused when imported, noticed when imported in a graded call
MODULES = ("transformers.generation.logits_process", "transformers.generation.utils")
PACKAGES = ("transformers",)
