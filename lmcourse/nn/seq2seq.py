"""The course's encoder-decoder transformer (the 2017 layout, pre-LN), used by notebook 09.

Notebook 09 has students write these themselves; its hidden tests make sure a graded answer does
not simply call into this module.

The model, in the lectures' notation (source ``x_1..x_n``, target ``y_1..y_m``, ``d = n_embd``)::

    h_enc^(0)  = E_src[x_i] + p_i                                 source tokens + learned positions
    h_enc^(l)  = EncoderBlock_l(h_enc^(l-1), m)                  bidirectional; m masks the padding
    h_enc      = LN_enc(h_enc^(L_enc))
    g^(0)      = E_tgt[y_j] + q_j                                 decoder input: <bos> y_1 .. y_{m}
    g^(l)      = DecoderBlock_l(g^(l-1), h_enc, m)
    logits_j   = LN_f(g_j^(L_dec)) E_tgt^T                        head tied to the target embedding
    loss       = mean over real target positions of -log softmax(logits_j)[y_{j+1}]

One pre-LN block of each kind (``x`` is the block's input; ``LN`` a LayerNorm of its own)::

    encoder:  h = x + SelfAttn(LN1(x), keys masked by m);        out = h + MLP(LN2(h))
    decoder:  h = x + SelfAttn(LN1(x), causal)
              h = h + CrossAttn(q = LN_x(h), k = v = h_enc, keys masked by m)
              out = h + MLP(LN2(h))

Cross-attention is the attention of notebook 03 with its queries taken from one sequence (the
decoder's) and its keys and values from another (the encoder's output): the weights are
``(T_tgt, T_src)``. Its parameters are laid out as the self-attention's (one ``c_attn`` holding
``W_q; W_k; W_v``, as ``nn.MultiheadAttention``'s ``in_proj_weight``), ``W_q`` applied to the
decoder stream and ``W_k, W_v`` to the encoder output.

Masks are boolean and say where attending is *allowed* (the convention of
``lmcourse.nn.scaled_dot_product_attention`` and ``F.scaled_dot_product_attention``; note that
``nn.MultiheadAttention``'s ``key_padding_mask`` is the opposite, True where a key is ignored).
A masked score is ``-inf`` before the softmax, so a padding key gets weight exactly 0. A row
with no allowed key at all would be a softmax of ``-inf`` everywhere (NaN): it cannot happen
here, because :func:`padding_mask` refuses a sequence with no real token and every query of the
causal decoder may see at least its own position. Query rows at padded *source* positions are
computed and never read (no real query attends to them, and the cross-attention masks them as
keys). The target needs no padding mask: padding comes after every real target token, so the
causal mask already hides it from them, and the loss ignores the positions it fills.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import AttentionConfig, CausalSelfAttention, scaled_dot_product_attention
from .block import Block, BlockConfig, LayerNorm
from .mlm import init_mlm_weights
from .seq2seq_config import Seq2SeqConfig

__all__ = ["Seq2SeqConfig", "padding_mask", "attention_mask", "MaskedSelfAttention", "CrossAttention",
           "EncoderBlock", "DecoderBlock", "EncoderDecoder", "init_seq2seq_weights", "greedy_decode", "beam_decode",
           "DecoderLM", "exact_match", "notebook_state"]


def padding_mask(x: Tensor, pad_id: int | None = None, max_len: int | None = None) -> Tensor:
    """Which positions hold a real token: bool ``(B, T)``, True at real tokens, False at padding.

    ``x`` is either ids ``(B, T)`` with padding ``pad_id`` (give ``pad_id``), or lengths ``(B,)``
    (leave ``pad_id`` out): position ``t`` of row ``b`` is real when ``t < x[b]``, for ``t <
    max_len`` (default ``max(x)``). A row with no real token raises ``ValueError``: attention
    over it would have no key to put its weight on.
    """
    if pad_id is not None:
        mask = x != pad_id  # (B, T)
    else:
        if x.dim() != 1:
            raise ValueError(f"lengths must be (B,), got shape {tuple(x.shape)}; for ids give pad_id")
        T = int(x.max()) if max_len is None else max_len
        mask = torch.arange(T, device=x.device)[None, :] < x[:, None]  # (B, T)
    if not bool(mask.any(dim=-1).all()):
        raise ValueError("a sequence has no real token (every position is padding)")
    return mask


def attention_mask(key_mask: Tensor | None, T_q: int, T_k: int, causal: bool = False,
                   device: torch.device | str | None = None) -> Tensor | None:
    """The boolean mask attention takes, True where query ``i`` may attend to key ``j``:
    ``(B, 1, T_q, T_k)`` from the keys' padding mask ``(B, T_k)`` (broadcast over heads and
    queries), AND-ed with the causal mask ``j <= i`` when ``causal`` (``(T_q, T_k)`` on ``device``
    without a padding mask); ``None`` when neither."""
    mask = None
    if key_mask is not None:
        mask = key_mask[:, None, None, :]  # (B, 1, 1, T_k): the same keys hidden from every query
        device = key_mask.device
    if causal:
        tril = torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril()  # (T_q, T_k)
        mask = tril if mask is None else mask & tril  # (B, 1, T_q, T_k)
    return mask


def _attend(module: CausalSelfAttention, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> Tensor:
    """``softmax(q k^T / sqrt(d_k) + mask) v`` per head, fast or explicit as ``module.fast`` says,
    with dropout on the weights while training: ``(B, nh, T_q, hs)``."""
    if module.fast:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                              dropout_p=module.dropout if module.training else 0.0)
    y, att = scaled_dot_product_attention(q, k, v, mask)  # (B, nh, T_q, hs), (B, nh, T_q, T_k)
    if module.training and module.dropout > 0:
        y = module.attn_dropout(att) @ v
    return y


def _merge(y: Tensor) -> Tensor:
    B, nh, T, hs = y.shape
    return y.transpose(1, 2).contiguous().view(B, T, nh * hs)  # (B, T, C): heads side by side


class MaskedSelfAttention(CausalSelfAttention):
    """The course's multi-head self-attention (same parameters, same ``config.causal``) that also
    takes the keys' padding mask ``(B, T)`` (True at real tokens)."""

    def forward(self, x: Tensor, key_mask: Tensor | None = None) -> Tensor:
        T = x.size(1)
        q, k, v = self._heads(x)  # 3 x (B, nh, T, hs)
        y = _attend(self, q, k, v, attention_mask(key_mask, T, T, self.causal, x.device))  # (B, nh, T, hs)
        return self.resid_dropout(self.c_proj(_merge(y)))  # (B, T, C)

    def attention_weights(self, x: Tensor, key_mask: Tensor | None = None) -> Tensor:
        """The weights ``(B, nh, T, T)``, explicit path, no dropout."""
        with torch.no_grad():
            T = x.size(1)
            q, k, v = self._heads(x)
            return scaled_dot_product_attention(q, k, v, attention_mask(key_mask, T, T, self.causal, x.device))[1]


class CrossAttention(CausalSelfAttention):
    """Multi-head cross-attention: queries from ``x`` ``(B, T, C)`` (the decoder), keys and values
    from ``memory`` ``(B, S, C)`` (the encoder's output), keys masked by ``memory_mask`` ``(B, S)``.

    The parameters are the course's self-attention's: ``c_attn`` stacks ``W_q; W_k; W_v``
    ``(3C, C)``, ``c_proj`` is ``W_O``. Never causal: every target position may read the whole
    source, which exists in full before decoding starts.
    """

    def __init__(self, config: AttentionConfig) -> None:
        super().__init__(AttentionConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=1,
                                         dropout=config.dropout, bias=config.bias, causal=False, fast=config.fast))

    def _cross_heads(self, x: Tensor, memory: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        B, T, C = x.shape
        S = memory.size(1)
        hs = C // self.n_head
        w_q, w_kv = self.c_attn.weight.split([C, 2 * C])  # (C, C), (2C, C)
        b_q, b_kv = (None, None) if self.c_attn.bias is None else self.c_attn.bias.split([C, 2 * C])
        q = F.linear(x, w_q, b_q)  # (B, T, C): queries from the decoder
        k, v = F.linear(memory, w_kv, b_kv).split(C, dim=2)  # 2 x (B, S, C): keys, values from the encoder
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)
        v = v.view(B, S, self.n_head, hs).transpose(1, 2)  # (B, nh, S, hs)
        return q, k, v

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        q, k, v = self._cross_heads(x, memory)
        y = _attend(self, q, k, v, attention_mask(memory_mask, x.size(1), memory.size(1)))  # (B, nh, T, hs)
        return self.resid_dropout(self.c_proj(_merge(y)))  # (B, T, C)

    def attention_weights(self, x: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        """The weights ``(B, nh, T, S)`` each target position puts on each source position
        (explicit path, no dropout): the heatmaps of notebook 09."""
        with torch.no_grad():
            q, k, v = self._cross_heads(x, memory)
            return scaled_dot_product_attention(q, k, v, attention_mask(memory_mask, x.size(1), memory.size(1)))[1]


class EncoderBlock(Block):
    """The course's pre-LN :class:`~lmcourse.nn.Block` (same parameter names), bidirectional, with
    the source padding mask: ``h = x + attn(ln1(x), m)``, ``out = h + mlp(ln2(h))``."""

    def __init__(self, config: BlockConfig) -> None:
        if config.causal or not config.prenorm:
            raise ValueError("an encoder block is bidirectional (causal=False) and pre-LN (prenorm=True)")
        super().__init__(config)
        self.attn = MaskedSelfAttention(config.attention())

    def forward(self, x: Tensor, src_mask: Tensor | None = None) -> Tensor:
        x = x + self.attn(self.ln1(x), src_mask)  # (B, S, C)
        return x + self.mlp(self.ln2(x))  # (B, S, C)


class DecoderBlock(Block):
    """Causal self-attention, cross-attention to the encoder, MLP; each pre-LN with a residual:
    ``h = x + attn(ln1(x))``, ``h = h + cross(ln_cross(h), memory, m)``, ``out = h + mlp(ln2(h))``."""

    def __init__(self, config: BlockConfig) -> None:
        if not config.causal or not config.prenorm:
            raise ValueError("a decoder block is causal (causal=True) and pre-LN (prenorm=True)")
        super().__init__(config)
        self.attn = MaskedSelfAttention(config.attention())
        self.ln_cross = LayerNorm(config.n_embd, bias=config.bias, eps=config.ln_eps)
        self.cross = CrossAttention(config.attention())

    def forward(self, x: Tensor, memory: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        x = x + self.attn(self.ln1(x))  # (B, T, C): causal, needs no padding mask (padding comes last)
        x = x + self.cross(self.ln_cross(x), memory, memory_mask)  # (B, T, C)
        return x + self.mlp(self.ln2(x))  # (B, T, C)


class EncoderDecoder(nn.Module):
    """Source and target embeddings with learned positions, ``n_enc_layer`` encoder blocks and a
    final LayerNorm, ``n_dec_layer`` decoder blocks, a final LayerNorm and the LM head.

    ``forward(src, tgt_in, tgt_out=None)`` takes source ids ``(B, S)`` (padded with ``pad_id``),
    the decoder's input ``(B, T)`` (``<bos>`` + target) and optionally what it must predict
    ``(B, T)`` (target + ``<eos>``, padded with ``pad_id``); returns ``(logits (B, T, V), loss)``,
    the loss the mean cross-entropy over the positions of ``tgt_out`` that are not ``pad_id``
    (``None`` without ``tgt_out``).
    """

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = config
        C = config.n_embd
        self.src_wte = nn.Embedding(config.src_vocab_size, C)  # E_src: (V_src, C)
        self.src_wpe = nn.Embedding(config.src_block_size, C)  # p_i: (S_max, C)
        self.tgt_wte = nn.Embedding(config.tgt_vocab_size, C)  # E_tgt: (V_tgt, C)
        self.tgt_wpe = nn.Embedding(config.tgt_block_size, C)  # q_j: (T_max, C)
        self.drop = nn.Dropout(config.dropout)
        self.encoder = nn.ModuleList(EncoderBlock(config.block_config("encoder")) for _ in range(config.n_enc_layer))
        self.ln_enc = LayerNorm(C, bias=config.bias, eps=config.ln_eps)
        self.decoder = nn.ModuleList(DecoderBlock(config.block_config("decoder")) for _ in range(config.n_dec_layer))
        self.ln_f = LayerNorm(C, bias=config.bias, eps=config.ln_eps)
        self.lm_head = nn.Linear(C, config.tgt_vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.tgt_wte.weight  # tied: one tensor, two uses
        init_seq2seq_weights(self)

    def encode(self, src: Tensor, src_mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Run the encoder once: ``(memory (B, S, C), src_mask (B, S))``; the mask is
        ``padding_mask(src, pad_id)`` unless given."""
        B, S = src.shape
        if S > self.config.src_block_size:
            raise ValueError(f"source length {S} exceeds src_block_size {self.config.src_block_size}")
        if src_mask is None:
            src_mask = padding_mask(src, self.config.pad_id)  # (B, S)
        x = self.drop(self.src_wte(src) + self.src_wpe(torch.arange(S, device=src.device)))  # (B, S, C)
        for block in self.encoder:
            x = block(x, src_mask)  # (B, S, C)
        return self.ln_enc(x), src_mask

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor | None) -> Tensor:
        """The decoder on ``tgt_in`` ``(B, T)`` reading ``memory`` ``(B, S, C)``: logits ``(B, T, V)``."""
        T = tgt_in.size(1)
        if T > self.config.tgt_block_size:
            raise ValueError(f"decoder input length {T} exceeds tgt_block_size {self.config.tgt_block_size}")
        x = self.drop(self.tgt_wte(tgt_in) + self.tgt_wpe(torch.arange(T, device=tgt_in.device)))  # (B, T, C)
        for block in self.decoder:
            x = block(x, memory, src_mask)  # (B, T, C)
        return self.lm_head(self.ln_f(x))  # (B, T, V)

    def forward(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        memory, src_mask = self.encode(src)  # (B, S, C), (B, S)
        logits = self.decode(tgt_in, memory, src_mask)  # (B, T, V)
        loss = None
        if tgt_out is not None:
            flat = logits.reshape(-1, logits.size(-1))  # (B*T, V)
            flat = flat.to(torch.promote_types(flat.dtype, torch.float32))  # at least float32 under autocast
            loss = F.cross_entropy(flat, tgt_out.reshape(-1), ignore_index=self.config.pad_id)
        return logits, loss

    def cross_attention_weights(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        """What every decoder layer's cross-attention reads, ``(L_dec, B, nh, T, S)``: row ``j`` is
        how decoder position ``j`` (which predicts target token ``j``) spreads its weight over the
        source characters. Padding keys get 0. Eval-mode arithmetic (no dropout)."""
        with torch.no_grad():
            memory, src_mask = self.encode(src)
            T = tgt_in.size(1)
            x = self.tgt_wte(tgt_in) + self.tgt_wpe(torch.arange(T, device=tgt_in.device))  # (B, T, C)
            weights = []
            for block in self.decoder:
                x = x + block.attn(block.ln1(x))
                weights.append(block.cross.attention_weights(block.ln_cross(x), memory, src_mask))
                x = x + block.cross(block.ln_cross(x), memory, src_mask)
                x = x + block.mlp(block.ln2(x))
            return torch.stack(weights)  # (L_dec, B, nh, T, S)

    def num_params(self) -> int:
        """Parameters, each tensor counted once (a tied head is the target embedding)."""
        return sum(p.numel() for p in self.parameters())


def init_seq2seq_weights(model: EncoderDecoder, std: float = 0.02) -> EncoderDecoder:
    """GPT-2's initialisation, in place (as :func:`lmcourse.nn.init_gpt_weights`): linear and
    embedding weights ~ N(0, std^2), biases 0, LayerNorm gains 1; the projections that write into
    a residual stream ~ N(0, (std / sqrt(n))^2), ``n`` the additions that stream receives
    (``2 L_enc`` in the encoder, ``3 L_dec`` in the decoder)."""
    init_mlm_weights(model, std)    # the plain part (BERT's), then GPT-2's scaled residual writes
    with torch.no_grad():
        stacks = ((model.encoder, 2 * len(model.encoder)), (model.decoder, 3 * len(model.decoder)))
        for stack, n in stacks:
            for name, p in stack.named_parameters():
                if name.endswith(("attn.c_proj.weight", "cross.c_proj.weight", "mlp.c_proj.weight")):
                    nn.init.normal_(p, mean=0.0, std=std / math.sqrt(max(1, n)))
    return model


def greedy_decode(model: EncoderDecoder, src: Tensor, bos_id: int, eos_id: int,
                  max_new_tokens: int | None = None) -> Tensor:
    """Greedy decoding, a batch at a time: the encoder runs once on ``src`` ``(B, S)``; then the
    decoder, on ``<bos>`` and what it has produced so far, gives the next id as the argmax of the
    last position's logits, until every row has produced ``eos_id`` or ``max_new_tokens`` ids
    (default ``tgt_block_size``). Returns ``(B, n)`` ids without the ``<bos>``: each row's ``eos_id``
    is kept and what follows it is ``pad_id``. (No cache: the decoder re-reads its whole prefix
    at each step, which is cheap for targets of a dozen tokens.)"""
    with torch.no_grad():
        return _greedy_decode(model, src, bos_id, eos_id, max_new_tokens)


def _greedy_decode(model, src, bos_id, eos_id, max_new_tokens):
    cfg = model.config
    n = cfg.tgt_block_size if max_new_tokens is None else max_new_tokens
    if n > cfg.tgt_block_size:
        raise ValueError(f"max_new_tokens={n} exceeds tgt_block_size {cfg.tgt_block_size}")
    memory, src_mask = model.encode(src)  # once: (B, S, C), (B, S)
    B = src.size(0)
    out = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
    for _ in range(n):
        logits = model.decode(out, memory, src_mask)  # (B, t, V)
        nxt = logits[:, -1, :].argmax(dim=-1).masked_fill(done, cfg.pad_id)  # (B,)
        out = torch.cat([out, nxt[:, None]], dim=1)  # (B, t + 1)
        done = done | (nxt == eos_id)
        if bool(done.all()):
            break
    return out[:, 1:]


class DecoderLM:
    """The decoder, for one source, as the language model :func:`lmcourse.reference.decoding.beam_search`
    expects: ``lm(ids (nb, T))`` gives ``(logits (nb, T, V), None)`` and ``lm.config.block_size``
    is ``tgt_block_size``. The encoder runs once, here; every beam reads the same ``memory``."""

    def __init__(self, model: EncoderDecoder, src: Tensor) -> None:
        if src.dim() == 1:
            src = src[None, :]
        if src.size(0) != 1:
            raise ValueError(f"one source at a time, got a batch of {src.size(0)}")
        self.model = model
        self.config = SimpleNamespace(block_size=model.config.tgt_block_size)
        with torch.no_grad():
            self.memory, self.src_mask = model.encode(src)  # (1, S, C), (1, S)

    def __call__(self, ids: Tensor) -> tuple[Tensor, None]:
        nb = ids.size(0)
        memory = self.memory.expand(nb, -1, -1)  # (nb, S, C): the same source for every beam
        return self.model.decode(ids, memory, self.src_mask.expand(nb, -1)), None  # (nb, T, V)


def beam_decode(model: EncoderDecoder, src: Tensor, bos_id: int, eos_id: int, beam_size: int = 4,
                max_new_tokens: int | None = None, length_penalty: float = 1.0) -> list[tuple[Tensor, float]]:
    """Beam search on the decoder for one source ``(S,)`` or ``(1, S)``: notebook 07's
    :func:`lmcourse.reference.decoding.beam_search`, run on :class:`DecoderLM` from the prompt ``<bos>``.
    Returns up to ``beam_size`` pairs ``(ids, score)``, best first, the ids without ``<bos>``
    (a finished hypothesis ends in ``eos_id``), the score its summed log-probability divided by
    ``n ** length_penalty``."""
    # 07's answer, imported when used: importing this module never needs it (it is absent while 07 is graded)
    from lmcourse.reference.decoding import beam_search

    cfg = model.config
    n = cfg.tgt_block_size if max_new_tokens is None else max_new_tokens
    if n > cfg.tgt_block_size:
        raise ValueError(f"max_new_tokens={n} exceeds tgt_block_size {cfg.tgt_block_size}")
    lm = DecoderLM(model, src)
    prompt = torch.tensor([bos_id], device=lm.memory.device)
    return [(ids[1:], score) for ids, score in
            beam_search(lm, prompt, beam_size, n, length_penalty=length_penalty, eos_id=eos_id)]


def exact_match(predictions: Sequence[str], targets: Sequence[str]) -> float:
    """The fraction of predictions equal to their target, character for character."""
    if len(predictions) != len(targets):
        raise ValueError(f"{len(predictions)} predictions for {len(targets)} targets")
    if not targets:
        raise ValueError("no targets")
    return sum(p == t for p, t in zip(predictions, targets)) / len(targets)



def notebook_state(model: EncoderDecoder) -> dict[str, Tensor]:
    """The model's weights under notebook 09's names: each attention that is the notebook's ``CrossAttention``
    (the encoder's self-attention, the decoder's cross-attention) has its stacked ``c_attn`` (``W_q; W_k; W_v``)
    split into ``q_proj``, ``k_proj``, ``v_proj``. Given code: the notebook loads the trained weights into the
    student's model with it."""
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
