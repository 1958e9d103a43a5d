"""Moved to :mod:`lmcourse.reference.attention` (one home per notebook's reference code); this
name stays for code written against it."""

from lmcourse.reference.attention import attention_scores, causal_mask, scaled_dot_product_attention, softmax

__all__ = ["softmax", "attention_scores", "causal_mask", "scaled_dot_product_attention"]
