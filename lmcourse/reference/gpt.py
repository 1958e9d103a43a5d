"""Notebook 05 (GPT): the course code that does one of its exercises' work, the test cells'
expected-value helpers (refused to a graded answer like the reference), and the probes the test
cells of 05, 06 and 07 share.

The probes run inside a graded call (a hook on a block, a dispatch mode, a stand-in model that a
student's ``generate`` calls), so they are not in ``REFERENCE``; they compute nothing a student's
answer could use. :func:`reference_gpt`, :func:`built` and :func:`softmax_list` compute expected
values, so they are.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from types import SimpleNamespace

import torch
from torch import nn

from lmcourse import checks, decoding
from lmcourse.nn import gpt, mlm
from lmcourse.reference.block import DeviceLog  # 04 uses it first; 05-07 name it from here

__all__ = ["REFERENCE", "GPT_NAMES", "DeviceLog", "FixedLogits", "built", "grab", "reference_gpt", "softmax_list"]

GPT_NAMES = "wte, wpe, drop, blocks, ln_f, lm_head"


def reference_gpt(cfg, dtype: torch.dtype = torch.float64, seed: int = 0) -> gpt.GPT:
    """The course's GPT for ``cfg`` (any object with GPTConfig's fields), seeded, in ``dtype`` and
    eval mode, its LayerNorm parameters and biases moved away from 1 and 0 so that each one matters."""
    torch.manual_seed(seed)
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(gpt.GPTConfig) if hasattr(cfg, f.name)}
    ref = gpt.GPT(gpt.GPTConfig(**fields)).to(dtype).eval()
    with torch.no_grad():
        for p in ref.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    return ref


def built(cls, cfg, rules, dtype: torch.dtype = torch.float64, reference=reference_gpt,
          names: str = GPT_NAMES) -> tuple[nn.Module, nn.Module]:
    """``cls(cfg)`` (a student's model, built under ``rules``) with the weights of ``reference(cfg,
    dtype)`` copied in by parameter name, both in eval mode: ``(model, reference)``.

    The parameters must be the reference's, name for name (``names``: the attributes the notebook
    asks for, said in the message); buffers of the student's own (a table of positions) are
    allowed and kept, the reference's buffers are copied where the model has them."""
    with rules():
        m = checks.call_checked(cls, cfg, name=f"{cls.__name__}({cfg})")
    ref = reference(cfg, dtype)
    m = m.to(dtype)
    have = {n for n, _ in m.named_parameters(remove_duplicate=False)}
    want = {n for n, _ in ref.named_parameters(remove_duplicate=False)}
    extra_biases = sorted(k for k in have - want if k.endswith("bias"))
    checks.check(not (extra_biases and not getattr(cfg, "bias", True)),
                 f"with bias=False your {cls.__name__} still has biases {extra_biases[:4]}: pass bias=config.bias "
                 "to every BlockConfig and to every LayerNorm and Linear layer you make yourself")
    checks.check(have == want, f"your {cls.__name__}'s parameter names differ from the ones asked for: missing "
                 f"{sorted(want - have)[:4]}, unexpected {sorted(have - want)[:4]} — use the attribute names "
                 f"{names} (buffers of your own are fine; parameters are only these)")
    mine = m.state_dict()
    m.load_state_dict({k: v for k, v in ref.state_dict().items() if k in mine}, strict=False)
    return m.eval(), ref


@contextlib.contextmanager
def grab(module: nn.Module):
    """Within the block, the first input of ``module``'s forward is replaced by a detached copy
    that requires grad, kept as ``.x`` of the namespace yielded: gradients of the output with
    respect to it show what each position depends on (causality, bidirectionality)."""
    got = SimpleNamespace(x=None)

    def hook(_module, args):
        got.x = args[0].detach().requires_grad_()
        return (got.x, *args[1:])

    handle = module.register_forward_pre_hook(hook)
    try:
        yield got
    finally:
        handle.remove()


class FixedLogits(nn.Module):
    """A stand-in model for a sampling loop: fixed ``logits`` at the last position (reversed ones
    before it), scaled by a weight (so they carry gradients when gradients are on), and a record
    of what it was given: ``seen`` (the ids of each call), ``grad_on``, ``wrong`` (calls with ids
    not of shape (B, <= block_size)); :meth:`obeyed` fails the test on the first wrong call."""

    def __init__(self, logits, block_size: int):
        super().__init__()
        self.config = SimpleNamespace(block_size=block_size)
        self.logits = torch.as_tensor(logits, dtype=torch.float32)
        self.scale = nn.Parameter(torch.ones(()))
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
        self.seen.append(idx.clone())
        self.grad_on.append(torch.is_grad_enabled())
        B, T = idx.shape[0], idx.shape[-1]
        out = self.logits.flip(0).expand(B, T, -1).clone()  # (B, T, V)
        out[:, -1] = self.logits
        return out * self.scale, None

    def obeyed(self) -> None:
        """Fail the test with the first wrong call's message, if any."""
        for wrong in self.wrong[:1]:
            checks.check(False, wrong)


def softmax_list(z: list[float]) -> list[float]:
    """Plain Python softmax of a list: the test cells' expected probabilities."""
    m = max(z)
    e = [math.exp(v - m) for v in z]
    return [v / sum(e) for v in e]


# the GPT, its initialisation, its parameter count and its sampling loop; the same work done by
# other notebooks' references (07's generation loops, 06's initialisation); and the helpers
# above that compute expected values
REFERENCE = gpt.REFERENCE + tuple(f for f in decoding.REFERENCE if "generate" in f.__name__) + \
    (mlm.init_mlm_weights, reference_gpt, built, softmax_list)
