"""lmcourse.nn.seq2seq against trusted references (nn.MultiheadAttention, nn.Transformer), in float64."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lmcourse.nn import AttentionConfig
from lmcourse.nn.seq2seq import (
    CrossAttention,
    EncoderDecoder,
    MaskedSelfAttention,
    Seq2SeqConfig,
    attention_mask,
    beam_decode,
    exact_match,
    greedy_decode,
    padding_mask,
)
from lmcourse.reference import decoding

TOL = {"atol": 1e-12, "rtol": 1e-10}
PAD, BOS = 0, 1


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randomise(module: nn.Module, seed: int) -> nn.Module:
    """Every parameter drawn afresh (LayerNorm gains and biases too, so none is a no-op)."""
    g = _gen(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            gain = p.dim() == 1 and name.endswith("weight")  # a LayerNorm's gamma: around 1
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3 + (1.0 if gain else 0.0))
    return module


def _ids(B: int, lengths: list[int], V: int, seed: int) -> torch.Tensor:
    """Ids (B, max(lengths)) in 3..V-1, PAD after each row's length."""
    g = _gen(seed)
    ids = torch.randint(3, V, (B, max(lengths)), generator=g)
    for b, n in enumerate(lengths):
        ids[b, n:] = PAD
    return ids


def _model(seed: int = 0, n_enc: int = 2, n_dec: int = 2, fast: bool = True, **kw) -> EncoderDecoder:
    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(src_vocab_size=23, tgt_vocab_size=19, src_block_size=12, tgt_block_size=9, n_enc_layer=n_enc,
                        n_dec_layer=n_dec, n_head=4, n_embd=16, fast=fast, **kw)
    return _randomise(EncoderDecoder(cfg), seed).double().eval()


def _mha_like(attn: nn.Module) -> nn.MultiheadAttention:
    """nn.MultiheadAttention holding the weights of one of ours (c_attn = in_proj, c_proj = out_proj)."""
    C = attn.n_embd
    mha = nn.MultiheadAttention(C, attn.n_head, dropout=0.0, bias=True, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(attn.c_attn.weight)
        mha.in_proj_bias.copy_(attn.c_attn.bias)
        mha.out_proj.weight.copy_(attn.c_proj.weight)
        mha.out_proj.bias.copy_(attn.c_proj.bias)
    return mha


# --- masks ---------------------------------------------------------------------------------

def test_padding_mask_from_ids_and_from_lengths():
    ids = torch.tensor([[5, 6, 7, 0], [8, 0, 0, 0], [3, 4, 5, 6]])
    want = torch.tensor([[True, True, True, False], [True, False, False, False], [True, True, True, True]])
    assert torch.equal(padding_mask(ids, pad_id=0), want)
    assert torch.equal(padding_mask(torch.tensor([3, 1, 4])), want)
    assert padding_mask(torch.tensor([3, 1]), max_len=6).shape == (2, 6)
    with pytest.raises(ValueError, match="no real token"):
        padding_mask(torch.tensor([[0, 0], [4, 0]]), pad_id=0)
    with pytest.raises(ValueError, match="no real token"):
        padding_mask(torch.tensor([2, 0]))


def test_attention_mask_combines_padding_and_causality():
    key = torch.tensor([[True, True, False], [True, False, False]])
    m = attention_mask(key, 3, 3, causal=True)
    assert m.shape == (2, 1, 3, 3) and m.dtype == torch.bool
    assert torch.equal(m[0, 0], torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 0]], dtype=torch.bool))
    assert torch.equal(m[1, 0], torch.tensor([[1, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=torch.bool))
    assert attention_mask(None, 2, 5) is None
    assert attention_mask(key, 4, 3).shape == (2, 1, 1, 3)  # cross: the same keys hidden from every query


# --- attention against nn.MultiheadAttention ------------------------------------------------

@pytest.mark.parametrize("fast", [True, False])
def test_cross_attention_equals_multihead_attention_with_padding(fast):
    g = _gen(1)
    B, T, S, C, H = 3, 5, 7, 16, 4
    cross = _randomise(CrossAttention(AttentionConfig(n_embd=C, n_head=H, fast=fast)), 2).double()
    x = torch.randn(B, T, C, generator=g, dtype=torch.float64)  # decoder stream: the queries
    memory = torch.randn(B, S, C, generator=g, dtype=torch.float64)  # encoder output: keys and values
    keep = padding_mask(torch.tensor([7, 3, 1]))  # (B, S): True at real source tokens
    want, want_w = _mha_like(cross)(x, memory, memory, key_padding_mask=~keep, need_weights=True,
                                    average_attn_weights=False)
    torch.testing.assert_close(cross(x, memory, keep), want, **TOL)
    w = cross.attention_weights(x, memory, keep)  # (B, nh, T, S)
    torch.testing.assert_close(w, want_w, **TOL)
    assert (w[1, :, :, 3:] == 0).all() and (w[2, :, :, 1:] == 0).all()  # padding keys get exactly 0
    torch.testing.assert_close(w.sum(-1), torch.ones(B, H, T, dtype=torch.float64), **TOL)


def test_cross_attention_is_not_self_attention():
    """Keys and values come from the memory: changing the memory changes the output, and the
    output does not depend on the memory's order if the mask moves with it (a set of keys)."""
    g = _gen(3)
    cross = _randomise(CrossAttention(AttentionConfig(n_embd=8, n_head=2)), 4).double()
    x = torch.randn(2, 4, 8, generator=g, dtype=torch.float64)
    memory = torch.randn(2, 6, 8, generator=g, dtype=torch.float64)
    keep = padding_mask(torch.tensor([6, 4]))
    out = cross(x, memory, keep)
    perm = torch.randperm(6, generator=g)
    torch.testing.assert_close(cross(x, memory[:, perm], keep[:, perm]), out, **TOL)
    assert not torch.allclose(cross(x, memory + 1.0, keep), out)


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_equals_multihead_attention_with_padding(fast, causal):
    g = _gen(5)
    B, T, C, H = 3, 6, 16, 4
    cfg = AttentionConfig(n_embd=C, n_head=H, block_size=8, causal=causal, fast=fast)
    attn = _randomise(MaskedSelfAttention(cfg), 6).double()
    x = torch.randn(B, T, C, generator=g, dtype=torch.float64)
    keep = padding_mask(torch.tensor([6, 4, 2]))
    future = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None  # MHA: True = not allowed
    want, want_w = _mha_like(attn)(x, x, x, key_padding_mask=~keep, attn_mask=future, need_weights=True,
                                   average_attn_weights=False)
    torch.testing.assert_close(attn(x, keep), want, **TOL)
    torch.testing.assert_close(attn.attention_weights(x, keep), want_w, **TOL)
    # without a padding mask it is the course's attention, unchanged
    base_cls = MaskedSelfAttention.__mro__[1]
    base = base_cls(cfg).double()
    base.load_state_dict(attn.state_dict())
    torch.testing.assert_close(attn(x), base(x), **TOL)


# --- the whole model against nn.Transformer -------------------------------------------------

def _transformer_like(model: EncoderDecoder) -> nn.Transformer:
    cfg = model.config
    ref = nn.Transformer(d_model=cfg.n_embd, nhead=cfg.n_head, num_encoder_layers=cfg.n_enc_layer,
                         num_decoder_layers=cfg.n_dec_layer, dim_feedforward=4 * cfg.n_embd, dropout=0.0,
                         activation="gelu", layer_norm_eps=cfg.ln_eps, batch_first=True, norm_first=True,
                         bias=True).double()

    def attn(dst: nn.MultiheadAttention, src: nn.Module) -> dict:
        return {dst: {"in_proj_weight": src.c_attn.weight, "in_proj_bias": src.c_attn.bias,
                      "out_proj.weight": src.c_proj.weight, "out_proj.bias": src.c_proj.bias}}

    pairs: dict = {}
    for mine, theirs in zip(model.encoder, ref.encoder.layers):
        pairs |= attn(theirs.self_attn, mine.attn)
        pairs |= {theirs.linear1: {"weight": mine.mlp.c_fc.weight, "bias": mine.mlp.c_fc.bias},
                  theirs.linear2: {"weight": mine.mlp.c_proj.weight, "bias": mine.mlp.c_proj.bias},
                  theirs.norm1: {"weight": mine.ln1.weight, "bias": mine.ln1.bias},
                  theirs.norm2: {"weight": mine.ln2.weight, "bias": mine.ln2.bias}}
    for mine, theirs in zip(model.decoder, ref.decoder.layers):
        pairs |= attn(theirs.self_attn, mine.attn) | attn(theirs.multihead_attn, mine.cross)
        pairs |= {theirs.linear1: {"weight": mine.mlp.c_fc.weight, "bias": mine.mlp.c_fc.bias},
                  theirs.linear2: {"weight": mine.mlp.c_proj.weight, "bias": mine.mlp.c_proj.bias},
                  theirs.norm1: {"weight": mine.ln1.weight, "bias": mine.ln1.bias},
                  theirs.norm2: {"weight": mine.ln_cross.weight, "bias": mine.ln_cross.bias},
                  theirs.norm3: {"weight": mine.ln2.weight, "bias": mine.ln2.bias}}
    pairs |= {ref.encoder.norm: {"weight": model.ln_enc.weight, "bias": model.ln_enc.bias},
              ref.decoder.norm: {"weight": model.ln_f.weight, "bias": model.ln_f.bias}}
    with torch.no_grad():
        for module, params in pairs.items():
            for name, value in params.items():
                module.get_parameter(name).copy_(value)
    n_copied = sum(v.numel() for params in pairs.values() for v in params.values())
    assert n_copied == sum(p.numel() for p in ref.parameters())  # every parameter of the reference is set
    return ref


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # nn.Transformer's own, with norm_first
@pytest.mark.parametrize("fast", [True, False])
def test_model_equals_nn_transformer_with_padding_and_causal_mask(fast):
    model = _model(seed=7, n_enc=2, n_dec=3, fast=fast)
    ref = _transformer_like(model).train()  # train() with dropout 0: the plain (non-nested) path
    src = _ids(3, [12, 7, 2], 23, seed=8)
    tgt_in = _ids(3, [9, 9, 9], 19, seed=9)
    keep = padding_mask(src, PAD)
    S, T = src.size(1), tgt_in.size(1)
    src_emb = model.src_wte(src) + model.src_wpe(torch.arange(S))  # (B, S, C)
    tgt_emb = model.tgt_wte(tgt_in) + model.tgt_wpe(torch.arange(T))  # (B, T, C)
    out = ref(src_emb, tgt_emb, tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64),
              src_key_padding_mask=~keep, memory_key_padding_mask=~keep, tgt_is_causal=True)  # (B, T, C)
    logits, _ = model(src, tgt_in)
    torch.testing.assert_close(logits, model.lm_head(out), **TOL)
    memory, _ = model.encode(src)
    want_memory = ref.encoder(src_emb, src_key_padding_mask=~keep)
    torch.testing.assert_close(memory[keep], want_memory[keep], **TOL)  # real positions (padding is never read)


def test_head_is_tied_and_parameters_counted_once():
    model = EncoderDecoder(Seq2SeqConfig(n_embd=16, n_head=2, n_enc_layer=1, n_dec_layer=1))
    assert model.lm_head.weight is model.tgt_wte.weight
    c = model.config
    d = c.n_embd
    block = 12 * d * d + 13 * d  # the course's Block: attention 4d^2+4d, MLP 8d^2+5d, two LayerNorms 4d
    want = (c.src_vocab_size + c.src_block_size + c.tgt_vocab_size + c.tgt_block_size) * d + block \
        + block + (4 * d * d + 4 * d) + 2 * d + 2 * d + 2 * d  # decoder adds cross-attention and its LayerNorm
    assert model.num_params() == want
    untied = EncoderDecoder(Seq2SeqConfig(n_embd=16, n_head=2, n_enc_layer=1, n_dec_layer=1, tie_weights=False))
    assert untied.num_params() == want + c.tgt_vocab_size * d


# --- padding, causality, loss ---------------------------------------------------------------

def test_padding_never_changes_the_output():
    model = _model(seed=11)
    src = _ids(3, [12, 5, 1], 23, seed=12)
    tgt_in = _ids(3, [9, 6, 4], 19, seed=13)
    keep = padding_mask(src, PAD)
    logits, _ = model(src, tgt_in)
    memory, _ = model.encode(src)
    # 1. whatever sits at the padded positions, given the same mask
    noisy = src.clone()
    noisy[~keep] = torch.randint(3, 23, (int((~keep).sum()),), generator=_gen(14))
    memory2, _ = model.encode(noisy, keep)
    torch.testing.assert_close(memory2[keep], memory[keep], **TOL)
    torch.testing.assert_close(model.decode(tgt_in, memory2, keep), logits, **TOL)
    # 2. however much padding follows the source
    short = _ids(3, [5, 4, 1], 23, seed=15)
    padded = torch.cat([short, torch.full((3, 7), PAD)], dim=1)  # the same sources, 7 more pads
    torch.testing.assert_close(model(padded, tgt_in)[0], model(short, tgt_in)[0], **TOL)


def test_decoder_is_causal():
    model = _model(seed=16)
    src = _ids(2, [10, 6], 23, seed=17)
    tgt_in = _ids(2, [9, 9], 19, seed=18)
    logits, _ = model(src, tgt_in)
    for j in range(tgt_in.size(1) - 1):
        changed = tgt_in.clone()
        changed[:, j + 1:] = torch.randint(3, 19, changed[:, j + 1:].shape, generator=_gen(19 + j))
        logits2, _ = model(src, changed)
        torch.testing.assert_close(logits2[:, :j + 1], logits[:, :j + 1], **TOL)  # the past is unchanged
        assert not torch.allclose(logits2[:, j + 1:], logits[:, j + 1:])  # and the test could fail


def test_cross_attention_reads_the_whole_source():
    """Not causal: the first target position already depends on the last source token."""
    model = _model(seed=20)
    src = _ids(1, [10], 23, seed=21)
    tgt_in = _ids(1, [3], 19, seed=22)
    changed = src.clone()
    changed[0, -1] = 3 if src[0, -1] != 3 else 4
    assert not torch.allclose(model(changed, tgt_in)[0][:, 0], model(src, tgt_in)[0][:, 0])


def test_loss_is_the_mean_over_real_target_tokens():
    model = _model(seed=23)
    src = _ids(3, [12, 4, 7], 23, seed=24)
    tgt_in = _ids(3, [9, 5, 2], 19, seed=25)
    tgt_out = _ids(3, [9, 5, 2], 19, seed=26)
    logits, loss = model(src, tgt_in, tgt_out)
    logp = torch.log_softmax(logits, dim=-1)
    terms = [-logp[b, t, tgt_out[b, t]] for b in range(3) for t in range(tgt_out.size(1)) if tgt_out[b, t] != PAD]
    assert len(terms) == 9 + 5 + 2
    torch.testing.assert_close(loss, torch.stack(terms).mean(), **TOL)
    assert model(src, tgt_in)[1] is None


# --- decoding -------------------------------------------------------------------------------

def _stepwise_argmax(model, src, eos_id, n):
    """The reference: at every step the whole model (encoder included) on the prefix, argmax, one row at a time."""
    rows = []
    for b in range(src.size(0)):
        ids = [BOS]
        for _ in range(n):
            logits, _ = model(src[b:b + 1], torch.tensor([ids]))
            ids.append(int(logits[0, -1].argmax()))
            if ids[-1] == eos_id:
                break
        rows.append(ids[1:])
    return rows


def test_greedy_decode_equals_stepwise_argmax():
    model = _model(seed=27)
    src = _ids(4, [12, 3, 8, 1], 23, seed=28)
    full = _stepwise_argmax(model, src, eos_id=-1, n=8)  # no eos: 8 ids per row
    out = greedy_decode(model, src, BOS, eos_id=-1, max_new_tokens=8)
    assert out.tolist() == full
    # an eos the model does produce: the first id a row emits after other ids ends that row there
    row, pos = next((r, i) for r, ids in enumerate(full) for i in range(1, 8)
                    if full[r][i] not in full[r][:i] and full[r][i] != PAD)
    eos = full[row][pos]
    want = _stepwise_argmax(model, src, eos_id=eos, n=8)
    out = greedy_decode(model, src, BOS, eos_id=eos, max_new_tokens=8)
    assert out.size(1) == max(map(len, want))
    for got, ids in zip(out.tolist(), want):
        assert got[:len(ids)] == ids and all(i == PAD for i in got[len(ids):])
    assert len(want[row]) == pos + 1 < 8


def test_greedy_decode_runs_the_encoder_once():
    model = _model(seed=29)
    calls = []
    handle = model.ln_enc.register_forward_hook(lambda *a: calls.append(1))
    greedy_decode(model, _ids(2, [5, 3], 23, seed=30), BOS, eos_id=-1, max_new_tokens=6)
    handle.remove()
    assert len(calls) == 1


def test_beam_search_reuses_decoding_and_scores_are_log_probabilities():
    model = _model(seed=31)
    src = _ids(1, [9], 23, seed=32)
    greedy = greedy_decode(model, src, BOS, eos_id=-1, max_new_tokens=6)[0]
    (ids, score), = beam_decode(model, src[0], BOS, eos_id=-1, beam_size=1, max_new_tokens=6)
    assert ids.tolist() == greedy.tolist()  # a beam of one is greedy
    eos = int(greedy[3])  # an id the model does produce
    hyps = beam_decode(model, src, BOS, eos_id=eos, beam_size=4, max_new_tokens=6, length_penalty=0.7)
    assert 1 <= len(hyps) <= 4 and [s for _, s in hyps] == sorted((s for _, s in hyps), reverse=True)
    for ids, score in hyps:
        full = torch.cat([torch.tensor([BOS]), ids])[None]  # (1, n + 1)
        logits, _ = model(src, full[:, :-1])
        lp = torch.log_softmax(logits, -1).gather(-1, full[:, 1:, None]).sum().item()
        assert score == pytest.approx(float(lp) / ids.numel() ** 0.7, rel=1e-9, abs=1e-12)
        assert eos not in ids[:-1].tolist()
    assert decoding.beam_search.__module__ == "lmcourse.reference.decoding"


def test_cross_attention_weights_are_what_each_layer_reads():
    model = _model(seed=33)
    src = _ids(2, [11, 4], 23, seed=34)
    tgt_in = _ids(2, [7, 7], 19, seed=35)
    w = model.cross_attention_weights(src, tgt_in)
    assert w.shape == (2, 2, 4, 7, 11)
    keep = padding_mask(src, PAD)
    inputs = []
    hooks = [blk.cross.register_forward_pre_hook(lambda m, a: inputs.append(a)) for blk in model.decoder]
    model(src, tgt_in)
    for h in hooks:
        h.remove()
    for layer, (x, memory, mask) in enumerate(inputs):
        _, want = _mha_like(model.decoder[layer].cross)(x, memory, memory, key_padding_mask=~mask,
                                                        average_attn_weights=False)
        torch.testing.assert_close(w[layer], want, **TOL)
    assert (w[:, 1, :, :, 4:] == 0).all() and torch.equal(inputs[0][2], keep)


def test_exact_match():
    assert exact_match(["2026-11-23", "1999-01-01"], ["2026-11-23", "1999-01-02"]) == 0.5
    with pytest.raises(ValueError):
        exact_match(["a"], ["a", "b"])


def test_a_small_model_learns_a_copy_task():
    """Training works end to end: a tiny model learns to reverse 4 symbols in a few seconds."""
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(src_vocab_size=8, tgt_vocab_size=8, src_block_size=6, tgt_block_size=6, n_enc_layer=1,
                        n_dec_layer=1, n_head=2, n_embd=32)
    model = EncoderDecoder(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = _gen(36)
    for _ in range(300):
        x = torch.randint(3, 8, (64, 4), generator=g)
        y = x.flip(1)
        tgt_in = torch.cat([torch.full((64, 1), BOS), y], 1)
        tgt_out = torch.cat([y, torch.full((64, 1), 2)], 1)
        _, loss = model(x, tgt_in, tgt_out)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    x = torch.randint(3, 8, (200, 4), generator=g)
    out = greedy_decode(model, x, BOS, eos_id=2, max_new_tokens=5)
    assert (out[:, :4] == x.flip(1)).all(1).float().mean() > 0.95
