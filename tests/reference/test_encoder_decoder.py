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
    state = ref.notebook_state(model)
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
