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
import torch.nn.functional as F
from torch import Tensor, nn

from lmcourse import dates
from lmcourse.nn import MLP, AttentionConfig, BlockConfig, CausalSelfAttention, LayerNorm
from lmcourse.nn import attention as course_attention

__all__ = ["READY_MADE", "DATA", "padding_mask", "teacher_forcing", "CrossAttention", "EncoderBlock",
           "DecoderBlock", "EncoderDecoder", "greedy_decode", "exact_match", "answer_q1", "answer_q2",
           "expected_greedy", "greedy_probe",
           "expected_cross_attention", "expected_encoder_block", "expected_decoder_block", "block_weights"]


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


class EncoderDecoder(nn.Module):
    """The notebook's model under its names: embeddings + positions, encoder blocks, ``ln_enc``; embeddings +
    positions, decoder blocks, ``ln_f`` and the head tied to the target embedding."""

    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        C = config.n_embd
        self.src_wte = nn.Embedding(config.src_vocab_size, C)
        self.src_wpe = nn.Embedding(config.src_block_size, C)
        self.tgt_wte = nn.Embedding(config.tgt_vocab_size, C)
        self.tgt_wpe = nn.Embedding(config.tgt_block_size, C)
        self.drop = nn.Dropout(config.dropout)
        self.encoder = nn.ModuleList([EncoderBlock(C, config.n_head, config.bias) for _ in range(config.n_enc_layer)])
        self.ln_enc = LayerNorm(C, bias=config.bias)
        self.decoder = nn.ModuleList([DecoderBlock(C, config.n_head, config.tgt_block_size, config.bias)
                                      for _ in range(config.n_dec_layer)])
        self.ln_f = LayerNorm(C, bias=config.bias)
        self.lm_head = nn.Linear(C, config.tgt_vocab_size, bias=False)
        self.lm_head.weight = self.tgt_wte.weight

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        src_mask = padding_mask(src, self.config.pad_id)
        pos = torch.arange(src.size(1), device=src.device)
        x = self.drop(self.src_wte(src) + self.src_wpe(pos))
        for block in self.encoder:
            x = block(x, src_mask)
        return self.ln_enc(x), src_mask

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
        pos = torch.arange(tgt_in.size(1), device=tgt_in.device)
        x = self.drop(self.tgt_wte(tgt_in) + self.tgt_wpe(pos))
        for block in self.decoder:
            x = block(x, memory, src_mask)
        return self.lm_head(self.ln_f(x))

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        memory, src_mask = self.encode(src)
        logits = self.decode(tgt_in, memory, src_mask)
        loss = None
        if tgt_out is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1),
                                   ignore_index=self.config.pad_id)
        return logits, loss


def greedy_decode(model, src: Tensor, bos_id: int, eos_id: int, pad_id: int, max_new_tokens: int) -> Tensor:
    """Encoder once, then the decoder token by token: ``(B, n)`` ids without ``<bos>``."""
    with torch.no_grad():
        memory, src_mask = model.encode(src)
        ids = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        for _ in range(max_new_tokens):
            nxt = model.decode(ids, memory, src_mask)[:, -1].argmax(dim=-1)
            nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            done = done | (nxt == eos_id)
            if bool(done.all()):
                break
    return ids[:, 1:]


def exact_match(predictions: list[str], targets: list[str]) -> float:
    """The share of predictions equal to their target, character for character."""
    return sum(p == t for p, t in zip(predictions, targets)) / len(targets)


answer_q1 = "D"  # the padding mask acts on the key axis S
answer_q2 = "A"  # the encoder once, the decoder once per written token


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


# where each weight of the notebook's blocks lies in torch's layers: (their name, None) for a whole module,
# (their in_proj, i) for W_Q, W_K, W_V (i = 0, 1, 2: rows i*C ... of in_proj_weight / in_proj_bias), (in_proj, -1)
# for the whole stacked in_proj (CausalSelfAttention's c_attn)
_CROSS_TWIN = {"q_proj": ("in_proj", 0), "k_proj": ("in_proj", 1), "v_proj": ("in_proj", 2),
               "c_proj": ("out_proj", None)}
_ENCODER_TWIN = {"ln1": ("norm1", None), "ln2": ("norm2", None), "mlp.c_fc": ("linear1", None),
                 "mlp.c_proj": ("linear2", None),
                 **{f"attn.{k}": (f"self_attn.{n}", i) for k, (n, i) in _CROSS_TWIN.items()}}
_DECODER_TWIN = {"ln1": ("norm1", None), "ln_cross": ("norm2", None), "ln2": ("norm3", None),
                 "mlp.c_fc": ("linear1", None), "mlp.c_proj": ("linear2", None),
                 "attn.c_attn": ("self_attn.in_proj", -1), "attn.c_proj": ("self_attn.out_proj", None),
                 **{f"cross.{k}": (f"multihead_attn.{n}", i) for k, (n, i) in _CROSS_TWIN.items()}}


def _twin_part(twin: nn.Module, name: str, part: int | None, kind: str, C: int, grad: bool = False) -> Tensor:
    t = twin.get_parameter(f"{name}_{kind}" if part is not None else f"{name}.{kind}")
    t = t.grad if grad else t
    return t if part is None or part < 0 else t[part * C:(part + 1) * C]


def block_weights(which: str, C: int, bias: bool = True) -> dict[str, tuple[int, ...]]:
    """The weights (names and shapes) a test reads from the notebook's ``"cross"`` attention, ``"encoder"`` block
    or ``"decoder"`` block of width ``C``."""
    table = {"cross": _CROSS_TWIN, "encoder": _ENCODER_TWIN, "decoder": _DECODER_TWIN}[which]
    shapes = {"mlp.c_fc": (4 * C, C), "mlp.c_proj": (C, 4 * C), "attn.c_attn": (3 * C, C)}
    out = {}
    for mine in table:
        weight = (C,) if mine.startswith("ln") else shapes.get(mine, (C, C))
        out[f"{mine}.weight"] = weight
        if bias:
            out[f"{mine}.bias"] = weight[:1]
    return out


def _twin_run(twin: nn.Module, table: dict, w: dict[str, Tensor], C: int, run) -> tuple[Tensor, dict[str, Tensor]]:
    """Copy ``w`` (the notebook's names) into ``twin`` through ``table``; ``run(twin)`` -> (output, loss); the
    output and the loss's gradients under the notebook's names (for the weights ``w`` holds)."""
    kinds = [(mine, theirs, part, kind) for mine, (theirs, part) in table.items() for kind in ("weight", "bias")
             if f"{mine}.{kind}" in w]
    with torch.no_grad():
        for mine, theirs, part, kind in kinds:
            _twin_part(twin, theirs, part, kind, C).copy_(w[f"{mine}.{kind}"])
    y, loss = run(twin)
    loss.backward()
    grads = {}
    for mine, theirs, part, kind in kinds:
        grads[f"{mine}.{kind}"] = _twin_part(twin, theirs, part, kind, C, grad=True)
    return y.detach(), grads


def expected_cross_attention(w: dict[str, Tensor], n_head: int, x: Tensor, memory: Tensor, mask: Tensor | None,
                             bias: bool = True) -> tuple[Tensor, dict[str, Tensor]]:
    """``nn.MultiheadAttention``'s output with the notebook's cross-attention weights ``w`` (``q_proj.weight``,
    ...), and the gradients of the sum of its squares under those names."""
    C = x.shape[-1]
    mha = nn.MultiheadAttention(C, n_head, bias=bias, batch_first=True).to(x.dtype)

    def run(m):
        y = m(x, memory, memory, key_padding_mask=None if mask is None else ~mask, need_weights=False)[0]
        return y, y.pow(2).sum()
    return _twin_run(mha, _CROSS_TWIN, w, C, run)


def expected_encoder_block(w: dict[str, Tensor], n_head: int, x: Tensor, mask: Tensor) -> tuple[Tensor, dict]:
    """``nn.TransformerEncoderLayer`` (pre-LN, GELU) with the notebook's encoder-block weights ``w``: its output,
    and the gradients of the sum of its squares at real positions (``mask`` True) under ``w``'s names."""
    C = x.shape[-1]
    twin = nn.TransformerEncoderLayer(C, n_head, 4 * C, dropout=0.0, activation="gelu", batch_first=True,
                                      norm_first=True).to(x.dtype).train()  # train mode (dropout 0): the plain path

    def run(m):
        y = m(x, src_key_padding_mask=~mask)
        return y, (y.pow(2) * mask[:, :, None]).sum()
    return _twin_run(twin, _ENCODER_TWIN, w, C, run)


def expected_decoder_block(w: dict[str, Tensor], n_head: int, x: Tensor, memory: Tensor,
                           mask: Tensor | None) -> tuple[Tensor, dict]:
    """``nn.TransformerDecoderLayer`` (pre-LN, GELU, causal ``tgt_mask``) with the notebook's decoder-block
    weights ``w``: its output, and the gradients of the sum of its squares under ``w``'s names."""
    C, T = x.shape[-1], x.shape[1]
    twin = nn.TransformerDecoderLayer(C, n_head, 4 * C, dropout=0.0, activation="gelu", batch_first=True,
                                      norm_first=True).to(x.dtype).train()
    causal = nn.Transformer.generate_square_subsequent_mask(T, dtype=x.dtype)

    def run(m):
        y = m(x, memory, tgt_mask=causal, memory_key_padding_mask=None if mask is None else ~mask)
        return y, y.pow(2).sum()
    return _twin_run(twin, _DECODER_TWIN, w, C, run)


def greedy_probe(V: int, C: int, seed: int, pad_id: int = 0, bos_id: int = 1, sure_id: int = 2):
    """The greedy-decoding tests' model, and ``calls``, the one way to read what a graded call did to it.

    The model (float64, no gradients) has ``encode(src)`` -> ``(memory, src_mask)``, the memory the
    embedding of the source (zero at ``pad_id``), and ``decode(ids, memory, src_mask)`` -> logits
    ``(B, t, V)`` that depend on every id read, its position and the mean of the real source
    positions; it never writes ``pad_id`` or ``bos_id``, and writes ``sure_id`` at the latest as its
    5th token. ``calls()`` returns ``(encodes, first)``: the number of ``encode`` calls and the ids
    (plain lists) of the first ``decode`` call since the last ``calls()``, and starts counting
    afresh. The count lives in this function's closure, not on the model, where the code under test
    could write it. The same arguments build the same model: a test computes its expected value
    with a twin the code under test never held."""
    log = {"encodes": 0, "first": None}

    class Probe(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            g = torch.Generator().manual_seed(seed)
            self.emb = nn.Parameter(torch.randn(V, C, generator=g, dtype=torch.float64), requires_grad=False)
            self.tok = nn.Parameter(torch.randn(V, V, generator=g, dtype=torch.float64) * 2, requires_grad=False)
            self.mix = nn.Parameter(torch.randn(C, V, generator=g, dtype=torch.float64) * 2, requires_grad=False)
            self.pos = nn.Parameter(torch.randn(16, V, generator=g, dtype=torch.float64), requires_grad=False)
            self.pos.data[4:, sure_id] += 50.0  # sure_id certain as the 5th token written
            self.pos.data[:, [pad_id, bos_id]] -= 50.0  # never <pad> or <bos>

        def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
            log["encodes"] += 1
            mask = src != pad_id
            return self.emb[src] * mask[..., None], mask  # (B, S, C), (B, S)

        def decode(self, ids: Tensor, memory: Tensor, src_mask: Tensor) -> Tensor:
            if log["first"] is None:
                log["first"] = [[int(v) for v in row] for row in ids.tolist()]
            ctx = memory.sum(1) / src_mask.sum(1, keepdim=True)  # (B, C)
            return self.tok[ids] + (ctx @ self.mix)[:, None, :] + self.pos[: ids.size(1)]  # (B, t, V)

    def calls() -> tuple[int, list | None]:
        out = (log["encodes"], log["first"])
        log["encodes"], log["first"] = 0, None
        return out

    return Probe(), calls


# torch's ready-made attention and transformer layers: refused in every graded answer
READY_MADE = (nn.Transformer, nn.TransformerEncoder, nn.TransformerDecoder, nn.TransformerEncoderLayer,
              nn.TransformerDecoderLayer, nn.MultiheadAttention)
# the data code that pads, shifts and scores a batch of pairs (teacher forcing and the padded loss)
DATA = (dates.make_batch, dates.sample_batch, dates.padded_cross_entropy, dates.one_sequence_batch,
        dates.decoder_only_greedy)


def __getattr__(name: str):
    """``REFERENCE`` (the course's encoder-decoder, these answers and helpers, torch's layers that do the same
    work, and notebook 07's decoding loops: generate with a top-1 filter is greedy decoding), made on first use:
    the stand-ins' source copies this module's imports, and a graded kernel has neither lmcourse.nn.seq2seq's
    answers nor notebook 07's reference to import."""
    if name != "REFERENCE":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from lmcourse.reference import decoding as decoding_reference
    from lmcourse.reference import nn_seq2seq_work

    return nn_seq2seq_work() + READY_MADE + DATA + (
        padding_mask, teacher_forcing, CrossAttention, EncoderBlock, DecoderBlock, EncoderDecoder, greedy_decode,
        exact_match, expected_greedy, expected_cross_attention, expected_encoder_block,
        expected_decoder_block) + decoding_reference.REFERENCE
