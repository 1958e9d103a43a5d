"""Notebook 05 (GPT): the course code that does one of its exercises' work."""

from lmcourse import decoding
from lmcourse.nn import gpt, mlm

__all__ = ["REFERENCE"]

# the GPT, its initialisation, its parameter count and its sampling loop; the same work done by
# other notebooks' references (07's generation loops, 06's initialisation) is refused too
REFERENCE = gpt.REFERENCE + tuple(f for f in decoding.REFERENCE if "generate" in f.__name__) + \
    (mlm.init_mlm_weights,)
