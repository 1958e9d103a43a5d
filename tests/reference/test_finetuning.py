"""Notebook 11's reference answers, each against an independent computation: log-probabilities one
prefix at a time, calibration in probability space (Zhao et al.'s formula), pooling by a loop, the GPT's
own head on the classifier's hidden states, LoRA by its algebra and against peft's."""

from __future__ import annotations

import pytest
import torch

from lmcourse.nn import GPT, GPTConfig
from lmcourse.reference import finetuning as ref


def _gpt(seed=0, **kw) -> GPT:
    torch.manual_seed(seed)
    cfg = dict(vocab_size=13, block_size=16, n_layer=2, n_head=2, n_embd=16, dropout=0.0)
    model = GPT(GPTConfig(**{**cfg, **kw})).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def _one_at_a_time(model, prompt, continuation) -> float:
    """Sum of log P(c_j | prompt, c_<j), one forward pass per continuation token."""
    total, seq = 0.0, list(prompt)
    for token in continuation:
        logits, _ = model(torch.tensor([seq]))
        total += torch.log_softmax(logits[0, -1].double(), -1)[token].item()
        seq.append(token)
    return total


def test_score_continuations_is_the_chain_rule_and_padding_changes_nothing():
    model = _gpt()
    prompts, conts = [[1, 2, 3], [4], [5, 6, 7, 8, 9]], [[7, 1], [2, 3, 4, 5], [10]]
    with torch.no_grad():
        got = ref.score_continuations(model, prompts, conts, pad_id=0)
        alone = [ref.score_continuations(model, [p], [c], pad_id=12) for p, c in zip(prompts, conts)]
    assert got.dtype == torch.float64 and got.shape == (3,)
    want = torch.tensor([_one_at_a_time(model, p, c) for p, c in zip(prompts, conts)], dtype=torch.float64)
    torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(got, torch.cat(alone), atol=1e-12, rtol=1e-12)


def test_zero_shot_scores_is_zhao_calibration_in_probability_space():
    g = torch.Generator().manual_seed(1)
    logprobs = -torch.rand(5, 3, generator=g, dtype=torch.float64) * 10
    lengths = torch.tensor([2.0, 5.0, 3.0], dtype=torch.float64)
    free = -torch.rand(3, generator=g, dtype=torch.float64) * 10
    p, p_cf = logprobs.exp(), free.exp()
    q = (p / p_cf) / (p / p_cf).sum(-1, keepdim=True)               # W = diag(p_cf)^-1, then renormalised
    torch.testing.assert_close(ref.zero_shot_scores(logprobs, content_free=free).exp(), q)
    plain = p / p.sum(-1, keepdim=True)
    torch.testing.assert_close(ref.zero_shot_scores(logprobs).exp(), plain)
    per_token = (p ** (1 / lengths)) / (p_cf ** (1 / lengths))
    torch.testing.assert_close(ref.zero_shot_scores(logprobs, lengths, free).exp(),
                               per_token / per_token.sum(-1, keepdim=True))
    # a content-free input that favours no label changes nothing
    uniform = torch.full((3,), -2.0, dtype=torch.float64)
    torch.testing.assert_close(ref.zero_shot_scores(logprobs, content_free=uniform), ref.zero_shot_scores(logprobs))


def test_pool_hidden_against_a_loop():
    g = torch.Generator().manual_seed(2)
    h = torch.randn(3, 5, 4, generator=g, dtype=torch.float64)
    n_real = [5, 2, 1]
    mask = torch.tensor([[i < n for i in range(5)] for n in n_real])
    last = torch.stack([h[b, n - 1] for b, n in enumerate(n_real)])
    mean = torch.stack([h[b, :n].mean(0) for b, n in enumerate(n_real)])
    torch.testing.assert_close(ref.pool_hidden(h, mask, "last"), last)
    torch.testing.assert_close(ref.pool_hidden(h, mask, "mean"), mean)
    with pytest.raises(ValueError):
        ref.pool_hidden(h, mask, "max")


@pytest.mark.parametrize("pooling", ["last", "mean"])
def test_classifier_reads_the_gpt_before_its_head_and_ignores_pads(pooling):
    model = ref.SequenceClassifier(_gpt(), 3, pooling).double().eval()
    idx = torch.tensor([[1, 2, 3, 4, 5, 6]])
    with torch.no_grad():
        torch.testing.assert_close(model.backbone.lm_head(model.hidden(idx)), model.backbone(idx)[0])
        short = model(idx[:, :4], torch.ones(1, 4, dtype=torch.bool))
        padded = model(torch.tensor([[1, 2, 3, 4, 0, 9]]), torch.tensor([[True] * 4 + [False] * 2]))
    torch.testing.assert_close(short, padded, atol=1e-12, rtol=1e-12)


def test_freeze_counts_what_trains():
    model = ref.SequenceClassifier(_gpt(), 3)
    d, V, T, K = 16, 13, 16, 3
    block = 12 * d * d + 13 * d
    assert ref.freeze(model, "head") == d * K + K
    assert ref.freeze(model, "last", k=1) == d * K + K + block + 2 * d
    assert ref.freeze(model, "last", k=2) == d * K + K + 2 * block + 2 * d
    assert ref.freeze(model, "all") == V * d + T * d + 2 * block + 2 * d + d * K + K   # the tied head once
    assert ref.freeze(model, "head") == d * K + K                                      # and back again
    assert not model.backbone.wte.weight.requires_grad


def test_lora_starts_as_the_base_merges_exactly_and_trains_only_a_and_b():
    torch.manual_seed(3)
    base = torch.nn.Linear(6, 4).double()
    layer = ref.LoRALinear(base, r=2, alpha=8.0)
    x = torch.randn(5, 6, dtype=torch.float64)
    assert torch.equal(layer.lora_B, torch.zeros(4, 2, dtype=torch.float64)) and layer.lora_A.abs().sum() > 0
    torch.testing.assert_close(layer(x), base(x))
    with torch.no_grad():
        layer.lora_B.normal_()
    want = x @ (base.weight + 4.0 * layer.lora_B @ layer.lora_A).T + base.bias      # W x + (alpha / r) B A x
    torch.testing.assert_close(layer(x), want)
    merged = layer.merge()
    assert type(merged) is torch.nn.Linear and merged.weight.dtype == torch.float64
    torch.testing.assert_close(merged(x), layer(x))
    assert {n for n, p in layer.named_parameters() if p.requires_grad} == {"lora_A", "lora_B"}


def test_add_lora_keeps_the_model_and_counts_the_adapters():
    model = ref.SequenceClassifier(_gpt(), 3).double().eval()
    idx, mask = torch.tensor([[1, 2, 3, 4]]), torch.ones(1, 4, dtype=torch.bool)
    with torch.no_grad():
        before = model(idx, mask)
    n = ref.add_lora(model, r=2, alpha=4.0)
    d, r, L = 16, 2, 2
    assert n == L * (r * (d + 3 * d) + r * (d + d)) + d * 3 + 3
    with torch.no_grad():
        torch.testing.assert_close(model(idx, mask), before)
    assert all(isinstance(b.attn.c_attn, ref.LoRALinear) and isinstance(b.attn.c_proj, ref.LoRALinear)
               for b in model.backbone.blocks)


def test_lora_is_peft_s_lora_on_the_same_weights():
    """Hugging Face's peft (the library most LoRA fine-tuning uses) wraps the same linear layer with the same A and
    B: the same outputs, the same merged weight, and on the course's GPT (peft told to adapt both attention
    projections and to train the head) the same number of trainable parameters as add_lora."""
    peft = pytest.importorskip("peft", reason="peft is a test reference of the dev extra (pip install -e '.[dev]')")

    class One(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(6, 4)

        def forward(self, x):
            return self.proj(x)

    torch.manual_seed(5)
    one = One().double()
    ours = ref.LoRALinear(torch.nn.Linear(6, 4).double(), r=2, alpha=8.0)
    with torch.no_grad():
        ours.base.weight.copy_(one.proj.weight)
        ours.base.bias.copy_(one.proj.bias)
        ours.lora_B.normal_()
    theirs = peft.get_peft_model(one, peft.LoraConfig(r=2, lora_alpha=8.0, target_modules=["proj"], lora_dropout=0.0))
    layer = theirs.base_model.model.proj
    with torch.no_grad():
        layer.lora_A["default"].weight.copy_(ours.lora_A)
        layer.lora_B["default"].weight.copy_(ours.lora_B)
    x = torch.randn(5, 6, dtype=torch.float64)
    torch.testing.assert_close(theirs(x), ours(x))
    torch.testing.assert_close(theirs.merge_and_unload().proj.weight, ours.merge().weight)

    model = ref.SequenceClassifier(_gpt(), 3).double()
    counted = ref.add_lora(model, r=4, alpha=8.0)
    fresh = ref.SequenceClassifier(_gpt(), 3).double()
    wrapped = peft.get_peft_model(fresh, peft.LoraConfig(r=4, lora_alpha=8.0, lora_dropout=0.0,
                                                         target_modules=r".*attn\.c_(attn|proj)"))
    for p in wrapped.base_model.model.head.parameters():     # (modules_to_save=["head"] would take lm_head too)
        p.requires_grad_(True)
    theirs_count = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
    assert counted == theirs_count, (counted, theirs_count)
