"""Notebook 05 (GPT): its answers in the notebook's own signatures (``GPT``, ``init_weights``,
``gpt_param_count``, ``generate`` and the quiz letters; ``GPTConfig`` as the notebook gives it), the expected values of
:mod:`lmcourse.marking.gpt`; the course code that does one of its exercises' work; and the
expected-value helpers and probes that 06's test cells use.

This module is absent while notebook 05 is graded (``Notebook.withheld``): the stand-in GPT that
``init_weights``'s cases run on arrives as source with the hidden test that needs it.
``lmcourse.nn.gpt`` (the GPT that 06, 07, 08 and 10 are given) is absent there too; at home the
cases refuse it.

The probes run inside a graded call (a hook on a block, a dispatch mode, a stand-in model that a
student's ``generate`` calls), so they are not in ``REFERENCE``; they compute nothing a student's
answer could use. :func:`reference_gpt`, :func:`built` and :func:`softmax_list` compute expected
values, so they are.
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn

from lmcourse import checks
from lmcourse.nn import gpt, mlm
from lmcourse.nn.block import Block, BlockConfig, LayerNorm
from lmcourse.reference import nn_gpt_work
from lmcourse.reference.block import DeviceLog  # 04 uses it first; 05-07 name it from here

__all__ = ["GPT", "GPTConfig", "REFERENCE", "GPT_NAMES", "DeviceLog", "answer_q1", "answer_q2", "answer_q3",
           "built", "generate", "gpt_param_count", "init_weights", "reference_gpt", "softmax_list"]


@dataclasses.dataclass
class GPTConfig:
    """Notebook 05's config (given there, in a locked cell): the seven fields of the naming table, nanoGPT's
    Shakespeare defaults."""

    vocab_size: int = 65
    block_size: int = 256
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    dropout: float = 0.0
    bias: bool = True


class GPT(nn.Module):
    """Notebook 05's GPT: ``drop(wte(idx) + wpe(0..T-1))``, the reference blocks, ``ln_f``, a head tied to ``wte``;
    ``forward`` returns ``(logits, mean cross-entropy or None)``."""

    def __init__(self, config) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        block_cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                                dropout=config.dropout, bias=config.bias)
        self.blocks = nn.ModuleList([Block(block_cfg) for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(T, device=idx.device)))  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss


def init_weights(model: nn.Module, n_layer: int, std: float = 0.02) -> None:
    """GPT-2's initialisation in place: Linear and Embedding weights ~ N(0, std^2), biases 0, LayerNorm gains 1
    and shifts 0, then the residual projections (``c_proj.weight``) ~ N(0, (std / sqrt(2 n_layer))^2)."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, (LayerNorm, nn.LayerNorm)):
                nn.init.ones_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=std / math.sqrt(2 * n_layer))


def gpt_param_count(vocab_size: int, block_size: int, n_layer: int, n_embd: int) -> int:
    """``V d + T d + L (12 d^2 + 13 d) + 2 d``: a GPT with biases and a tied head."""
    d = n_embd
    return vocab_size * d + block_size * d + n_layer * (12 * d * d + 13 * d) + 2 * d


def generate(model: nn.Module, idx, max_new_tokens: int, temperature: float = 1.0, generator=None):
    """``max_new_tokens`` ids drawn after ``idx`` (B, T) from ``softmax(logits[:, -1] / temperature)``, the model
    seeing the last ``block_size`` ids."""
    block_size = model.config.block_size
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, _ = model(idx[:, -block_size:])
            probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return idx


answer_q1 = "C"
answer_q2 = "D"
answer_q3 = "A"

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


def softmax_list(z: list[float]) -> list[float]:
    """Plain Python softmax of a list: the test cells' expected probabilities."""
    m = max(z)
    e = [math.exp(v - m) for v in z]
    return [v / sum(e) for v in e]


def _decoding_loops() -> tuple:
    """07's generation loops, where the kernel has 07's reference (absent while 07 is graded)."""
    try:
        from lmcourse.reference.decoding import ANSWERS
    except ImportError:
        return ()
    return tuple(f for f in ANSWERS if "generate" in f.__name__)


# the GPT, its initialisation, its parameter count and its sampling loop; the same work done by
# other notebooks' references (07's generation loops, 06's initialisation); and the helpers
# above that compute expected values
REFERENCE = nn_gpt_work() + _decoding_loops() + \
    (mlm.init_mlm_weights, reference_gpt, built, softmax_list, GPT, init_weights, gpt_param_count, generate)
