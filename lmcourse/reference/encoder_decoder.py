"""Notebook 09 (the encoder-decoder): ``REFERENCE`` (the code that does one of its exercises' work),
the stand-ins its test cells run in place of a student's earlier answers (one mistake costs once),
and the helpers that compute the tests' expected values.

The stand-ins have the notebook's names, signatures and parameter names (``q_proj``, ``k_proj``,
``v_proj``, ``c_proj`` in the cross-attention), and obey the rules the later tests enforce: no
``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``, ``nn.Transformer*``, nor
:mod:`lmcourse.nn.seq2seq`. Attention itself is notebook 03's explicit form,
:func:`lmcourse.nn.scaled_dot_product_attention`, which the students may use too.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from lmcourse import dates
from lmcourse.nn import MLP, AttentionConfig, BlockConfig, CausalSelfAttention, LayerNorm, seq2seq
from lmcourse.nn import attention as course_attention

__all__ = ["REFERENCE", "READY_MADE", "DATA", "padding_mask", "teacher_forcing", "CrossAttention", "EncoderBlock",
           "DecoderBlock", "notebook_state", "expected_greedy"]


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """Bool ``(B, S)``: True at real tokens, False at padding."""
    return ids != pad_id


def teacher_forcing(targets: list[list[int]], bos_id: int, eos_id: int, pad_id: int) -> tuple[Tensor, Tensor]:
    """``(tgt_in, tgt_out)``, both ``(B, T + 1)`` long: ``<bos> + y`` and ``y + <eos>``, right-padded."""
    T = max(len(t) for t in targets) + 1
    tgt_in = torch.full((len(targets), T), pad_id, dtype=torch.long)
    tgt_out = torch.full((len(targets), T), pad_id, dtype=torch.long)
    for b, t in enumerate(targets):
        tgt_in[b, :len(t) + 1] = torch.tensor([bos_id] + list(t), dtype=torch.long)
        tgt_out[b, :len(t) + 1] = torch.tensor(list(t) + [eos_id], dtype=torch.long)
    return tgt_in, tgt_out


class CrossAttention(nn.Module):
    """Multi-head attention: queries from ``x`` ``(B, T, C)``, keys and values from ``memory``
    ``(B, S, C)``, padding keys (``memory_mask`` False) get weight 0."""

    def __init__(self, n_embd: int, n_head: int, bias: bool = True) -> None:
        super().__init__()
        if n_embd % n_head != 0:
            raise ValueError(f"n_embd={n_embd} must be divisible by n_head={n_head}")
        self.n_head = n_head
        self.q_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.k_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.v_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        B, T, C = x.shape
        S, hs = memory.size(1), C // self.n_head
        q = self.q_proj(x).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.k_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)
        v = self.v_proj(memory).view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)
        mask = None if memory_mask is None else memory_mask[:, None, None, :]  # (B, 1, 1, S): keys only
        y = course_attention.scaled_dot_product_attention(q, k, v, mask)[0]  # (B, nh, T, hs)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)


class EncoderBlock(nn.Module):
    """Pre-LN: ``h = x + attn(ln1(x), ln1(x), m)``, ``out = h + mlp(ln2(h))``."""

    def __init__(self, n_embd: int, n_head: int, bias: bool = True) -> None:
        super().__init__()
        self.ln1 = LayerNorm(n_embd, bias=bias)
        self.attn = CrossAttention(n_embd, n_head, bias=bias)
        self.ln2 = LayerNorm(n_embd, bias=bias)
        self.mlp = MLP(BlockConfig(n_embd=n_embd, n_head=n_head, bias=bias))

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, src_mask)
        return x + self.mlp(self.ln2(x))


class DecoderBlock(nn.Module):
    """Pre-LN: causal self-attention, cross-attention to ``memory``, MLP, each with a residual."""

    def __init__(self, n_embd: int, n_head: int, block_size: int, bias: bool = True) -> None:
        super().__init__()
        self.ln1 = LayerNorm(n_embd, bias=bias)
        self.attn = CausalSelfAttention(AttentionConfig(n_embd=n_embd, n_head=n_head, block_size=block_size,
                                                        bias=bias, causal=True))
        self.ln_cross = LayerNorm(n_embd, bias=bias)
        self.cross = CrossAttention(n_embd, n_head, bias=bias)
        self.ln2 = LayerNorm(n_embd, bias=bias)
        self.mlp = MLP(BlockConfig(n_embd=n_embd, n_head=n_head, bias=bias))

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        x = x + self.attn(self.ln1(x))
        x = x + self.cross(self.ln_cross(x), memory, memory_mask)
        return x + self.mlp(self.ln2(x))


def notebook_state(model: seq2seq.EncoderDecoder) -> dict[str, Tensor]:
    """The reference model's weights under the notebook's names: each attention that is the
    notebook's ``CrossAttention`` (the encoder's self-attention, the decoder's cross-attention) has
    its stacked ``c_attn`` (``W_q; W_k; W_v``) split into ``q_proj``, ``k_proj``, ``v_proj``."""
    out = {}
    for key, value in model.state_dict().items():
        split = ".c_attn." in key and (key.startswith("encoder.") or ".cross." in key)
        if not split:
            out[key] = value
            continue
        head, kind = key.split(".c_attn.")
        for part, chunk in zip(("q_proj", "k_proj", "v_proj"), value.chunk(3, dim=0)):
            out[f"{head}.{part}.{kind}"] = chunk.clone()
    return out


def expected_greedy(model, src: Tensor, bos_id: int, eos_id: int, pad_id: int, max_new_tokens: int) -> Tensor:
    """What ``greedy_decode`` must return for a model with ``encode`` / ``decode``: ``(B, n)`` ids
    without ``<bos>``, ``<eos>`` kept, ``pad_id`` after it; ``n`` the steps until every row ended
    or ``max_new_tokens``. Row by row, the whole prefix re-read each step (the slow, obvious way)."""
    rows = []
    with torch.no_grad():
        for b in range(src.size(0)):
            memory, mask = model.encode(src[b:b + 1])
            ids = [bos_id]
            for _ in range(max_new_tokens):
                logits = model.decode(torch.tensor([ids], device=src.device), memory, mask)
                ids.append(int(logits[0, -1].argmax()))
                if ids[-1] == eos_id:
                    break
            rows.append(ids[1:])
    n = max(len(r) for r in rows)
    return torch.tensor([r + [pad_id] * (n - len(r)) for r in rows], dtype=torch.long)


# torch's ready-made attention and transformer layers: refused in every graded answer
READY_MADE = (nn.Transformer, nn.TransformerEncoder, nn.TransformerDecoder, nn.TransformerEncoderLayer,
              nn.TransformerDecoderLayer, nn.MultiheadAttention)
# the data code that pads, shifts and scores a batch of pairs (teacher forcing and the padded loss)
DATA = (dates.make_batch, dates.sample_batch, dates.padded_cross_entropy, dates.one_sequence_batch,
        dates.decoder_only_greedy)
# the course's encoder-decoder, these stand-ins and helpers, and torch's layers that do the same work
REFERENCE = seq2seq.REFERENCE + READY_MADE + DATA + (padding_mask, teacher_forcing, CrossAttention, EncoderBlock,
                                                     DecoderBlock, notebook_state, expected_greedy)
