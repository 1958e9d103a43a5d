"""lmcourse.reference.mlm (06's answers) and lmcourse.nn.mlm (its given code): the reference masked LM against
transformers' BERT, and its masking against transformers' DataCollatorForLanguageModeling (test-only dependency,
nothing downloaded); the old names in lmcourse.nn.mlm read through to the reference."""

import math

import pytest
import torch
import torch.nn.functional as F

from lmcourse.nn.mlm import IGNORE_INDEX, MLMConfig, save_mlm
from lmcourse.reference.mlm import MaskedLM, fill_mask, load_mlm, mask_tokens, pseudo_log_likelihood
from lmcourse.tokenizers import SPECIALS, WordTokenizer
from lmcourse.train import TrainConfig, train


def small(**kw) -> MLMConfig:
    base = dict(vocab_size=23, block_size=9, n_layer=2, n_head=2, n_embd=16)
    base.update(kw)
    return MLMConfig(**base)


def _perturbed(cfg: MLMConfig, seed: int = 0) -> MaskedLM:
    torch.manual_seed(seed)
    model = MaskedLM(cfg).double().eval()
    with torch.no_grad():  # biases and LayerNorm parameters away from 0 and 1, so each copy matters
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model


def _bert_from(model: MaskedLM):
    """transformers' BertForMaskedLM with the same sizes and a copy of ``model``'s weights (its
    query, key and value are the three row blocks of our fused c_attn; one segment type, zeroed)."""
    transformers = pytest.importorskip("transformers")
    c = model.config
    hf_cfg = transformers.BertConfig(vocab_size=c.vocab_size, hidden_size=c.n_embd, num_hidden_layers=c.n_layer,
                                     num_attention_heads=c.n_head, intermediate_size=4 * c.n_embd,
                                     hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                     max_position_embeddings=c.block_size, type_vocab_size=1,
                                     layer_norm_eps=c.ln_eps, tie_word_embeddings=True, pad_token_id=0)
    hf_cfg._attn_implementation = "eager"
    hf = transformers.BertForMaskedLM(hf_cfg).double().eval()
    d = c.n_embd

    def linear(dst, src, rows=slice(None)):
        dst.weight.copy_(src.weight[rows])
        dst.bias.copy_(src.bias[rows])

    with torch.no_grad():
        emb = hf.bert.embeddings
        emb.word_embeddings.weight.copy_(model.wte.weight)
        emb.position_embeddings.weight.copy_(model.wpe.weight)
        emb.token_type_embeddings.weight.zero_()
        linear(emb.LayerNorm, model.ln_emb)
        for ours, theirs in zip(model.blocks, hf.bert.encoder.layer):
            att = theirs.attention
            for k, lin in enumerate((att.self.query, att.self.key, att.self.value)):
                linear(lin, ours.attn.c_attn, slice(k * d, (k + 1) * d))
            linear(att.output.dense, ours.attn.c_proj)
            linear(att.output.LayerNorm, ours.ln1)
            linear(theirs.intermediate.dense, ours.mlp.c_fc)
            linear(theirs.output.dense, ours.mlp.c_proj)
            linear(theirs.output.LayerNorm, ours.ln2)
        pred = hf.cls.predictions
        linear(pred.transform.dense, model.head_dense)
        linear(pred.transform.LayerNorm, model.head_ln)
        pred.bias.copy_(model.lm_head.bias)
        if getattr(pred.decoder, "bias", None) is not None:
            pred.decoder.bias.copy_(model.lm_head.bias)
    assert pred.decoder.weight.data_ptr() == emb.word_embeddings.weight.data_ptr(), "BERT's decoder should be tied"
    return hf


@pytest.mark.parametrize("fast", [True, False])
def test_logits_equal_transformers_bert_in_float64(fast):
    model = _perturbed(small(fast=fast))
    hf = _bert_from(model)
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(23, (3, 9), generator=g)
    labels = torch.full_like(idx, IGNORE_INDEX)
    labels[:, ::3] = idx[:, ::3]
    with torch.no_grad():
        ours, loss = model(idx, labels)
        out = hf(input_ids=idx, labels=labels)
    diff = (ours - out.logits).abs().max().item()
    assert diff < 1e-12, f"logits differ from BertForMaskedLM by {diff:.3g}"
    assert abs(loss.item() - out.loss.item()) < 1e-6  # both skip the -100 labels
    # shorter input: the first T position vectors
    with torch.no_grad():
        diff = (model(idx[:, :4])[0] - hf(input_ids=idx[:, :4]).logits).abs().max().item()
    assert diff < 1e-12


def test_comparison_would_notice_a_causal_model():
    """The BERT comparison sees the attention pattern: the same weights made causal differ."""
    model = _perturbed(small(n_layer=1))
    causal = MaskedLM(small(n_layer=1, causal=True)).double().eval()
    causal.load_state_dict(model.state_dict())
    idx = torch.randint(23, (2, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        a, b = model(idx)[0], causal(idx)[0]
    assert (a[:, -1] - b[:, -1]).abs().max() < 1e-12  # with one block the last position sees the same inputs
    assert (a[:, 0] - b[:, 0]).abs().max() > 1e-4


def test_head_is_tied_and_bidirectional_by_gradient():
    model = _perturbed(small())
    assert model.lm_head.weight is model.wte.weight and model.lm_head.bias is not None
    idx = torch.randint(23, (1, 9), generator=torch.Generator().manual_seed(3))
    emb = model.wte(idx).detach().requires_grad_()
    cap = {}
    hook = model.wte.register_forward_hook(lambda m, i, o: emb)
    try:
        logits = model(idx)[0]
    finally:
        hook.remove()
    (grad,) = torch.autograd.grad(logits[0, 0].sum(), emb)
    assert grad[0, 8].abs().sum() > 0, "position 0 should see position 8"
    del cap


def test_loss_only_over_chosen_positions():
    model = _perturbed(small())
    idx = torch.randint(23, (2, 9), generator=torch.Generator().manual_seed(4))
    labels = torch.full_like(idx, IGNORE_INDEX)
    labels[0, 2], labels[1, 5] = 7, 11
    with torch.no_grad():
        logits, loss = model(idx, labels)
    want = -(torch.log_softmax(logits[0, 2], -1)[7] + torch.log_softmax(logits[1, 5], -1)[11]) / 2
    assert abs(loss.item() - want.item()) < 1e-12


# --- mask_tokens -------------------------------------------------------------------------------

V, PAD, MASK = 60, 0, 4
SPECIAL = (0, 1, 2, 3, 4)
N_ORD = V - len(SPECIAL)


def _padded_batch(B=64, T=400, seed=5):
    """Rows of different lengths: ordinary ids, then <s>/</s> markers, then padding (~35% special)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(5, V, (B, T), generator=g)
    lengths = torch.randint(T // 3, T, (B,), generator=g)
    tokens[torch.arange(T)[None] >= lengths[:, None]] = PAD
    tokens[:, 0] = 1
    tokens[torch.arange(B), lengths - 1] = 2
    return tokens


def _stats(tokens, inputs, labels):
    special = torch.isin(tokens, torch.tensor(SPECIAL))
    chosen = labels != IGNORE_INDEX
    n_ord, n_chosen = int((~special).sum()), int(chosen.sum())
    return dict(n_ord=n_ord, n_chosen=n_chosen,
                masked=int((inputs[chosen] == MASK).sum()),
                same=int((inputs[chosen] == tokens[chosen]).sum()),
                other=int(((inputs[chosen] != MASK) & (inputs[chosen] != tokens[chosen])).sum()),
                special_chosen=int((chosen & special).sum()),
                unchosen_changed=int((~chosen & (inputs != tokens)).sum()),
                labels_right=bool((labels[chosen] == tokens[chosen]).all()))


def _within(k, n, p, z=5.0):
    """k of n Bernoulli(p) draws lies within z standard deviations of n p."""
    return abs(k - n * p) <= z * math.sqrt(n * p * (1 - p)) + 1


def _hf_collator(seed):
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {t: i for i, t in enumerate(list(SPECIALS) + ["[MASK]"] + [f"w{i}" for i in range(N_ORD)])}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", mask_token="[MASK]",
                                                unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    assert len(fast) == V and fast.convert_tokens_to_ids("[MASK]") == MASK
    return transformers.DataCollatorForLanguageModeling(fast, mlm_probability=0.15, seed=seed)


def test_mask_tokens_statistics_match_transformers_collator():
    tokens = _padded_batch()
    before = tokens.clone()
    ours = _stats(tokens, *mask_tokens(tokens, MASK, V, SPECIAL, p=0.15, generator=torch.Generator().manual_seed(0)))
    assert torch.equal(tokens, before), "mask_tokens changed its input"
    special_mask = torch.isin(tokens, torch.tensor(SPECIAL)).long()
    hf_inputs, hf_labels = _hf_collator(0).torch_mask_tokens(tokens.clone(), special_tokens_mask=special_mask)
    theirs = _stats(tokens, hf_inputs, hf_labels)
    for s in (ours, theirs):
        assert s["special_chosen"] == 0 and s["unchosen_changed"] == 0 and s["labels_right"]
        assert _within(s["n_chosen"], s["n_ord"], 0.15), s
        assert _within(s["masked"], s["n_chosen"], 0.8), s
    # what is left after [MASK]: ours draws among ordinary ids (1 / N_ORD of them the original),
    # transformers' among all V ids (1 / V the original, len(SPECIAL) / V a special one)
    assert _within(ours["same"], ours["n_chosen"], 0.1 + 0.1 / N_ORD), ours
    assert _within(theirs["same"], theirs["n_chosen"], 0.1 + 0.1 / V), theirs
    # the two implementations agree on the rates: the difference of two binomial counts
    for key, p in (("n_chosen", 0.15), ("masked", 0.8 * 0.15)):
        sd = math.sqrt(2 * ours["n_ord"] * p * (1 - p))
        assert abs(ours[key] - theirs[key]) <= 5 * sd, (key, ours, theirs)


def test_collator_may_replace_with_specials_ours_never_does():
    """The one deliberate difference: transformers' random replacement is any id; ours ordinary only."""
    tokens = torch.randint(5, V, (200, 200), generator=torch.Generator().manual_seed(6))
    no_special = torch.zeros_like(tokens)
    hf_inputs, hf_labels = _hf_collator(1).torch_mask_tokens(tokens.clone(), special_tokens_mask=no_special)
    inputs, labels = mask_tokens(tokens, MASK, V, SPECIAL, generator=torch.Generator().manual_seed(1))
    special_ids = torch.tensor(SPECIAL)

    def replaced_by_special(inp, lab):
        chosen = lab != IGNORE_INDEX
        return int((chosen & (inp != MASK) & torch.isin(inp, special_ids)).sum())

    assert replaced_by_special(hf_inputs, hf_labels) > 0
    assert replaced_by_special(inputs, labels) == 0
    assert not torch.isin(inputs[inputs != MASK], special_ids).any()


def test_mask_id_never_a_random_replacement_even_unlisted():
    tokens = torch.ones(100, 200, dtype=torch.long)  # one ordinary id (1); 0 is padding, 2 is [MASK]
    inputs, labels = mask_tokens(tokens, 2, 3, special_ids=(0,), p=1.0, generator=torch.Generator().manual_seed(2))
    n = tokens.numel()
    assert (labels == 1).all()
    assert _within(int((inputs == 2).sum()), n, 0.8), "only the 80% should be [MASK]"
    assert set(inputs.unique().tolist()) <= {1, 2}


def test_each_sequence_its_own_draw_and_seeding():
    tokens = torch.randint(5, V, (1, 300), generator=torch.Generator().manual_seed(7)).repeat(8, 1)
    inputs, labels = mask_tokens(tokens, MASK, V, SPECIAL, generator=torch.Generator().manual_seed(3))
    chosen = labels != IGNORE_INDEX
    assert all(not torch.equal(chosen[0], chosen[i]) for i in range(1, 8))
    torch.manual_seed(100)
    a = mask_tokens(tokens, MASK, V, SPECIAL, generator=torch.Generator().manual_seed(9))
    torch.manual_seed(200)
    b = mask_tokens(tokens, MASK, V, SPECIAL, generator=torch.Generator().manual_seed(9))
    c = mask_tokens(tokens, MASK, V, SPECIAL, generator=torch.Generator().manual_seed(10))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[1], c[1])
    assert a[0].dtype == tokens.dtype and a[1].dtype == tokens.dtype


# --- fill_mask, pseudo-log-likelihood, save/load, training through lmcourse.train --------------

def _tokenizer():
    return WordTokenizer(["the", "cat", "sat", "on", "mat", "a", "dog", "."], specials=list(SPECIALS) + ["[MASK]"])


def test_fill_mask_reads_the_masked_positions():
    tok = _tokenizer()
    model = _perturbed(small(vocab_size=tok.vocab_size))
    out = fill_mask(model, tok, "the [MASK] sat on the [MASK] .", top_k=3)
    ids = torch.tensor([tok.encode("the cat sat on the cat .")])
    ids[0, 1] = ids[0, 5] = tok.stoi["[MASK]"]
    with torch.no_grad():
        probs = torch.softmax(model(ids)[0][0], -1)
    assert len(out) == 2 and all(len(o) == 3 for o in out)
    for blank, t in zip(out, (1, 5)):
        want = torch.topk(probs[t], 3)
        assert [w for w, _ in blank] == [tok.itos[i] for i in want.indices.tolist()]
        assert max(abs(q - float(w)) for (_, q), w in zip(blank, want.values)) < 1e-12


def test_pseudo_log_likelihood_is_the_sum_of_masked_log_probs():
    tok = _tokenizer()
    model = _perturbed(small(vocab_size=tok.vocab_size))
    ids = torch.tensor(tok.encode("the dog sat on a mat ."))
    mask_id = tok.stoi["[MASK]"]
    want = 0.0
    for i in range(len(ids)):
        x = ids.clone()
        x[i] = mask_id
        with torch.no_grad():
            want += torch.log_softmax(model(x[None])[0][0, i], -1)[ids[i]].item()
    assert abs(pseudo_log_likelihood(model, ids, mask_id) - want) < 1e-10
    assert pseudo_log_likelihood(model, ids, mask_id) < 0


def test_save_load_roundtrip(tmp_path):
    model = _perturbed(small()).float()
    save_mlm(model, tmp_path / "m.pt", vocabulary=["a"], steps=3)
    back, extra = load_mlm(tmp_path / "m.pt")
    assert extra["vocabulary"] == ["a"] and extra["steps"] == 3
    assert back.lm_head.weight is back.wte.weight
    idx = torch.randint(23, (2, 9))
    with torch.no_grad():
        assert torch.equal(model.eval()(idx)[0], back(idx)[0])


def test_trains_through_lmcourse_train_with_a_batch_fn():
    """train() with batch_fn: masked batches in, loss only over chosen positions; a tiny MLM on a
    repetitive text learns to fill its blanks: the loss falls well below its start, about ln 8."""
    torch.manual_seed(0)
    text = torch.arange(5, 13).repeat_interleave(16).repeat(20)  # runs of 16 equal ids: a blank's neighbours tell

    def batch_fn(tokens, batch_size, block_size, generator, device):
        from lmcourse.data import get_batch

        x, _ = get_batch(tokens, batch_size, block_size, generator)
        inputs, labels = mask_tokens(x, 4, 13, (0, 1, 2, 3, 4), generator=generator)
        return inputs.to(device), labels.to(device)

    model = MaskedLM(MLMConfig(vocab_size=13, block_size=16, n_layer=1, n_head=2, n_embd=32))
    cfg = TrainConfig(steps=100, batch_size=16, block_size=16, lr=1e-2, warmup_steps=5, eval_interval=100,
                      eval_batches=2, device="cpu", progress=False, quiet=True)
    hist = train(model, text, text, cfg, batch_fn=batch_fn)
    assert hist.val_loss[0] > 2.0 and hist.final_val_loss < 0.6 * hist.val_loss[0], hist.val_loss
    assert F.cross_entropy(torch.zeros(1, 13), torch.tensor([0])).item() == pytest.approx(math.log(13))


def test_the_given_code_does_not_need_the_reference(monkeypatch):
    """While 06 is graded the reference cannot be imported: lmcourse.nn, MLMConfig and BERT's initialisation still
    work, and the answers are nowhere in the given code."""
    import sys

    import lmcourse.nn.mlm
    from lmcourse.marking.kernel import _Withheld
    from lmcourse.marking.notebooks import load

    spec = load("06_mlm")
    monkeypatch.delitem(sys.modules, "lmcourse.reference.mlm", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_Withheld(spec), *sys.meta_path])
    with pytest.raises(ImportError, match="not available while notebook 06_mlm is graded"):
        import lmcourse.reference.mlm  # noqa: F401
    assert not hasattr(lmcourse.nn.mlm, "mask_tokens")
    assert MLMConfig(vocab_size=5).block_config().prenorm is False
