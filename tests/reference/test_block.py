"""lmcourse.reference.block: 04's references, stand-ins and helpers, and the ready-made
normalisations it refuses."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import lmcourse.nn.block
import lmcourse.nn.gpt
import lmcourse.nn.seq2seq
from lmcourse.checks import CheckFailed
from lmcourse.marking.rules import rules
from lmcourse.reference import block


def test_reference_names_the_course_block_torchs_encoder_layer_and_the_back_doors():
    assert block.REFERENCE[:2] == (lmcourse.nn.block, nn.TransformerEncoderLayer)
    assert {lmcourse.nn.gpt.GPT, lmcourse.nn.seq2seq, block.layer_norm, block.mlp_formula,
            block.sinusoidal_positions} <= set(block.REFERENCE)
    assert all(hasattr(torch.ops.aten, n) or n == "rms_norm" for n in block.NORMS)
    assert torch.jit.ScriptModule in block.SCRIPTED
    assert block.DeviceLog not in block.REFERENCE      # a probe: it runs inside graded calls


def test_stand_ins_and_helpers_are_right():
    g = torch.Generator().manual_seed(0)
    x, gamma, beta = (torch.randn(2, 3, 6, generator=g, dtype=torch.float64), torch.randn(6, dtype=torch.float64),
                      torch.randn(6, dtype=torch.float64))
    torch.testing.assert_close(block.layer_norm(x, gamma, beta, 1e-3), F.layer_norm(x, (6,), gamma, beta, 1e-3))
    torch.testing.assert_close(block.sinusoidal_positions(50, 8, torch.float64),
                               lmcourse.nn.block.sinusoidal_positions(50, 8, dtype=torch.float64))
    mlp = lmcourse.nn.block.MLP(lmcourse.nn.block.BlockConfig(n_embd=6, n_head=1)).double()
    with torch.no_grad():
        torch.testing.assert_close(block.mlp_formula(mlp, x), mlp(x))


def test_a_gpt_forward_on_a_shim_is_refused_as_embeddings():
    """Other course modules: GPT.forward with identity blocks and head adds the
    embeddings, 04's exercise 6: refused by 04's REFERENCE."""
    from types import SimpleNamespace
    shim = SimpleNamespace(wte=nn.Embedding(5, 4), wpe=nn.Embedding(3, 4), drop=nn.Dropout(0.0), blocks=[],
                           ln_f=nn.Identity(), lm_head=nn.Identity(), config=SimpleNamespace(block_size=3))
    idx = torch.zeros(1, 3, dtype=torch.long)
    with pytest.raises(CheckFailed, match="forward"), rules(*block.REFERENCE)():
        lmcourse.nn.gpt.GPT.forward(shim, idx)


def _twin(blk, n_embd, n_head, prenorm):
    """nn.TransformerEncoderLayer (float64) with the weights of 04's reference Block."""
    ref = nn.TransformerEncoderLayer(n_embd, n_head, dim_feedforward=4 * n_embd, dropout=0.0, activation="gelu",
                                     batch_first=True, norm_first=prenorm).double()
    with torch.no_grad():
        for dst, src in [(ref.self_attn.in_proj_weight, blk.attn.c_attn.weight),
                         (ref.self_attn.in_proj_bias, blk.attn.c_attn.bias),
                         (ref.self_attn.out_proj.weight, blk.attn.c_proj.weight),
                         (ref.self_attn.out_proj.bias, blk.attn.c_proj.bias),
                         (ref.linear1.weight, blk.mlp.c_fc.weight), (ref.linear1.bias, blk.mlp.c_fc.bias),
                         (ref.linear2.weight, blk.mlp.c_proj.weight), (ref.linear2.bias, blk.mlp.c_proj.bias),
                         (ref.norm1.weight, blk.ln1.weight), (ref.norm1.bias, blk.ln1.bias),
                         (ref.norm2.weight, blk.ln2.weight), (ref.norm2.bias, blk.ln2.bias)]:
            dst.copy_(src)
    return ref.train()      # dropout is 0; train mode keeps torch on its plain (non-fused) path


@pytest.mark.parametrize("prenorm,causal", [(True, True), (False, True), (False, False), (True, False)])
def test_the_answers_match_torchs_layers(prenorm, causal):
    """The judge's side of 04: the reference answers against torch's own modules."""
    g = torch.Generator().manual_seed(1)
    blk = block.Block(8, 2, block_size=5, prenorm=prenorm, causal=causal).double()
    with torch.no_grad():
        for p in blk.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) * 0.5 + (1.0 if p.dim() == 1 else 0.0))
    x = torch.randn(2, 5, 8, generator=g, dtype=torch.float64)
    mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64) if causal else None
    with torch.no_grad():
        torch.testing.assert_close(blk(x), _twin(blk, 8, 2, prenorm)(x, src_mask=mask, is_causal=causal))
    ln, ref = block.LayerNorm(8, eps=1e-3).double(), nn.LayerNorm(8, eps=1e-3).double()
    with torch.no_grad():
        torch.testing.assert_close(ln(x), ref(x))
        mlp = block.MLP(8).double()
        torch.testing.assert_close(mlp(x), block.mlp_formula(mlp, x))
    counted = lmcourse.nn.block.Block(lmcourse.nn.block.BlockConfig(n_embd=12, n_head=1, block_size=1))
    assert block.block_param_count(12) == sum(p.numel() for p in counted.parameters())
    table = lmcourse.nn.block.sinusoidal_positions(64, 8, dtype=torch.float64)
    torch.testing.assert_close(table[:50] @ block.rotation_matrix(7, 8, dtype=torch.float64).T, table[7:57])
    emb = block.Embeddings(11, 6, 8, learned=False)
    idx = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        torch.testing.assert_close(emb(idx), emb.wte(idx) + lmcourse.nn.block.sinusoidal_positions(3, 6))
