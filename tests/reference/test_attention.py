"""lmcourse.reference.attention: 03's stand-ins agree with torch and use no ready-made softmax."""

import torch
import torch.nn.functional as F

import lmcourse.nn.attention
from lmcourse.checks import own_code
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
