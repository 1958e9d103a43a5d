"""Notebook 06 (masked LM): the course code that does one of its exercises' work."""

from lmcourse.nn import mlm

__all__ = ["REFERENCE"]

REFERENCE = mlm.REFERENCE
