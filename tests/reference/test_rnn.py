"""lmcourse.reference.rnn: 02's reference answers agree with torch's RNN and SGD and use none of their kernels."""

import copy

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
                                  rnn.sample, rnn.train_step}


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
