"""lmcourse.nn.attention against trusted references, in float64 with explicit tolerances."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.nn import AttentionConfig, CausalSelfAttention, scaled_dot_product_attention
from lmcourse.reference.attention import causal_mask  # notebook 03's answer

TOL = {"atol": 1e-12, "rtol": 1e-10}  # float64: the paths differ only by summation order


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _qkv(B=2, nh=3, T=7, hs=5, hv=4, seed=0):
    g = _gen(seed)
    q = torch.randn(B, nh, T, hs, generator=g, dtype=torch.float64)
    k = torch.randn(B, nh, T, hs, generator=g, dtype=torch.float64)
    v = torch.randn(B, nh, T, hv, generator=g, dtype=torch.float64)
    return q, k, v


def _layer(n_embd=12, n_head=3, block_size=16, causal=True, fast=True, bias=True, seed=0):
    torch.manual_seed(seed)
    cfg = AttentionConfig(n_embd=n_embd, n_head=n_head, block_size=block_size, dropout=0.0,
                          bias=bias, causal=causal, fast=fast)
    return CausalSelfAttention(cfg).double().eval()


# --- causal_mask -------------------------------------------------------------------------

def test_causal_mask_is_the_lecture_matrix_B():
    inf = float("-inf")
    expected = torch.tensor([[0, inf, inf, inf], [0, 0, inf, inf], [0, 0, 0, inf], [0, 0, 0, 0]])
    got = causal_mask(4)
    assert got.shape == (4, 4) and got.dtype == torch.float32
    assert torch.equal(got, expected)


@pytest.mark.parametrize("T", [1, 2, 9])
def test_causal_mask_matches_triu(T):
    m = causal_mask(T, dtype=torch.float64)
    assert torch.equal(torch.isinf(m), torch.ones(T, T, dtype=torch.bool).triu(1))
    assert torch.all(m[~torch.isinf(m)] == 0)
    assert torch.all(m[torch.isinf(m)] < 0)


def test_causal_mask_uses_true_infinity_not_a_large_number():
    assert causal_mask(3)[0, 2].item() == float("-inf")


# --- scaled_dot_product_attention (function) ---------------------------------------------

def test_sdpa_function_without_mask_matches_torch():
    q, k, v = _qkv()
    out, w = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL)
    assert w.shape == (2, 3, 7, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 7, dtype=torch.float64), **TOL)


def test_sdpa_function_with_causal_mask_matches_torch():
    q, k, v = _qkv(seed=1)
    out, w = scaled_dot_product_attention(q, k, v, causal_mask(7, dtype=torch.float64))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), **TOL)
    assert torch.all(w.triu(1) == 0), "weights above the diagonal must be exactly 0"


def test_sdpa_function_bool_mask_equals_additive_mask():
    q, k, v = _qkv(seed=2)
    allowed = torch.ones(7, 7, dtype=torch.bool).tril()
    a, wa = scaled_dot_product_attention(q, k, v, allowed)
    b, wb = scaled_dot_product_attention(q, k, v, causal_mask(7, dtype=torch.float64))
    torch.testing.assert_close(a, b, atol=0, rtol=0)
    torch.testing.assert_close(wa, wb, atol=0, rtol=0)


def test_sdpa_function_cross_attention_shapes_and_values():
    g = _gen(3)
    q = torch.randn(2, 4, 6, generator=g, dtype=torch.float64)
    k = torch.randn(2, 9, 6, generator=g, dtype=torch.float64)
    v = torch.randn(2, 9, 3, generator=g, dtype=torch.float64)
    out, w = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 4, 3) and w.shape == (2, 4, 9)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL)
    torch.testing.assert_close(out, w @ v, **TOL)


def test_sdpa_function_one_query_by_hand():
    # One query, two keys: scores (q.k_j)/sqrt(2) = [1, 0], so the weights are softmax([1, 0]).
    q = torch.tensor([[math.sqrt(2), 0.0]], dtype=torch.float64)
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    v = torch.tensor([[10.0], [20.0]], dtype=torch.float64)
    out, w = scaled_dot_product_attention(q, k, v)
    a = math.e / (math.e + 1)
    torch.testing.assert_close(w, torch.tensor([[a, 1 - a]], dtype=torch.float64), atol=1e-15, rtol=0)
    assert out.item() == pytest.approx(10 * a + 20 * (1 - a), abs=1e-12)


def test_sdpa_function_survives_large_scores():
    q, k, v = _qkv(seed=4)
    out, w = scaled_dot_product_attention(q * 1e3, k * 1e3, v, causal_mask(7, dtype=torch.float64))
    assert torch.isfinite(out).all() and torch.isfinite(w).all()


# --- CausalSelfAttention (module) --------------------------------------------------------

def _reference_mha(layer: CausalSelfAttention) -> nn.MultiheadAttention:
    C = layer.n_embd
    bias = layer.c_attn.bias is not None
    mha = nn.MultiheadAttention(C, layer.n_head, bias=bias, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(layer.c_attn.weight)  # rows: W_q; W_k; W_v — the same layout
        mha.out_proj.weight.copy_(layer.c_proj.weight)
        if bias:
            mha.in_proj_bias.copy_(layer.c_attn.bias)
            mha.out_proj.bias.copy_(layer.c_proj.bias)
    return mha.eval()


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_module_matches_nn_multiheadattention(fast, causal, bias):
    layer = _layer(causal=causal, fast=fast, bias=bias, seed=5)
    mha = _reference_mha(layer)
    x = torch.randn(3, 10, 12, generator=_gen(6), dtype=torch.float64)
    mask = torch.ones(10, 10, dtype=torch.bool).triu(1) if causal else None  # True = blocked
    with torch.no_grad():
        expected, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
        got = layer(x)
    assert got.shape == (3, 10, 12)
    torch.testing.assert_close(got, expected, **TOL)


def test_module_weights_match_nn_multiheadattention():
    layer = _layer(seed=7)
    mha = _reference_mha(layer)
    x = torch.randn(2, 8, 12, generator=_gen(8), dtype=torch.float64)
    mask = torch.ones(8, 8, dtype=torch.bool).triu(1)
    with torch.no_grad():
        _, expected = mha(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
    got = layer.attention_weights(x)
    assert got.shape == (2, 3, 8, 8)
    torch.testing.assert_close(got, expected, **TOL)


@pytest.mark.parametrize("causal", [True, False])
def test_explicit_path_equals_fast_path(causal):
    fast = _layer(causal=causal, fast=True, seed=9)
    explicit = _layer(causal=causal, fast=False, seed=9)
    explicit.load_state_dict(fast.state_dict())
    x = torch.randn(4, 16, 12, generator=_gen(10), dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(explicit(x), fast(x), **TOL)


def test_explicit_path_equals_fast_path_in_float32():
    fast = _layer(fast=True, seed=11).float()
    explicit = _layer(fast=False, seed=11).float()
    explicit.load_state_dict(fast.state_dict())
    x = torch.randn(2, 16, 12, generator=_gen(12))
    with torch.no_grad():
        torch.testing.assert_close(explicit(x), fast(x), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("fast", [True, False])
def test_causality_future_tokens_do_not_change_the_past(fast):
    layer = _layer(fast=fast, seed=13)
    x = torch.randn(2, 12, 12, generator=_gen(14), dtype=torch.float64)
    with torch.no_grad():
        before = layer(x)
        for t in (0, 5, 10):
            changed = x.clone()
            changed[:, t + 1:] = torch.randn(2, 11 - t, 12, generator=_gen(15 + t), dtype=torch.float64)
            after = layer(changed)
            torch.testing.assert_close(after[:, : t + 1], before[:, : t + 1], atol=0, rtol=0)
            assert not torch.allclose(after[:, t + 1:], before[:, t + 1:]), "the future did change"


@pytest.mark.parametrize("fast", [True, False])
def test_without_mask_permuting_the_input_permutes_the_output(fast):
    layer = _layer(causal=False, fast=fast, seed=16)
    x = torch.randn(2, 9, 12, generator=_gen(17), dtype=torch.float64)
    perm = torch.randperm(9, generator=_gen(18))
    with torch.no_grad():
        torch.testing.assert_close(layer(x[:, perm]), layer(x)[:, perm], **TOL)


def test_with_mask_permuting_is_not_equivariant():
    layer = _layer(causal=True, seed=19)
    x = torch.randn(1, 6, 12, generator=_gen(20), dtype=torch.float64)
    perm = torch.tensor([5, 4, 3, 2, 1, 0])
    with torch.no_grad():
        assert not torch.allclose(layer(x[:, perm]), layer(x)[:, perm])


def test_attention_weights_rows_sum_to_one_and_respect_the_mask():
    layer = _layer(seed=21)
    w = layer.attention_weights(torch.randn(2, 7, 12, generator=_gen(22), dtype=torch.float64))
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 7, dtype=torch.float64), **TOL)
    assert torch.all(w.triu(1) == 0)


def test_sequence_longer_than_block_size_is_refused():
    layer = _layer(block_size=4)
    with pytest.raises(ValueError, match="block_size"):
        layer(torch.zeros(1, 5, 12, dtype=torch.float64))


def test_shorter_sequences_than_block_size_work():
    layer = _layer(block_size=16)
    assert layer(torch.zeros(1, 3, 12, dtype=torch.float64)).shape == (1, 3, 12)


def test_config_rejects_heads_that_do_not_divide_the_width():
    with pytest.raises(ValueError, match="divisible"):
        AttentionConfig(n_embd=10, n_head=3)


def test_dropout_only_in_training_and_gradients_flow():
    torch.manual_seed(23)
    layer = CausalSelfAttention(AttentionConfig(n_embd=8, n_head=2, block_size=8, dropout=0.5)).double()
    x = torch.randn(2, 8, 8, dtype=torch.float64, requires_grad=True)
    layer.eval()
    with torch.no_grad():
        torch.testing.assert_close(layer(x), layer(x), atol=0, rtol=0)
    layer.train()
    layer(x).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    assert all(p.grad is not None for p in layer.parameters())


def test_parameter_count_is_4_c_squared_plus_biases():
    layer = _layer(n_embd=12, n_head=3)
    assert sum(p.numel() for p in layer.parameters()) == 4 * 12 * 12 + 4 * 12
    layer = _layer(n_embd=12, n_head=3, bias=False)
    assert sum(p.numel() for p in layer.parameters()) == 4 * 12 * 12


# --- lmcourse.plot attention pictures (smoke tests, no screen needed) ---------------------

def test_attention_plots_draw_without_a_screen():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lmcourse import plot

    layer = _layer(seed=24)
    w = layer.attention_weights(torch.randn(1, 5, 12, generator=_gen(25), dtype=torch.float64))
    tokens = ["a", "b", "c", "d", "e"]
    ax = plot.attention_heatmap(w[0, 0], tokens=tokens)
    assert [t.get_text() for t in ax.get_xticklabels()] == tokens
    assert len(plot.attention_heads(w, tokens=tokens)) == 3
    plot.attention_mask(causal_mask(5), tokens=tokens)
    plot.attention_mask(torch.ones(5, 5, dtype=torch.bool).tril())
    with pytest.raises(ValueError, match="only 0"):
        plot.attention_mask(torch.ones(3, 3))
    axes = plot.attention_cost([16, 32], {"explicit": [1e-3, 4e-3], "fused": [1e-3, 2e-3]},
                               {"explicit": [1e3, 4e3], "fused": [1e3, 2e3]})
    assert len(axes) == 2
    plt.close("all")


def test_self_attention_is_named_for_what_it_is_and_the_old_name_still_imports():
    import lmcourse.nn.attention

    assert lmcourse.nn.CausalSelfAttention is lmcourse.nn.SelfAttention is lmcourse.nn.attention.SelfAttention
    torch.manual_seed(0)
    layer = lmcourse.nn.SelfAttention(AttentionConfig(n_embd=8, n_head=2, block_size=4, causal=False)).eval()
    x = torch.randn(1, 4, 8)
    y = layer(x)
    x2 = x.clone()
    x2[0, -1] += 1.0        # bidirectional: changing the last position changes the first one's output
    assert not torch.allclose(layer(x2)[0, 0], y[0, 0])


def test_lmcourse_nn_imports_while_03_is_graded():
    """03's graded kernel withholds its reference and the course's attention layer (given code for
    later notebooks, which does 03's work): lmcourse.nn imports there, each of its attention names
    fails with the reason, and so does what is built on it (the blocks)."""
    import subprocess
    import sys

    code = ("from lmcourse.marking.kernel import withhold\n"
            "from lmcourse.marking.notebooks import load\n"
            "withhold(load('03_attention'))\n"
            "import lmcourse.nn\n"
            "for name in ('CausalSelfAttention', 'scaled_dot_product_attention', 'Block'):\n"
            "    try:\n"
            "        getattr(lmcourse.nn, name)\n"
            "    except ImportError as err:\n"
            "        assert 'not available while notebook 03_attention is graded' in str(err), err\n"
            "    else:\n"
            "        raise AssertionError(name + ' was importable')\n"
            "from lmcourse.runtime import given\n"
            "assert given('lmcourse.nn.attention') is None\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
