"""The static KV cache (lmcourse.nn.static_cache) generates generate_cached's ids on the CPU, greedy and
sampled, across the rebuild when the cache is full; its one-token step compiled gives the same ids."""

import functools

import pytest
import torch

from lmcourse.nn import GPT, GPTConfig
from lmcourse.nn.static_cache import StaticDecoder, StaticKVCache, generate_static, static_forward
from lmcourse.reference.decoding import cached_forward, generate_cached, top_k_filter, top_p_filter


def _gpt(dtype=torch.float32, block_size=16):
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=31, block_size=block_size, n_layer=2, n_head=2, n_embd=16)).to(dtype).eval()


def test_each_step_gives_the_growing_caches_logits():
    model = _gpt(torch.float64)
    ids = torch.randint(31, (2, 12), generator=torch.Generator().manual_seed(1))
    cache, start = StaticKVCache(model, 2), torch.zeros(1, dtype=torch.long)
    logits = static_forward(model, ids[:, :5], start, cache)
    want, grown = cached_forward(model, ids[:, :5], None)
    torch.testing.assert_close(logits, want, rtol=0, atol=1e-12)
    for t in range(5, 12):
        start.fill_(t)
        logits = static_forward(model, ids[:, t:t + 1], start, cache)
        want, grown = cached_forward(model, ids[:, t:t + 1], grown)
        torch.testing.assert_close(logits, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(cache.keys[1][:, :, :12], grown[1][0], rtol=0, atol=1e-12)   # written where they belong
    assert not cache.keys[:, :, :, 12:].any()                                              # and nowhere else


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("how", ["greedy", "sampled", "top-p"])
def test_the_same_ids_as_generate_cached_through_the_rebuilds(dtype, how):
    """40 new ids in a window of 16: the cache fills and is rebuilt from the last 8 ids several times."""
    model = _gpt(dtype)
    prompt = torch.randint(31, (3, 5), generator=torch.Generator().manual_seed(2))
    filters = {"greedy": [functools.partial(top_k_filter, k=1)], "sampled": [],
               "top-p": [functools.partial(top_p_filter, p=0.8)]}[how]
    want = generate_cached(model, prompt, 40, filters, generator=torch.Generator().manual_seed(3))
    got = generate_static(model, prompt, 40, filters, generator=torch.Generator().manual_seed(3))
    assert torch.equal(got, want)


def test_a_prompt_longer_than_the_window_and_a_reused_decoder():
    model = _gpt()
    decoder = StaticDecoder(model, batch_size=1)
    for seed, length in ((4, 30), (5, 3)):             # the second call reuses the cache the first one filled
        prompt = torch.randint(31, (1, length), generator=torch.Generator().manual_seed(seed))
        want = generate_cached(model, prompt, 20, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(decoder.generate(prompt, 20, generator=torch.Generator().manual_seed(seed)), want)
    with pytest.raises(ValueError, match="holds 1 row"):
        decoder.generate(torch.zeros(2, 1, dtype=torch.long), 3)


def test_a_decoder_allocates_its_cache_once():
    model = _gpt()
    decoder = StaticDecoder(model, batch_size=1)
    keys = decoder.cache.keys.data_ptr()
    decoder.generate(torch.zeros(1, 1, dtype=torch.long), 40)
    assert decoder.cache.keys.data_ptr() == keys and decoder.cache.keys.shape == (2, 1, 2, 16, 8)


@pytest.mark.slow
def test_the_compiled_one_token_step_gives_the_same_ids():
    """reduce-overhead on the CPU is inductor's C++ without CUDA graphs: the step compiled once, the ids
    generate_cached's (greedy; float32 sums in another order). Slow: the C++ compile."""
    from lmcourse.runtime import compile_support

    if not compile_support()[0]:
        pytest.skip(compile_support()[1])
    model = _gpt()
    greedy = [functools.partial(top_k_filter, k=1)]
    prompt = torch.zeros(1, 1, dtype=torch.long)
    decoder = StaticDecoder(model, 1, compile_mode="reduce-overhead")
    assert torch.equal(decoder.generate(prompt, 40, greedy), generate_cached(model, prompt, 40, greedy))


@pytest.mark.parametrize("notebook", ["05_gpt", "07_decoding"])
def test_the_graded_kernels_of_05_and_07_refuse_it(notebook):
    """Its forward is a GPT forward pass (05's exercise) over a KV cache (07's): neither graded kernel has it."""
    from tests.marking.withheld_kernel import WithheldKernel

    kernel = WithheldKernel(notebook, "import lmcourse, lmcourse.marking\nfrom lmcourse.train import train\n")
    kernel.assert_refuses("from lmcourse.nn.static_cache import generate_static")
