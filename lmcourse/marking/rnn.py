"""Notebook 02's tests (recurrent language models): the visible cases, with the hints that teach.

Each case builds its own inputs (and, for ``RNNLM``, the student's model with weights chosen here, loaded by
the parameter names the prose states), calls the student's code and returns what the judge compares; the
expected value is the same call on the reference's names (:mod:`lmcourse.reference.rnn`, itself checked
against ``nn.RNNCell`` / ``nn.RNN`` and ``torch.optim.SGD`` in the course's tests). The hidden cases are in
:mod:`.rnn_hidden`.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .rnn_optim import ADAMW_STEP, CLIP_GRAD_NORM, LR_SCHEDULE
from .rules import exercise_rules
from .show import show
from .spec import Case, Compare, Exercise, Notebook, question, when
from .tensors import fields, plain_tensor, seed_cpu, tensor
from .tensors import grads as tensor_grads

__all__ = ["NOTEBOOK", "RECURRENT", "BigramLM", "Clock", "Counter", "Die", "QUESTIONS", "plain_tensor", "tensor"]

# name parts of torch's recurrent kernels (nn.RNN, nn.RNNCell, nn.LSTM, nn.GRU and their functions)
RECURRENT = ("rnn_tanh", "rnn_relu", "lstm", "gru")
F64 = torch.float64


def _near(got: Any, values: list, atol: float = 1e-9) -> bool:
    return (type(got) is torch.Tensor and got.shape == torch.Size(torch.tensor(values).shape)
            and float((got.double() - torch.tensor(values, dtype=F64)).abs().max()) < atol)


def same(message: str) -> Compare:
    def compare(got: Any, want: Any) -> str | None:
        return None if got == want else message
    return compare


def kept(message: str) -> Compare:
    """The inputs after the call (a list of tensors) equal the reference's: unchanged."""
    def compare(got: Any, want: Any) -> str | None:
        ok = type(got) is list and len(got) == len(want) and all(
            type(g) is torch.Tensor and g.shape == w.shape and torch.equal(g, w) for g, w in zip(got, want))
        return None if ok else message
    return compare


def grads(names: tuple[str, ...], hint: str, atol: float = 1e-10, what: str = "") -> Compare:
    """``{"requires_grad": bool, "grads": [tensor] | None}`` (:func:`grads_of`): the result required grad, and each
    gradient, the arguments named by ``names`` in order."""
    each = tensor_grads("the gradient w.r.t. {}", hint, atol=atol, rtol=0.0)

    def compare(got: Any, want: Any) -> str | None:
        if not got["requires_grad"]:
            return f"{what}'s result does not require grad although its weights do — {hint}"
        return each(dict(zip(names, got["grads"])), dict(zip(names, want["grads"])))
    return compare


def grads_of(out: Any, ps: list[torch.Tensor]) -> dict:
    out = plain_tensor(out, "the result")
    if not out.requires_grad:
        return {"requires_grad": False, "grads": None}
    return {"requires_grad": True, "grads": list(torch.autograd.grad(out.pow(2).sum(), ps))}


# ------------------------------------------------------------------ 1. elman_step

_DTYPE = "keep the inputs' dtype; don't call .float()"
_TRANSPOSE = ("x_t (B, I) goes with W_xh (H, I), h_prev (B, H) with W_hh (H, H): multiply by the transposes, "
              "x_t @ W_xh.T and h_prev @ W_hh.T")
_STEP_GRAD = ("the training loop back-propagates through every step: no .detach() and no in-place writes into a "
              "preallocated tensor")


def _worked_step(names):
    # B = 1, I = 3, H = 2: a_t = [1.0, -0.35] (the test cell's comment shows the sums)
    return names.elman_step(torch.tensor([[1.0, 2.0, 0.0]], dtype=F64), torch.tensor([[0.5, -1.0]], dtype=F64),
                            torch.tensor([[0.1, 0.2, 0.3], [0.0, -0.1, 0.4]], dtype=F64),
                            torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=F64), torch.tensor([0.0, 0.1], dtype=F64))


def _cell_inputs():
    """nn.RNNCell's own weights (I = H = 4, so swapped weights cannot hide behind a shape error) and a batch of 5."""
    seed_cpu(0)
    cell = nn.RNNCell(4, 4, dtype=F64)
    x, h = torch.randn(5, 4, dtype=F64), torch.randn(5, 4, dtype=F64)
    return [x, h, cell.weight_ih.detach().clone(), cell.weight_hh.detach().clone(),
            (cell.bias_ih + cell.bias_hh).detach().clone()]


def _batch_step(names):
    args = _cell_inputs()
    out = names.elman_step(*args)
    return {"out": out, "inputs": args}


def _step_grads(names):
    x, *rest = _cell_inputs()
    ps = [t.requires_grad_() for t in rest]
    return grads_of(names.elman_step(x, *ps), ps)


ELMAN_STEP = Exercise("elman_step", (
    Case("elman_step(worked example)", _worked_step,
         compare=tensor(shape="h_t has one row per example and H columns", dtype=_DTYPE, atol=1e-12,
                        values="h_t = tanh(W_xh x_t + W_hh h_{t-1} + b_h): compare each term with the comment above"),
         diagnoses=(
             when(lambda g, w: _near(g, [[1.0, -0.35]]),
                  "elman_step returned a_t = [1.0, -0.35] itself — apply the nonlinearity: h_t = tanh(a_t)"),
             when(lambda g, w: _near(g, [[math.tanh(1.0), math.tanh(-0.45)]]),
                  "elman_step gives tanh([1.0, -0.45]): the bias b_h = [0, 0.1] is missing"),
             when(lambda g, w: _near(g, [[math.tanh(0.5), math.tanh(-0.6)]]),
                  "elman_step computed h_prev @ W_hh without the transpose (W_hh is square, so no shape error "
                  "warns you): use h_prev @ W_hh.T"),
             when(lambda g, w: _near(g, [[math.tanh(0.5), math.tanh(-0.1)]]),
                  "elman_step gives tanh(W_xh x_t + b_h): h_prev is ignored — add h_prev @ W_hh.T, the term that makes "
                  "the network recurrent"),
             when(lambda g, w: _near(g, [[1 / (1 + math.exp(-1.0)), 1 / (1 + math.exp(0.35))]]),
                  "elman_step applied the logistic sigmoid; this notebook's nonlinearity H is tanh")),
         errors=(("", _TRANSPOSE),)),
    Case("elman_step(batch of 5) vs nn.RNNCell", _batch_step,
         compare=fields(
             ("inputs", kept("elman_step changed its inputs in place (e.g. x_t += ... or h_prev.tanh_()): compute a "
                             "new tensor")),
             ("out", tensor(atol=1e-12, rtol=1e-10, dtype=_DTYPE, values=(
                 "are W_xh and W_hh each multiplied with the right vector (W_xh with x_t, W_hh with h_prev), and "
                 "each transposed (x_t @ W_xh.T, h_prev @ W_hh.T)? Is every row of the batch treated the same way?")))),
         errors=(("", _TRANSPOSE),)),
    Case("elman_step(batch of 5, weights requiring grad), backward", _step_grads,
         compare=grads(("h_prev", "W_xh", "W_hh", "b_h"), _STEP_GRAD, what="elman_step"), errors=(("", _STEP_GRAD),)),
), rules=exercise_rules("compute the recurrence yourself with @, .T and torch.tanh", torch=RECURRENT))


# ------------------------------------------------------------------ 2. rnn_forward

_H0 = "h0=None means zeros of shape (B, H), H = W_hh.shape[0], e.g. x.new_zeros(B, H) (same dtype and device as x)"
_SEQ_GRAD = ("the training loop back-propagates through every step: no .detach() and no in-place writes into "
             "a preallocated tensor — collect the h_t in a list and torch.stack them")


def _one(v: float) -> torch.Tensor:
    return torch.tensor([[v]], dtype=F64)


def _hand_example(names):
    # one unit, W_xh = 1, W_hh = 0.5, b_h = 0, inputs 1, 0, 0: h = tanh(1), tanh(0.5 h_1), tanh(0.5 h_2)
    xs = torch.tensor([[[1.0], [0.0], [0.0]]], dtype=F64)
    return names.rnn_forward(xs, None, _one(1.0), _one(0.5), torch.zeros(1, dtype=F64))


def _rnn_inputs():
    """nn.RNN(4, 6)'s own weights, a batch (B=3, T=7) and a start state."""
    seed_cpu(1)
    ref = nn.RNN(4, 6, batch_first=True, dtype=F64)
    x, h0 = torch.randn(3, 7, 4, dtype=F64), torch.randn(3, 6, dtype=F64)
    return x, h0, [ref.weight_ih_l0.detach().clone(), ref.weight_hh_l0.detach().clone(),
                   (ref.bias_ih_l0 + ref.bias_hh_l0).detach().clone()]


def _with_h0(names):
    x, h0, W = _rnn_inputs()
    return names.rnn_forward(x, h0, *W)


def _from_zeros(names):
    x, _, W = _rnn_inputs()
    return names.rnn_forward(x, None, *W)


def _seq_grads(names):
    x, h0, W = _rnn_inputs()
    ps = [h0.requires_grad_()] + [w.requires_grad_() for w in W]
    return grads_of(names.rnn_forward(x, *ps), ps)


def _is_zero_at(index: tuple) -> Any:
    return lambda g, w: type(g) is torch.Tensor and g.shape == w.shape and abs(float(g[index])) <= 1e-6


RNN_FORWARD = Exercise("rnn_forward", (
    Case("rnn_forward(hand example)", _hand_example,
         compare=tensor(shape="return h_1..h_T stacked on dimension 1: (B, T, H), without h_0", dtype=_DTYPE,
                        atol=1e-12, values="see the comment above for h_1, h_2, h_3"),
         diagnoses=(
             when(_is_zero_at((0, 0, 0)),
                  "the first row of the output is 0 = h_0: the output should hold h_1..h_T, each *after* its update"),
             when(_is_zero_at((0, 1, 0)),
                  "h_2 came out 0, but x_2 = 0 and h_1 = 0.76, so h_2 = tanh(0.5 * 0.76) ≠ 0: carry h from one step "
                  "to the next (use the updated h, not h0, at every step)")),
         errors=(("", _H0),)),
    Case("rnn_forward(B=3, T=7, I=4, H=6) vs nn.RNN", _with_h0,
         compare=tensor(shape="(B, T, H): batch first, then time", dtype=_DTYPE, atol=1e-12, rtol=1e-10,
                        values="does the loop go forward in time (t = 0, 1, ..., T-1) and start from h0 when it is "
                               "given?")),
    Case("rnn_forward(B=3, T=7, I=4, H=6, h0=None) vs nn.RNN", _from_zeros,
         compare=tensor(shape=_H0, dtype=_DTYPE, atol=1e-12, rtol=1e-10, values=_H0), errors=(("", _H0),)),
    Case("rnn_forward(weights requiring grad), backward", _seq_grads,
         compare=grads(("h0", "W_xh", "W_hh", "b_h"), _SEQ_GRAD, what="rnn_forward"), errors=(("", _SEQ_GRAD),)),
), standins=("elman_step",), rules=exercise_rules("run the recurrence yourself, with elman_step", torch=RECURRENT))


# ------------------------------------------------------------------ 3. RNNLM

_RNNLM_PARAMS = ("wte.weight", "W_xh", "W_hh", "b_h", "lm_head.weight", "lm_head.bias")
_KEEP_INIT = ("keep __init__ as it is written: the tests load weights by its names (wte, W_xh, W_hh, b_h, "
              "lm_head)")


def built_rnnlm(names, V: int, E: int, H: int, seed: int) -> nn.Module:
    """The student's RNNLM(V, E, H) in float64 with every parameter the prose names drawn here (seeded by
    ``seed`` and the name, so the reference's model gets the same weights)."""
    seed_cpu(seed)
    m = names.RNNLM(vocab_size=V, n_embd=E, n_hidden=H).double()
    params = dict(m.named_parameters())
    missing = [n for n in _RNNLM_PARAMS if n not in params]
    if missing:
        raise AttributeError(f"RNNLM has no parameter {', '.join(missing)}")
    with torch.no_grad():
        for n in _RNNLM_PARAMS:
            g = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(n.encode()))
            params[n].copy_(torch.randn(tuple(params[n].shape), generator=g, dtype=F64) * 0.5)
    return m


def _pair(out: Any) -> str | None:
    if type(out) in (tuple, list) and len(out) == 2:
        return None
    return (f"forward_state should return a tuple (logits, h_T), got a {type(out).__name__}"
            + (f" of length {len(out)}" if type(out) in (tuple, list) else "") + " — end with: return logits, h_T")


def rnnlm_case(V: int, E: int, H: int, B: int, T: int, seed: int, split: int | None = None):
    """RNNLM with the test's weights: the recurrent modules it holds, forward_state's logits and h_T, what
    forward gives, (with ``split``) the logits continued from the state after the first ``split`` tokens, and
    the parameters that get no gradient from the logits."""
    def call(names):
        m = built_rnnlm(names, V, E, H, seed)
        rnn_modules = [type(mod).__name__ for mod in m.modules() if isinstance(mod, (nn.RNNBase, nn.RNNCellBase))]
        idx = torch.randint(V, (B, T), generator=torch.Generator().manual_seed(seed))
        out = m.forward_state(idx)
        pair = _pair(out)
        if pair:
            return {"rnn_modules": rnn_modules, "pair": pair}
        logits, h_T = out
        rec = {"rnn_modules": rnn_modules, "pair": None, "logits": plain_tensor(logits, "the logits"),
               "h_T": plain_tensor(h_T, "h_T")}
        if split is not None:
            with torch.no_grad():
                _, h = m.forward_state(idx[:, :split])
                rec["rest"] = m.forward_state(idx[:, split:], h)[0]
                rec["whole"] = m(idx)
        m.zero_grad()
        logits.pow(2).sum().backward()
        rec["no_grad"] = [n for n, p in m.named_parameters() if p.grad is None or float(p.grad.abs().sum()) == 0]
        return rec
    return call


def _modules(got: Any, want: Any) -> str | None:
    return None if not got else (f"RNNLM contains {got}: no nn.RNN / nn.RNNCell / nn.LSTM modules — use the W_xh, "
                                 "W_hh, b_h that __init__ creates")


def _no_grad(got: Any, want: Any) -> str | None:
    return None if not got else (f"these parameters of RNNLM get no gradient: {got} — embed with self.wte, run the "
                                 "recurrence with self.W_xh, self.W_hh, self.b_h and read out with self.lm_head, "
                                 "without .detach()")


_LOGITS = ("embed with self.wte, run rnn_forward with self.W_xh, self.W_hh, self.b_h, then apply self.lm_head to "
           "every hidden state")
_RNNLM_CHECKS = (
    ("rnn_modules", _modules),
    ("logits", tensor(shape="one score per vocabulary entry at every position: (B, T, V)", atol=1e-10,
                      values=_LOGITS, what="the logits")),
    ("h_T", tensor(shape="the last hidden state, one row per sequence: (B, H)", atol=1e-10,
                   values="return the hidden state after the *last* token, hs[:, -1]", what="h_T")),
    ("rest", tensor(atol=1e-10, values="pass h0 on to rnn_forward instead of always starting from zeros",
                    what="the logits continued from h_T")),
    ("whole", tensor(atol=1e-10, values="forward(idx) returns forward_state(idx)[0]", what="RNNLM(idx)")),
    ("no_grad", _no_grad))


def rnnlm_compare(got: Any, want: Any) -> str | None:
    """The recurrent modules first, then the pair's form, then each result in the order a model computes them."""
    if type(got) is dict and got.get("pair"):
        return _modules(got.get("rnn_modules"), None) or got["pair"]
    return fields(("pair", lambda g, w: None), *[c for c in _RNNLM_CHECKS if c[0] in want])(got, want)


RNNLM = Exercise("RNNLM", (
    Case("RNNLM(11, 5, 7) with the test's weights, forward_state(idx) vs nn.RNN's recurrence",
         rnnlm_case(11, 5, 7, 2, 6, seed=0, split=4), compare=rnnlm_compare, errors=(("", _KEEP_INIT),)),
), standins=("elman_step", "rnn_forward"), answer="RNNLM",
    rules=exercise_rules("RNNLM must run rnn_forward, not PyTorch's recurrent kernels", torch=RECURRENT))


# ------------------------------------------------------------------ 4. lm_loss

_P = [[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]]
_P2 = [[[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]], [[0.6, 0.3, 0.1], [0.2, 0.7, 0.1]]]
_WORKED = (-math.log(0.25) - math.log(0.8)) / 2
_SHIFT = ("shift within each sequence (logits[:, :-1] vs idx[:, 1:]); flattening first makes row b's last "
          "position predict row b+1's first token")


def _value(x: Any) -> float:
    return float(x) if type(x) is torch.Tensor and x.numel() == 1 else math.nan


def _off(value: float) -> Any:
    return lambda g, w: abs(_value(g) - value) <= 1e-6


def scalar(dtype_hint: str, values: str, rel: float = 1e-9) -> Compare:
    """A scalar tensor (shape ()), its dtype, then its value within ``rel``."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not torch.Tensor or got.dim() != 0:
            return (f"lm_loss should return a scalar tensor (shape ()), got {type(got).__name__} "
                    f"{tuple(getattr(got, 'shape', ()))} — average over every prediction")
        if got.dtype != want.dtype:
            return f"lm_loss returned {got.dtype} for {want.dtype} logits — {dtype_hint}"
        if not math.isclose(float(got), float(want), rel_tol=rel, abs_tol=1e-12):
            return f"got {float(got):.6f}, expected {float(want):.6f} — {values}"
        return None
    return compare


_LOSS_DTYPE = "the numbers look the same but lose precision; keep the inputs' dtype, don't call .float()"


def _uniform(names):
    return names.lm_loss(torch.zeros(4, 10, 7), torch.randint(7, (4, 10), generator=torch.Generator().manual_seed(0)))


def _loss_grad(names):
    g = torch.Generator().manual_seed(0)
    lg = torch.randn(2, 5, 4, generator=g).requires_grad_()
    loss = plain_tensor(names.lm_loss(lg, torch.randint(4, (2, 5), generator=g)), "the loss")
    return torch.autograd.grad(loss, lg)[0]


def _last_gets_grad(g: Any, w: Any) -> bool:
    return type(g) is torch.Tensor and float(g[:, -1].abs().sum()) != 0.0


LM_LOSS = Exercise("lm_loss", (
    Case("lm_loss(worked example)", lambda names: names.lm_loss(torch.tensor(_P, dtype=F64).log(),
                                                                 torch.tensor([[0, 1, 1]])),
         compare=scalar(_LOSS_DTYPE, "mean over the B*(T-1) predictions of -log p(next token)"),
         diagnoses=(
             when(_off((-math.log(0.5) - math.log(0.8) - math.log(0.2)) / 3),
                  "lm_loss scored position t against idx[:, t] itself: the targets must be shifted, "
                  "logits[:, :-1] against idx[:, 1:]"),
             when(_off((-math.log(0.1) - math.log(0.2)) / 2),
                  "lm_loss shifted the wrong way, logits[:, 1:] against idx[:, :-1]: the logits at position t score "
                  "the *next* token, logits[:, :-1] against idx[:, 1:]"),
             when(_off(2 * _WORKED), "lm_loss is the *sum* over predictions (1.609); report the mean (0.805) instead"),
             when(_off(float(F.cross_entropy(F.softmax(torch.tensor(_P, dtype=F64).log(), -1)[0, :2],
                                             torch.tensor([1, 1])))),
                  "lm_loss applied softmax before F.cross_entropy, which applies log-softmax itself: pass the raw "
                  "logits"))),
    Case("lm_loss(two sequences)", lambda names: names.lm_loss(torch.tensor(_P2, dtype=F64).log(),
                                                                torch.tensor([[0, 1], [2, 0]])),
         compare=scalar(_LOSS_DTYPE, "the mean over all B*(T-1) predictions, each row's logits[b, :-1] against its "
                                     "own idx[b, 1:]"),
         diagnoses=(
             when(_off((-math.log(0.25) - math.log(0.8) - math.log(0.6)) / 3),
                  "lm_loss(two sequences) scored row 0's last position against row 1's first token — " + _SHIFT),
             when(_off(-math.log(0.25) - math.log(0.6)),
                  "lm_loss(two sequences) added up the two rows' losses: take the mean over all B*(T-1) "
                  "predictions"))),
    Case("lm_loss(worked example + a constant per position)",
         lambda names: names.lm_loss(torch.tensor(_P, dtype=F64).log()
                                     + torch.tensor([[[3.0], [-2.0], [7.0]]], dtype=F64), torch.tensor([[0, 1, 1]])),
         compare=scalar(_LOSS_DTYPE, "adding a constant to every logit of a position does not change its softmax, "
                                     "so it must not change the loss: normalise the logits with a (log-)softmax "
                                     "over the vocabulary"),
         diagnoses=(
             when(_off(-((math.log(0.25) + 3.0) + (math.log(0.8) - 2.0)) / 2),
                  "lm_loss treated the raw logits as log-probabilities: F.nll_loss expects log_softmax(logits), not "
                  "logits — use F.cross_entropy(logits, targets), or F.nll_loss(F.log_softmax(logits, dim=-1), "
                  "targets)"),)),
    Case("lm_loss of a uniform model over 7 tokens", _uniform,
         compare=scalar(_LOSS_DTYPE, "the mean over all B*(T-1) predictions of -log softmax(logits)[target]",
                        rel=1e-6),
         diagnoses=(when(_off(0.0), "lm_loss of all-zero logits is 0, as if the logits were log-probabilities "
                                    "(F.nll_loss on raw logits?): a uniform model pays log 7 = 1.946 per "
                                    "prediction"),)),
    Case("the gradient of lm_loss w.r.t. the logits", _loss_grad,
         compare=tensor(atol=1e-6, values="the mean over all B*(T-1) predictions of -log softmax(logits)[target]"),
         diagnoses=(when(_last_gets_grad, "the last position has no target, so its logits should get no "
                                          "gradient"),)),
))


# ------------------------------------------------------------------ 5. perplexity

def _float(got: Any, want: Any) -> str | None:
    if type(got) is not float:
        return f"got {show(got)} ({type(got).__name__}) — return a Python float, e.g. math.exp(x) or float(tensor)"
    if not math.isclose(got, want, rel_tol=1e-6):
        return f"got {got!r}, expected {want!r} — exp of the mean loss"
    return None


def _is(value: float) -> Any:
    return lambda g, w: type(g) is float and abs(g - value) <= 1e-6


PERPLEXITY = Exercise("perplexity", (
    Case("perplexity of a uniform model over 84 characters",
         lambda names: names.perplexity(torch.full((50,), math.log(84.0), dtype=F64)), compare=_float,
         diagnoses=(when(lambda g, w: type(g) is float and math.isclose(g, 84.0 ** 50, rel_tol=1e-6),
                         "perplexity 84**50 = exp(sum of losses): use the *mean* loss, exp(mean)"),
                    when(_is(2 ** math.log(84.0)), "the losses are in nats, so the base is e: math.exp, not 2 **"))),
    Case("perplexity([log 2, log 8])", lambda names: names.perplexity(torch.tensor([math.log(2.0), math.log(8.0)])),
         compare=_float,
         diagnoses=(when(_is(16.0), "perplexity 16 = exp(sum of losses): use the *mean* loss, exp(mean)"),
                    when(_is(5.0), "perplexity 5 = mean of exp(loss): take the exp of the mean, not the mean of the "
                                   "exps"),
                    when(_is(2 ** math.log(4.0)), "the losses are in nats, so the base is e: math.exp, not 2 **"))),
))


# ------------------------------------------------------------------ 6. sample

class _Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))


class Counter(_Toy):
    """Always (almost surely) predicts 'the token after the one just read', modulo 5."""

    def forward_state(self, idx, state=None):
        return 50.0 * F.one_hot((idx + 1) % 5, 5).float(), state


class Die(_Toy):
    """Ignores its input: the next token is 0, 1 or 2 with probabilities 0.7, 0.2, 0.1."""

    def forward_state(self, idx, state=None):
        B, T = idx.shape
        return torch.tensor([0.7, 0.2, 0.1]).log().expand(B, T, 3), state


class Clock(_Toy):
    """Ignores which tokens it reads; its state counts them, and it predicts (count mod 5)."""

    def forward_state(self, idx, state=None):
        B, T = idx.shape
        count = (0 if state is None else state) + torch.arange(1, T + 1)
        return 50.0 * F.one_hot(count % 5, 5).float().expand(B, T, 5), int(count[-1])


_PROBS = ("torch.multinomial needs probabilities (non-negative): apply softmax to the logits first, "
          "F.softmax(logits / temperature, dim=-1)")


def ids(n: int, hint: str) -> Compare:
    """A list of ``n`` Python ints equal to the reference's draws."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not list:
            return f"got {show(got)} — return a list of ints"
        if len(got) != n:
            return f"sample(..., n_new={n}) returned {len(got)} tokens; return only the {n} new ones"
        if not all(type(t) is int for t in got):
            return "sample should return Python ints (use int(...) or .item())"
        return None if got == want else f"got {got}, expected {want} — {hint}"
    return compare


def frequencies(probs: list[float], tol: float, what: str) -> Compare:
    """Draws whose token frequencies are within ``tol`` of ``probs`` (a statistical check: any correct sampler
    passes, whatever order its random numbers are used in)."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not list or not got:
            return f"got {show(got)} — return a list of ints"
        freq = [got.count(k) / len(got) for k in range(len(probs))]
        if freq[0] >= 0.99:
            return ("sample always returned the most likely token: that is arg-max (greedy), not sampling — draw "
                    "with torch.multinomial(probs, 1, generator=generator)")
        if all(abs(f - p) < tol for f, p in zip(freq, probs)):
            return None
        return f"token frequencies {[round(f, 3) for f in freq]} should be near {probs} — {what}"
    return compare


def plain_ids(x: Any) -> list:
    """``x`` if it is a list of Python ints (exact types): a test compares or counts nothing else in the
    kernel (a list subclass's ``__eq__`` or ``count`` would answer for it)."""
    if type(x) is not list or not all(type(t) is int for t in list.__iter__(x)):
        raise TypeError(f"sample should return a list of Python ints, not {type(x).__name__}")
    return x


def _repeat(names):
    return plain_ids(names.sample(Die(), [0], 50, torch.Generator().manual_seed(7))) == plain_ids(names.sample(
        Die(), [0], 50, torch.Generator().manual_seed(7)))


def _cold(names):
    return plain_ids(names.sample(Die(), [0], 300, torch.Generator().manual_seed(2), temperature=0.05)).count(0) > 290


def _counter(names):
    return names.sample(Counter(), [4, 2], 6, torch.Generator().manual_seed(0))


def _clock(names):
    return names.sample(Clock(), [0, 0], 4, torch.Generator().manual_seed(0))


SAMPLE = Exercise("sample", (
    Case("sample(counter model, prompt [4, 2], 6 tokens)", _counter,
         compare=ids(6, "the counter model predicts (last token + 1) mod 5 with near certainty"),
         diagnoses=(when(lambda g, w: g == [3] * 6, "sample gave [3, 3, 3, ...]: feed each drawn token back into the "
                                                   "model, with the state, before drawing the next one"),
                    when(lambda g, w: len(g) == 6 and g[0] == 0,
                         "the first token should continue the *last* prompt token (2 -> 3), but it continued the "
                         "first one (4 -> 0): use the logits of the last position, logits[0, -1]")),
         errors=(("", _PROBS),)),
    Case("sample(clock model, prompt [0, 0], 4 tokens)", _clock,
         compare=ids(4, "the clock model's prediction depends on its state: pass the state returned by "
                        "forward_state back in with the next token"), errors=(("", _PROBS),)),
    Case("sample(die, 3000)", lambda names: names.sample(Die(), [0], 3000, torch.Generator().manual_seed(1)),
         compare=frequencies([0.7, 0.2, 0.1], 0.04, "draw from softmax(logits of the *last* position)"),
         errors=(("", _PROBS),)),
    Case("sample(die, 50) twice with the same seed", _repeat,
         compare=same("the same seed gave different samples: pass generator=generator to torch.multinomial")),
    Case("sample(die, 300, temperature=0.05)", _cold,
         compare=same("at temperature 0.05 the most likely token should win almost always (more than 290 of 300) — "
                      "divide the logits by the temperature before the softmax")),
))


# ------------------------------------------------------------------ 7. train_step

class BigramLM(nn.Module):
    """The tests' small model: an embedding, a frozen scale, an output layer."""

    def __init__(self, V=5, E=3):
        super().__init__()
        self.wte = nn.Embedding(V, E)
        self.scale = nn.Parameter(torch.ones(E), requires_grad=False)  # frozen: gets no gradient
        self.lm_head = nn.Linear(E, V)

    def forward(self, idx):
        return self.lm_head(self.wte(idx) * self.scale)


_IDX = [[0, 1, 2, 3, 4, 0], [4, 4, 3, 1, 0, 2]]


def _step_case(names):
    seed_cpu(0)
    m = BigramLM().double()
    idx = torch.tensor(_IDX)
    before = {n: p.detach().clone() for n, p in m.named_parameters()}
    params = dict(m.named_parameters())
    requires = {n: p.requires_grad for n, p in m.named_parameters()}
    ret = names.train_step(m, idx, 0.5)
    rec = {"ret": ret if type(ret) is float else show(ret), "before": before,
           "same_objects": all(p is params[n] for n, p in m.named_parameters()),
           "leaves": all(p.is_leaf and p.requires_grad == requires[n] for n, p in m.named_parameters()),
           "after": {n: p.detach().clone() for n, p in m.named_parameters()},
           "grads_left": [n for n, p in m.named_parameters() if p.grad is not None and float(p.grad.abs().max()) > 0]}
    with torch.no_grad():
        logits = m(idx)
        rec["loss_after"] = float(F.cross_entropy(logits[:, :-1].reshape(-1, 5), idx[:, 1:].reshape(-1)))
    for b in (idx.flip(1), idx % 3, idx.roll(1, 1)):
        names.train_step(m, b, 0.3)
    rec["after_4"] = {n: p.detach().clone() for n, p in m.named_parameters()}
    return rec


def _step_compare(got: Any, want: Any) -> str | None:
    if type(got["ret"]) is not float:
        return f"train_step returned {got['ret']} — return loss.item(), the loss as a Python float"
    if abs(got["ret"] - want["ret"]) > 1e-9 and abs(got["ret"] - got["loss_after"]) <= 1e-9:
        return "train_step returned the loss *after* the update: return the loss computed before it"
    if not math.isclose(got["ret"], want["ret"], rel_tol=1e-9):
        return (f"train_step's returned loss: got {got['ret']!r}, expected {want['ret']!r} — the mean next-token "
                "loss lm_loss(model(idx), idx), before the update")
    if not got["same_objects"]:
        return "train_step replaced the model's parameters by new tensors: update them in place, p -= lr * p.grad"
    if not got["leaves"]:
        return ("after train_step a parameter is no longer a leaf that requires grad: do the update under "
                "torch.no_grad()")
    before, after = got["before"], got["after"]
    moved = any(not torch.equal(after[n], before[n]) for n in before)
    if not moved and got["grads_left"]:
        return ("train_step did not change any parameter, and this batch's gradients are still in p.grad: the update "
                "ran before loss.backward() — the order is loss, backward, update, clear the gradients")
    if not moved:
        return ("train_step did not change any parameter. Either the gradients were cleared before the update used "
                "them (clear them last), or the update did not change p in place: `p = p - lr * p.grad` only rebinds "
                "the name p, and an out-of-place p.data.sub(...) is thrown away — use p -= lr * p.grad under "
                "torch.no_grad()")
    if not torch.equal(after["scale"], before["scale"]):
        return ("train_step changed the frozen parameter `scale` (requires_grad=False), which has no gradient: skip "
                "parameters whose .grad is None")
    for n in before:
        step = before[n] - want["after"][n]           # lr * gradient
        if float(step.abs().max()) == 0:
            continue
        if float((after[n] - (before[n] + step)).abs().max()) <= 1e-12:
            return f"train_step moved {n} *uphill*, p + lr * grad: gradient descent subtracts, p -= lr * p.grad"
        if float((after[n] - (before[n] - step / 0.5)).abs().max()) <= 1e-12:
            return f"train_step moved {n} by the whole gradient: multiply it by the learning rate, p -= lr * p.grad"
        if float((after[n] - want["after"][n]).abs().max()) > 1e-12:
            return (f"{n} after one step of train_step differs from p - lr * dloss/dp — with the gradient of *this* "
                    "batch's loss: backward first, then the update, then clear the gradients")
    if got["grads_left"]:
        return (f"after train_step, {got['grads_left']} still hold gradients: clear them after the update "
                "(model.zero_grad() or p.grad = None); the next backward() would add to them")
    for n in want["after_4"]:
        if float((got["after_4"][n] - want["after_4"][n]).abs().max()) > 1e-12:
            return (f"{n} after 4 steps differs from torch.optim.SGD's — each step must use only its own batch's "
                    "gradient: clear the gradients every step")
    return None


# torch.optim.Optimizer.__init__ runs for every optimiser
_NO_OPTIM = exercise_rules("write the update yourself, p -= lr * p.grad, not torch.optim", torch.optim.Optimizer,
                           "torch.optim.sgd")


TRAIN_STEP = Exercise("train_step", (
    Case("train_step(model, idx, lr=0.5), then 3 more steps at lr=0.3", _step_case, compare=_step_compare,
         errors=(("", "inside `with torch.no_grad():` update each parameter in place, skipping those whose .grad is "
                      "None (the frozen scale has none)"),)),
), standins=("lm_loss",), rules=_NO_OPTIM)


# ------------------------------------------------------------------ questions

QUESTIONS = {n: question(f"q{n}", f"answer_q{n}", "ABCD") for n in (1, 2, 3, 4)}


NOTEBOOK = Notebook(
    "02_rnn", reference="lmcourse.reference.rnn", hidden="lmcourse.marking.rnn_hidden",
    exercises=(ELMAN_STEP, RNN_FORWARD, RNNLM, LM_LOSS, PERPLEXITY, SAMPLE, TRAIN_STEP, ADAMW_STEP, LR_SCHEDULE,
               CLIP_GRAD_NORM, *(QUESTIONS[n][0] for n in (1, 2, 3, 4))),
    # and the course's samplers of later notebooks: a model wrapped to give forward_state's logits answers
    # sample with any of them (05's given GPT's and reference generate, 07's reference)
    withheld=("lmcourse.reference.rnn", "lmcourse.nn.gpt", "lmcourse.nn.sampling", "lmcourse.reference.gpt",
              "lmcourse.reference.decoding"))
