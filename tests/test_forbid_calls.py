"""`forbid_calls`: 'not the course's reference' is enforced by the code that runs, not by names."""

import sys
import types

import pytest

from lmcourse.authoring.mutants import Alternative, alternative_rounds
from lmcourse.checks import CheckFailed
from lmcourse.marking.refusals import forbid_calls


def _module() -> types.ModuleType:
    mod = types.ModuleType("ref_mod")
    exec(
        "def helper(x):\n    return x + 1\n"
        "def outer(x):\n    inner = lambda y: y * 2\n    return inner(x)\n"
        "class Ref:\n    def forward(self, x):\n        return x - 1\n"
        "    @staticmethod\n    def make():\n        return 0\n",
        mod.__dict__,
    )
    for obj in (mod.helper, mod.outer, mod.Ref):
        obj.__module__ = "ref_mod"
    return mod


def test_every_route_to_the_reference_is_blocked():
    mod = _module()
    alias = mod.helper  # held under another name before the block
    saved_instance = mod.Ref()

    class Sub(mod.Ref):  # a subclass runs the reference's code
        pass

    routes = {
        "name": lambda: mod.helper(1),
        "alias": lambda: alias(1),
        "method": lambda: saved_instance.forward(1),
        "subclass": lambda: Sub().forward(1),
        "staticmethod": lambda: mod.Ref.make(),
        "nested code": lambda: mod.outer(1),
    }
    for route, call in routes.items():
        with pytest.raises(CheckFailed, match="your code called"), forbid_calls(mod, reason="write your own"):
            call()
        assert sys.getprofile() is None, f"{route}: the profile hook was left behind"
    assert alias(1) == 2 and Sub().forward(1) == 0  # nothing is blocked after the block


def test_catching_the_first_error_does_not_get_around_it():
    mod = _module()

    def sneaky(x):
        try:
            return mod.helper(x)
        except Exception:
            return mod.helper(x)  # the hook is gone after the first error: the exit still fails

    with pytest.raises(CheckFailed, match="helper"), forbid_calls(mod.helper):
        sneaky(1)


def test_own_code_and_builtins_run_freely():
    mod = _module()
    with forbid_calls(mod):
        assert sum(i + 1 for i in range(3)) == 6
        assert (lambda x: x - 1)(1) == 0


def test_alternative_rounds_replace_each_cell_once_per_round():
    alts = [Alternative("a1", "f", ""), Alternative("a2", "f", ""), Alternative("b1", "g", "")]
    rounds = alternative_rounds(alts)
    assert [sorted(r) for r in rounds] == [["f", "g"], ["f"]]
    assert [r["f"].name for r in rounds] == ["a1", "a2"]


def test_shared_wrappers_and_generated_methods_stay_allowed():
    import dataclasses
    import functools

    def deco(f):
        @functools.wraps(f)
        def wrapper(*a):
            return f(*a)
        return wrapper

    @deco
    def forbidden(x):
        return x

    @deco
    def other(x):
        return x + 1

    @dataclasses.dataclass
    class Cfg:
        n: int = 1

    Cfg.__module__ = __name__
    with forbid_calls(forbidden, Cfg):
        assert other(1) == 2  # same wrapper code as `forbidden`: not forbidden
        assert repr(dataclasses.make_dataclass("D", ["a"])(1)) == "D(a=1)"  # generated __repr__
    with pytest.raises(CheckFailed, match="forbidden"), forbid_calls(forbidden):
        forbidden(1)  # the decorated function itself still is


def test_forbid_kernels_refuses_at_the_dispatcher_and_remembers():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    from lmcourse.marking.refusals import forbid_kernels, python_decompositions

    x = torch.randn(2, 4)
    with pytest.raises(CheckFailed, match="native_layer_norm"), forbid_kernels("layer_norm"):
        try:
            F.layer_norm(x, (4,))
        except CheckFailed:
            pass  # caught by the student's code: the block still fails on exit
    with forbid_kernels("layer_norm"):
        assert torch.allclose((x - x.mean(-1, keepdim=True)).mean(-1), torch.zeros(2), atol=1e-6)
    assert any("layer_norm" in f.__name__ for f in python_decompositions("layer_norm"))
