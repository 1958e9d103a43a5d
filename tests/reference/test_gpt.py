"""lmcourse.reference.gpt: 05's references include other notebooks' code that does its work
(07's generation loops, 06's initialisation), and the probes the test cells of 05-07 share."""

import dataclasses

import pytest
import torch
from torch import nn

import lmcourse.nn.gpt
import lmcourse.nn.mlm
import lmcourse.nn.sampling
import lmcourse.reference.decoding
from lmcourse.checks import CheckFailed
from lmcourse.marking import rules
from lmcourse.reference import gpt as ref
from lmcourse.reference.gpt import REFERENCE

CFG = lmcourse.nn.gpt.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
RULES = rules.rules(*REFERENCE)


def test_reference_closes_the_other_course_modules():
    given, loop, loops = lmcourse.nn.gpt, lmcourse.nn.sampling, lmcourse.reference.decoding
    assert {given.GPT, given.init_gpt_weights, given._init_gpt_weights, given.gpt_param_count, loop.generate,
            loop._generate} <= set(REFERENCE)
    assert given.GPTConfig not in REFERENCE      # a dataclass's __repr__ is every dataclass's
    assert {loops.generate, loops.generate_cached, lmcourse.nn.mlm.init_mlm_weights} <= set(REFERENCE)
    assert loops.top_k_filter not in REFERENCE      # a filter is no sampling loop


def test_expected_value_helpers_are_refused_and_the_probes_are_not():
    assert {ref.reference_gpt, ref.built, ref.softmax_list} <= set(REFERENCE)
    assert ref.DeviceLog not in set(REFERENCE)
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


# ------------------------------------------------------------------ 05's answers in the notebook's signatures

def _twins(bias=True, dropout=0.0):
    """The answer GPT and lmcourse.nn.gpt's, the same weights loaded by name."""
    cfg = ref.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=dropout, bias=bias)
    mine = ref.GPT(cfg).double().eval()
    course = lmcourse.nn.gpt.GPT(lmcourse.nn.gpt.GPTConfig(**dataclasses.asdict(cfg))).double().eval()
    mine.load_state_dict(course.state_dict())
    return mine, course


@pytest.mark.parametrize("bias", [True, False])
def test_the_answer_gpt_is_the_course_gpt(bias):
    mine, course = _twins(bias)
    idx, tgt = torch.randint(11, (3, 8)), torch.randint(11, (3, 8))
    (a, la), (b, lb) = mine(idx, tgt), course(idx, tgt)
    assert torch.allclose(a, b, atol=1e-12) and torch.allclose(la, lb, atol=1e-12)
    assert mine.lm_head.weight is mine.wte.weight and mine(idx)[1] is None
    assert sum(p.numel() for p in mine.parameters()) == lmcourse.nn.gpt.gpt_param_count(11, 8, 2, 16, bias=bias)


def test_the_answer_config_has_the_seven_fields_in_order():
    assert [f.name for f in dataclasses.fields(ref.GPTConfig)] == [
        "vocab_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "bias"]
    assert ref.GPTConfig(65, 64, 4, 4, 128, 0.2, True).dropout == 0.2


def test_init_weights_is_gpt2s_initialisation():
    mine, course = _twins()
    torch.manual_seed(3)
    ref.init_weights(mine, 2)
    torch.manual_seed(3)
    lmcourse.nn.gpt.init_gpt_weights(course)
    for (n, p), (_, q) in zip(mine.named_parameters(), course.named_parameters()):
        assert torch.equal(p, q), n


def test_the_count_is_the_course_count():
    for V, T, L, d in [(65, 256, 6, 384), (50257, 1024, 12, 768), (3, 1, 0, 5)]:
        assert ref.gpt_param_count(V, T, L, d) == lmcourse.nn.gpt.gpt_param_count(V, T, L, d)
    assert ref.gpt_param_count(50257, 1024, 12, 768) == 124_439_808


def test_generate_draws_what_the_course_sampler_draws():
    mine, _ = _twins()
    prompt = torch.tensor([[1, 2, 3]])
    a = ref.generate(mine, prompt, 10, 0.7, torch.Generator().manual_seed(4))
    b = lmcourse.nn.sampling.generate(mine, prompt, 10, 0.7, torch.Generator().manual_seed(4))
    assert torch.equal(a, b) and a.shape == (1, 13)


def test_the_quiz_letters():
    assert (ref.answer_q1, ref.answer_q2, ref.answer_q3) == ("C", "D", "A")
