"""lmcourse.reference.gpt: 05's references include other notebooks' code that does its work
(07's generation loops, 06's initialisation), and the probes the test cells of 05-07 share."""

import dataclasses

import pytest
import torch
from torch import nn

import lmcourse.decoding
import lmcourse.nn.gpt
import lmcourse.nn.mlm
from lmcourse import rules
from lmcourse.checks import CheckFailed
from lmcourse.reference import gpt as ref
from lmcourse.reference.gpt import REFERENCE

CFG = lmcourse.nn.gpt.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
RULES = rules.rules(*REFERENCE)


def test_reference_closes_the_other_course_modules():
    assert set(lmcourse.nn.gpt.REFERENCE) <= set(REFERENCE)
    assert {lmcourse.decoding.generate, lmcourse.decoding.generate_cached, lmcourse.nn.mlm.init_mlm_weights} \
        <= set(REFERENCE)
    assert lmcourse.decoding.top_k_filter not in REFERENCE      # a filter is no sampling loop


def test_expected_value_helpers_are_refused_and_the_probes_are_not():
    assert {ref.reference_gpt, ref.built, ref.softmax_list} <= set(REFERENCE)
    assert not {ref.grab, ref.DeviceLog, ref.FixedLogits} & set(REFERENCE)
    with pytest.raises(CheckFailed, match="softmax_list"), RULES():
        ref.softmax_list([1.0, 2.0])


class _WithBuffer(lmcourse.nn.gpt.GPT):
    """A correct GPT that keeps its positions in a persistent buffer of its own."""

    def __init__(self, config):
        super().__init__(config)
        self.register_buffer("pos", torch.arange(config.block_size))


def test_built_copies_the_reference_weights_and_accepts_buffers_of_ones_own():
    m, r = ref.built(_WithBuffer, CFG, rules.rules())
    assert torch.equal(m.pos, torch.arange(8)) and m.pos.dtype == torch.long
    for (n, p), (_, q) in zip(m.named_parameters(), r.named_parameters()):
        assert torch.equal(p, q), n


def test_built_names_a_missing_parameter():
    class NoDrop(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)

    with pytest.raises(CheckFailed, match=r"missing \[.blocks.0"):
        ref.built(NoDrop, CFG, rules.rules())


def test_reference_gpt_takes_any_config_with_the_fields():
    @dataclasses.dataclass
    class Cfg:
        vocab_size: int = 11
        block_size: int = 8
        n_layer: int = 1
        n_head: int = 2
        n_embd: int = 16
    a, b = ref.reference_gpt(Cfg()), ref.reference_gpt(Cfg())
    assert all(torch.equal(p, q) and p.dtype == torch.float64 for p, q in zip(a.parameters(), b.parameters()))
    assert not a.training


def test_grab_makes_the_block_input_a_leaf_and_removes_its_hook():
    model = ref.reference_gpt(CFG)
    with ref.grab(model.blocks[0]) as got:
        logits, _ = model(torch.zeros(1, 5, dtype=torch.long))
    (g,) = torch.autograd.grad(logits[0, 1].sum(), got.x)
    assert float(g[0, 2:].abs().sum()) == 0.0 and float(g[0, :2].abs().sum()) > 0
    assert not model.blocks[0]._forward_pre_hooks


def test_device_log_sees_a_cpu_tensor_mixed_with_meta():
    log = ref.DeviceLog()
    x = torch.zeros(3, device="meta")
    with log, pytest.raises(RuntimeError):      # recorded before the operation itself refuses
        x + torch.arange(3)
    assert log.mixed == ["add.Tensor"]
    log2 = ref.DeviceLog()
    with log2:
        x + torch.arange(3, device="meta")
    assert not log2.mixed


def test_fixed_logits_records_what_it_was_given():
    m = ref.FixedLogits([2.0, 1.0, 0.0], block_size=2)
    out, _ = m(torch.zeros(4, 2, dtype=torch.long))
    assert out.shape == (4, 2, 3) and torch.equal(out[0, -1].detach(), torch.tensor([2.0, 1.0, 0.0]))
    m.obeyed()
    m(torch.zeros(4, 3, dtype=torch.long))
    with pytest.raises(CheckFailed, match="crop the context"):
        m.obeyed()
    assert m.grad_on == [True, True] and len(m.seen) == 2
