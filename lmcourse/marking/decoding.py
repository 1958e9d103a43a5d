"""Notebook 07's tests (decoding): the visible cases, with the hints that teach.

Each case builds its own inputs (seeded generators, the test's own small models) and calls the
student's function through ``names``; the expected value is the same call on the reference's names
(:mod:`lmcourse.reference.decoding`, itself checked against transformers' logits processors and
beam search in the course's tests), except where a test states its own: the sampling cases compare
shares of draws with the distribution they are drawn from, and ``generate_cached`` is compared
with the uncached generation (``generate_recompute``) on the test's model. What a beam search or a
cached forward returns is recorded as it is and read only here, after decoding. The hidden cases
are in :mod:`.decoding_hidden`.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn

from .rules import Later, exercise_rules
from .show import show
from .spec import Case, Compare, Exercise, Notebook, question, when
from .tensors import FixedLogits, equal, fields, pair, plain_tensor, seed_cpu, seeded_generator, tensor

__all__ = ["NOTEBOOK", "FixedLogits", "Table", "beam_case", "fed_forward", "plain_pair", "rules", "shares",
           "small_gpt"]

RULE = "write the decoding yourself, not with lmcourse.nn.sampling's sampler or transformers"
# transformers' generation code does the same work: refused when imported, noticed when imported in a graded call
MODULES = ("transformers.generation.logits_process", "transformers.generation.utils")
PACKAGES = ("transformers",)
_INF = float("-inf")


def rules(reason: str = RULE, *extra: tuple[tuple, str]):
    """Third-party equivalents refused while a case runs (transformers' generation code), and 05's sampling loop
    (``lmcourse.nn.sampling``, given from 06 on) where the kernel has it (a graded kernel withholds it);
    ``extra``: ``(targets, reason)`` pairs, the course code an exercise must not run, each refused with its own
    reason."""
    return exercise_rules(reason, "lmcourse.nn.sampling:generate", "lmcourse.nn.sampling:_generate", modules=MODULES,
                          packages=PACKAGES, extra=extra)


def _model_forwards():
    from lmcourse.nn.attention import SelfAttention
    from lmcourse.nn.block import Block
    from lmcourse.nn.gpt import GPT

    return (GPT.forward, Block.forward, SelfAttention.forward, SelfAttention._heads, SelfAttention._explicit,
            SelfAttention.attention_weights)


def _gpt_forward():
    from lmcourse.nn.gpt import GPT

    return (GPT.forward,)


def shares(ids: Any, values: int, what: str) -> dict[int, float]:
    """The share of each id among ``values`` in the draws ``ids`` (a plain tensor)."""
    ids = plain_tensor(ids, what)
    return {v: float((ids == v).double().mean()) for v in range(values)}


def plain_pair(x: Any, what: str) -> tuple:
    """``x`` unpacked if it is a pair (logits, cache)."""
    return pair(x, what, "(logits, cache)")


def _holds(message: str) -> Compare:
    """A fact about the student's own results, recorded as a bool (the reference's is True)."""
    return lambda got, want: None if got == want else message


def _fmt(x: Any) -> str:
    if type(x) is list:
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    return f"{x:.4g}" if type(x) is float else str(x)


def logits(values: str | None = None, atol: float = 0.0, rtol: float = 0.0, what: str = "", shape: str | None = None,
           dtype: str | None = None) -> Compare:
    """:func:`.tensors.tensor`, with the values themselves in the message when the tensor is small (which words a
    filter kept shows at a glance)."""
    inner = tensor(shape=shape, dtype=dtype, values=values, atol=atol, rtol=rtol, what=what)

    def compare(got: Any, want: Any) -> str | None:
        diff = inner(got, want)
        if diff and type(got) is torch.Tensor and type(want) is torch.Tensor and got.shape == want.shape \
                and got.dtype == want.dtype and got.device.type != "meta" and got.numel() <= 12:
            return (f"{what}: " if what else "") + f"got {_fmt(got.tolist())}, expected {_fmt(want.tolist())}" + (
                f" — {values}" if values else "")
        return diff
    return compare


def _in_place(what: str, hint: str = "do not change the input in place") -> Compare:
    return logits(values=hint, what=f"{what} after the call")


# ------------------------------------------------------------------ 1. next_token: apply_temperature's inputs

_T_LOGITS = [[2.0, -1.0, 0.5, _INF], [0.0, 3.0, -2.0, 1.0]]


def _with_input(fn, logits, *args):
    """``{"out": fn(logits, *args), "logits": logits}``: the output and the input after the call."""
    def call(names):
        s = logits()
        return {"out": getattr(names, fn)(s, *args), "logits": s}
    return call




# ------------------------------------------------------------------ 2. top_k_filter

_K_LOGITS = [[1.0, 5.0, 3.0, 2.0, 4.0], [0.5, -1.0, 2.5, 0.0, -3.0]]
_K_HINT = ("keep exactly the k largest logits of each row (not k + 1, not k - 1), unchanged, and -inf elsewhere; "
           "return logits, not probabilities")

TOP_K_FILTER = Exercise("top_k_filter", (
    Case("top_k_filter(logits of shape (2, 5), k=2)", _with_input("top_k_filter", lambda: torch.tensor(_K_LOGITS), 2),
         compare=fields(("out", logits(values=_K_HINT)),
                        ("logits", _in_place("logits")))),
    Case("top_k_filter(logits, 1) (greedy)", lambda names: names.top_k_filter(torch.tensor(_K_LOGITS), 1),
         compare=logits(values=_K_HINT)),
    Case("top_k_filter(one row of shape (5,), 3)", lambda names: names.top_k_filter(torch.tensor(_K_LOGITS[0]), 3),
         compare=logits(shape="work along the last dimension, for (V,) as for (B, V)",
                        values="work along the last dimension, for (V,) as for (B, V)")),
    Case("top_k_filter(logits of shape (2, 5), k=9 > V=5)",
         lambda names: names.top_k_filter(torch.tensor(_K_LOGITS), 9),
         compare=logits(values="k >= V keeps every word"),
         errors=(("", "a k larger than the vocabulary keeps every word: use min(k, V)"),)),
    Case("top_k_filter with a tie at the k-th place (float64)",
         lambda names: names.top_k_filter(torch.tensor([[1.0, 3.0, 3.0, 2.0]], dtype=torch.float64), 1),
         compare=logits(dtype="keep the dtype of the logits",
                        values="remove only the logits strictly below the k-th largest")),
), rules=rules())


# ------------------------------------------------------------------ 3. top_p_filter

# probabilities 0.05, 0.3, 0.5, 0.15 (deliberately not in sorted order)
_P_ROW = [math.log(0.05), math.log(0.3), math.log(0.5), math.log(0.15)]
_P_HINT = ("softmax the logits, sort the probabilities in decreasing order, and keep words until the running sum "
           "reaches p — the word that makes it reach p is kept; the most likely word always stays; put -inf back at "
           "the original positions")


def _top_p_case(p: float, kept: str, with_input: bool = False) -> Case:
    label = f"top_p_filter on probabilities [0.05, 0.3, 0.5, 0.15] with p = {p} (keeps {kept})"
    values = logits(values=_P_HINT, atol=1e-6)
    if with_input:
        return Case(label, _with_input("top_p_filter", lambda: torch.tensor([_P_ROW]), p),
                    compare=fields(("out", values), ("logits", _in_place("logits"))))
    return Case(label, lambda names: names.top_p_filter(torch.tensor([_P_ROW]), p), compare=values)


_DIM = "work along the last dimension (dim=-1): one row (V,) is filtered as a row of a batch is"
# probabilities 0.125, 0.5, 0.125, 0.25: log-probabilities shifted so that the largest logit is 0 (the softmax's
# exponentials are then 1, 1/2, 1/4: every sum on the way is exact)
_EXACT_ROW = [-2 * math.log(2.0), 0.0, -2 * math.log(2.0), -math.log(2.0)]


def _kept_a_tail_word(got: Any, want: Any) -> bool:
    return type(got) is torch.Tensor and got.shape == (1, 4) and bool(torch.isfinite(got[0, [0, 2]]).any())

TOP_P_FILTER = Exercise("top_p_filter", (
    _top_p_case(0.6, "0.5 and 0.3", with_input=True),
    _top_p_case(0.9, "0.5, 0.3 and 0.15"),
    _top_p_case(0.4, "0.5 only"),
    _top_p_case(1.0, "every word"),
    # the boundary, in float64 where these probabilities are exact: 0.5 + 0.25 hold exactly p
    Case("top_p_filter on probabilities [0.125, 0.5, 0.125, 0.25] (float64) with p = 0.75: 0.5 + 0.25 reach p "
         "exactly, so both 0.125 words go",
         lambda names: names.top_p_filter(torch.tensor([_EXACT_ROW], dtype=torch.float64), 0.75),
         compare=logits(dtype="keep the dtype of the logits", values=_P_HINT),
         diagnoses=(when(_kept_a_tail_word,
                         "a 0.125 word was kept although the words above it, 0.5 + 0.25, already hold p = 0.75 "
                         "exactly: 'reach p' means at least p, so remove a word when the mass above it is >= p "
                         "(not > p)"),)),
    # scale matters: the same order with other gaps keeps other sets (probabilities, not logits)
    Case("top_p_filter(two rows of shape (2, 4), 0.7): a peaked row keeps 2 words, a flat one 3",
         lambda names: names.top_p_filter(torch.tensor([[4.0, 0.0, 3.5, -1.0], [0.1, 0.0, 0.2, 0.05]],
                                                       dtype=torch.float64), 0.7),
         compare=logits(dtype="keep the dtype of the logits",
                        values="the running sum is over probabilities (softmax of the row), not logits", atol=1e-12)),
    # one row (V,): the vocabulary is the last dimension, whatever the number of dimensions
    Case("top_p_filter(one row of shape (4,), 0.6)", lambda names: names.top_p_filter(torch.tensor(_P_ROW), 0.6),
         compare=logits(shape=_DIM, values=_DIM, atol=1e-6),
         errors=(("", "work along the last dimension (dim=-1, [..., 0]), not dim=1: one row (V,) is a valid input "
                      "too"),)),
), rules=rules())


# ------------------------------------------------------------------ 4. epsilon_filter

_E_ROW = [math.log(0.25), math.log(0.6), math.log(0.05), math.log(0.1)]

EPSILON_FILTER = Exercise("epsilon_filter", (
    Case("epsilon_filter on probabilities [0.25, 0.6, 0.05, 0.1] (and reversed), eps = 0.08",
         _with_input("epsilon_filter", lambda: torch.tensor([_E_ROW, _E_ROW[::-1]]), 0.08),
         compare=fields(("out", logits(values="remove (-inf) the words whose softmax probability is below eps; keep "
                                              "the others' logits unchanged")),
                        ("logits", _in_place("logits")))),
    Case("epsilon_filter(one row of shape (4,), 0.08)",
         lambda names: names.epsilon_filter(torch.tensor(_E_ROW), 0.08),
         compare=logits(shape=_DIM, values=_DIM),
         errors=(("", "work along the last dimension (dim=-1), not dim=1: one row (V,) is a valid input too"),)),
    # logits are scores, not log-probabilities: the same rows plus 2 and minus 1 have the same probabilities
    Case("epsilon_filter on the same probabilities given as logits that are not normalised (log-probabilities plus "
         "2, and minus 1), eps = 0.08",
         lambda names: names.epsilon_filter(torch.tensor([[v + 2.0 for v in _E_ROW], [v - 1.0 for v in _E_ROW[::-1]]]),
                                            0.08),
         compare=logits(values="a word's probability is softmax(logits) of its row; exp(logits) is a probability only "
                               "when the logits happen to be log-probabilities already")),
    # every word below eps, and rows whose most likely words differ in value: each row keeps its own
    Case("epsilon_filter(logits, 0.9) on two rows (log-probabilities plus 3, and as they are): every word is below "
         "eps",
         lambda names: names.epsilon_filter(torch.tensor([[v + 3.0 for v in _E_ROW], _E_ROW[::-1]],
                                                         dtype=torch.float64), 0.9),
         compare=logits(dtype="keep the dtype of the logits",
                        values="never remove every word: each row keeps its own most likely word (the argmax along "
                               "the last dimension, keepdim=True), not the largest logit of the whole batch",
                        atol=1e-12)),
), rules=rules())


# ------------------------------------------------------------------ 1. next_token: sample_next and greedy_next

_DRAW_HINT = "draw from softmax(logits) (torch.multinomial), not the argmax; a -inf logit is never drawn"
_S_ROW = [2.0, 1.0, _INF, -1.0, 0.0]


def drawn(row: list[float], n: int, seed: int, dtype=torch.float32) -> Case:
    """``n`` draws of ``sample_next`` from one row of logits: their shape, dtype and the share of each id,
    against the row's softmax (the distribution they are drawn from)."""
    label = f"sample_next(logits of shape ({n}, {len(row)}), generator)"

    def call(names):
        s = torch.tensor(row, dtype=dtype)
        d = plain_tensor(names.sample_next(s.expand(n, len(row)).clone(), seeded_generator(seed)), label)
        return {"shape": list(d.shape), "dtype": str(d.dtype), "shares": shares(d, len(row), label)}

    def expect(names):
        probs = torch.softmax(torch.tensor(row, dtype=torch.float64), -1).tolist()
        return {"shape": [n], "dtype": "torch.int64", "shares": dict(enumerate(probs))}

    return Case(label, call, expect=expect, compare=fields(
        ("shape", equal(f"the shape of {label}", "return (B,), not (B, 1): .squeeze(-1)")),
        ("dtype", equal("sample_next's dtype")),
        ("shares", _shares_close(f"{n} draws from logits {row}", _DRAW_HINT))))


def _shares_close(what: str, hint: str, tol: float = 0.03) -> Compare:
    """The share of each id in many draws within ``tol`` of its probability (dist_close's rule, with the id
    named)."""
    def compare(got, want):
        for v, p in want.items():
            g = got.get(v, 0.0)
            if abs(g - p) > tol:
                return f"{what}: id {v} drawn {g:.3f} of the time, its probability is {p:.3f} — {hint}"
        return None
    return compare


def _seeded_alike(names):
    row = torch.tensor(_S_ROW).expand(64, 5)
    seed_cpu(1)
    a = plain_tensor(names.sample_next(row.clone(), seeded_generator(42)), "sample_next's ids")
    seed_cpu(2)
    b = plain_tensor(names.sample_next(row.clone(), seeded_generator(42)), "sample_next's ids")
    return torch.equal(a, b)


def _seeded_apart(names):
    row = torch.tensor(_S_ROW).expand(64, 5)
    a = plain_tensor(names.sample_next(row.clone(), seeded_generator(42)), "sample_next's ids")
    c = plain_tensor(names.sample_next(row.clone(), seeded_generator(43)), "sample_next's ids")
    return not torch.equal(a, c)


def _successive(names):
    row, gen = torch.tensor(_S_ROW).expand(64, 5), seeded_generator(42)
    first = plain_tensor(names.sample_next(row.clone(), gen), "sample_next's ids")
    second = plain_tensor(names.sample_next(row.clone(), gen), "sample_next's ids")
    return not torch.equal(first, second)


_G_LOGITS = [[0.1, 2.0, -1.0, 0.5], [3.0, 0.0, 0.0, 4.0], [-2.0, -1.0, -3.0, _INF]]

# exercise 1: temperature, then the two ways to pick a word; the temperature's cases come first, so a slip
# there is named before any draw is judged
NEXT_TOKEN = Exercise("next_token", (
    Case("apply_temperature(logits, 0.5)", _with_input("apply_temperature", lambda: torch.tensor(_T_LOGITS), 0.5),
         compare=fields(
             ("out", logits(values="divide the logits by tau (tau = 0.5 doubles them); the scores, not the "
                                   "probabilities after a softmax", rtol=1e-6)),
             ("logits", _in_place("logits", "return a new tensor (logits / tau), do not divide in place")))),
    Case("apply_temperature(1-D float64 logits, 4.0)",
         lambda names: names.apply_temperature(torch.tensor([1.0, -3.0, 0.25], dtype=torch.float64), 4.0),
         compare=logits(dtype="keep the dtype of the logits", values="tau > 1 shrinks the scores", rtol=1e-12)),
    Case("greedy_next(logits of shape (3, 4))",
         _with_input("greedy_next", lambda: torch.tensor(_G_LOGITS)),
         compare=fields(("out", tensor(shape="one id per row: the argmax over the last dimension",
                                       dtype="greedy_next's dtype is torch.int64 (the ids of argmax)",
                                       values="the largest logit of each row (dim=-1), not of each column",
                                       what="greedy_next(logits)")),
                        ("logits", _in_place("logits")))),
    drawn(_S_ROW, 4000, 0),
    Case("two calls of sample_next with generators seeded alike (and different global seeds)", _seeded_alike,
         compare=_holds("two calls of sample_next with generators seeded alike gave different ids: pass "
                        "generator= to torch.multinomial")),
    Case("sample_next with generators of different seeds", _seeded_apart,
         compare=_holds("generators with different seeds gave the same 64 ids: are you sampling at all?")),
    Case("two successive calls of sample_next with one generator", _successive,
         compare=_holds("two successive calls of sample_next with the same generator gave the same 64 ids: draw with "
                        "the generator itself (its state moves on at each draw); do not reseed a random number "
                        "generator from it")),
), answer="sample_next", rules=rules())


# ------------------------------------------------------------------ 5. generate

_F_LOGITS = [2.0, 1.0, 0.0, -1.0]


def _report_compare(n_new: int) -> Compare:
    """A FixedLogits report: one call per new id; no gradients; each step's context."""
    def compare(got, want):
        if got["calls"] != want["calls"]:
            return (f"the number of model calls for max_new_tokens = {n_new}: got {got['calls']}, expected "
                    f"{want['calls']} — one call per new id")
        if got["grad_on"]:
            return "generate called the model with gradients on: work under torch.no_grad()"
        if got["context"] is not None:
            k, want_ctx, ctx = got["context"]
            return (f"at step {k} the model should see the last min(T, block_size) ids {want_ctx}, it saw {ctx} — "
                    "crop with idx[:, -block_size:]")
        return None
    return compare


def _first_wrong(got, want) -> str | None:
    """The first call of the model with ids of the wrong shape, in words."""
    return got[0] if got else None


def _shape_dtype(what: str, shape: str) -> Compare:
    """Ids drawn at random: their shape and dtype (the values are the student's draws)."""
    def compare(got, want):
        if type(got) is not torch.Tensor:
            return f"{what}: got {show(got)}, expected a torch.Tensor"
        if tuple(got.shape) != tuple(want.shape):
            return f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)} — {shape}"
        if got.dtype != want.dtype:
            return f"the dtype of {what}: {got.dtype}, expected {want.dtype} — the ids are torch.long"
        return None
    return compare


def _generate_first(names):
    m = FixedLogits(_F_LOGITS, block_size=4)
    prompt = torch.tensor([[3, 1, 2], [0, 0, 1]])
    out = names.generate(m, prompt, 6, generator=seeded_generator(0))
    report = m.report(out, 3)
    return {"wrong": report.pop("wrong"), "out": out, "prompt": prompt, "head": plain_tensor(out, "")[..., :3],
            "report": report}


def _draws(top_k: int | None):
    """4000 draws of one id after a prompt of 3, with no filter or with a top-k filter."""
    label = f"generate: one id drawn 4000 times ({0 if top_k is None else 1} filter(s), logits {_F_LOGITS})"

    def call(names):
        filters = () if top_k is None else (functools.partial(names.top_k_filter, k=top_k),)
        out = names.generate(FixedLogits(_F_LOGITS, block_size=4), torch.zeros(4000, 3, dtype=torch.long), 1,
                             filters=filters, generator=seeded_generator(11))
        return shares(plain_tensor(out, "generate's output")[:, -1], len(_F_LOGITS), label)

    def expect(names):
        s = torch.tensor(_F_LOGITS, dtype=torch.float64)
        if top_k is not None:
            s = s.masked_fill(s < s.topk(top_k).values[-1], _INF)
        return dict(enumerate(torch.softmax(s, -1).tolist()))

    return Case(label, call, expect=expect, compare=_shares_close(
        "the new ids", "sample from the filtered logits of the last position (logits[:, -1, :]), not the first"))


def _filter_order(names):
    calls = []

    def first(s):
        calls.append("first")
        return s.masked_fill(torch.arange(s.size(-1)) == 0, _INF)

    def second(s):
        calls.append("second" if bool(torch.isinf(s[:, 0]).all()) else "second, before the first")
        return s

    out = plain_tensor(names.generate(FixedLogits(_F_LOGITS, 4), torch.zeros(5, 1, dtype=torch.long), 3,
                                      filters=[first, second], generator=seeded_generator(1)), "generate's output")
    return {"calls": calls, "drew_removed": bool((out[:, 1:] == 0).any())}


def _generator_decides(names):
    outs = []
    for seed in (1, 2):
        seed_cpu(seed)
        outs.append(plain_tensor(names.generate(FixedLogits(_F_LOGITS, 4), torch.zeros(32, 1, dtype=torch.long), 4,
                                                generator=seeded_generator(8)), "generate's output"))
    return torch.equal(*outs)


GENERATE = Exercise("generate", (
    Case("generate(model, prompt of shape (2, 3), 6)", _generate_first, compare=fields(
        ("wrong", _first_wrong),
        ("out", _shape_dtype("generate(model, prompt of shape (2, 3), max_new_tokens=6)",
                             "append one id per step to the prompt, along dim 1")),
        ("prompt", _in_place("prompt", "build a new tensor (torch.cat)")),
        ("head", tensor(what="the first 3 columns of generate's output",
                        values="the prompt comes first, as it was, then the new ids")),
        ("report", _report_compare(6)))),
    _draws(None),
    _draws(2),
    Case("generate with two filters, 3 steps", _filter_order, compare=fields(
        ("calls", equal("the filters' calls over 3 steps",
                        "apply every filter, in the order given, each to the output of the one before")),
        ("drew_removed", _holds("id 0 was removed by a filter but generate still drew it")))),
    Case("two calls of generate with generators seeded alike (and different global seeds)", _generator_decides,
         compare=_holds("two calls of generate with generators seeded alike (and different global seeds) gave "
                        "different ids: pass the generator on at every step, sample_next(logits, generator)")),
), standins=("sample_next", "top_k_filter"), rules=rules())


# ------------------------------------------------------------------ 6. beam_search

class Table(nn.Module):
    """A hand-made model over {0: a, 1: b, 2: end}. After the prompt: a 0.6, b 0.4. After a: end 0.5,
    a 0.3, b 0.2. After b: b 0.9, a and end 0.05 each. After an end: b 0.98, a and end 0.01 each.
    Greedy takes a (0.6), then end (0.5): 0.3 in all; the best two words are b b, 0.4 * 0.9 = 0.36.
    ``calls``: the shape of the ids of each call."""

    def __init__(self, dtype=torch.float64, block_size=16):
        super().__init__()
        self.config = SimpleNamespace(block_size=block_size)
        self.dtype = dtype
        self.calls = []

    def forward(self, idx, targets=None):
        from lmcourse.checks import check

        check(idx.dim() == 2, f"beam_search should call the model with (nb, T) ids, it passed {tuple(idx.shape)}")
        check(idx.size(1) <= self.config.block_size,
              f"beam_search passed {idx.size(1)} ids to a model with block_size {self.config.block_size}: crop the "
              "beams to their last block_size ids, as generate does")
        self.calls.append(tuple(int(n) for n in idx.shape))
        B, T = idx.shape
        rows = {0: [0.3, 0.2, 0.5], 1: [0.05, 0.9, 0.05], 2: [0.01, 0.98, 0.01]}
        out = torch.full((B, T, 3), 1 / 3, dtype=torch.float64)
        for b in range(B):
            row = [0.6, 0.4, 0.0] if T == 1 else rows[int(idx[b, -1])]
            out[b, -1] = torch.tensor(row, dtype=torch.float64)
        return out.clamp_min(1e-30).log().to(self.dtype), None


class Uniform(nn.Module):
    """Every one of 50 words equally likely after any prefix, in float32."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(block_size=256)

    def forward(self, idx, targets=None):
        return torch.zeros(idx.size(0), idx.size(1), 50), None


def beam_case(make, prompt: list[int], *args, checks=(), **kwargs) -> Case:
    """``beam_search(make(), tensor(prompt), *args, **kwargs)``: what it returned, as it is, and the batch size of
    each model call; ``checks``, each ``(got, want)`` of those -> a message or None, after the form of the result."""
    label = (f"beam_search(model, prompt, {', '.join(map(str, args))}"
             + "".join(f", {k}={v}" for k, v in kwargs.items()) + ")")

    def call(names):
        model = make()
        out = names.beam_search(model, torch.tensor(prompt), *args, **kwargs)
        return {"hyps": out, "calls": [c[0] for c in getattr(model, "calls", [])]}

    def compare(got, want):
        wrong = _hyps_form(got["hyps"])
        if wrong:
            return wrong
        for c in checks:
            message = c(got, want)
            if message:
                return message
        return None
    return Case(label, call, compare=compare)


def _hyps_form(hyps: Any) -> str | None:
    if type(hyps) is not list or not all(type(x) is tuple and len(x) == 2 for x in hyps):
        return f"beam_search should return a list of (ids, score) pairs, got {show(hyps)}"
    for ids, _ in hyps:
        if type(ids) is not torch.Tensor or ids.dim() != 1:
            return ("beam_search should return each hypothesis's ids as a 1-D tensor (the prompt followed by the new "
                    f"words), got {type(ids).__name__}"
                    + (f" of shape {tuple(ids.shape)}" if type(ids) is torch.Tensor else "")
                    + ": torch.tensor(ids) or the beam's row of the (nb, T) tensor")
    return None


def _ids(got, i: int | None = None):
    hyps = [ids.tolist() for ids, _ in got["hyps"]]
    return hyps if i is None else (hyps[i] if i < len(hyps) else None)


def _score(got, i: int):
    hyps = got["hyps"]
    if i >= len(hyps):
        return None
    s = hyps[i][1]
    return float(s) if type(s) in (int, float) or (type(s) is torch.Tensor and s.numel() == 1) else s


def same_ids(what: str, hint: str | None = None, i: int | None = None):
    """The ids of hypothesis ``i`` (all of them when None) equal the reference's."""
    def check(got, want):
        g, w = _ids(got, i), _ids(want, i)
        return None if g == w else f"{what}: got {show(g)}, expected {show(w)}" + (f" — {hint}" if hint else "")
    return check


# how far a float32 sum of a few hundred float32 log-probabilities may drift from float64's (relative)
_FLOAT32_SUMS = 1e-4


def same_score(what: str, hint: str | None = None, i: int = 0, rel: float = 1e-9, abs_: float = 1e-12):
    """The score of hypothesis ``i`` close to the reference's."""
    def check(got, want):
        g, w = _score(got, i), _score(want, i)
        if type(g) is float and math.isclose(g, w, rel_tol=rel, abs_tol=abs_):
            return None
        if type(g) is float and math.isclose(g, w, rel_tol=_FLOAT32_SUMS, abs_tol=abs_):
            return (f"{what}: got {g!r}, expected {w!r}, right only to float32's precision: the log-probabilities "
                    "were computed or added up in float32 — take them in float64 (.double()) whatever the model's "
                    "dtype")
        shown = f"{g!r}" if type(g) is float else show(g)
        return f"{what}: got {shown}, expected {w!r}" + (f" — {hint}" if hint else "")
    return check


def _count(what: str):
    def check(got, want):
        g, w = len(got["hyps"]), len(want["hyps"])
        return None if g == w else f"{what}: got {g}, expected {w}"
    return check


def _best_first(got, want):
    scores = [_score(got, i) for i in range(len(got["hyps"]))]
    if all(type(s) is float for s in scores) and scores != sorted(scores, reverse=True):
        return "beam_search should return its hypotheses best first"
    return None


def _calls(what: str, hint: str):
    def check(got, want):
        return None if got["calls"] == want["calls"] else \
            f"{what}: got {show(got['calls'])}, expected {show(want['calls'])} — {hint}"
    return check


def _ends_at_eos(eos: int):
    def check(got, want):
        for h in _ids(got):
            if eos in h[1:-1]:
                return (f"the hypothesis {h} goes on after the end token: a candidate ending in eos_id is finished, "
                        "set aside and never extended")
        return None
    return check


BEAM_SEARCH = Exercise("beam_search", (
    beam_case(Table, [2], 1, 2, checks=(
        same_ids("beam_search with beam_size 1 on the hand-made model (greedy)",
                 "with one beam, keep the single best extension at each step; return the prompt followed by the new "
                 "ids"),)),
    beam_case(Table, [2], 2, 2, checks=(
        same_ids("the best hypothesis of beam_search with beam_size 2, 2 steps",
                 "keep the 2 best candidates over all beams and all words — expand every beam, not only the best", 0),
        same_score("the score of b b (probability 0.36, 2 new words, length_penalty 1)",
                   "a beam's score is the SUM of the log-probabilities of all its words (its parent's score plus the "
                   "new word's), divided by n ** length_penalty; in float64 (.double()) whatever the model's dtype"),
        _count("the number of hypotheses returned by beam_search with beam_size 2"),
        _best_first)),
    beam_case(functools.partial(Table, block_size=4), [2], 2, 7, checks=(
        same_ids("the best hypothesis of 7 steps with block_size 4",
                 "the model sees the last block_size ids of each beam; the scores still add up over every word", 0),)),
    beam_case(Table, [2], 3, 4, checks=(
        _calls("the batch sizes of the model calls of beam_search(beam_size=3, 4 steps)",
               "one call per step, with every live beam in one (nb, T) batch; the first step has one beam, the "
               "prompt"),)),
    # the end token: a finished hypothesis is never extended; the length penalty decides between lengths
    beam_case(Table, [2], 3, 12, length_penalty=0.0, eos_id=2, checks=(
        _ends_at_eos(2),
        same_ids("the best hypothesis with eos_id=2, length_penalty=0, 12 steps",
                 "with length_penalty 0 the plain sums compare: a, end (0.3) beats b b ... b (0.4 * 0.9^11)", 0),
        same_score("the score of a, end with length_penalty 0"),
        same_ids("the 3 hypotheses of beam_search(beam_size=3, 12 steps, eos_id=2, length_penalty=0), best first",
                 "a finished hypothesis keeps its place among the beam_size: once one finishes, every later step "
                 "keeps only beam_size minus the finished ones (the beam narrows); [2, 2] is the end token at step 1 "
                 "(probability ~0), one of the 3 best of the 3 first candidates"))),
    # a product of probabilities underflows: 50 equally likely words, 200 steps
    beam_case(Uniform, [2], 2, 200, checks=(
        same_score("the score of a 200-word hypothesis of a model where 50 words are equally likely (length_penalty "
                   "1: the mean log-probability, log(1/50))",
                   "add log-probabilities; a product of 200 probabilities of 1/50 (1e-340) underflows to 0 even in "
                   "float64"),)),
    beam_case(Table, [2], 3, 12, length_penalty=1.0, eos_id=2, checks=(
        same_ids("the best hypothesis with eos_id=2, length_penalty=1, 12 steps",
                 "divide each finished score by n ** length_penalty (n new words, the end token included); not "
                 "multiply", 0),
        same_score("the score of b x 12 with length_penalty 1"),
        same_ids("the second hypothesis with eos_id=2, length_penalty=1, 12 steps", None, 1),
        same_score("the score of a, end with length_penalty 1 (2 new words: a and the end token)",
                   "n, the number of new words, counts the end token: a, end has n = 2 (score log 0.3 / 2)", 1))),
    beam_case(Table, [2], 2, 0, checks=(
        same_ids("beam_search with max_new_tokens = 0",
                 "no step is taken: return [(prompt, 0.0)], the prompt alone (n = 0 would divide by zero)"),
        same_score("the score of the prompt alone (max_new_tokens = 0)", "nothing was scored: the score is 0.0"))),
), rules=rules())


# ------------------------------------------------------------------ 7. cached_forward

def small_gpt(seed: int, perturb: bool = False, **overrides):
    """The KV-cache tests' model: the course's GPT in float64 and eval mode (vocabulary 11, block_size 8, 2 layers
    of 2 heads, width 16, unless ``overrides`` say otherwise), built after ``seed_cpu(seed)``, its token
    embeddings scaled by 20 (sharp logits, so that a wrong term shows); with ``perturb``, its biases and LayerNorm
    parameters moved by ``0.1 N(0, 1)`` so that each one matters."""
    from lmcourse.nn import gpt

    seed_cpu(seed)
    cfg = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
    cfg.update(overrides)
    m = gpt.GPT(gpt.GPTConfig(**cfg)).double().eval()
    with torch.no_grad():
        m.wte.weight.mul_(20)
        if perturb:
            for name, p in m.named_parameters():
                if name.endswith("bias") or ".ln" in name or name.startswith("ln_f"):
                    p.add_(0.1 * torch.randn_like(p))
    return m


def _cf_ids():
    return torch.randint(0, 11, (2, 8), generator=seeded_generator(1))


def chain(names, model, ids, upto: int):
    """cached_forward on the first 3 ids, then one id at a time up to ``upto``: the last logits and cache."""
    lg, cache = plain_pair(names.cached_forward(model, ids[:, :3], None), "cached_forward")
    for t in range(3, upto):
        lg, cache = plain_pair(names.cached_forward(model, ids[:, t:t + 1], cache), "cached_forward")
    return lg, cache


def _cf_first(names):
    lg, cache = plain_pair(names.cached_forward(small_gpt(0, perturb=True), _cf_ids()[:, :3], None), "cached_forward")
    return {"logits": lg, "cache": cache}


def _cache_compare(got, want) -> str | None:
    """The cache of a 2-block model after 3 positions: one (K, V) pair per block, each (B, n_head, T, hs), the
    keys and values of the reference."""
    if type(got) not in (list, tuple) or len(got) != len(want):
        shown = show(got) if type(got) not in (list, tuple) else len(got)
        return (f"the length of the cache for a 2-block model: got {shown}, expected {len(want)} — one (K, V) pair per "
                "block")
    for layer, (g, w) in enumerate(zip(got, want)):
        if type(g) not in (list, tuple) or len(g) != 2:
            return f"the cache's entry for block {layer}: got {show(g)}, expected a pair (K, V)"
        diff = (tensor(shape="(B, n_head, T, C // n_head)",
                       values="the keys of c_attn(ln1(x)) split into heads, before attention", atol=1e-10, rtol=1e-10,
                       what=f"the cached K of block {layer}")(g[0], w[0])
                or tensor(shape="(B, n_head, T, C // n_head)", atol=1e-10, rtol=1e-10,
                          what=f"the cached V of block {layer}")(g[1], w[1]))
        if diff:
            return diff
    return None


def _cf_zero_positions(names):
    m0 = small_gpt(0, perturb=True)
    with torch.no_grad():
        m0.wpe.weight.zero_()
    ids = _cf_ids()
    _, c0 = plain_pair(names.cached_forward(m0, ids[:, :3], None), "cached_forward")
    return plain_pair(names.cached_forward(m0, ids[:, 3:4], c0), "cached_forward")[0]


def _cf_step(t: int) -> Case:
    def call(names):
        lg, cache = chain(names, small_gpt(0, perturb=True), _cf_ids(), t + 1)
        return {"logits": lg, "V1": cache[1][1]} if t == 7 else lg

    values = tensor(values="the new id's position is T_past (wpe(arange(T_past, T_past + T_new))), not 0; append the "
                           "new keys and values to the cache", atol=1e-10, rtol=1e-10,
                    what=f"cached_forward's logits for position {t} (one new id, {t} cached)")
    compare = values if t < 7 else fields(("logits", values), ("V1", tensor(
        shape="the cache holds every position seen: T_past + T_new", atol=1e-10, rtol=1e-10,
        what="the cached V of block 1 after 8 positions")))
    return Case(f"cached_forward(model, the id at position {t}, cache of {t})", call, compare=compare)


_UNCHANGED = ("the cache returned for the first 3 positions must still hold 3 after the calls that extended it: return "
              "a new list, do not change the one you were given")


def _cf_reuse(names):
    m, ids = small_gpt(0, perturb=True), _cf_ids()
    _, cache = plain_pair(names.cached_forward(m, ids[:, :3], None), "cached_forward")
    k_before = plain_tensor(cache[0][0], "the cached K").clone()
    lg2, _ = plain_pair(names.cached_forward(m, ids[:, 3:6], cache), "cached_forward")
    lg3, _ = plain_pair(names.cached_forward(m, ids[:, 3:4], cache), "cached_forward")
    return {"k_before": k_before, "k_after": cache[0][0], "lg2": lg2, "lg3": lg3}


def _reuse_compare(got, want):
    return (tensor(shape="return a new list of new tensors (torch.cat); do not change the cache given",
                   values="return a new list of new tensors (torch.cat); do not change the cache given",
                   what="the cache passed to cached_forward, after the call")(got["k_after"], got["k_before"])
            or tensor(values="each new position attends to every cached position and to the new ones up to itself: a "
                             "causal mask shifted by T_past (tril(diagonal=T_past))", atol=1e-10, rtol=1e-10,
                      what="cached_forward(3 new ids after 3 cached): the logits")(got["lg2"], want["lg2"])
            or tensor(values="a list appended to in place has grown: build a new list", atol=1e-10, rtol=1e-10,
                      what="cached_forward on a cache used a second time")(got["lg3"], want["lg3"]))


def _cf_full(names):
    m, ids = small_gpt(0, perturb=True), _cf_ids()
    _, cache = chain(names, m, ids, 8)
    try:
        names.cached_forward(m, ids[:, :1], cache)
    except ValueError:
        return "ValueError"
    except Exception as exc:  # noqa: BLE001 (any other error is named in the message)
        return f"raised {type(exc).__name__}: {exc}"
    return "returned"


_NO_FULL_FORWARD = ((Later(_model_forwards),), "compute the new positions' queries, keys and values yourself: the "
                    "model's, a block's or the attention's own forward recomputes every position")

CACHED_FORWARD = Exercise("cached_forward", (
    Case("cached_forward(model, ids[:, :3], None)", _cf_first, compare=fields(
        ("logits", tensor(dtype="the logits of a float64 model are float64",
                          values="with no cache this is the ordinary forward pass (causal mask, positions 0..T-1)",
                          atol=1e-10, rtol=1e-10, what="cached_forward with no cache: the logits of the first 3 "
                                                       "positions")),
        ("cache", _cache_compare))),
    # a new id attends to every cached position: shown on a model whose position vectors are all zero (positions
    # cannot matter there, only which keys and values the new id sees)
    Case("cached_forward(model with zero position vectors, 1 new id, cache of 3)", _cf_zero_positions,
         compare=tensor(values="positions cannot matter here: the new id must attend to all 3 cached keys and its own "
                               "(its row of the mask allows columns 0..T_past, tril(diagonal=T_past)), with the new "
                               "key and value appended to the cached ones", atol=1e-10, rtol=1e-10,
                        what="cached_forward's logits for one new id after 3 cached, on a model whose position "
                             "vectors are all zero")),
    # one new position at a time, up to block_size
    *(_cf_step(t) for t in range(3, 8)),
    # several new positions after a cache; the given cache unchanged and reusable
    Case("cached_forward(model, 3 new ids, then 1 new id, each after the cache of the first 3 positions)", _cf_reuse,
         compare=_reuse_compare, errors=(("", _UNCHANGED),)),
    Case("cached_forward with 8 cached positions and block_size 8", _cf_full,
         compare=lambda got, want: None if got == want else (
             f"cached_forward with 8 cached positions and block_size 8 should raise ValueError (no position left); it "
             f"{got} — test T_past + T_new > block_size first, before the positions are embedded")),
), rules=rules(RULE, _NO_FULL_FORWARD))


# ------------------------------------------------------------------ 8. generate_cached

def fed_forward(names, fed: list):
    """``names.cached_forward`` (the reference, standing in for the student's) recording how many positions each
    call is fed, ``(new ids, cached positions)``; more than block_size fails the call with what went wrong."""
    from lmcourse.checks import CheckFailed

    inner = names.cached_forward

    def counting(model, idx, cache=None):
        past, block_size = 0 if not cache else cache[0][0].size(2), model.config.block_size
        fed.append((int(idx.size(1)), int(past)))
        if past + idx.size(1) > block_size:
            if len(fed) == 1:
                why = ("on the first call, run it on the window, the last block_size ids of the prompt "
                       "(prompt[:, -block_size:])")
            elif past == 0:
                why = "a rebuild starts from the last block_size // 2 ids"
            else:
                why = ("when the cache holds block_size positions, rebuild it with cached_forward(model, "
                       "ids[:, -(block_size // 2):], None)")
            raise CheckFailed(f"generate_cached fed cached_forward {idx.size(1)} new ids with {past} cached, more "
                              f"than block_size {block_size}: {why}")
        return inner(model, idx, cache)
    return counting


def cached_run(names, model, prompt, n: int, seed: int, filters=()):
    """``names.generate_cached`` with the counting cached_forward: its ids and what cached_forward was fed."""
    from lmcourse.marking.refusals import substitute

    fed: list = []
    with substitute(names._mapping, cached_forward=fed_forward(names, fed)):
        out = names.generate_cached(model, prompt, n, filters=filters, generator=seeded_generator(seed))
    return out, fed


def _gc_prompt():
    return torch.tensor([[4, 5, 6], [7, 8, 9]])


def _gc_first(names):
    prompt = _gc_prompt()
    out, fed = cached_run(names, small_gpt(0), prompt, 4, 0)
    return {"fed": fed, "out": out, "prompt": prompt}


def _gc_first_expect(names):
    # what the reference feeds cached_forward; the ids of the uncached generation on the same model
    want = _gc_first(names)
    want["out"] = names.generate_recompute(small_gpt(0), _gc_prompt(), 4, generator=seeded_generator(0))
    return want


def _gc_long(names, cached: bool = True):
    seen: list = []

    def logged(s):
        seen.append(plain_tensor(s, "the logits handed to a filter").clone())
        return names.top_k_filter(s, 3)

    if cached:
        out, fed = cached_run(names, small_gpt(0), _gc_prompt(), 20, 1, filters=[logged])
    else:
        out, fed = names.generate_recompute(small_gpt(0), _gc_prompt(), 20, filters=[logged],
                                            generator=seeded_generator(1)), []
    return {"steps": len(seen), "seen": torch.stack(seen) if seen else None, "out": out,
            "grew": max((n + c for n, c in fed), default=0), "fed": sum(n for n, _ in fed)}


def _gc_long_expect(names):
    want = _gc_long(names, cached=False)
    ran = _gc_long(names)
    want.update(grew=ran["grew"], fed=ran["fed"])
    return want


def _gc_long_prompt(names, cached: bool = True):
    prompt = torch.randint(0, 11, (2, 10), generator=seeded_generator(4))
    if cached:
        out, fed = cached_run(names, small_gpt(0), prompt, 2, 2)
        return {"first": fed[0] if fed else None, "out": out}
    return {"out": names.generate_recompute(small_gpt(0), prompt, 2, generator=seeded_generator(2))}


def _gc_long_prompt_expect(names):
    return {**_gc_long_prompt(names), **_gc_long_prompt(names, cached=False)}


_REBUILD = ("when the cache holds block_size positions, rebuild it with cached_forward(model, "
            "ids[:, -(block_size // 2):], None)")

GENERATE_CACHED = Exercise("generate_cached", (
    Case("generate_cached(model, prompt of shape (2, 3), 4)", _gc_first, expect=_gc_first_expect, compare=fields(
        ("fed", equal("what cached_forward was fed, (new ids, cached positions), for 4 new ids after 3",
                      "the prompt once, then only the new id with the cache; no call after the last id")),
        ("out", tensor(values="each step: the last position's logits, the filters, sample_next with the generator, "
                              "append", what="generate_cached's ids (4 new ids, the cache never full)")),
        ("prompt", _in_place("prompt")))),
    # past block_size: 20 new ids with block_size 8, the cache rebuilt from the last 4 ids when full
    Case("generate_cached(model with block_size 8, prompt of 3, 20 new ids)", _gc_long, expect=_gc_long_expect,
         compare=fields(
             ("steps", equal("the number of steps whose logits went through the filters (20 new ids)")),
             ("seen", tensor(values="each step's logits must equal a full forward pass over the ids the cache holds: "
                                    "when the cache is full, rebuild it with cached_forward(model, "
                                    "ids[:, -(block_size // 2):], None) — dropping the oldest cached keys keeps keys "
                                    "computed at their old positions", atol=1e-10, rtol=1e-10,
                             what="the logits generate_cached handed the filters at each of 20 steps (block_size 8, "
                                  "float64 model)")),
             ("out", tensor(values=_REBUILD, what="generate_cached's ids for 20 new ids with block_size 8")),
             ("grew", lambda got, want: None if got <= 8 else "the cache grew past block_size"),
             ("fed", lambda got, want: None if got <= 3 + 19 + 3 * 3 else (
                 f"generate_cached fed {got} positions to cached_forward for 20 new ids: feed only the new id, and "
                 "rebuild only when the cache is full"))),
         errors=(("more than block_size", ""), ("", "the cache may not grow past block_size: when it holds block_size "
                                                    "positions and a new id comes, rebuild it from the last "
                                                    "block_size // 2 ids"))),
    # a prompt longer than block_size: the first call sees its last block_size ids
    Case("generate_cached(model with block_size 8, a prompt of 10 ids, 2)", _gc_long_prompt,
         expect=_gc_long_prompt_expect, compare=fields(
             ("first", equal("what the first call of cached_forward was fed, (new ids, cached positions), for a "
                             "prompt of 10 ids and block_size 8",
                             "the last block_size ids of the prompt, prompt[:, -block_size:]")),
             ("out", tensor(what="generate_cached's ids after a prompt of 10 ids (block_size 8)")))),
), standins=("cached_forward", "sample_next", "top_k_filter"),
    rules=rules(RULE, ((Later(_gpt_forward),), "use cached_forward, not the model's own forward")))


# ------------------------------------------------------------------ the multiple-choice questions

Q1, Q1_LETTER = question("q1", "answer_q1", "ABCD")
Q2, Q2_LETTER = question("q2", "answer_q2", "ABCD")


NOTEBOOK = Notebook(
    "07_decoding", reference="lmcourse.reference.decoding", hidden="lmcourse.marking.decoding_hidden",
    exercises=(NEXT_TOKEN, TOP_K_FILTER, TOP_P_FILTER, EPSILON_FILTER, GENERATE, BEAM_SEARCH,
               CACHED_FORWARD, GENERATE_CACHED, Q1, Q2),
    # the answers (lmcourse.decoding keeps given code only); 05's
    # sampler (lmcourse.nn.sampling, beside the GPT this notebook uses) and 05's reference generate answer
    # generate through a model that filters its logits (a copy of the sampler's code object passed the
    # rules' refusal of the original), so both are withheld; so is the static KV cache (a cache and its generation)
    withheld=("lmcourse.reference.decoding", "lmcourse.reference.gpt", "lmcourse.nn.sampling",
              "lmcourse.nn.static_cache"))
