"""Comparisons of tensors and of gradients, and the helpers that make a case's inputs, shared by the
notebooks' tests (02-12); the comparisons that need no torch (``equal``, ``fields``) live in
:mod:`.results`, imported here too for the notebooks that take every comparison from one place.

Each comparison returns ``None`` when the student's value is right, else a sentence; they run where
the verdict is made, on decoded plain data (:mod:`.plain`). :class:`DeviceLog` and :class:`FixedLogits`
run inside a graded call: the first notes operations that mix devices (a tensor made on the CPU beside
a meta input), the second is a stand-in model for a sampling loop.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .results import equal, fields
from .show import show
from .spec import Compare

__all__ = ["DeviceLog", "FixedLogits", "equal", "fields", "grads", "is_tensor", "named_grads", "pair", "param_grads",
           "plain_tensor", "seed_cpu", "seeded_generator", "seeded_weights", "tensor", "unreached"]


def seed_cpu(seed: int) -> None:
    """Seed torch's global generator on the CPU, where a test's tensors are (or on 'meta', which draws
    nothing). ``torch.manual_seed`` seeds each accelerator's generator too, and for one not initialised
    yet it formats the whole call stack to keep for later: under the rules' watch that costs a case more
    than its own work."""
    torch.default_generator.manual_seed(seed)


def seeded_generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with ``seed``: what a case draws its inputs from, the same on every run."""
    return torch.Generator().manual_seed(seed)


def seeded_weights(module: torch.nn.Module, seed: int, scale: float, gain: float = 0.0, bias: float | None = None,
                   is_gain: Callable[[str, torch.Tensor], bool] = lambda name, value: value.dim() == 1,
                   tied: dict[str, str] | None = None,
                   dtype: torch.dtype = torch.float64) -> torch.nn.Module:
    """``module`` in ``dtype`` with every parameter drawn afresh, each from a generator seeded by ``seed`` and
    the parameter's name, so the reference's module gets the same weights under the same names: matrices
    ~ N(0, scale^2); any other ~ N(0, s^2) (s: ``bias``, else ``scale``), plus ``gain`` where
    ``is_gain(name, value)`` (a LayerNorm's weight); a parameter named in ``tied`` takes the values of
    the one it names there (an output layer tied to the embedding or not); buffers of the student's own
    are kept."""
    module = module.to(dtype)
    # a parameter held under several names (a module registered twice: an nn.Sequential of the named layers)
    # is drawn once, under the first: the reference's module holds it under that one
    first: dict[int, str] = {}
    canonical = {str(n): first.setdefault(id(p), str(n)) for n, p in module.named_parameters(remove_duplicate=False)}
    state = {}
    for name, value in module.state_dict().items():
        if name not in canonical:
            state[name] = value
            continue
        key = (tied or {}).get(name, canonical[name])
        x = torch.randn(tuple(value.shape), generator=seeded_generator(seed * 1_000_003 + zlib.crc32(key.encode())),
                        dtype=dtype)
        if value.dim() >= 2:
            state[name] = x * scale
        else:
            state[name] = x * (scale if bias is None else bias) + (gain if is_gain(key, value) else 0.0)
    module.load_state_dict(state)
    return module


def pair(x: Any, what: str = "forward", parts: str = "(logits, loss)") -> tuple:
    """``x`` unpacked if it is a pair (a tuple of exact type): the test unpacks nothing else; ``parts`` names
    what the pair holds in the message."""
    if type(x) is not tuple or tuple.__len__(x) != 2:
        raise TypeError(f"{what} should return a pair {parts}, not {type(x).__name__}")
    return tuple.__getitem__(x, 0), tuple.__getitem__(x, 1)


def is_tensor(x: Any) -> bool:
    """A plain torch.Tensor (no subclass): what a test computes on."""
    return type(x) is torch.Tensor


def tensor(shape: str | None = None, dtype: str | None = None, values: str | None = None, device: str | None = None,
           atol: float = 0.0, rtol: float = 0.0, what: str = "") -> Compare:
    """A tensor against the reference's: its shape, dtype, device (meta stays meta in a record) and values
    within ``atol`` / ``rtol``, each with its own hint."""
    def compare(got: Any, want: Any) -> str | None:
        lead = f"{what}: " if what else ""
        if want is None:
            return None if got is None else f"{lead}got {show(got)}, expected None"
        if not is_tensor(got):
            return f"{lead}got {show(got)}, expected a torch.Tensor"
        if tuple(got.shape) != tuple(want.shape):
            return f"{lead}shape {tuple(got.shape)}, expected {tuple(want.shape)}" + (f" — {shape}" if shape else "")
        if got.dtype != want.dtype:
            return f"{lead}dtype {got.dtype}, expected {want.dtype}" + (f" — {dtype}" if dtype else "")
        if got.device.type != want.device.type:
            return f"{lead}device {got.device}, expected {want.device}" + (f" — {device}" if device else "")
        if want.device.type == "meta":
            return None
        same = (torch.equal(got, want) if atol == 0 and rtol == 0 or want.dtype in (torch.bool, torch.long) else
                torch.allclose(got.double(), want.double(), atol=atol, rtol=rtol))
        if same:
            return None
        if want.dtype in (torch.bool, torch.long) and got.numel() <= 40:
            diff = f"got {got.tolist()}, expected {want.tolist()}"
        else:
            err = (got.double() - want.double()).abs().nan_to_num(math.inf).max().item()
            diff = f"differs from the reference by up to {err:.3g}"
        return f"{lead}{diff}" + (f" — {values}" if values else "")
    return compare


def grads(what: str, values: str | None = None, missing: str | None = None, atol: float = 1e-10, rtol: float = 1e-10,
          params: str = "the parameters") -> Compare:
    """Gradients by name (``{name: tensor or None}``, as :func:`param_grads` / :func:`named_grads` make them)
    against the reference's, in its order: the same names (``params`` leads the message when not), each
    reached (``missing``, formatted with the name, when one is None) and within ``atol`` / ``rtol``
    (``values`` the hint, ``what`` formatted with the name)."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not dict or set(got) != set(want):
            return f"{params}: got {sorted(got) if type(got) is dict else show(got)}, expected {sorted(want)}"
        for name in want:
            if got[name] is None and missing:
                return missing.format(name)
            diff = tensor(values=values, atol=atol, rtol=rtol, what=what.format(name))(got[name], want[name])
            if diff:
                return diff
        return None
    return compare


def param_grads(module: torch.nn.Module) -> dict[str, torch.Tensor | None]:
    """Each parameter's gradient by name (sorted), copied; ``None`` where none reached it."""
    return {k: None if p.grad is None else p.grad.detach().clone() for k, p in sorted(module.named_parameters())}


def named_grads(names: tuple[str, ...], values: tuple) -> dict[str, torch.Tensor | None]:
    """What ``torch.autograd.grad(..., allow_unused=True)`` returned, by the inputs' ``names``, copied."""
    return {n: None if a is None else a.detach().clone() for n, a in zip(names, values)}


def unreached(module: torch.nn.Module, finite: bool = False, nonzero: bool = False) -> list[str]:
    """The names of the parameters no gradient reached after a backward pass, sorted: ``None``, and with ``finite``
    one with a value not finite, with ``nonzero`` one all zeros."""
    def reached(g: torch.Tensor | None) -> bool:
        return g is not None and (not finite or bool(torch.isfinite(g).all())) and (
            not nonzero or float(g.abs().sum()) != 0)
    return sorted(str(n) for n, p in module.named_parameters() if not reached(p.grad))


def plain_tensor(x: Any, what: str) -> torch.Tensor:
    """``x`` if it is a plain torch.Tensor: a test computes nothing on a value of another type."""
    if type(x) is not torch.Tensor:
        raise TypeError(f"{what} is a {type(x).__name__}, not a plain torch.Tensor")
    return x


class DeviceLog(TorchDispatchMode):
    """Records (in ``mixed``) every operation given non-scalar tensors on more than one device: with a model and
    its inputs on 'meta', a tensor made on the CPU inside shows up here."""

    def __init__(self):
        super().__init__()
        self.mixed: list[str] = []

    @classmethod
    def _should_skip_dynamo(cls):       # never compiled: left True, torch imports torch._dynamo to wrap it
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        devices = {a.device.type for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor) and a.dim() > 0}
        if len(devices) > 1 and func.__name__ not in self.mixed:
            self.mixed.append(func.__name__)
        return func(*args, **(kwargs or {}))


class FixedLogits(torch.nn.Module):
    """A stand-in model for a sampling loop: fixed ``logits`` at the last position (reversed ones before it),
    scaled by a weight (so they carry gradients when gradients are on), and a record of what it was given:
    ``seen`` (the ids of each call), ``grad_on``, ``wrong`` (the first call with ids not of shape
    (B, <= block_size), in words)."""

    def __init__(self, logits, block_size: int):
        super().__init__()
        self.config = SimpleNamespace(block_size=block_size)
        self.logits = torch.as_tensor(logits, dtype=torch.float32)
        self.scale = torch.nn.Parameter(torch.ones(()))
        self.seen: list[torch.Tensor] = []
        self.wrong: list[str] = []
        self.grad_on: list[bool] = []

    def forward(self, idx, targets=None):
        if idx.dim() != 2:
            self.wrong.append(f"generate should call the model with (B, T) ids, it passed shape {tuple(idx.shape)}")
        elif idx.size(1) > self.config.block_size:
            self.wrong.append(f"generate passed {idx.size(1)} ids to a model with block_size "
                              f"{self.config.block_size}: crop the context to the last block_size ids "
                              "(idx[:, -block_size:]) before every call, the first one included")
        self.seen.append(idx.detach().clone())
        self.grad_on.append(torch.is_grad_enabled())
        B, T = idx.shape[0], idx.shape[-1]
        out = self.logits.flip(0).expand(B, T, -1).clone()  # (B, T, V)
        out[:, -1] = self.logits
        return out * self.scale, None

    def report(self, out: Any, n_prompt: int) -> dict:
        """What a call of generate did: the first wrong call, the number of calls, whether gradients were on, and
        the first step whose context was not the last min(T, block_size) ids of ``out`` (the student's own)."""
        out = plain_tensor(out, "generate's output")
        context = None
        for k, ctx in enumerate(self.seen):
            want = out[:, max(0, n_prompt + k - self.config.block_size):n_prompt + k]
            if not (ctx.shape == want.shape and bool((ctx == want).all())):
                context = [k + 1, want.tolist(), ctx.tolist()]
                break
        return {"wrong": self.wrong[:1], "calls": len(self.seen), "grad_on": any(self.grad_on), "context": context}
