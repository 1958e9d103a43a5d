import math

import numpy as np
import pytest

from lmcourse import checks
from lmcourse.checks import CheckFailed, check_equal


def test_distribution_message_names_the_sum_and_the_hint():
    with pytest.raises(CheckFailed, match=r"sum to 0.8333, not 1 — normalise"):
        checks.check_distribution({"a": 0.5, "b": 1 / 3}, "p", hint="normalise")


def test_close_handles_infinities_and_nan():
    checks.check_close(math.inf, math.inf, "x")
    with pytest.raises(CheckFailed, match="is nan"):
        checks.check_close(float("nan"), 1.0, "x")
    with pytest.raises(CheckFailed, match="off by"):
        checks.check_close(1.1, 1.0, "x")


def test_equal_points_at_the_first_difference():
    with pytest.raises(CheckFailed, match="differs at position 1"):
        checks.check_equal([1, 2, 3], [1, 5, 3], "xs")
    with pytest.raises(CheckFailed, match="missing 1 key"):
        checks.check_equal({"a": 1}, {"a": 1, "b": 2}, "d")


def test_equal_names_torch_dtypes_and_devices():
    torch = pytest.importorskip("torch")
    with pytest.raises(CheckFailed, match=r"is torch.float32, expected torch.float64"):
        checks.check_equal(torch.float32, torch.float64, "the dtype")
    with pytest.raises(CheckFailed, match=r"device\(type='meta'\), expected device\(type='cpu'\)"):
        checks.check_equal(torch.device("meta"), torch.device("cpu"), "the device")
    checks.check_equal(torch.device("cpu"), torch.device("cpu"), "the device")


def test_checks_do_not_depend_on_numpy_comparisons(monkeypatch):
    monkeypatch.setattr(np, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(np, "isclose", lambda *a, **k: True)
    with pytest.raises(CheckFailed):
        checks.check_close(2.0, 1.0, "x")


def test_forbid_blocks_and_restores():
    class Ref:
        @staticmethod
        def f():
            return 1

    with checks.forbid(Ref, "f"):
        with pytest.raises(CheckFailed, match="your code called"):
            Ref.f()
    assert Ref.f() == 1


def test_forbid_torch_functions_blocks_every_route_and_restores():
    torch = pytest.importorskip("torch")
    nn = torch.nn
    x, h = torch.randn(2, 3), torch.randn(2, 4)
    W_xh, W_hh, b = torch.randn(4, 3), torch.randn(4, 4), torch.randn(4)
    routes = {
        "torch.rnn_tanh_cell": lambda: torch.rnn_tanh_cell(x, h, W_xh, W_hh, b),
        "_VariableFunctions": lambda: torch._C._VariableFunctions.rnn_tanh_cell(x, h, W_xh, W_hh, b),
        "torch.ops.aten": lambda: torch.ops.aten.rnn_tanh_cell(x, h, W_xh, W_hh, b),
        "torch.rnn_tanh": lambda: torch.rnn_tanh(x[None], h[None], [W_xh, W_hh, b, b], True, 1, 0.0,
                                                 False, False, False),
        "nn.RNNCell": lambda: nn.RNNCell(3, 4)(x, h),
        "nn.RNN": lambda: nn.RNN(3, 4, batch_first=True)(x[None]),
        "nn.LSTM": lambda: nn.LSTM(3, 4)(x[None]),
        "nn.GRUCell": lambda: nn.GRUCell(3, 4)(x),
    }
    with checks.forbid_torch_functions("rnn_tanh", "rnn_relu", "lstm", "gru", reason="do it yourself"):
        for route, call in routes.items():
            with pytest.raises(CheckFailed, match=r"your code called torch\.\w+") as info:
                call()
            assert str(info.value).endswith(": do it yourself"), route
        torch.tanh(x @ W_xh.T + h @ W_hh.T + b)  # plain tensor code still runs
    assert torch.rnn_tanh_cell(x, h, W_xh, W_hh, b).shape == (2, 4)  # and nothing is blocked after


def test_messages_show_plain_containers_not_placeholders():
    # a student comparing lists must see the lists (a placeholder hid what differed)
    with pytest.raises(CheckFailed) as err:
        check_equal(["<s>", "cows"], ["<s>", "<s>", "cows", "</s>"], "pad_sentence(['cows'], 3)")
    assert "got ['<s>', 'cows'], expected ['<s>', '<s>', 'cows', '</s>']" in str(err.value)
    with pytest.raises(CheckFailed) as err:
        check_equal(list(range(30)), list(range(31)), "ids")
    assert "… (30 items)" in str(err.value) and "… (31 items)" in str(err.value)

    class Sneaky(list):
        def __repr__(self):
            raise RuntimeError("student code ran while a message was written")

    with pytest.raises(CheckFailed) as err:   # read through list's own methods, never the subclass's
        check_equal(Sneaky([1]), [2], "x")
    assert "RuntimeError" not in str(err.value)
