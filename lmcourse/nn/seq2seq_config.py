"""The encoder-decoder's sizes (notebook 09's ``Seq2SeqConfig``): given code, apart from the model so that
a kernel grading notebook 09, which has no ``lmcourse.nn.seq2seq``, still has it."""

from __future__ import annotations

from dataclasses import dataclass

from .block import BlockConfig

__all__ = ["Seq2SeqConfig"]


@dataclass
class Seq2SeqConfig:
    src_vocab_size: int = 71  # tokens the encoder embeds (71: lmcourse.dates.CharVocab)
    tgt_vocab_size: int = 71  # tokens the decoder embeds and predicts
    src_block_size: int = 48  # longest source; the number of learned source positions
    tgt_block_size: int = 16  # longest decoder input (<bos> + target); learned target positions
    n_enc_layer: int = 2  # L_enc: encoder blocks
    n_dec_layer: int = 2  # L_dec: decoder blocks
    n_head: int = 4  # attention heads in every attention layer
    n_embd: int = 64  # d: width of both residual streams
    dropout: float = 0.0  # after the embeddings, on attention weights and on sub-layer outputs
    bias: bool = True  # biases in the linear layers and LayerNorms
    ln_eps: float = 1e-5  # epsilon of every LayerNorm
    fast: bool = True  # attention through F.scaled_dot_product_attention; False: explicit softmax
    pad_id: int = 0  # the padding id: masked as a source key, ignored by the loss in tgt_out
    tie_weights: bool = True  # the LM head is the target embedding matrix (as the course's GPT)

    def __post_init__(self) -> None:
        self.block_config("encoder")  # validates n_embd / n_head and dropout

    def block_config(self, side: str) -> BlockConfig:
        """The settings of the encoder's (bidirectional) or the decoder's (causal) blocks: pre-LN."""
        if side not in ("encoder", "decoder"):
            raise ValueError(f"side={side!r} must be 'encoder' or 'decoder'")
        enc = side == "encoder"
        return BlockConfig(n_embd=self.n_embd, n_head=self.n_head,
                           n_layer=self.n_enc_layer if enc else self.n_dec_layer,
                           block_size=self.src_block_size if enc else self.tgt_block_size,
                           vocab_size=self.src_vocab_size if enc else self.tgt_vocab_size, dropout=self.dropout,
                           bias=self.bias, causal=not enc, prenorm=True, ln_eps=self.ln_eps, fast=self.fast)
