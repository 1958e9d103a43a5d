"""`own_code`: the 'no ready-made softmax' rule of notebook 03 is enforced by what runs:
every route to a torch softmax is refused, however it is named or reached."""

import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse.nn.attention
from lmcourse.checks import CheckFailed
from lmcourse.marking.refusals import own_code

X = torch.randn(2, 3, 5, dtype=torch.float64)


def _hand_made(x, dim=-1):
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)


def _retry_unguarded():
    try:
        return torch.softmax(X, -1)
    except CheckFailed:
        with torch._C.DisableTorchFunction():
            return torch.softmax(X, -1)


def _modes_off(call):
    def run():
        with torch._C.DisableTorchFunction():
            return call()
    return run


ROUTES = {
    "torch.softmax": lambda: torch.softmax(X, -1),
    "F.softmax": lambda: F.softmax(X, -1),
    "Tensor.softmax": lambda: X.softmax(-1),
    "nn.Softmax": lambda: nn.Softmax(-1)(X),
    "log_softmax().exp()": lambda: X.log_softmax(-1).exp(),
    "torch._softmax": lambda: torch._softmax(X, -1, False),
    "torch.special.softmax": lambda: torch.special.softmax(X, -1),
    "F.softmin(-x)": lambda: F.softmin(-X, -1),
    "torch.ops.aten._softmax.default": lambda: torch.ops.aten._softmax.default(X, -1, False),
    "Categorical(logits).probs": lambda: torch.distributions.Categorical(logits=X).probs,
    "torch.softmax, function modes off": _modes_off(lambda: torch.softmax(X, -1)),
    "Tensor.softmax, function modes off": _modes_off(lambda: X.softmax(-1)),
    "aten op, function modes off": _modes_off(lambda: torch.ops.aten._softmax.default(X, 2, False)),
    "catch the error, retry unguarded": _retry_unguarded,
}


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_to_a_ready_made_softmax_is_refused(route):
    refused = pytest.raises(CheckFailed, match=r"your code called torch\..*soft(max|min).*: write your own")
    with refused, own_code("softmax", "softmin", reason="write your own"):
        ROUTES[route]()
    assert sys.getprofile() is None


def test_ready_made_attention_is_refused():
    names = ("softmax", "scaled_dot_product_attention", "multi_head_attention")
    with pytest.raises(CheckFailed, match="scaled_dot_product_attention"), own_code(*names):
        F.scaled_dot_product_attention(X, X, X)
    mha = nn.MultiheadAttention(5, 1, batch_first=True).double()
    with pytest.raises(CheckFailed, match="multi_head_attention"), own_code(*names):
        mha(X, X, X)
    # the inference fast path of nn.MultiheadAttention and of a whole encoder layer
    layer = nn.TransformerEncoderLayer(8, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        for call in (lambda: mha.eval()(X, X, X, need_weights=False), lambda: layer(x)):
            with pytest.raises(CheckFailed, match="multi_head_attention|softmax"), own_code(*names):
                call()


def test_the_reference_under_another_name_is_refused():
    import lmcourse.reference.attention  # notebook 03's answers (causal_mask moved there from lmcourse.nn)

    alias = lmcourse.reference.attention.causal_mask
    with pytest.raises(CheckFailed, match="causal_mask"), own_code(calls=(lmcourse.reference.attention,)):
        alias(4)
    assert sys.getprofile() is None


def test_own_code_passes_and_leaves_nothing_behind():
    with own_code("softmax", "softmin", calls=(lmcourse.nn.attention,)):
        got = _hand_made(X)
    assert torch.allclose(got, torch.softmax(X, -1))
    assert sys.getprofile() is None
    assert torch.softmax(X, -1).shape == X.shape  # nothing is blocked after the block
