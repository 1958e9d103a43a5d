"""lmcourse.reference.mlm names 06's answers, in the notebook's signatures, and the helpers that compute
expected values from them."""

import torch

import lmcourse.reference.mlm as ref
from lmcourse.nn import MLMConfig
from lmcourse.nn.mlm import init_mlm_weights
from lmcourse.reference.mlm import REFERENCE, expected_pll, reference_mlm


def test_reference_names_the_masked_lm_answers():
    want = {ref.MaskedLM, ref.mask_tokens, ref.fill_mask, ref.pseudo_log_likelihood}
    assert want <= set(ref.ANSWERS) <= set(REFERENCE)
    assert {expected_pll, reference_mlm, init_mlm_weights} <= set(REFERENCE)
    assert (ref.answer_q1, ref.answer_q2) == ("C", "B")


def test_reference_mlm_is_seeded_in_its_dtype_with_every_parameter_away_from_its_default():
    cfg = MLMConfig(vocab_size=13, block_size=8, n_layer=1, n_head=2, n_embd=16)
    a, b = reference_mlm(cfg), reference_mlm(cfg)
    assert isinstance(a, ref.MaskedLM) and not a.training
    assert a.wte.weight.dtype == torch.float64 and reference_mlm(cfg, torch.float32).wte.weight.dtype == torch.float32
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not bool((a.ln_emb.weight == 1).any()) and not bool((a.lm_head.bias == 0).any())


def test_expected_pll_agrees_with_the_reference():
    cfg = MLMConfig(vocab_size=9, block_size=6, n_layer=1, n_head=2, n_embd=8)
    model = reference_mlm(cfg)
    ids = torch.tensor([3, 1, 4, 1, 5])
    want = ref.pseudo_log_likelihood(model, ids, 8)
    assert abs(expected_pll(model, ids, 8) - want) < 1e-9
