"""lmcourse.nn.block against trusted references (torch built-ins), in float64."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from lmcourse.nn import (
    MLP,
    Block,
    BlockConfig,
    LayerNorm,
    LearnedPositionEmbedding,
    SinusoidalPositionEmbedding,
    block_param_count,
    rotation_matrix,
    sinusoidal_positions,
)

TOL = {"atol": 1e-12, "rtol": 1e-10}


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- LayerNorm -----------------------------------------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_matches_nn_layernorm_with_gradients(bias):
    g = _gen(0)
    x = (torch.randn(3, 5, 8, generator=g, dtype=torch.float64) * 3 + 1).requires_grad_()
    mine = LayerNorm(8, bias=bias).double()
    ref = nn.LayerNorm(8, bias=bias).double()
    with torch.no_grad():
        mine.weight.copy_(torch.randn(8, generator=g))
        ref.weight.copy_(mine.weight)
        if bias:
            mine.bias.copy_(torch.randn(8, generator=g))
            ref.bias.copy_(mine.bias)
    x2 = x.detach().clone().requires_grad_()
    y, y_ref = mine(x), ref(x2)
    torch.testing.assert_close(y, y_ref, **TOL)
    w = torch.randn(3, 5, 8, generator=g, dtype=torch.float64)
    (y * w).sum().backward()
    (y_ref * w).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, **TOL)
    torch.testing.assert_close(mine.weight.grad, ref.weight.grad, **TOL)
    if bias:
        torch.testing.assert_close(mine.bias.grad, ref.bias.grad, **TOL)
    else:
        assert mine.bias is None


def test_layer_norm_is_the_lecture_formula_with_biased_variance():
    g = _gen(1)
    x = torch.randn(4, 6, generator=g, dtype=torch.float64)
    ln = LayerNorm(6).double()
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)  # divide by d
    torch.testing.assert_close(ln(x), (x - mu) / torch.sqrt(var + 1e-5), **TOL)
    out = ln(x)
    torch.testing.assert_close(out.mean(-1), torch.zeros(4, dtype=torch.float64), atol=1e-12, rtol=0)


# --- MLP -----------------------------------------------------------------------------------

def test_mlp_shapes_width_and_exact_gelu():
    cfg = BlockConfig(n_embd=8, n_head=2)
    mlp = MLP(cfg).double()
    assert mlp.c_fc.weight.shape == (32, 8) and mlp.c_proj.weight.shape == (8, 32)
    x = torch.randn(2, 3, 8, generator=_gen(2), dtype=torch.float64)
    h = x @ mlp.c_fc.weight.T + mlp.c_fc.bias
    want = (0.5 * h * (1 + torch.erf(h / math.sqrt(2)))) @ mlp.c_proj.weight.T + mlp.c_proj.bias
    torch.testing.assert_close(mlp(x), want, **TOL)


def test_mlp_dropout_only_in_training():
    cfg = BlockConfig(n_embd=8, n_head=2, dropout=0.5)
    mlp = MLP(cfg).double()
    x = torch.randn(2, 6, 8, generator=_gen(3), dtype=torch.float64)
    mlp.eval()
    torch.testing.assert_close(mlp(x), mlp(x), **TOL)
    mlp.train()
    torch.manual_seed(0)
    assert (mlp(x) == 0).any()


# --- Block vs nn.TransformerEncoderLayer ---------------------------------------------------

def _encoder_twin(block: Block, cfg: BlockConfig) -> nn.TransformerEncoderLayer:
    ref = nn.TransformerEncoderLayer(cfg.n_embd, cfg.n_head, dim_feedforward=cfg.mlp_ratio * cfg.n_embd,
                                     dropout=0.0, activation="gelu", layer_norm_eps=cfg.ln_eps,
                                     batch_first=True, norm_first=cfg.prenorm, bias=cfg.bias).double()
    pairs = [(ref.self_attn.in_proj_weight, block.attn.c_attn.weight),
             (ref.self_attn.out_proj.weight, block.attn.c_proj.weight),
             (ref.linear1.weight, block.mlp.c_fc.weight), (ref.linear2.weight, block.mlp.c_proj.weight),
             (ref.norm1.weight, block.ln1.weight), (ref.norm2.weight, block.ln2.weight)]
    if cfg.bias:
        pairs += [(ref.self_attn.in_proj_bias, block.attn.c_attn.bias),
                  (ref.self_attn.out_proj.bias, block.attn.c_proj.bias),
                  (ref.linear1.bias, block.mlp.c_fc.bias), (ref.linear2.bias, block.mlp.c_proj.bias),
                  (ref.norm1.bias, block.ln1.bias), (ref.norm2.bias, block.ln2.bias)]
    with torch.no_grad():
        for dst, src in pairs:
            dst.copy_(src)
    return ref.eval()


def _randomise(module: nn.Module, seed: int) -> None:
    g = _gen(seed)
    with torch.no_grad():
        for p in module.parameters():  # LayerNorm gains and biases too, so they matter
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.5 + (1.0 if p.dim() == 1 else 0.0))


@pytest.mark.parametrize("prenorm", [False, True])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("fast", [True, False])
def test_block_matches_transformer_encoder_layer(prenorm, causal, fast):
    cfg = BlockConfig(n_embd=12, n_head=3, block_size=16, prenorm=prenorm, causal=causal, fast=fast)
    torch.manual_seed(4)
    block = Block(cfg).double().eval()
    _randomise(block, 5)
    ref = _encoder_twin(block, cfg)
    x = torch.randn(2, 9, 12, generator=_gen(6), dtype=torch.float64, requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    mask = nn.Transformer.generate_square_subsequent_mask(9, dtype=torch.float64) if causal else None
    ref.train()  # the training path: no fused fast path, so gradients flow through the same ops
    y, y_ref = block(x), ref(x2, src_mask=mask, is_causal=causal)
    torch.testing.assert_close(y, y_ref, atol=1e-10, rtol=1e-9)
    w = torch.randn(2, 9, 12, generator=_gen(7), dtype=torch.float64)
    (y * w).sum().backward()
    (y_ref * w).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(block.mlp.c_fc.weight.grad, ref.linear1.weight.grad, atol=1e-10, rtol=1e-9)
    torch.testing.assert_close(block.ln1.weight.grad, ref.norm1.weight.grad, atol=1e-10, rtol=1e-9)


def test_block_without_bias_matches_encoder_layer():
    cfg = BlockConfig(n_embd=8, n_head=2, block_size=8, bias=False, prenorm=True)
    torch.manual_seed(8)
    block = Block(cfg).double().eval()
    _randomise(block, 9)
    ref = _encoder_twin(block, cfg)
    x = torch.randn(3, 5, 8, generator=_gen(10), dtype=torch.float64)
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(block(x), ref(x, src_mask=mask, is_causal=True), atol=1e-10, rtol=1e-9)


def test_causal_block_ignores_the_future_and_bidirectional_does_not():
    x = torch.randn(1, 7, 8, generator=_gen(11), dtype=torch.float64)
    x2 = x.clone()
    x2[:, 4:] = torch.randn(1, 3, 8, generator=_gen(13), dtype=torch.float64)  # not a shift: LN removes it
    for causal in (True, False):
        torch.manual_seed(12)
        block = Block(BlockConfig(n_embd=8, n_head=2, block_size=8, causal=causal)).double().eval()
        with torch.no_grad():
            same = torch.allclose(block(x)[:, :4], block(x2)[:, :4], atol=1e-12, rtol=0)
        assert same == causal


def test_block_keeps_dtype_and_shape():
    block = Block(BlockConfig(n_embd=8, n_head=2, block_size=8))
    y = block(torch.randn(2, 8, 8))
    assert y.shape == (2, 8, 8) and y.dtype == torch.float32


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("d", [4, 12, 64])
def test_block_param_count_formula(d, bias):
    block = Block(BlockConfig(n_embd=d, n_head=2, bias=bias))
    assert block_param_count(d, bias=bias) == sum(p.numel() for p in block.parameters())
    if bias:
        assert block_param_count(d) == 12 * d * d + 13 * d


# --- positions -----------------------------------------------------------------------------

def test_sinusoidal_positions_formula():
    T, d = 50, 16
    pe = sinusoidal_positions(T, d, dtype=torch.float64)
    assert pe.shape == (T, d) and pe.dtype == torch.float64
    for t in (0, 1, 7, 49):
        for i in range(d // 2):
            w = 1.0 / 10000 ** (2 * i / d)
            assert math.isclose(pe[t, 2 * i].item(), math.sin(t * w), abs_tol=1e-12)
            assert math.isclose(pe[t, 2 * i + 1].item(), math.cos(t * w), abs_tol=1e-12)
    assert sinusoidal_positions(3, 4).dtype == torch.get_default_dtype()
    with pytest.raises(ValueError):
        sinusoidal_positions(3, 5)


@pytest.mark.parametrize("k", [0, 1, 5, 37])
def test_rotation_matrix_shifts_positions(k):
    d = 12
    pe = sinusoidal_positions(100, d, dtype=torch.float64)
    R = rotation_matrix(k, d, dtype=torch.float64)
    torch.testing.assert_close(pe[k:k + 50], pe[:50] @ R.T, atol=1e-10, rtol=0)
    torch.testing.assert_close(R @ R.T, torch.eye(d, dtype=torch.float64), atol=1e-12, rtol=0)


def test_position_embedding_modules():
    cfg = BlockConfig(n_embd=8, n_head=2, block_size=10)
    sin = SinusoidalPositionEmbedding(cfg)
    assert list(sin.parameters()) == []
    torch.testing.assert_close(sin(6), sinusoidal_positions(10, 8)[:6])
    learned = LearnedPositionEmbedding(cfg)
    assert learned(6).shape == (6, 8)
    assert sum(p.numel() for p in learned.parameters()) == 10 * 8
    with pytest.raises(ValueError):
        learned(11)
    with pytest.raises(ValueError):
        sin(11)


def test_config_validates():
    with pytest.raises(ValueError):
        BlockConfig(n_embd=10, n_head=3)
    with pytest.raises(ValueError):
        BlockConfig(dropout=1.0)
