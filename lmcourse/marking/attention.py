"""Notebook 03's tests (attention): the visible cases, with the hints that teach.

Each case builds its own inputs and, for ``MultiHeadAttention``, the student's module with the test's sizes
and weights chosen here (seeded, loaded by the names the prose states: ``W_q``, ``W_k``, ``W_v``, ``W_o``),
calls it and returns what the judge compares; the expected value is the same call on the reference's names
(:mod:`lmcourse.reference.attention`, itself checked against ``torch.softmax``,
``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention`` in the course's tests). Where a check is a
property of the student's own results (causality, permutation, bfloat16 against float64), the case returns
both results and the comparison relates them. The hidden cases are in :mod:`.attention_hidden`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from lmcourse.marking.rules import LIBRARIES, exercise_rules

from .show import show
from .spec import Case, Compare, Exercise, Notebook, question, when
from .tensors import fields, plain_tensor, tensor, unreached

__all__ = ["MHA_ERRORS", "NOTEBOOK", "Q_MASK_LETTER", "Q_SOFTMAX_LETTER", "Q_SWAP_LETTER", "built", "fields",
           "mha_call", "plain_tensor", "sdpa_pair", "tensor", "tolerate_meta"]

# ------------------------------------------------------------------ the second line: torch's own versions

_SOFTMAX_RULE = ("write softmax yourself with .exp(), .max() and .sum(): a ready-made softmax (torch.softmax, "
                 "F.softmax, x.softmax, nn.Softmax, x.log_softmax(dim).exp(), F.cross_entropy's gradient, "
                 "torch.distributions, ...) scores 0 here")
_SCORES_RULE = "compute the scores yourself with @ and .transpose(): F.scaled_dot_product_attention scores 0 here"
_SDPA_RULE = ("compute the weights with your softmax (or .exp(), .max(), .sum()): a ready-made softmax or attention "
              "(torch.softmax, x.softmax, F.scaled_dot_product_attention, ...) scores 0 here")
_MHA_RULE = ("compute attention with your scaled_dot_product_attention (or by hand): a ready-made softmax or "
             "attention (x.softmax, F.scaled_dot_product_attention, nn.MultiheadAttention, ...) scores 0 here")
_ATTENTION = ("softmax", "softmin", "scaled_dot_product_attention", "multi_head_attention")
_SOFTMAX_KERNELS = ("softmax", "softmin")
# public torch code that normalises scores as a softmax does without the word in its name: a cross-entropy's
# gradient (softmax minus the one-hot), a distribution's normalised logits; their kernels (_log_softmax,
# _safe_softmax inside F.scaled_dot_product_attention) are refused by name as they run
_SOFTMAX_ELSEWHERE = ("torch.nn.functional:cross_entropy", "torch.nn:CrossEntropyLoss")
_DISTRIBUTIONS = (*LIBRARIES, "torch.distributions")


def _softmax_rules(reason: str, *more: str, torch: tuple[str, ...]):
    return exercise_rules(reason, *_SOFTMAX_ELSEWHERE, *more, torch=torch, kernels=_SOFTMAX_KERNELS,
                          libraries=_DISTRIBUTIONS)

# ------------------------------------------------------------------ shared pieces

# code that reads values (if bool(...), .item()) cannot run on meta: not a fault of the device rule
_READS_VALUES = ("item() cannot be called on meta", "Meta tensors", "data-independent")


def tolerate_meta(run) -> str:
    """The device of ``run()``'s result (a tensor on 'meta'), or "meta" when the code read values, which a
    meta tensor does not have: only a result on another device is a fault."""
    try:
        out = run()
    except Exception as err:
        if any(s in str(err) for s in _READS_VALUES):
            return "meta"
        raise
    if type(out) is tuple and len(out) == 2:
        out = out[0]
    return str(plain_tensor(out, "the result").device)


def _equal(what: str, hint: str) -> Compare:
    def compare(got: Any, want: Any) -> str | None:
        return None if got == want else f"{what}: got {show(got)}, expected {show(want)} — {hint}"
    return compare


def _same(what: str, hint: str, atol: float = 0.0) -> Compare:
    """Two tensors the student's code made (``got["a"]``, ``got["b"]``) agree: a property of the answer
    itself, whatever the reference returns."""
    def compare(got: Any, want: Any) -> str | None:
        a, b = got["a"], got["b"]
        if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
            return f"{what}: got {show(a)} and {show(b)}, expected two tensors of one shape — {hint}"
        if torch.allclose(a.double(), b.double(), atol=atol, rtol=0 if atol == 0 else 1e-8):
            return None
        err = (a.double() - b.double()).abs().nan_to_num(math.inf).max().item()
        return f"{what}: they differ by up to {err:.3g} — {hint}"
    return compare


def _kept(hint: str) -> Compare:
    return tensor(values=hint, what="the input after the call")


def _shape_only(hint: str) -> Compare:
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not torch.Tensor:
            return f"got {show(got)}, expected a torch.Tensor"
        return None if got.shape == want.shape else f"shape {tuple(got.shape)}, expected {tuple(want.shape)} — {hint}"
    return compare


# ------------------------------------------------------------------ softmax

_KEEPDIM = ("keep the reduced dimension so that it lines up with x: x.max(dim=dim, keepdim=True).values "
            "and e.sum(dim=dim, keepdim=True) have size 1 along dim and broadcast against x")
_DTYPE = ("return the input's dtype: compute in x's own dtype (no .double() or dtype=torch.float64 on "
          "the way), or convert the result back with .to(x.dtype)")
_DEVICE = ("compute from x only: a tensor you create yourself (torch.zeros(...), torch.tensor(...)) "
           "lives on the CPU unless you pass device=x.device")
_SOFTMAX_ERRORS = (("must match the size", _KEEPDIM), ("device", _DEVICE), ("meta", _DEVICE))
_F64 = torch.float64


def _t(rows, dtype=_F64) -> torch.Tensor:
    return torch.tensor(rows, dtype=dtype)


def _softmax_value(x, hint: str, dim: int | None = None, atol: float = 1e-12, rtol: float = 1e-12):
    def call(names):
        return names.softmax(x(), dim=dim) if dim is not None else names.softmax(x())
    return dict(call=call, compare=tensor(shape="softmax keeps the shape of its input; " + _KEEPDIM,
                                          dtype=_DTYPE, device=_DEVICE, values=hint, atol=atol, rtol=rtol),
                errors=_SOFTMAX_ERRORS)


def _softmax_kept(names):
    x = _t([[1.0, 2.0, 3.0], [0.0, float("-inf"), 5.0]])
    names.softmax(x)
    return x


def _softmax_sum(dim: int | None, over: int):
    def call(names):
        x = torch.arange(6, dtype=_F64).view(2, 3)
        out = names.softmax(x, dim=dim) if dim is not None else names.softmax(x)
        return plain_tensor(out, "softmax's result").sum(dim=over)
    return call


def _softmax_dtype(x):
    return lambda names: str(plain_tensor(names.softmax(x()), "softmax's result").dtype)


_Z = functools.partial(_t, [1.0, 2.0, 3.0])
_F32 = functools.partial(_t, [[1.0, 2.0, 3.0], [0.5, 0.5, -1.0]], torch.float32)

SOFTMAX = Exercise("softmax", (
    Case("softmax([1, 2, 3])", **_softmax_value(_Z, "softmax(z)_j = exp(z_j) / sum_k exp(z_k)")),
    Case("softmax of a (2, 3, 4) tensor", lambda names: names.softmax(torch.zeros(2, 3, 4)),
         compare=_shape_only("softmax keeps the shape of its input; " + _KEEPDIM),
         errors=_SOFTMAX_ERRORS),
    Case("your input tensor after calling softmax", _softmax_kept,
         compare=_kept("do not modify x in place (x -= ..., x.sub_(...), x.exp_()): build new tensors instead, "
                       "with out-of-place operations such as y = x - m and y.exp()"), errors=_SOFTMAX_ERRORS),
    Case("softmax([1001, 1002, 1003])", **_softmax_value(
        lambda: _Z() + 1000.0, "exp(1001) overflows to inf and inf/inf is nan: subtract the maximum before "
        "exponentiating")),
    Case("softmax([0, -inf, 0])", **_softmax_value(
        functools.partial(_t, [0.0, float("-inf"), 0.0]),
        "exp(-inf) = 0, so a -inf score must get weight exactly 0 and the rest share 1")),
    Case("softmax(x, dim=0).sum(dim=0)", _softmax_sum(0, 0), errors=_SOFTMAX_ERRORS,
         compare=tensor(values="use the dim argument in both .max(dim=dim, keepdim=True) and "
                        ".sum(dim=dim, keepdim=True)", atol=1e-12, rtol=1e-12)),
    Case("softmax(x).sum(dim=-1)", _softmax_sum(None, -1), errors=_SOFTMAX_ERRORS,
         compare=tensor(values="the default is the last dimension: each row sums to 1, not the whole tensor",
                        atol=1e-12, rtol=1e-12)),
    Case("softmax([[0, 1], [1000, 1001]])", **_softmax_value(
        functools.partial(_t, [[0.0, 1.0], [1000.0, 1001.0]]),
        "subtract each row's own maximum (x.max(dim=dim, keepdim=True)), not the largest value of the whole "
        "tensor: exp(0 - 1001) underflows to 0 and 0/0 is nan")),
    # the input's dtype and device: float32 in, float32 out; the "meta" device stands in for a GPU here
    Case("the dtype of softmax of a float64 tensor", _softmax_dtype(_Z), errors=_SOFTMAX_ERRORS,
         compare=_equal("the dtype", _DTYPE)),
    Case("the dtype of softmax of a float32 tensor", _softmax_dtype(_F32), errors=_SOFTMAX_ERRORS,
         compare=_equal("the dtype", _DTYPE)),
    Case("softmax of a float32 tensor", **_softmax_value(_F32, "softmax(z)_j = exp(z_j) / sum_k exp(z_k)",
                                                         atol=1e-6, rtol=1e-5)),
    Case("the device of softmax of a tensor on the meta device",
         lambda names: tolerate_meta(lambda: names.softmax(torch.empty(2, 3, device="meta"))),
         compare=_equal("the device", _DEVICE), errors=_SOFTMAX_ERRORS),
), rules=_softmax_rules(_SOFTMAX_RULE, "torch.nn.functional:scaled_dot_product_attention", torch=_SOFTMAX_KERNELS))

# ------------------------------------------------------------------ attention_scores

_BATCH = "transpose only the last two dimensions of K: K.transpose(-2, -1) (K.T reverses all of them)"
_Q2 = functools.partial(_t, [[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 0.0]])                     # 2 queries, d_k = 4
_K3 = functools.partial(_t, [[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 2.0, 0.0], [1.0, 0.0, 0.0, 0.0]])  # 3 keys


def _batched(seed: int = 302):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 5, 4, generator=g, dtype=_F64),    # (B, h, T_q, d_k)
            torch.randn(2, 3, 6, 4, generator=g, dtype=_F64))    # (B, h, T_k, d_k)


def _scores_kept(names):
    Q, K = _Q2(), _K3()
    names.attention_scores(Q, K)
    return {"Q": Q, "K": K}


_IN_PLACE_SCORES = "attention_scores changed Q or K in place (Q /= ..., Q.div_(...)): build a new tensor instead"

ATTENTION_SCORES = Exercise("attention_scores", (
    Case("attention_scores(Q, K) for 2 queries and 3 keys", lambda names: names.attention_scores(_Q2(), _K3()),
         compare=tensor(shape="row i belongs to query i and column j to key j: Q @ K^T, not K @ Q^T",
                        dtype="return the input's dtype: no .double() on the way",
                        values="S = Q K^T / sqrt(d_k) with d_k = 4: divide the dot products by 2 "
                               "(not by d_k = 4, and not by nothing)", atol=1e-12, rtol=1e-12)),
    Case("Q and K after attention_scores(Q, K)", _scores_kept,
         compare=fields(("Q", tensor(values=_IN_PLACE_SCORES, what="Q")),
                        ("K", tensor(values=_IN_PLACE_SCORES, what="K")))),
    Case("attention_scores on (2, 3, 5, 4) queries and (2, 3, 6, 4) keys",
         lambda names: names.attention_scores(*_batched()), errors=(("", _BATCH),),
         compare=tensor(shape=_BATCH, values="d_k is the size of the last dimension, Q.size(-1) (Q.shape[1] is d_k "
                        "only for a 2-D Q), and the batch dimensions must be carried along unchanged",
                        atol=1e-12, rtol=1e-12)),
    Case("the dtype of attention_scores in float32",
         lambda names: str(plain_tensor(names.attention_scores(*(t.float() for t in _batched())), "the scores").dtype),
         compare=_equal("the dtype", "return the input's dtype: no .double() on the way")),
), rules=exercise_rules(_SCORES_RULE, torch=("scaled_dot_product_attention",)))

# ------------------------------------------------------------------ the multiple-choice questions


Q_MASK, Q_MASK_LETTER = question("q_mask", "answer_q_mask", "ABC")
Q_SOFTMAX, Q_SOFTMAX_LETTER = question("q_softmax", "answer_q_softmax", "AB")
Q_SWAP, Q_SWAP_LETTER = question("q_swap", "answer_q_swap", "ABC")

# ------------------------------------------------------------------ causal_mask

_INF = float("-inf")
_MASK_DTYPE = ("build the mask in the default dtype, float32 (no dtype=torch.float64): code that uses it converts "
               "it with .to(...) where it needs another dtype")
_MASK_VALUES = ("row i is the query: it may see keys j <= i (0, including the diagonal), never j > i (-inf above "
                "the diagonal); -inf means float('-inf'), not -1e9")

CAUSAL_MASK = Exercise("causal_mask", (
    Case("causal_mask(4)", lambda names: names.causal_mask(4),
         diagnoses=(when(lambda got, want: type(got) is torch.Tensor and not got.dtype.is_floating_point,
                         "the mask should hold floats (0.0 and -inf), not booleans or integers — it is added to "
                         "the scores"),),
         compare=tensor(dtype=_MASK_DTYPE, values=_MASK_VALUES)),
    Case("causal_mask(1)", lambda names: names.causal_mask(1),
         compare=tensor(dtype=_MASK_DTYPE, values="a single token may always look at itself")),
))

# ------------------------------------------------------------------ scaled_dot_product_attention

_PAIR = "return the pair (output, weights): return weights @ V, weights"


def sdpa_pair(res: Any, what: str = "scaled_dot_product_attention") -> dict:
    """The student's (output, weights) as a dict of tensors; anything else is an error naming what came back."""
    if type(res) not in (tuple, list) or len(res) != 2:
        raise TypeError(f"{what} should return a tuple (output, weights), got {type(res).__name__}"
                        + (f" of length {len(res)}" if type(res) in (tuple, list) else ""))
    return {"out": plain_tensor(res[0], "the output"), "w": plain_tensor(res[1], "the weights")}


def _causal(T: int, dtype=_F64) -> torch.Tensor:
    return torch.zeros(T, T, dtype=dtype).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), _INF)


def _zero_queries():
    Q0 = torch.zeros(4, 2, dtype=_F64)
    K0 = _t([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    V0 = _t([[1.0], [2.0], [3.0], [4.0]])
    return Q0, K0, V0, _causal(4)


def _sdpa_zero(names):
    return sdpa_pair(names.scaled_dot_product_attention(*_zero_queries()))


def _sdpa_kept(names):
    inputs = _zero_queries()
    names.scaled_dot_product_attention(*inputs)
    return dict(zip("QKVM", inputs))


def _random_qkv(dtype=_F64):
    g = torch.Generator().manual_seed(303)
    Q, K = (torch.randn(2, 3, 5, 8, generator=g, dtype=_F64) for _ in range(2))
    V = torch.randn(2, 3, 5, 6, generator=g, dtype=_F64)
    return Q.to(dtype), K.to(dtype), V.to(dtype), _causal(5, dtype)


def _sdpa_random(masked: bool, dtype=_F64):
    def call(names):
        Q, K, V, M = _random_qkv(dtype)
        got = sdpa_pair(names.scaled_dot_product_attention(Q, K, V, M if masked else None))
        got["w @ V"] = got["w"].to(V.dtype) @ V     # the output must be made from the weights returned
        return got
    return call


def _cross(names):
    g = torch.Generator().manual_seed(313)
    return sdpa_pair(names.scaled_dot_product_attention(torch.randn(4, 3, generator=g, dtype=_F64),
                                                        torch.randn(7, 3, generator=g, dtype=_F64),
                                                        torch.randn(7, 2, generator=g, dtype=_F64)))


def _swapped(got: dict, want: dict) -> bool:
    return got["out"].shape == want["w"].shape and got["w"].shape == want["out"].shape != want["w"].shape


_SWAPPED = when(_swapped, "it returned (weights, output): return (output, weights), in that order")
def _FUTURE_ZERO(got: Any, want: Any) -> str | None:   # noqa: N802 (a comparison, named as the constants)
    if bool((got.triu(1) == 0).all()):
        return None
    return ("the weights of masked (future) keys must be exactly 0, not just small — add the -inf mask to the scores "
            "before the softmax")
_SDPA_ERRORS = (("should return a tuple", _PAIR), ("scalar type", "return the input's dtype: no .double() on the way"))
_NO_MASK = "mask=None means no masking: every query sees all keys"

SCALED_DOT_PRODUCT_ATTENTION = Exercise("scaled_dot_product_attention", (
    # with Q = 0 every score is 0, so each query spreads its weight evenly over the keys it may see
    Case("scaled_dot_product_attention with Q = 0 and the causal mask (4 queries, values of size 1)", _sdpa_zero,
         diagnoses=(_SWAPPED,), errors=_SDPA_ERRORS,
         compare=fields(
             ("out", _shape_only("the output is weights @ V: (T_q, T_k) @ (T_k, d_v) — use V, not K")),
             ("w", _shape_only("the weights are (T_q, T_k)")),
             ("w", tensor(shape="the weights are (T_q, T_k)", what="the weights", atol=1e-12, rtol=1e-12,
                          values="row i must spread its weight evenly over keys 0..i and give exactly 0 to the "
                                 "future: add the mask to the scores before the softmax, softmax each row "
                                 "(dim=-1), and return the weights as (T_q, T_k), query in the row")),
             ("w", _FUTURE_ZERO),
             ("out", tensor(values="the output is weights @ V (a running mean of the values here)", atol=1e-12,
                            rtol=1e-12, what="the output")))),
    Case("Q, K, V and the mask after scaled_dot_product_attention", _sdpa_kept,
         compare=fields(*((k, tensor(values="scaled_dot_product_attention changed Q, K, V or the mask in place: "
                                     "build new tensors instead", what=k)) for k in "QKVM"))),
    Case("the output without a mask", lambda names: sdpa_pair(names.scaled_dot_product_attention(*_zero_queries()[:3])),
         errors=_SDPA_ERRORS,
         compare=fields(("out", tensor(values=_NO_MASK, atol=1e-12, rtol=1e-12, what="the output")),
                        ("w", tensor(values=_NO_MASK, atol=1e-12, rtol=1e-12, what="the weights")))),
    # cross-attention: 4 queries look at 7 keys whose values have size 2 (T_q != T_k, d_v != d_k)
    Case("cross-attention (T_q=4, T_k=7, d_v=2)", _cross, errors=_SDPA_ERRORS, diagnoses=(_SWAPPED,),
         compare=fields(("out", _shape_only("the output is (..., T_q, d_v): weights (T_q, T_k) @ V (T_k, d_v)")),
                        ("w", _shape_only("the weights are (T_q, T_k)")))),
    Case("causal attention on random (2, 3, 5, 8) inputs", _sdpa_random(True), errors=_SDPA_ERRORS,
         diagnoses=(when(lambda got, want: not torch.allclose(got["w"].sum(dim=-1), torch.ones_like(got["w"][..., 0])),
                         "each query's weights over the keys must sum to 1 (softmax over the keys, the last "
                         "dimension)"),
                    when(lambda got, want: not torch.allclose(got["out"], got["w @ V"], atol=1e-10, rtol=1e-8),
                         "return the weights you used, as (..., T_q, T_k), without transposing them")),
         compare=fields(("out", tensor(values="scale by sqrt(d_k) = sqrt(8), softmax over the keys (last dimension)",
                                       what="the output", atol=1e-10, rtol=1e-8)),
                        ("w", tensor(what="the weights", atol=1e-10, rtol=1e-8)))),
    Case("attention without a mask on random (2, 3, 5, 8) inputs", _sdpa_random(False), errors=_SDPA_ERRORS,
         compare=fields(("out", tensor(what="the output", atol=1e-10, rtol=1e-8)),
                        ("w", tensor(what="the weights", atol=1e-10, rtol=1e-8)))),
    Case("the dtypes of (output, weights) for float32 inputs",
         lambda names: {k: str(v.dtype) for k, v in _sdpa_random(True, torch.float32)(names).items() if k != "w @ V"},
         errors=_SDPA_ERRORS,
         compare=fields(*((k, _equal(f"the dtype of the {what}", "return the input's dtype: no .double() on the way"))
                          for k, what in (("out", "output"), ("w", "weights"))))),
), standins=("softmax", "attention_scores", "causal_mask"),
    rules=_softmax_rules(_SDPA_RULE, torch=_ATTENTION))

# ------------------------------------------------------------------ MultiHeadAttention

_MASK_HINT = "create the mask inside forward with causal_mask(T).to(x.device, x.dtype)"
_BIAS_HINT = ("with bias=False the layers have no bias (W_q.bias is None): call the layers, self.W_q(x), "
              "rather than using their weight and bias yourself")
_MERGE_HINT = ("after .transpose(1, 2) the tensor is not contiguous in memory, and .view needs it to be: merge "
               "the heads with out.transpose(1, 2).contiguous().view(B, T, C) (or .reshape(B, T, C))")
_SPLIT_HINT = "split with .view(B, T, h, d_k).transpose(1, 2), merge with .transpose(1, 2).contiguous().view(B, T, C)"
_KEEP_NAMES = ("keep the names __init__ gives the layers (W_q, W_k, W_v, W_o, each an nn.Linear(C, C)): the tests "
               "load their weights by these names")
MHA_ERRORS = (("stride", _MERGE_HINT), ("state_dict", _KEEP_NAMES), ("dtype", _MASK_HINT), ("device", _MASK_HINT),
              ("Half", _MASK_HINT), ("BFloat16", _MASK_HINT), ("NoneType", _BIAS_HINT), ("", _SPLIT_HINT))
_LAYERS = ("W_q", "W_k", "W_v", "W_o")


def built(names, n_embd: int, n_head: int, causal: bool = True, bias: bool = True, seed: int = 0,
          dtype=_F64):
    """The student's ``MultiHeadAttention`` with weights chosen here (by the names the prose states),
    the same for the reference's under the same arguments."""
    m = names.MultiHeadAttention(n_embd, n_head, causal=causal, bias=bias)
    g = torch.Generator().manual_seed(seed)
    state = {}
    for layer in _LAYERS:
        state[f"{layer}.weight"] = torch.randn(n_embd, n_embd, generator=g) / math.sqrt(n_embd)
        if bias:
            state[f"{layer}.bias"] = torch.randn(n_embd, generator=g) * 0.1
    m.load_state_dict(state)
    return m.to(dtype)


def _x(shape, seed: int, dtype=_F64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=_F64).to(dtype)


def mha_call(sizes: tuple, shape: tuple, seed: int, weights: bool = True, grads: bool = False):
    """``MultiHeadAttention(*sizes)`` on an input of ``shape``: the output, the weights (with
    ``return_weights=True``) and, with ``grads``, whether every parameter got a finite gradient."""
    def call(names):
        m = built(names, *sizes, seed=seed)
        x = _x(shape, seed + 1)
        if grads:
            y = plain_tensor(m(x.clone()), "the output")
            y.sum().backward()
            bad = unreached(m, finite=True)
            return {"y": y.detach(), "finite": {str(n): str(n) not in bad for n, _ in m.named_parameters()}}
        with torch.no_grad():
            res = m(x.clone(), return_weights=True) if weights else m(x.clone())
        if not weights:
            return plain_tensor(res, "the output")
        pair = sdpa_pair(res, "forward(x, return_weights=True)")
        return {"y": pair["out"], "w": pair["w"]}
    return call


def _grads_finite(got: dict, want: dict) -> str | None:
    if set(got) != set(want):
        return f"the parameters are {sorted(got)}, expected {sorted(want)} — " + _KEEP_NAMES
    bad = sorted(n for n, ok in got.items() if not ok)
    return None if not bad else (f"no finite gradient reached {', '.join(bad)}: every weight of MultiHeadAttention "
                                 "should receive a finite gradient (no torch.no_grad() or .detach() inside forward)")


def _with_torch(hint: str) -> Compare:
    return fields(("y", tensor(shape="the heads are concatenated back to (B, T, C) and projected with W_o",
                               dtype=_MASK_HINT, values=hint, atol=1e-10, rtol=1e-8, what="the output")),
                  ("w", tensor(shape="split C into h heads of d_k = C / h: (B, T, C) -> (B, h, T, d_k); weights are "
                               "(B, h, T, T)", values="return the weights of every head, (B, h, T, T), as "
                               "scaled_dot_product_attention gives them", atol=1e-10, rtol=1e-8, what="the weights")))


def _mha_kept(names):
    m = built(names, 16, 4, seed=304)
    x = _x((2, 5, 16), 305)
    with torch.no_grad():
        m(x)
    return x


def _mha_pair(names):
    m = built(names, 16, 4, seed=304)
    with torch.no_grad():
        res = m(_x((2, 5, 16), 305), return_weights=True)
    return sdpa_pair(res, "forward(x, return_weights=True)")


def _mha_causal(names):
    m = built(names, 16, 4, seed=304)
    x = _x((2, 5, 16), 305)
    x2 = x.clone()
    x2[:, 3:] = _x((2, 2, 16), 306)
    with torch.no_grad():
        a, b = plain_tensor(m(x), "the output"), plain_tensor(m(x2), "the output")
    return {"a": a[:, :3], "b": b[:, :3]}


def _mha_permuted(names):
    m = built(names, 16, 4, causal=False, seed=304)
    x = _x((2, 5, 16), 305)
    perm = torch.tensor([3, 0, 4, 1, 2])
    with torch.no_grad():
        a, b = plain_tensor(m(x[:, perm]), "the output"), plain_tensor(m(x), "the output")
    return {"a": a, "b": b[:, perm]}


def _mha_dtype(dtype):
    def call(names):
        m = built(names, 8, 2, seed=307, dtype=dtype)
        with torch.no_grad():
            return str(plain_tensor(m(_x((2, 6, 8), 308, dtype)), "the output").dtype)
    return call


def _mha_bf16(names):
    m16, m64 = built(names, 8, 2, seed=307, dtype=torch.bfloat16), built(names, 8, 2, seed=307)
    m64.load_state_dict({k: v.double() for k, v in m16.state_dict().items()})
    x16 = _x((2, 6, 8), 308, torch.bfloat16)
    with torch.no_grad():
        return {"a": plain_tensor(m16(x16), "the output"), "b": plain_tensor(m64(x16.double()), "the output")}


def _mha_meta(names):
    m = built(names, 8, 2, seed=307, dtype=torch.float32).to("meta")
    return tolerate_meta(lambda: m(torch.empty(2, 6, 8, device="meta")))


_SIZE = "MultiHeadAttention(16, 4) on x of shape (2, 5, 16)"
_VS = "vs nn.MultiheadAttention with the same weights"

MULTI_HEAD_ATTENTION = Exercise("multi_head_attention", (
    Case(_SIZE, mha_call((16, 4), (2, 5, 16), 304, weights=False), errors=MHA_ERRORS,
         compare=_shape_only("the heads are concatenated back to (B, T, C) and projected with W_o")),
    Case(f"x after {_SIZE}", _mha_kept, errors=MHA_ERRORS,
         compare=_kept("forward changed its input x in place: build new tensors instead")),
    Case("MultiHeadAttention(16, 4)(x, return_weights=True)", _mha_pair,
         errors=(("should return a tuple", "with return_weights=True, forward returns the pair (output, weights)"),)
         + MHA_ERRORS,
         diagnoses=(_SWAPPED,),
         compare=fields(("w", _shape_only("split C = 16 into h = 4 heads of d_k = 4: (B, T, C) -> (B, h, T, d_k); "
                                          "weights are (B, h, T, T)")))),
    Case(f"MultiHeadAttention(16, 1, causal=True) {_VS}", mha_call((16, 1, True), (2, 5, 16), 160), errors=MHA_ERRORS,
         compare=_with_torch("with a single head: scale by sqrt(d_k), add the causal mask before the softmax, and "
                             "apply W_o to the result")),
    Case(f"MultiHeadAttention(16, 4, causal=True) {_VS}", mha_call((16, 4, True), (2, 5, 16), 164), errors=MHA_ERRORS,
         compare=_with_torch("one head works but four do not? Split heads with .view(B, T, h, d_k).transpose(1, 2), "
                             "scale by sqrt(d_k) where d_k = C / h (not sqrt(C)), merge with "
                             ".transpose(1, 2).contiguous().view(B, T, C)")),
    Case(f"MultiHeadAttention(16, 4, causal=False) {_VS}", mha_call((16, 4, False), (2, 5, 16), 165),
         errors=MHA_ERRORS, compare=_with_torch("causal=False means no mask at all")),
    Case(f"MultiHeadAttention(16, 4, causal=True, bias=False) {_VS}", mha_call((16, 4, True, False), (2, 5, 16), 166),
         errors=MHA_ERRORS, compare=_with_torch(_BIAS_HINT)),
    # causality: changing the tokens after position t must leave outputs 0..t unchanged
    Case("outputs at positions 0..2 after changing the inputs at 3..4", _mha_causal, errors=MHA_ERRORS,
         compare=_same("the outputs before and after", "with causal=True the mask must hide the future from every "
                       "head")),
    # without a mask, permuting the positions permutes the outputs
    Case("output of a permuted input (causal=False)", _mha_permuted, errors=MHA_ERRORS,
         compare=_same("the output of the permuted input against the permuted output", "self-attention without a "
                       "mask treats the input as a set: work on each (batch, head) pair along the T dimension only",
                       atol=1e-10)),
    # training back-propagates through the layer: every weight gets a finite gradient
    Case("the gradients of MultiHeadAttention(16, 4)",
         lambda names: mha_call((16, 4), (2, 5, 16), 304, grads=True)(names)["finite"],
         errors=MHA_ERRORS, compare=_grads_finite),
    # the input's dtype and device: float32 in, float32 out; a bfloat16 layer shows a mask left in float32,
    # and the "meta" device (shapes, no values: it stands in for a GPU here) a mask left on the CPU
    Case("dtype of the output for a float32 input", _mha_dtype(torch.float32), errors=MHA_ERRORS,
         compare=_equal("the dtype", _MASK_HINT)),
    Case("dtype of the output for a bfloat16 input", _mha_dtype(torch.bfloat16), errors=MHA_ERRORS,
         compare=_equal("the dtype", _MASK_HINT)),
    Case("MultiHeadAttention(8, 2) in bfloat16 vs float64", _mha_bf16, errors=MHA_ERRORS,
         compare=_same("the two outputs", _MASK_HINT, atol=0.05)),
    Case("device of the output for an input on the meta device", _mha_meta, errors=MHA_ERRORS,
         compare=_equal("the device", _MASK_HINT)),
), standins=("softmax", "attention_scores", "causal_mask", "scaled_dot_product_attention"), answer="MultiHeadAttention",
    rules=_softmax_rules(_MHA_RULE, torch=_ATTENTION))


NOTEBOOK = Notebook(
    "03_attention", reference="lmcourse.reference.attention", hidden="lmcourse.marking.attention_hidden",
    exercises=(SOFTMAX, ATTENTION_SCORES, Q_MASK, Q_SOFTMAX, CAUSAL_MASK, SCALED_DOT_PRODUCT_ATTENTION, Q_SWAP,
               MULTI_HEAD_ATTENTION),
    # lmcourse.nn.attention is the attention later notebooks are given: it does 03's work, so it is absent
    # here too (03's comparison with it runs at home only), and with it what is built on it
    withheld=("lmcourse.reference.attention", "lmcourse.nn.attention"))
