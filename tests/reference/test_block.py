"""lmcourse.reference.block: 04's references and the ready-made normalisations it refuses."""

import torch
from torch import nn

import lmcourse.nn.block
from lmcourse.reference import block


def test_reference_names_the_course_block_and_torchs_encoder_layer():
    assert block.REFERENCE == (lmcourse.nn.block, nn.TransformerEncoderLayer)
    assert all(hasattr(torch.ops.aten, n) or n == "rms_norm" for n in block.NORMS)
    assert torch.jit.ScriptModule in block.SCRIPTED
