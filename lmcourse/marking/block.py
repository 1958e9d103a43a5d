"""Notebook 04's tests (the transformer block): the visible cases, with the hints that teach.

Each case builds its own inputs and, for a module, the student's module with the test's weights (seeded
by the parameter's name, loaded by the names the prose states), calls it and returns what the judge
compares; the expected value is the same call on the reference's names (:mod:`lmcourse.reference.block`,
itself checked against ``F.layer_norm``, ``nn.LayerNorm`` and ``nn.TransformerEncoderLayer`` in the
course's tests). The hidden cases are in :mod:`.block_hidden`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .refusals import python_decompositions
from .rules import Later, exercise_rules
from .show import show
from .spec import Case, Compare, Exercise, Notebook, question, when
from .tensors import (
    DeviceLog,
    equal,
    fields,
    grads,
    named_grads,
    plain_tensor,
    seed_cpu,
    seeded_generator,
    seeded_weights,
    tensor,
    unreached,
)

__all__ = ["NOTEBOOK", "DeviceLog", "seeded"]

NORMS = ("layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm")


# the course code that does this notebook's work where a kernel has it (a graded kernel withholds lmcourse.nn.block,
# and what imports it cannot load there), and torch's encoder layer
_COURSE = (nn.TransformerEncoderLayer, "lmcourse.nn.block", "lmcourse.nn.gpt:GPT", "lmcourse.reference.mlm:MaskedLM",
           "lmcourse.nn.seq2seq")
# torch's normalisations written in Python (torch._refs, torch._decomp), found when a case starts
_DECOMPOSITIONS = Later(lambda: python_decompositions(*NORMS, "_normalize"))
_SCRIPTED = (torch.jit.RecursiveScriptModule, torch.jit.ScriptModule)


# ------------------------------------------------------------------ comparing tensors

def seeded(module: nn.Module, seed: int, scale: float = 0.5, gain: float = 0.0, dtype=torch.float64) -> nn.Module:
    """``module`` in ``dtype`` with every parameter drawn afresh from a generator seeded by ``seed`` and the
    parameter's name (so the reference's module gets the same weights under the same names); one-dimensional
    parameters (biases, LayerNorm gains and shifts) around ``gain``. Parameters are set in place, by name."""
    return seeded_weights(module, seed, scale, gain, dtype=dtype)


def _dtype(names, make, *shape, seed=0):
    """The dtype of what ``make(names)`` returns for a float32 input of ``shape``."""
    with torch.no_grad():
        y = plain_tensor(make(names)(torch.randn(*shape, generator=seeded_generator(seed))), "the output")
    return str(y.dtype)


def _dropout_compare(what: str, where: str) -> Compare:
    """Training mode with p = 0.5: about half the entries zeroed, the kept ones 2x the eval output (the
    reference's, on the same weights)."""
    def compare(got: Any, want: Any) -> str | None:
        train, ref = plain_tensor(got["train"], "the output"), want["eval"]
        if tuple(train.shape) != tuple(ref.shape):
            return f"{what}: shape {tuple(train.shape)}, expected {tuple(ref.shape)}"
        zeros = train == 0
        if not bool(zeros.any()) or bool(zeros.all()):
            return f"{what} in training mode should zero about half of the output entries — {where}"
        if not torch.allclose(train[~zeros].double(), 2 * ref[~zeros].double(), atol=1e-6, rtol=1e-6):
            return (f"the entries dropout keeps (p = 0.5) in {what} are not 2x the eval-mode output — {where}; "
                    "the kept entries are scaled by 1 / (1 - p)")
        return None
    return compare


# ------------------------------------------------------------------ 1. layer_norm

_F64 = torch.float64
_LN_ROWS = [[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]]


def _ln_rows(gamma, beta, eps, rows=2):
    def call(names):
        x = torch.tensor(_LN_ROWS[:rows], dtype=_F64)
        y = names.layer_norm(x, torch.tensor(gamma, dtype=_F64), torch.tensor(beta, dtype=_F64), eps=eps)
        return {"y": plain_tensor(y, "the output"), "x": x}
    return call


_IN_PLACE = "do not change x in place (x -= mu, x.sub_(...)): compute new tensors"


def _ln_compare(values: str, what: str) -> Compare:
    return fields(("x", tensor(values=_IN_PLACE, what="your input x after calling layer_norm")),
                  ("y", tensor(dtype="compute with the input's dtype: no fixed dtype, .float() or .double() inside",
                               values=values, atol=1e-12, rtol=1e-12, what=what)))


def _ln_batch(names):
    """A (2, 3, 6) float64 input that requires grad: the output and the gradients of sum(y * w)."""
    g = seeded_generator(401)
    x = (torch.randn(2, 3, 6, generator=g, dtype=_F64) * 3 + 2).requires_grad_()
    gamma = torch.randn(6, generator=g, dtype=_F64).requires_grad_()
    beta = torch.randn(6, generator=g, dtype=_F64).requires_grad_()
    w = torch.randn(2, 3, 6, generator=g, dtype=_F64)
    y = plain_tensor(names.layer_norm(x, gamma, beta), "the output")
    got = torch.autograd.grad((y * w).sum(), (x, gamma, beta), allow_unused=True)
    return {"y": y.detach().clone(),
            "grads": named_grads(("x", "gamma", "beta"), got)}


_LN_BATCH = fields(
    ("y", tensor(values="every (batch, time) position is normalised on its own: mean and variance over the last "
                        "dimension with keepdim=True (dim=-1), never over the batch or time axis",
                 atol=1e-10, rtol=1e-10, what="layer_norm of a (2, 3, 6) tensor")),
    ("grads", grads("the gradient of layer_norm with respect to {}",
                    "the gradient must flow through the mean and the variance too: no .detach() or torch.no_grad() "
                    "inside", missing="no gradient reaches {0}: build the result from {0} with tensor operations (no "
                    ".detach(), .item() or torch.tensor(...) on it)")))


def _ln_const(names):
    return names.layer_norm(torch.full((2, 4), 3.0, dtype=_F64), torch.ones(4, dtype=_F64), torch.zeros(4, dtype=_F64))


def _ln_float32(names):
    g = seeded_generator(401)
    for shape in ((2, 3, 6), (6,), (6,), (2, 3, 6)):     # the draws of the batch case come first
        torch.randn(*shape, generator=g, dtype=_F64)
    y = plain_tensor(names.layer_norm(torch.randn(3, 5, generator=g), torch.ones(5), torch.zeros(5)), "the output")
    return str(y.dtype)


def _ln_meta(names):
    return names.layer_norm(torch.empty(2, 5, device="meta"), torch.ones(5, device="meta"),
                            torch.zeros(5, device="meta"))


_BROADCAST = ("reduce over the last dimension with keepdim=True, so that the mean (..., 1) broadcasts against x "
              "(..., d)")

_LN_ERRS = (("must match the size", _BROADCAST),)

LAYER_NORM = Exercise("layer_norm", (
    Case("layer_norm of the rows [1, 2, 3, 4] and [10, 20, 30, 40] with gamma = 1, beta = 0, eps = 0",
         _ln_rows([1.0] * 4, [0.0] * 4, 0.0),
         compare=_ln_compare("each row (position) is normalised on its own: mean and variance over the last dimension "
                             "(dim=-1, keepdim=True), never over the rows; and the variance divides by d = 4, not "
                             "d - 1 = 3 (x.var() is unbiased by default: use ((x - mu) ** 2).mean(...) or "
                             "x.var(..., unbiased=False)); with gamma = 1 and beta = 0 the result is the normalised x "
                             "itself (gamma multiplies, beta is added)", "layer_norm of the two rows"),
         errors=_LN_ERRS),
    Case("layer_norm([1, 2, 3, 4]) with eps = 0.25", _ln_rows([1.0] * 4, [0.0] * 4, 0.25, rows=1),
         compare=_ln_compare("eps goes inside the square root: sqrt(var + eps), not sqrt(var) + eps",
                             "layer_norm([1, 2, 3, 4]) with eps = 0.25"), errors=_LN_ERRS),
    Case("layer_norm([1, 2, 3, 4]) with gamma = [1, 2, 3, 4], beta = [10, 20, 30, 40]",
         _ln_rows([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0], 0.0, rows=1),
         compare=_ln_compare("gamma multiplies the normalised vector and beta is added: gamma * x_hat + beta",
                             "layer_norm with gamma and beta"), errors=_LN_ERRS),
    Case("layer_norm on a (2, 3, 6) tensor that requires grad, values and gradients", _ln_batch, compare=_LN_BATCH,
         errors=(("in-place", "use out-of-place operations only (x - mu, not x -= mu)"), *_LN_ERRS)),
    Case("layer_norm of a constant vector", _ln_const,
         compare=tensor(values="x - mu is 0 and eps keeps sqrt(var + eps) positive: the result is 0 (plus beta), "
                               "not nan", what="layer_norm of a constant vector")),
    Case("the dtype of layer_norm of a float32 tensor", _ln_float32,
         compare=equal("the dtype", "compute with the input's dtype: no float64 constants or .double() inside")),
    Case("layer_norm on the 'meta' device", _ln_meta,
         compare=tensor(device="the output must live where the input lives", what="layer_norm's output"),
         errors=(("meta", "create no tensors on a fixed device inside; eps is a plain number"),
                 ("device", "create no tensors on a fixed device inside; eps is a plain number"))),
), rules=exercise_rules("write layer_norm from .mean(), .sqrt() and arithmetic, not a ready-made normalisation",
                        *_COURSE, _DECOMPOSITIONS, torch=NORMS, kernels=NORMS))


# ------------------------------------------------------------------ 2. LayerNorm

_PARAM_NAMES = "keep the parameter names weight and bias (gamma and beta, as in nn.LayerNorm)"


_DEFAULT_DTYPE = ("create the parameters with torch.ones(n_embd) / torch.zeros(n_embd), in the default dtype: a "
                  "float64 parameter would turn a float32 input into float64")


def _ln_init(names):
    ln = names.LayerNorm(6)
    params = dict(ln.named_parameters())
    return {"names": sorted(params), "weight": params.get("weight"), "bias": params.get("bias"), "eps": ln.eps}


_LN_INIT = fields(
    ("names", equal("the parameters of LayerNorm(6)", "LayerNorm(6) should have the parameters 'weight' and 'bias' "
                    "(gamma and beta, as in nn.LayerNorm), registered with nn.Parameter")),
    ("weight", tensor(values="gamma starts at ones: nn.Parameter(torch.ones(n_embd))", dtype=_DEFAULT_DTYPE,
                      what="LayerNorm(6).weight at initialisation")),
    ("bias", tensor(values="beta starts at zeros: nn.Parameter(torch.zeros(n_embd))", dtype=_DEFAULT_DTYPE,
                    what="LayerNorm(6).bias at initialisation")),
    ("eps", equal("LayerNorm(6).eps", "store the eps argument as self.eps (default 1e-5)")))


def _ln_module(names):
    g = seeded_generator(402)
    ln = names.LayerNorm(6, eps=1e-3).double()
    with torch.no_grad():
        ln.weight.copy_(torch.randn(6, generator=g))
        ln.bias.copy_(torch.randn(6, generator=g))
    x = torch.randn(2, 4, 6, generator=g, dtype=_F64) * 4
    y = plain_tensor(ln(x), "the output")
    got = torch.autograd.grad(y.pow(2).sum(), (ln.weight, ln.bias), allow_unused=True)
    return {"y": y.detach().clone(),
            "grads": named_grads(("weight", "bias"), got)}


_LN_MODULE = fields(
    ("y", tensor(values="forward returns layer_norm(x, self.weight, self.bias, self.eps): pass your parameters and "
                        "eps, not fresh ones and zeros", atol=1e-10, rtol=1e-10,
                 what="its output")),
    ("grads", grads("the gradient of LayerNorm.{}", "use self.weight and self.bias in forward",
                    missing="no gradient reaches LayerNorm.{0}: register it with nn.Parameter and use it")))

_LN_ERRORS = (("'LayerNorm' object has no attribute", "store eps as self.eps, gamma as self.weight and beta as "
                                                      "self.bias"),
              ("does not require grad", "no gradient reaches weight or bias: register them with nn.Parameter"))

LAYER_NORM_MODULE = Exercise("layer_norm_module", (
    Case("LayerNorm(6) at initialisation", _ln_init, compare=_LN_INIT, errors=_LN_ERRORS),
    Case("LayerNorm(6, eps=1e-3) with the test's weights", _ln_module,
         compare=_LN_MODULE, errors=_LN_ERRORS),
    Case("the dtype of LayerNorm(6)'s output for a float32 input",
         lambda names: _dtype(names, lambda n: n.LayerNorm(6), 2, 6, seed=402),
         compare=equal("the dtype", "create the parameters with torch.ones(n_embd) / torch.zeros(n_embd), in the "
                                    "default dtype: a float64 parameter would turn a float32 input into float64")),
), standins=("layer_norm",), answer="LayerNorm",
    rules=exercise_rules("a LayerNorm module must compute the normalisation itself (through layer_norm), not call a "
                         "ready-made one", *_COURSE, _DECOMPOSITIONS, torch=NORMS, kernels=NORMS))


# ------------------------------------------------------------------ 3. MLP

def _mlp_shapes(names):
    m = names.MLP(8)
    linear = isinstance(getattr(m, "c_fc", None), nn.Linear) and isinstance(getattr(m, "c_proj", None), nn.Linear)
    if not linear:
        return {"linear": False}
    return {"linear": True, "c_fc": tuple(m.c_fc.weight.shape), "c_proj": tuple(m.c_proj.weight.shape)}


def _mlp_shapes_compare(got, want):
    if type(got) is not dict or not got.get("linear"):
        return "MLP needs the layers self.c_fc and self.c_proj, both nn.Linear"
    return fields(("c_fc", equal("the shape of MLP(8).c_fc.weight (out, in)", "the hidden layer is 4 times wider "
                                 "than the stream: nn.Linear(n_embd, 4 * n_embd)")),
                  ("c_proj", equal("the shape of MLP(8).c_proj.weight (out, in)",
                                   "c_proj maps the 4 * n_embd hidden units back to n_embd")),
                  ("linear", equal("the layers")))(got, want)


def mlp_case(C, bias=True, seed=403, shape=(2, 5), grads_=False):
    """MLP(C, bias=bias) with the test's weights (float64) on a seeded x: the output, x after the call and,
    with ``grads_``, the parameters no gradient reaches."""
    def call(names):
        m = seeded(names.MLP(C, bias=bias), seed)
        x = torch.randn(*shape, C, generator=seeded_generator(seed + 1), dtype=_F64) * 2
        with torch.set_grad_enabled(grads_):
            y = plain_tensor(m(x), "the output")
        out = {"y": y.detach().clone(), "x": x, "params": sum(p.numel() for p in m.parameters())}
        if grads_:
            y.sum().backward()
            out["no_grad"] = unreached(m)
        return out
    return call


_GELU = ("the activation is the exact GELU (nn.GELU() or F.gelu(h)): not ReLU, not approximate='tanh'; and it goes "
         "between c_fc and c_proj, not after c_proj")


def mlp_compare(label: str) -> Compare:
    def compare(got, want):
        diff = (tensor(values="do not change x in place", what=f"your input after calling {label}")(got["x"], want["x"])
                or equal(f"the number of parameters of {label}", "c_fc: n_embd -> 4 * n_embd, c_proj back; "
                         "biases only with bias=True")(got["params"], want["params"])
                or tensor(shape="the MLP keeps the shape (B, T, C)", values=_GELU, atol=1e-10, rtol=1e-10,
                          what=f"{label} vs c_proj(GELU(c_fc(x)))")(got["y"], want["y"]))
        if diff or "no_grad" not in want:
            return diff
        return equal("the MLP weights no gradient reaches", "every MLP weight should receive a gradient: no "
                     ".detach() or torch.no_grad() inside")(got["no_grad"], want["no_grad"])
    return compare


def _mlp_eval(names):
    m = seeded(names.MLP(8, dropout=0.5), 403).eval()
    x = torch.randn(2, 5, 8, generator=seeded_generator(404), dtype=_F64) * 2
    with torch.no_grad():
        first = plain_tensor(m(x), "the output")
        second = plain_tensor(m(x), "the output")
    return {"eval": first, "same": bool(torch.equal(first, second))}


_EVAL_HINT = ("in eval mode dropout must do nothing: use the nn.Dropout module (it follows model.train()/eval()), or "
              "F.dropout(h, p, training=self.training) — F.dropout's default is training=True")


def _mlp_train(names):
    m = seeded(names.MLP(8, dropout=0.5), 403).train()
    x = torch.randn(2, 5, 8, generator=seeded_generator(404), dtype=_F64) * 2
    seed_cpu(405)
    with torch.no_grad():
        train = plain_tensor(m(x), "the output")
        m.eval()
        ev = plain_tensor(m(x), "the output")
    return {"train": train, "eval": ev}


def _mlp_no_bias(names):
    m = names.MLP(8, bias=False)
    return [m.c_fc.bias is None, m.c_proj.bias is None]


MLP_EX = Exercise("mlp", (
    Case("MLP(8): its layers", _mlp_shapes, compare=_mlp_shapes_compare),
    Case("MLP(8) on a (2, 5, 8) input with the test's weights", mlp_case(8, grads_=True),
         compare=mlp_compare("MLP(8)"),
         errors=(("'MLP' object has no attribute", "keep the layer names c_fc, c_proj and dropout (the test loads "
                                                   "its weights by them)"),)),
    Case("MLP(8, dropout=0.5) in eval mode", _mlp_eval,
         compare=fields(("eval", tensor(values=_EVAL_HINT, atol=1e-10, rtol=1e-10,
                                        what="MLP(8, dropout=0.5) in eval mode")),
                        ("same", equal("two calls in eval mode give the same output", _EVAL_HINT)))),
    Case("the dtype of MLP(8)'s output for a float32 input",
         lambda names: _dtype(names, lambda n: n.MLP(8), 2, 3, 8, seed=404),
         compare=equal("the dtype", "keep the input's dtype: no .double() or float64 constants inside forward")),
    Case("MLP(8, bias=False): c_fc.bias and c_proj.bias are None", _mlp_no_bias,
         compare=equal("biases left out", "MLP(8, bias=False) should have no biases: pass bias=bias to both "
                                          "nn.Linear layers")),
    Case("MLP(8, dropout=0.5) in training mode", _mlp_train,
         compare=_dropout_compare("MLP(8, dropout=0.5)", "apply self.dropout once, last, to the output of c_proj")),
), answer="MLP", rules=exercise_rules("write the MLP from nn.Linear, a GELU and nn.Dropout, not the course's "
                                      "reference MLP or torch's encoder layer", *_COURSE, *_SCRIPTED))


# ------------------------------------------------------------------ 4. sinusoidal_positions

def _table_compare(got, want):
    """The table of (3, 4) in float64, the formula first (to float32's precision), then float64's."""
    what = "sinusoidal_positions(3, 4, dtype=torch.float64)"
    if type(got) is not torch.Tensor:
        return f"{what}: got {show(got)}, expected a torch.Tensor"
    steps = [
        (lambda t: t, tensor(shape="one row per position t = 0..T-1, one column per channel",
                             dtype="return the table in the dtype argument: compute, then .to(dtype)", atol=math.inf,
                             what=what)),
        (lambda t: t[0], tensor(values="at t = 0 sines are 0 and cosines 1: sin goes to the even columns 0, 2, ... "
                                       "and cos to the odd columns 1, 3, ...", atol=1e-6, what="row t = 0")),
        (lambda t: t[:, :2], tensor(values="pair i = 0 has frequency 10000^0 = 1: PE(t, 0) = sin(t), PE(t, 1) = "
                                           "cos(t)", atol=1e-6, what="columns 0 and 1 (the fastest pair, w_0 = 1)")),
        (lambda t: t[:, 2:], tensor(values="the exponent is 2i/d with i counting pairs (so pair 1 of d = 4 has "
                                           "10000^(-1/2)), not i/d; and the base is 10000", atol=1e-6,
                                    what="columns 2 and 3 (pair i = 1 of d = 4: w_1 = 10000^(-2/4) = 0.01)")),
        (lambda t: t, tensor(values="the formula is right, the precision is not: the values agree to about 1e-7 "
                                    "(float32's precision), so the table was computed in float32 and converted. "
                                    "Compute it in float64 (or in dtype) and convert at the end: a float32 table cast "
                                    "to float64 keeps float32's rounding", atol=1e-12,
                             what=f"{what} to float64 precision")),
    ]
    for part, cmp in steps:
        diff = cmp(part(got), part(want))
        if diff:
            return diff
    return None


def _table(T, d, dtype=None):
    def call(names):
        return names.sinusoidal_positions(T, d) if dtype is None else names.sinusoidal_positions(T, d, dtype=dtype)
    return call


SINUSOIDAL = Exercise("sinusoidal_positions", (
    Case("sinusoidal_positions(3, 4, dtype=torch.float64)", _table(3, 4, _F64), compare=_table_compare),
    Case("sinusoidal_positions(5, 6)", _table(5, 6),
         compare=tensor(dtype="return the table in the dtype argument (default float32): .to(dtype)",
                        atol=1e-6, rtol=1e-6, what="sinusoidal_positions(5, 6)")),
), rules=exercise_rules("build the table yourself, not with lmcourse.nn's sinusoidal_positions", *_COURSE))


# ------------------------------------------------------------------ 5. rotation_matrix

_BLOCKS = ("block i is [[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]] with w_i = 10000^(-2i/d), i counting "
           "pairs; a transposed block moves backwards")


def _rotations(names):
    return {k: names.rotation_matrix(k, 8, dtype=_F64) for k in (0, 1, 3, 10, 50)}


def _pe_table(T: int, d: int) -> torch.Tensor:
    """A correct sinusoidal table in float64, built here: the judge runs in the student's kernel at home, where
    a release for this notebook has neither the reference nor the course's lmcourse.nn.block."""
    pos = torch.arange(T, dtype=_F64)[:, None]
    angles = pos * 10000.0 ** (-torch.arange(0, d, 2, dtype=_F64) / d)
    table = torch.zeros(T, d, dtype=_F64)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table


def _shifts_compare(got, want):
    """R_k for d = 8: the shape, R_0, the zeros off the blocks, then PE(t + k) = R_k PE(t) on a correct table."""
    if type(got) is not dict or set(got) != set(want):
        return f"got {show(got)}, expected a dict with {sorted(want)}"
    r3 = got[3]
    diff = (tensor(what="rotation_matrix(3, 8)")(r3, want[3]) if type(r3) is not torch.Tensor
            or tuple(r3.shape) != (8, 8) or r3.dtype != _F64 else None)
    diff = diff or tensor(values="moving by 0 positions changes nothing: R_0 is the identity", atol=1e-12,
                          what="rotation_matrix(0, 8)")(got[0], want[0])
    diff = diff or tensor(values="R_k is block-diagonal: pair i only mixes channels 2i and 2i + 1",
                          what="rotation_matrix(3, 8) outside its 2x2 diagonal blocks (rows 0-1)")(
        r3[0:2, 2:], want[3][0:2, 2:])
    if diff:
        return diff
    table = _pe_table(128, 8)
    for k, R in got.items():
        diff = tensor(what=f"rotation_matrix({k}, 8)")(R, want[k]) if type(R) is not torch.Tensor or \
            tuple(R.shape) != (8, 8) or R.dtype != _F64 else None
        if diff:
            return diff
        for t in (0, 1, 7, 40, 70):
            diff = tensor(values=_BLOCKS, atol=1e-10, what=f"R_{k} @ PE({t}) vs PE({t + k}) for d = 8")(
                R @ table[t], table[t + k])
            if diff:
                return diff
    return None


ROTATION = Exercise("rotation_matrix", (
    Case("rotation_matrix(1, 2)", lambda names: names.rotation_matrix(1, 2, dtype=_F64),
         diagnoses=(when(lambda got, want: torch.allclose(got, want.T, atol=1e-12, rtol=0),
                         "one pair with w_0 = 1: [[cos k, sin k], [-sin k, cos k]] — the minus sign is in the second "
                         "row (the transpose rotates by -k, moving backwards)"),),
         compare=tensor(values="the only pair of d = 2 is i = 0, with w_0 = 10000^(-2 * 0 / 2) = 1: the exponent is "
                               "2i/d with i counting pairs from 0, and the block sits on rows and columns 0 and 1",
                        atol=1e-12, what="rotation_matrix(1, 2)")),
    Case("rotation_matrix(k, 8) for k = 0, 1, 3, 10, 50", _rotations, compare=_shifts_compare),
    Case("the dtype of rotation_matrix(2, 8)", lambda names: str(plain_tensor(names.rotation_matrix(2, 8), "R").dtype),
         compare=equal("the dtype", "return .to(dtype)")),
), standins=("sinusoidal_positions",),
    rules=exercise_rules("build R_k yourself, not with lmcourse.nn's rotation_matrix", *_COURSE))


# ------------------------------------------------------------------ 6. Embeddings

_IDX = [[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]]


def _emb(names, learned=True, dropout=0.0, seed=407):
    return seeded(names.Embeddings(11, 6, 8, learned=learned, dropout=dropout), seed, scale=1.0, dtype=torch.float32)


def _emb_call(learned):
    def call(names):
        m = _emb(names, learned)
        with torch.no_grad():
            return plain_tensor(m(torch.tensor(_IDX)), "the output")
    return call


_SUM = ("x_t = wte[w_t] + p_t, each added once: positions 0..T-1, the same for every sequence in the batch")
_BROADCAST_POS = "token vectors (B, T, C) plus position vectors (T, C), which broadcast over the batch"
_POS_ERRORS = (("index out of range", "the positions are 0..T-1 (torch.arange(T)), not the token ids"),
               ("must match the size", "the positions are 0..T-1 with T = idx.shape[1] (idx is (B, T)): the first T "
                                       "rows of the table, broadcast over the batch"))


def _emb_eval(names):
    m = _emb(names, dropout=0.5, seed=408).eval()
    with torch.no_grad():
        return plain_tensor(m(torch.tensor(_IDX)), "the output")


def _emb_train(names):
    m = _emb(names, dropout=0.5, seed=408).train()
    seed_cpu(409)
    with torch.no_grad():
        train = plain_tensor(m(torch.tensor(_IDX)), "the output")
        m.eval()
        ev = plain_tensor(m(torch.tensor(_IDX)), "the output")
    return {"train": train, "eval": ev}


def _emb_meta(names):
    m = names.Embeddings(11, 6, 8).to("meta")
    log = DeviceLog()
    with log, torch.no_grad():
        out = plain_tensor(m(torch.zeros(2, 5, dtype=torch.long, device="meta")), "the output")
    return {"mixed": list(log.mixed), "out": out}


def _emb_meta_compare(got, want):
    if got["mixed"]:
        return (f"with the module and idx on the 'meta' device, your forward mixed devices in {got['mixed'][:2]}: "
                "make the positions on idx's device, torch.arange(T, device=idx.device)")
    return tensor(device="the output lives on idx's device", what="the device of Embeddings' output for ids on "
                  "'meta'")(got["out"], want["out"])


EMBEDDINGS = Exercise("embeddings", (
    Case("learned Embeddings(11, 6, 8) on ids of shape (2, 5)", _emb_call(True),
         compare=tensor(shape=_BROADCAST_POS, values=_SUM, atol=1e-6, rtol=1e-6, what="learned Embeddings"),
         errors=_POS_ERRORS),
    Case("sinusoidal Embeddings(11, 6, 8, learned=False) on ids of shape (2, 5)", _emb_call(False),
         compare=tensor(shape=_BROADCAST_POS, values="with learned=False the position vectors are the first T rows "
                                                     "of self.pe", atol=1e-6, rtol=1e-6,
                        what="sinusoidal Embeddings"), errors=_POS_ERRORS),
    Case("Embeddings(11, 6, 8, dropout=0.5) in eval mode", _emb_eval,
         compare=tensor(values="in eval mode dropout must do nothing: use the module self.drop, which follows "
                               "model.train() / model.eval()", atol=1e-6, rtol=1e-6,
                        what="Embeddings(11, 6, 8, dropout=0.5) in eval mode"), errors=_POS_ERRORS),
    Case("Embeddings(11, 6, 8, dropout=0.5) in training mode", _emb_train,
         compare=_dropout_compare("Embeddings(11, 6, 8, dropout=0.5)",
                                  "return self.drop(wte(idx) + p): dropout once, on the sum, not on the positions "
                                  "alone, and not left out"), errors=_POS_ERRORS),
    Case("Embeddings(11, 6, 8) on the 'meta' device", _emb_meta, compare=_emb_meta_compare,
         errors=(("meta", "make the positions on idx's device, torch.arange(T, device=idx.device)"),
                 ("device", "make the positions on idx's device, torch.arange(T, device=idx.device)"))),
), standins=("sinusoidal_positions",), answer="Embeddings",
    rules=exercise_rules("add the embeddings yourself, not with lmcourse.nn's position embeddings", *_COURSE,
                         *_SCRIPTED))


# ------------------------------------------------------------------ the multiple-choice questions

Q_SWAP_POS, Q_SWAP_POS_LETTER = question("q_swap_pos", "answer_q_swap_pos", "ABC")
Q_PRELN, Q_PRELN_LETTER = question("q_preln", "answer_q_preln", "ABC")


# ------------------------------------------------------------------ 7. Block

_BLOCK_NAMES = "ln1, attn, ln2, mlp"


def block_case(C, nh, T, prenorm, causal, seed, grads_=False):
    """Block(C, nh, block_size=T, prenorm, causal) with the test's weights (float64; LayerNorm gains around 1) on a
    seeded x (2, T, C): the output, x after the call and, with ``grads_``, the parameters no finite gradient reaches."""
    def call(names):
        seed_cpu(seed)
        blk = seeded(names.Block(C, nh, block_size=T, prenorm=prenorm, causal=causal), seed, gain=1.0)
        x = torch.randn(2, T, C, generator=seeded_generator(seed), dtype=_F64)
        with torch.set_grad_enabled(grads_):
            y = plain_tensor(blk(x), "the output")
        out = {"y": y.detach().clone(), "x": x}
        if grads_:
            y.pow(2).sum().backward()
            out["no_grad"] = unreached(blk, finite=True)
        return out
    return call


_PRE_HINT = ("pre-LN: x = x + attn(ln1(x)), then x + mlp(ln2(x)) — the LayerNorm on what the sub-layer reads, the "
             "residual added outside it, and no LayerNorm after the sum")
_POST_HINT = ("post-LN: x = ln1(x + attn(x)), then ln2(x + mlp(x)) — the sub-layer reads the un-normalised x, and the "
              "LayerNorm wraps the whole residual sum")


def block_compare(label: str, values: str) -> Compare:
    def compare(got, want):
        diff = (tensor(shape="a block keeps the shape (B, T, C)", values=values, atol=1e-10, rtol=1e-10,
                       what=f"{label} vs nn.TransformerEncoderLayer with its weights")(got["y"], want["y"])
                if type(got["y"]) is not torch.Tensor or tuple(got["y"].shape) != tuple(want["y"].shape) else None)
        diff = diff or tensor(values="do not change x in place (x += ...): write x = x + ...",
                              what=f"your input after calling {label}")(got["x"], want["x"])
        diff = diff or tensor(values=values, atol=1e-10, rtol=1e-10,
                              what=f"{label} vs nn.TransformerEncoderLayer with its weights")(got["y"], want["y"])
        if diff or "no_grad" not in want:
            return diff
        if got["no_grad"]:
            return (f"no finite gradient reaches {got['no_grad'][:3]} of {label}: build the output from the "
                    "sub-layers with plain tensor operations (no .detach(), no torch.no_grad() inside forward)")
        return None
    return compare


_BLOCK_ERRORS = (("'Block' object has no attribute",
                  f"keep __init__ as it is written (the tests load weights by these names: {_BLOCK_NAMES})"),)

BLOCK = Exercise("block", (
    Case("Block(8, 2, prenorm=True) on a (2, 5, 8) input", block_case(8, 2, 5, True, True, 408),
         compare=block_compare("Block(8, 2, prenorm=True)", _PRE_HINT), errors=_BLOCK_ERRORS),
    Case("Block(8, 2, prenorm=False) on a (2, 5, 8) input", block_case(8, 2, 5, False, True, 408),
         compare=block_compare("Block(8, 2, prenorm=False)", _POST_HINT), errors=_BLOCK_ERRORS),
    Case("the dtype of Block(8, 2)'s output for a float32 input",
         lambda names: _dtype(names, lambda n: n.Block(8, 2, block_size=6), 2, 6, 8, seed=409),
         compare=equal("the dtype", "keep the input's dtype: no .double() or float64 constants inside forward")),
    Case("Block(8, 2, causal=False) without a mask, and its gradients", block_case(8, 2, 5, True, False, 409, True),
         compare=block_compare("Block(8, 2, causal=False)", "the attention layer handles the mask: just call "
                                                             "self.attn"), errors=_BLOCK_ERRORS),
), standins=("LayerNorm", "MLP"), answer="Block",
    rules=exercise_rules("write the block's forward yourself, not with nn.TransformerEncoderLayer or lmcourse.nn.Block",
                         *_COURSE, *_SCRIPTED, nn.TransformerEncoder, nn.Transformer,
                         torch=("transformer_encoder_layer",)))


# ------------------------------------------------------------------ 8. block_param_count

def _count(d):
    def call(names):
        return names.block_param_count(d)
    return call


def _count_compare(hint: str | None) -> Compare:
    def compare(got, want):
        if type(got) is not int:
            return f"got {show(got)} ({type(got).__name__}), expected an int — return a plain int (use integer " \
                   "arithmetic)"
        return equal("the count", hint)(got, want)
    return compare


BLOCK_PARAM_COUNT = Exercise("block_param_count", (
    Case("block_param_count(4)", _count(4),
         compare=_count_compare("attention 4d^2 + 4d (four matrices, four biases), MLP 8d^2 + 5d (hidden width 4d, "
                                "biases 4d and d), two LayerNorms 4d (gamma and beta each)")),
    Case("block_param_count(768) (one block of the first GPT)", _count(768), compare=_count_compare(None)),
), rules=exercise_rules("compute the count from the formula, without building a block", *_COURSE, nn.Linear,
                        nn.Module.__init__))


NOTEBOOK = Notebook(
    "04_block", reference="lmcourse.reference.block", hidden="lmcourse.marking.block_hidden",
    exercises=(LAYER_NORM, LAYER_NORM_MODULE, MLP_EX, SINUSOIDAL, ROTATION, EMBEDDINGS, Q_SWAP_POS, Q_PRELN, BLOCK,
               BLOCK_PARAM_COUNT),
    withheld=("lmcourse.reference.block", "lmcourse.nn.block"))
