"""The masked language model's given code (notebook 06): its configuration, BERT's initialisation, and
saving and loading a trained model.

The answers of notebook 06 (``MaskedLM``, ``mask_tokens``, ``fill_mask``, ``pseudo_log_likelihood``)
are in :mod:`lmcourse.reference.mlm`, which is absent while 06 is graded. The objective and the layout
are described there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .block import BlockConfig, LayerNorm
from .checkpoint import save_model

__all__ = ["MLMConfig", "init_mlm_weights", "save_mlm", "IGNORE_INDEX"]

IGNORE_INDEX = -100  # label of a position the loss skips (F.cross_entropy's default ignore_index)


@dataclass
class MLMConfig:
    vocab_size: int = 1000  # V: tokens embedded and predicted ([MASK] and the other specials included)
    block_size: int = 64  # T_max: longest input; the number of learned position vectors
    n_layer: int = 2  # L: transformer blocks
    n_head: int = 4  # attention heads per block
    n_embd: int = 128  # d: width of the residual stream
    dropout: float = 0.0  # dropout after the embeddings and inside the blocks (training only)
    bias: bool = True  # biases in linear layers and LayerNorms
    causal: bool = False  # False: a masked LM (both sides); True: the same network as a left-to-right LM
    ln_eps: float = 1e-5  # epsilon of every LayerNorm (BERT uses 1e-12)
    fast: bool = True  # attention through F.scaled_dot_product_attention

    def block_config(self) -> BlockConfig:
        """Every block: post-LN, bidirectional unless ``causal``."""
        return BlockConfig(n_embd=self.n_embd, n_head=self.n_head, n_layer=self.n_layer, block_size=self.block_size,
                           vocab_size=self.vocab_size, dropout=self.dropout, bias=self.bias, causal=self.causal,
                           prenorm=False, ln_eps=self.ln_eps, fast=self.fast)


def init_mlm_weights(model: nn.Module, std: float = 0.02) -> nn.Module:
    """BERT's initialisation, in place: linear and embedding weights ~ N(0, std^2), biases 0,
    LayerNorm gain 1 and shift 0."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, (LayerNorm, nn.LayerNorm)):
                nn.init.ones_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
    return model


def save_mlm(model: nn.Module, path: str | Path, vocabulary: list[str] | None = None, **extra) -> Path:
    """Write the config, the weights (on the CPU) and, optionally, the tokenizer's vocabulary
    (the format of :mod:`lmcourse.nn.checkpoint`)."""
    return save_model(model, path, vocabulary, **extra)
