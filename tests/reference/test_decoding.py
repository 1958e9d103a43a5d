"""lmcourse.reference.decoding: 07's references, 05's sampler and transformers' generation code;
the test cells' helpers."""

import math

import torch

import lmcourse.nn.sampling
from lmcourse.marking.decoding import small_gpt
from lmcourse.reference import decoding


def test_reference_includes_05s_sampler_and_names_transformers():
    assert set(decoding.ANSWERS) <= set(decoding.REFERENCE)
    assert lmcourse.nn.sampling.generate in decoding.REFERENCE
    assert "transformers.generation.utils" in decoding.MODULES and decoding.PACKAGES == ("transformers",)


def test_expected_top_p_agrees_with_the_reference_filter_and_is_refused():
    g = torch.Generator().manual_seed(0)
    rows = (torch.randn(20, 9, generator=g, dtype=torch.float64) * 2).tolist()
    for p in (0.05, 0.5, 0.9, 1.0):
        want = decoding.top_p_filter(torch.tensor(rows, dtype=torch.float64), p)
        got = torch.tensor([decoding.expected_top_p(r, p) for r in rows], dtype=torch.float64)
        assert torch.equal(torch.isinf(got), torch.isinf(want))
        assert torch.allclose(got[torch.isfinite(got)], want[torch.isfinite(want)], atol=1e-12, rtol=0)
    assert decoding.expected_top_p([math.log(0.5), math.log(0.3), math.log(0.2)], 0.6)[2] == float("-inf")
    assert decoding.expected_top_p in decoding.REFERENCE  # it computes expected values: refused to an answer


def test_small_gpt_is_seeded_float64_in_eval_mode_and_not_a_reference():
    a, b = small_gpt(0, perturb=True), small_gpt(0, perturb=True)
    assert a.wte.weight.dtype == torch.float64 and not a.training
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    plain = small_gpt(0)
    assert torch.equal(plain.wte.weight, a.wte.weight)  # the same draw; perturb moves biases and LayerNorms only
    assert not torch.equal(plain.ln_f.weight, a.ln_f.weight) and bool((plain.ln_f.weight == 1).all())
    big = small_gpt(5, n_layer=3, block_size=12)
    assert len(big.blocks) == 3 and big.config.block_size == 12
    assert small_gpt not in decoding.REFERENCE  # a test model, no expected value
