"""lmcourse.reference.attention: 03's stand-ins agree with torch and use no ready-made softmax."""

import torch
import torch.nn.functional as F

import lmcourse.nn.attention
from lmcourse.marking.refusals import own_code
from lmcourse.reference import attention


def test_the_stand_ins_match_torch_without_its_softmax():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=torch.float64) for _ in range(3))
    mask = attention.causal_mask(5).double()
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    with own_code("softmax", "scaled_dot_product_attention", calls=(lmcourse.nn.attention,)):
        got, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64))
    assert attention.REFERENCE == (lmcourse.nn.attention,)



def test_the_torch_twin_computes_what_the_module_computes():
    """torch_twin copies a MultiHeadAttention's weights into nn.MultiheadAttention: same output."""
    class Mine(torch.nn.Module):
        def __init__(self, n_embd=6, n_head=2):
            super().__init__()
            self.n_embd, self.n_head = n_embd, n_head
            self.W_q, self.W_k, self.W_v, self.W_o = (torch.nn.Linear(n_embd, n_embd).double() for _ in range(4))

        def forward(self, x):
            B, T, C = x.shape
            split = lambda t: t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # noqa: E731
            out = F.scaled_dot_product_attention(split(self.W_q(x)), split(self.W_k(x)), split(self.W_v(x)))
            return self.W_o(out.transpose(1, 2).reshape(B, T, C))

    torch.manual_seed(0)
    mine, x = Mine(), torch.randn(2, 5, 6, dtype=torch.float64)
    want, _ = attention.torch_twin(mine)(x, x, x)
    torch.testing.assert_close(mine(x), want, atol=1e-12, rtol=0)


def test_the_reference_module_matches_nn_multiheadattention():
    """The reference MultiHeadAttention (the expected values of 03's module cases) against torch's, through
    torch_twin, causal or not, with and without biases."""
    for causal, bias in ((True, True), (False, True), (True, False)):
        torch.manual_seed(1)
        mine = attention.MultiHeadAttention(8, 2, causal=causal, bias=bias).double()
        x = torch.randn(2, 5, 8, dtype=torch.float64)
        blocked = torch.ones(5, 5, dtype=torch.bool).triu(1) if causal else None
        want, want_w = attention.torch_twin(mine)(x, x, x, attn_mask=blocked, average_attn_weights=False)
        with own_code("softmax", "scaled_dot_product_attention", calls=(lmcourse.nn.attention,)):
            got, got_w = mine(x, return_weights=True)
        torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-10)
        torch.testing.assert_close(got_w, want_w, atol=1e-12, rtol=1e-10)


def test_the_multiple_choice_answers_are_letters():
    assert {attention.answer_q_mask, attention.answer_q_softmax, attention.answer_q_swap} <= set("ABC")
