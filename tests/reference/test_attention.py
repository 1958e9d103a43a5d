"""lmcourse.reference.attention: 03's stand-ins agree with torch and use no ready-made softmax."""

import torch
import torch.nn.functional as F

import lmcourse.grading.attention_stand_ins as old_name
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


def test_the_old_name_is_the_same_code():
    assert old_name.softmax is attention.softmax and old_name.causal_mask is attention.causal_mask
