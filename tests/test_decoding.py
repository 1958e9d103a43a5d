"""lmcourse.reference.decoding (notebook 07's reference): against transformers' logits processors and
beam search, and the KV cache against a full recompute in float64; lmcourse.decoding's given code, and
the old names it reads through to the reference."""

import math

import pytest
import torch
from torch import nn

from lmcourse import decoding as given
from lmcourse.nn import GPT, GPTConfig
from lmcourse.reference import decoding as D
from tests.nn.test_gpt import _gpt2_from


def _logits(B=6, V=40, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, V, generator=g, dtype=dtype) * 2.5)


def _warpers():
    return pytest.importorskip("transformers.generation.logits_process")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_filters_equal_transformers_logits_processors(dtype):
    lp = _warpers()
    ids = torch.zeros(6, 1, dtype=torch.long)  # the processors' input_ids, unused by these warpers
    for seed in range(5):
        s = _logits(dtype=dtype, seed=seed)
        for tau in (0.3, 1.0, 2.5):
            torch.testing.assert_close(D.apply_temperature(s, tau), lp.TemperatureLogitsWarper(tau)(ids, s.clone()))
        for k in (1, 3, 17, 40, 55):
            torch.testing.assert_close(D.top_k_filter(s, k), lp.TopKLogitsWarper(k)(ids, s.clone()))
        for p in (0.05, 0.3, 0.7, 0.95, 1.0):
            torch.testing.assert_close(D.top_p_filter(s, p), lp.TopPLogitsWarper(p)(ids, s.clone()))
        for eps in (1e-4, 0.01, 0.05, 0.2):
            # transformers asks 0 < eps < 1; above max prob both keep the most likely only
            torch.testing.assert_close(D.epsilon_filter(s, eps), lp.EpsilonLogitsWarper(eps)(ids, s.clone()))
        # composed, as a sampler would chain them
        ours = D.top_p_filter(D.top_k_filter(D.apply_temperature(s, 0.7), 10), 0.8)
        theirs = lp.TemperatureLogitsWarper(0.7)(ids, s.clone())
        theirs = lp.TopPLogitsWarper(0.8)(ids, lp.TopKLogitsWarper(10)(ids, theirs))
        torch.testing.assert_close(ours, theirs)


def test_filters_keep_shape_dtype_and_one_token():
    s = _logits(B=3, V=9, dtype=torch.float32)
    s[0] = torch.linspace(0, 1, 9)  # nearly flat
    s[1] = torch.tensor([20.0] + [0.0] * 8)  # one word takes nearly all the mass
    for out in (D.top_k_filter(s, 1), D.top_p_filter(s, 1e-6), D.epsilon_filter(s, 0.99), D.epsilon_filter(s, 2.0)):
        assert out.shape == s.shape and out.dtype == s.dtype
        assert torch.equal(torch.isfinite(out).sum(-1), torch.ones(3, dtype=torch.long))
        assert torch.equal(out.argmax(-1), s.argmax(-1))
    # top-p keeps the crossing word: 0.5, 0.3, 0.2 -> p = 0.6 keeps two
    t = torch.tensor([[math.log(0.5), math.log(0.3), math.log(0.2)]])
    assert torch.isfinite(D.top_p_filter(t, 0.6)).tolist() == [[True, True, False]]
    assert torch.isfinite(D.top_p_filter(t, 0.5)).tolist() == [[True, False, False]]
    # filters compose on -inf input without NaNs
    out = D.epsilon_filter(D.top_p_filter(D.top_k_filter(s, 4), 0.9), 0.05)
    assert not torch.isnan(out).any()


def test_greedy_and_sampler():
    s = _logits(B=4, V=7)
    assert torch.equal(D.greedy_next(s), s.argmax(-1))
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert torch.equal(D.sample_next(s, g1), D.sample_next(s, g2))
    # frequencies follow the softmax
    row = torch.tensor([[2.0, 1.0, 0.0, -1.0]]).expand(20000, 4)
    draws = D.sample_next(row, torch.Generator().manual_seed(0))
    freq = torch.bincount(draws, minlength=4).double() / 20000
    torch.testing.assert_close(freq, torch.softmax(row[0].double(), -1), atol=0.01, rtol=0)


def _small_gpt(seed=0, **kw):
    torch.manual_seed(seed)
    base = dict(vocab_size=13, block_size=8, n_layer=2, n_head=2, n_embd=16)
    base.update(kw)
    model = GPT(GPTConfig(**base)).double().eval()
    with torch.no_grad():  # sharper logits than the initialisation's near-uniform ones
        model.wte.weight.mul_(20)
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.add_(0.1 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("beams", [2, 4, 6])
def test_beam_search_best_equals_transformers_generate(beams):
    model = _small_gpt(seed=beams, block_size=16)
    hf = _gpt2_from(model, "gelu")
    for seed in range(3):
        prompt = torch.randint(0, 13, (1, 3), generator=torch.Generator().manual_seed(seed))
        theirs = hf.generate(prompt, num_beams=beams, max_new_tokens=7, do_sample=False, num_return_sequences=1,
                             length_penalty=1.0, early_stopping=False, pad_token_id=0, eos_token_id=None)
        ours = D.beam_search(model, prompt, beams, 7, length_penalty=1.0)
        assert ours[0][0].tolist() == theirs[0].tolist()
        lp = given.sequence_logprob(model, ours[0][0][None], 3)
        assert ours[0][1] == pytest.approx(float(lp) / 7, rel=1e-9)


class _Table(nn.Module):
    """A hand-made model over {0: a, 1: b, 2: eos}: greedy picks a (0.6), then a flat 1/3 each;
    b (0.4) is followed by b with 0.9. Best two-word sequence: b b (0.36) over a * (0.2)."""

    def __init__(self):
        super().__init__()
        self.config = GPTConfig(vocab_size=3, block_size=16, n_layer=1, n_head=1, n_embd=4)
        self.calls = []

    def forward(self, idx, targets=None):
        self.calls.append(tuple(idx.shape))
        B, T = idx.shape
        out = torch.full((B, T, 3), 1 / 3, dtype=torch.float64)
        for b in range(B):
            last = int(idx[b, -1])
            if T == 1:
                out[b, -1] = torch.tensor([0.6, 0.4, 0.0], dtype=torch.float64)
            elif last == 1:
                out[b, -1] = torch.tensor([0.05, 0.9, 0.05], dtype=torch.float64)
        return out.clamp_min(1e-12).log(), None


def test_beam_search_finds_what_greedy_misses():
    m = _Table()
    greedy = D.beam_search(m, torch.tensor([2]), 1, 2)
    assert greedy[0][0].tolist() == [2, 0, 0]
    best = D.beam_search(m, torch.tensor([2]), 2, 2)
    assert best[0][0].tolist() == [2, 1, 1]
    assert best[0][1] == pytest.approx(math.log(0.36) / 2)
    # one batched call per step, not one call per beam
    m.calls.clear()
    D.beam_search(m, torch.tensor([2]), 3, 4)
    assert len(m.calls) == 4 and m.calls[1][0] == 3


def test_beam_search_eos_and_length_penalty():
    m = _Table()
    # eos after "a" has probability 1/3: "a eos" (0.2, 2 ids) finishes; with length_penalty 0 sums rank
    out = D.beam_search(m, torch.tensor([2]), 3, 12, length_penalty=0.0, eos_id=2)
    ids = [s.tolist() for s, _ in out]
    assert [2, 0, 2] in ids
    for s, _ in out:  # nothing follows an eos
        assert 2 not in s.tolist()[1:-1]
    assert out[0][0].tolist() == [2, 0, 2]  # summed: log 0.2 beats b^12's log(0.4 * 0.9^11) = log 0.126
    long = D.beam_search(m, torch.tensor([2]), 3, 12, length_penalty=1.0, eos_id=2)
    assert long[0][0].tolist() == [2] + [1] * 12  # per id: log(0.126) / 12 beats log(0.2) / 2
    assert long[0][1] == pytest.approx(math.log(0.4 * 0.9 ** 11) / 12)
    scores = [sc for _, sc in long]
    assert scores == sorted(scores, reverse=True)


def test_beam_size_one_is_greedy_on_a_gpt():
    model = _small_gpt(seed=3, block_size=8)
    prompt = torch.tensor([[1, 2, 3]])
    gen = D.generate(model, prompt, 12, filters=[lambda s: D.top_k_filter(s, 1)], generator=torch.Generator())
    assert D.beam_search(model, prompt, 1, 12)[0][0].tolist() == gen[0].tolist()


@pytest.mark.parametrize("fast", [True, False])
def test_cache_logits_equal_full_recompute_float64(fast):
    model = _small_gpt(seed=1, block_size=8, fast=fast)
    prompt = torch.tensor([[4, 5, 6], [7, 8, 9]])
    # 20 new ids with block_size 8: the cache fills and is rebuilt twice
    ids_c, logits_c = D.generate_cached(model, prompt, 20, generator=torch.Generator().manual_seed(0),
                                        return_logits=True)
    ids_r, logits_r = D.generate_recompute(model, prompt, 20, generator=torch.Generator().manual_seed(0),
                                           return_logits=True)
    assert torch.equal(ids_c, ids_r)
    torch.testing.assert_close(logits_c, logits_r, atol=1e-12, rtol=1e-12)
    # step by step against model(window): prefill, one-at-a-time, and chunks
    ids = ids_c[:, :8]
    full, _ = model(ids)
    lg, cache = D.gpt_forward_cached(model, ids[:, :3])
    parts = [lg]
    for t in range(3, 6):
        lg, cache = D.gpt_forward_cached(model, ids[:, t:t + 1], cache)
        parts.append(lg)
    lg, cache = D.gpt_forward_cached(model, ids[:, 6:], cache)
    parts.append(lg)
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-12, rtol=1e-12)
    assert cache[0][0].shape == (2, 2, 8, 8)
    with pytest.raises(ValueError):
        D.gpt_forward_cached(model, ids[:, :1], cache)  # no room past block_size


def test_long_prompt_is_cropped():
    model = _small_gpt(seed=2, block_size=8)
    prompt = torch.randint(0, 13, (1, 11), generator=torch.Generator().manual_seed(1))
    ids_c, lc = D.generate_cached(model, prompt, 3, generator=torch.Generator().manual_seed(0), return_logits=True)
    full, _ = model(prompt[:, -8:])
    torch.testing.assert_close(lc[:, 0], full[:, -1], atol=1e-12, rtol=1e-12)


def test_distinct_n():
    assert given.distinct_n([[1, 1, 1, 1]], 2) == pytest.approx(1 / 3)
    assert given.distinct_n([[1, 2, 3], [3, 2, 1]], 1) == pytest.approx(0.5)


def test_the_answers_are_not_in_the_library():
    assert not any(f.__module__ == "lmcourse.decoding" for f in D.ANSWERS)
    with pytest.raises(AttributeError):
        given.top_k_filter  # noqa: B018
