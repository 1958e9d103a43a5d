"""lmcourse.reference.rnn: 02's stand-ins agree with torch's RNN and use none of its kernels."""

import torch
from torch import nn

from lmcourse.checks import forbid_torch_functions
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
    assert set(rnn.REFERENCE) == {rnn.elman_step, rnn.rnn_forward, rnn.lm_loss}


def test_the_reference_loss_is_shifted_cross_entropy():
    torch.manual_seed(0)
    logits, idx = torch.randn(2, 5, 4, dtype=torch.float64), torch.randint(4, (2, 5))
    want = sum(-torch.log_softmax(logits[b, t], -1)[idx[b, t + 1]] for b in range(2) for t in range(4)) / 8
    torch.testing.assert_close(rnn.lm_loss(logits, idx), want, atol=1e-12, rtol=0)
