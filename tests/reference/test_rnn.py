"""lmcourse.reference.rnn: 02's reference answers agree with torch's RNN and SGD and use none of their kernels."""

import copy

import pytest
import torch
from torch import nn

from lmcourse.marking.refusals import forbid_torch_functions
from lmcourse.reference import rnn


def test_the_stand_ins_match_torch_rnn_without_its_kernels():
    torch.manual_seed(0)
    ref = nn.RNN(3, 5, batch_first=True, dtype=torch.float64)
    x, h0 = torch.randn(2, 4, 3, dtype=torch.float64), torch.randn(1, 2, 5, dtype=torch.float64)
    want, _ = ref(x, h0)
    weights = (ref.weight_ih_l0, ref.weight_hh_l0, ref.bias_ih_l0 + ref.bias_hh_l0)
    with forbid_torch_functions(*rnn.RECURRENT):
        got = rnn.rnn_forward(x, h0[0], *weights)
        first = rnn.elman_step(x[:, 0], h0[0], *weights)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
    torch.testing.assert_close(first, want[:, 0], atol=1e-12, rtol=0)
    assert rnn.rnn_forward(x, None, *weights).shape == (2, 4, 5)
    assert set(rnn.REFERENCE) == {rnn.elman_step, rnn.rnn_forward, rnn.lm_loss, rnn.RNNLM, rnn.perplexity,
                                  rnn.sample, rnn.train_step, rnn.adamw_step, rnn.lr_schedule, rnn.clip_grad_norm}


def test_the_reference_loss_is_shifted_cross_entropy():
    torch.manual_seed(0)
    logits, idx = torch.randn(2, 5, 4, dtype=torch.float64), torch.randint(4, (2, 5))
    want = sum(-torch.log_softmax(logits[b, t], -1)[idx[b, t + 1]] for b in range(2) for t in range(4)) / 8
    torch.testing.assert_close(rnn.lm_loss(logits, idx), want, atol=1e-12, rtol=0)


def test_the_reference_model_is_nn_rnn_between_an_embedding_and_a_linear_layer():
    torch.manual_seed(0)
    m = rnn.RNNLM(11, 5, 7).double()
    ref = nn.RNN(5, 7, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(m.W_xh)
        ref.weight_hh_l0.copy_(m.W_hh)
        ref.bias_ih_l0.copy_(m.b_h)
        ref.bias_hh_l0.zero_()
    idx = torch.randint(11, (2, 6))
    with forbid_torch_functions(*rnn.RECURRENT):
        logits, h_T = m.forward_state(idx)
    hs, _ = ref(m.wte(idx))
    torch.testing.assert_close(logits, m.lm_head(hs), atol=1e-12, rtol=0)
    torch.testing.assert_close(h_T, hs[:, -1], atol=1e-12, rtol=0)


def test_the_reference_sgd_step_is_torch_optim_sgd():
    torch.manual_seed(0)
    m = rnn.RNNLM(7, 4, 5).double()
    m2 = copy.deepcopy(m)
    opt = torch.optim.SGD(m2.parameters(), lr=0.3)
    idx = torch.randint(7, (3, 8))
    loss = rnn.train_step(m, idx, 0.3)
    want = rnn.lm_loss(m2(idx), idx)
    want.backward()
    opt.step()
    assert loss == want.item()
    for p, q in zip(m.parameters(), m2.parameters()):
        torch.testing.assert_close(p, q, atol=1e-12, rtol=0)
        assert p.grad is None or not p.grad.any()


def test_the_reference_perplexity_sampler_and_answers():
    assert abs(rnn.perplexity(torch.tensor([0.0, 2 * 0.6931471805599453], dtype=torch.float64)) - 2.0) < 1e-12

    class Die(nn.Module):
        def __init__(self):
            super().__init__()
            self.dummy = nn.Parameter(torch.zeros(1))

        def forward_state(self, idx, state=None):
            return torch.tensor([0.7, 0.2, 0.1]).log().expand(*idx.shape, 3), state

    draws = rnn.sample(Die(), [0], 3000, torch.Generator().manual_seed(1))
    assert abs(draws.count(0) / 3000 - 0.7) < 0.04
    assert [rnn.answer_q1, rnn.answer_q2, rnn.answer_q3, rnn.answer_q4] == ["B", "C", "A", "D"]


def _params_with_grads(seed):
    g = torch.Generator().manual_seed(seed)
    params = [torch.randn(4, 3, generator=g, dtype=torch.float64), torch.randn(5, generator=g, dtype=torch.float64),
              torch.randn(2, 2, generator=g, dtype=torch.float64)]
    return params, g


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_the_reference_adamw_step_is_torch_optim_adamw_over_several_steps(weight_decay):
    mine, g = _params_with_grads(0)
    theirs = [p.clone().requires_grad_() for p in mine]
    opt = torch.optim.AdamW(theirs[:2], lr=0.05, betas=(0.9, 0.99), eps=1e-8, weight_decay=weight_decay)
    state = {}
    for _ in range(6):
        for a, b in zip(mine[:2], theirs[:2]):
            a.grad = torch.randn(a.shape, generator=g, dtype=torch.float64)
            b.grad = a.grad.clone()
        rnn.adamw_step(mine, state, 0.05, (0.9, 0.99), 1e-8, weight_decay)   # the third has no grad: skipped
        opt.step()
    for a, b in zip(mine, theirs):
        torch.testing.assert_close(a, b.detach(), atol=1e-13, rtol=0)


def test_the_reference_schedule_is_the_training_loops():
    from lmcourse.train import TrainConfig, lr_at

    cfg = TrainConfig(steps=40, lr=3e-3, warmup_steps=5, min_lr_ratio=0.1)
    got = [rnn.lr_schedule(s, 3e-3, 3e-4, 5, 40) for s in range(40)]
    assert got == pytest.approx([lr_at(s, cfg) for s in range(40)], rel=1e-12)
    assert got[4] == pytest.approx(3e-3) and got[-1] == pytest.approx(3e-4)


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_the_reference_clipping_is_clip_grad_norm_(max_norm):
    mine, g = _params_with_grads(1)
    for p in mine[:2]:
        p.grad = torch.randn(p.shape, generator=g, dtype=torch.float64)
    theirs = [p.clone().requires_grad_() for p in mine]
    for a, b in zip(mine, theirs):
        b.grad = None if a.grad is None else a.grad.clone()
    norm = rnn.clip_grad_norm(mine, max_norm)
    want = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
    assert type(norm) is float and norm == pytest.approx(float(want), rel=1e-12)
    for a, b in zip(mine[:2], theirs[:2]):
        torch.testing.assert_close(a.grad, b.grad, atol=0, rtol=1e-5)   # torch divides by norm + 1e-6
