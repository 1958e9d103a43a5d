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
from lmcourse.reference import block
from lmcourse.rules import rules


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
