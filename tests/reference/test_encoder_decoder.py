"""lmcourse.reference.encoder_decoder: 09's stand-ins and helpers are right (against nn.MultiheadAttention,
the course's reference encoder-decoder and lmcourse.dates), and REFERENCE names what does the exercises' work."""

import torch
from torch import nn

import lmcourse.nn.seq2seq as s2s
from lmcourse import dates
from lmcourse.reference import encoder_decoder as ref


def _randomised(module, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            gain = p.dim() == 1 and name.endswith("weight")
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3 + (1.0 if gain else 0.0))
    return module


def _model(seed=0):
    torch.manual_seed(seed)
    cfg = s2s.Seq2SeqConfig(src_vocab_size=13, tgt_vocab_size=11, src_block_size=7, tgt_block_size=6, n_enc_layer=2,
                            n_dec_layer=2, n_head=2, n_embd=8)
    return _randomised(s2s.EncoderDecoder(cfg), seed).double().eval()


def test_reference_names_the_course_model_torchs_layers_and_the_stand_ins():
    names = set(ref.REFERENCE)
    assert {s2s.EncoderDecoder, s2s.CrossAttention, s2s.greedy_decode, s2s.exact_match, s2s.padding_mask} <= names
    assert {nn.Transformer, nn.MultiheadAttention, nn.TransformerDecoderLayer} <= names
    assert {ref.CrossAttention, ref.EncoderBlock, ref.DecoderBlock, ref.expected_greedy} <= names
    assert {dates.make_batch, dates.padded_cross_entropy} <= names  # they pad, shift and score a batch too


def test_padding_mask_and_teacher_forcing_agree_with_the_course_data():
    pairs = dates.make_pairs(dates.split_dates()["val"], 6, seed=3)
    batch = dates.make_batch(pairs)
    assert torch.equal(ref.padding_mask(batch.src, dates.PAD_ID), s2s.padding_mask(batch.src, dates.PAD_ID))
    vocab = dates.CharVocab()
    tgt_in, tgt_out = ref.teacher_forcing([vocab.encode(t) for _, t in pairs], dates.BOS_ID, dates.EOS_ID,
                                          dates.PAD_ID)
    assert torch.equal(tgt_in, batch.tgt_in) and torch.equal(tgt_out, batch.tgt_out)
    ti, to = ref.teacher_forcing([[5], [6, 7, 8]], 1, 2, 9)
    assert ti.tolist() == [[1, 5, 9, 9], [1, 6, 7, 8]] and to.tolist() == [[5, 2, 9, 9], [6, 7, 8, 2]]


def test_cross_attention_stand_in_equals_multihead_attention_with_key_padding():
    torch.manual_seed(1)
    att = _randomised(ref.CrossAttention(8, 2), 1).double()
    x, memory = torch.randn(3, 4, 8, dtype=torch.float64), torch.randn(3, 6, 8, dtype=torch.float64)
    mask = torch.arange(6)[None] < torch.tensor([6, 2, 1])[:, None]
    mha = nn.MultiheadAttention(8, 2, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([att.q_proj.weight, att.k_proj.weight, att.v_proj.weight]))
        mha.in_proj_bias.copy_(torch.cat([att.q_proj.bias, att.k_proj.bias, att.v_proj.bias]))
        mha.out_proj.weight.copy_(att.c_proj.weight)
        mha.out_proj.bias.copy_(att.c_proj.bias)
        want = mha(x, memory, memory, key_padding_mask=~mask, need_weights=False)[0]
        got = att(x, memory, mask)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-10)


def test_stand_in_blocks_with_the_notebook_state_compute_the_reference_model():
    model = _model(2)
    state = s2s.notebook_state(model)
    cfg = model.config
    enc = nn.ModuleList(ref.EncoderBlock(cfg.n_embd, cfg.n_head) for _ in range(cfg.n_enc_layer)).double()
    dec = nn.ModuleList(ref.DecoderBlock(cfg.n_embd, cfg.n_head, cfg.tgt_block_size)
                        for _ in range(cfg.n_dec_layer)).double()
    enc.load_state_dict({k[len("encoder."):]: v for k, v in state.items() if k.startswith("encoder.")})
    dec.load_state_dict({k[len("decoder."):]: v for k, v in state.items() if k.startswith("decoder.")})
    src = torch.tensor([[4, 5, 6, 7, 0], [8, 9, 0, 0, 0]])
    tgt_in = torch.tensor([[1, 3, 4], [1, 5, 0]])
    with torch.no_grad():
        want_memory, mask = model.encode(src)
        want_logits = model.decode(tgt_in, want_memory, mask)
        x = model.src_wte(src) + model.src_wpe(torch.arange(5))
        for blk in enc:
            x = blk(x, mask)
        memory = model.ln_enc(x)
        y = model.tgt_wte(tgt_in) + model.tgt_wpe(torch.arange(3))
        for blk in dec:
            y = blk(y, memory, mask)
        logits = model.lm_head(model.ln_f(y))
    torch.testing.assert_close(memory[mask], want_memory[mask], atol=1e-12, rtol=1e-10)
    torch.testing.assert_close(logits, want_logits, atol=1e-12, rtol=1e-10)


def test_expected_greedy_equals_the_course_greedy_decode():
    model = _model(3)
    src = torch.tensor([[4, 5, 6, 7, 0], [8, 9, 0, 0, 0], [3, 3, 3, 3, 3]])
    for n in (1, 3, 5):
        want = s2s.greedy_decode(model, src, 1, 2, n)
        assert torch.equal(ref.expected_greedy(model, src, 1, 2, 0, n), want)


def test_reference_refuses_notebook_07s_decoding_loops():
    from lmcourse.reference import decoding

    names = set(ref.REFERENCE)
    assert {decoding.generate, decoding.beam_search, decoding.top_k_filter} <= names
    assert set(decoding.REFERENCE) <= names
    assert {ref.expected_cross_attention, ref.expected_encoder_block, ref.expected_decoder_block} <= names
    assert ref.greedy_probe not in names  # the test model runs inside the graded call


def _weights_and_grads(module, loss_of):
    """A module's state (the notebook's names) and the gradients of loss_of(module) under the same names."""
    module.zero_grad()
    loss_of(module).backward()
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    grads = {k: p.grad for k, p in module.named_parameters()}
    return state, grads


def _assert_same(got: dict, want: dict):
    assert set(got) == set(want)
    for k in want:
        torch.testing.assert_close(got[k], want[k], atol=1e-10, rtol=1e-9, msg=k)


def test_expected_values_and_gradients_equal_the_stand_ins():
    torch.manual_seed(4)
    x, memory = torch.randn(2, 4, 8, dtype=torch.float64), torch.randn(2, 5, 8, dtype=torch.float64)
    mask = torch.arange(5)[None] < torch.tensor([5, 2])[:, None]
    for bias in (True, False):
        att = _randomised(ref.CrossAttention(8, 2, bias=bias), 5).double()
        w, grads = _weights_and_grads(att, lambda m: m(x, memory, mask).pow(2).sum())
        want, want_grads = ref.expected_cross_attention(w, 2, x, memory, mask, bias)
        torch.testing.assert_close(want, att(x, memory, mask).detach(), atol=1e-12, rtol=1e-10)
        _assert_same(want_grads, grads)
    enc = _randomised(ref.EncoderBlock(8, 2), 6).double()
    real = mask[:, :, None]
    w, grads = _weights_and_grads(enc, lambda m: (m(memory, mask).pow(2) * real).sum())
    want, want_grads = ref.expected_encoder_block(w, 2, memory, mask)
    torch.testing.assert_close(want[real.expand_as(want)], enc(memory, mask).detach()[real.expand_as(want)],
                               atol=1e-12, rtol=1e-10)
    _assert_same(want_grads, grads)
    assert set(want_grads) == set(ref.block_weights("encoder", 8))
    dec = _randomised(ref.DecoderBlock(8, 2, block_size=4), 7).double()
    w, grads = _weights_and_grads(dec, lambda m: m(x, memory, mask).pow(2).sum())
    want, want_grads = ref.expected_decoder_block(w, 2, x, memory, mask)
    torch.testing.assert_close(want, dec(x, memory, mask).detach(), atol=1e-12, rtol=1e-10)
    _assert_same(want_grads, grads)
    assert set(want_grads) == set(ref.block_weights("decoder", 8))


def test_greedy_probe_counts_in_its_closure_and_avoids_bos_and_pad():
    src = torch.tensor([[4, 6, 5, 5], [7, 8, 6, 1], [0, 5, 5, 5]])
    model, calls = ref.greedy_probe(9, 4, seed=942, pad_id=5, bos_id=3)
    twin = ref.greedy_probe(9, 4, seed=942, pad_id=5, bos_id=3)[0]
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters()))
    model.encodes = 0  # an attribute of the model is not the count
    out = ref.expected_greedy(model, src, 3, 2, 5, 8)
    encodes, first = calls()
    assert encodes == 3 and first == [[3]]  # expected_greedy encodes row by row
    assert calls() == (0, None)  # read, then counted afresh
    written = [t for row in out.tolist() for t in row[:row.index(2) + 1]]
    assert 3 not in written and 5 not in written and out.shape[1] <= 5
