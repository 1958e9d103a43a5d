"""Reference building blocks that later notebooks stand on (students write their own first)."""

from .attention import AttentionConfig, CausalSelfAttention, causal_mask, scaled_dot_product_attention

__all__ = ["AttentionConfig", "CausalSelfAttention", "causal_mask", "scaled_dot_product_attention"]
