# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 02 — Recurrent neural language models
#
# **What you will build.** A character-level language model that reads text one character at a
# time and carries what it has read in a fixed-length vector: the Elman recurrent neural
# network (RNN). You will write the recurrence, the language-model loss and perplexity, a
# sampler and one step of gradient descent by hand; then train your RNN and an LSTM on
# Shakespeare with the course's training loop,
# compare them, play "which one is the real Shakespeare?", and *see* why plain RNNs forget:
# their gradients vanish as they travel back in time.
#
# **Prerequisites.** Notebook 01 (n-gram models, the chain rule, perplexity); PyTorch basics:
# tensors and their shapes, `nn.Module`, autograd (`loss.backward()`).
#
# **Time.** About 60–90 minutes of reading and coding. Without a GPU the notebook trains in the
# `cpu` profile with one PyTorch thread (the setup cell chooses it and prints `cpu_threads=1`;
# `LMCOURSE_THREADS` overrides): these models are small, and on a machine whose cores are busy
# PyTorch's two threads wait for each other (a short RNN run: 4,000 characters/s with two threads,
# 83,000 with one). Measured with one thread on a 2-core x86-64 machine with PyTorch 2.13:
# a short run with the cores to itself trains the RNN at about 90,000 characters/s and the LSTM
# at about 65,000 (`python bench/bench_train.py`), so each of the two training cells needs under a
# minute (the RNN's took 47 s in full with little else running). With other jobs keeping both
# cores busy, the same cells took 80 s and 132 s (load average 5), and 169 s and 201 s (load
# average 7; the whole notebook then took 6.8 minutes). Every other cell takes seconds (your
# hand-written SGD loop 13 s on the busy machine). On a GPU (profile `gpu`, a larger model
# trained for longer) the timing is not measured yet. Under the autograder (profile `tiny`) the
# whole notebook runs in about half a minute.
#
# Graded cells say `# YOUR CODE HERE`. Each is followed by a test cell: run it, and if a check
# fails, its message says what to look at. Hidden tests run when the notebook is graded.

# %% locked="setup"
import copy
import importlib
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import lmcourse
import lmcourse.reference.rnn
import lmcourse.rules
from lmcourse import plot
from lmcourse.checks import (call_checked, check, check_close, check_equal, check_shape,
                             check_tensor_close, check_type, forbid_calls, forbid_torch_functions,
                             substitute, visible_checks_pass)
from lmcourse.data import encode_split, get_batch, load_shakespeare
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import train

rt = lmcourse.setup()
# nbgrader gives a test cell 0 points if anything reaches stderr: keep PyTorch's harmless one-time
# notice about float(loss) on a tensor that requires grad out of the test cells
warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")

# %% [markdown]
# ## 1. From n-grams to a fixed-length summary of the past
#
# Every language model in this course rests on the chain rule of probability, which holds for
# any distribution over sequences:
#
# $$p(w_1, \dots, w_T) = \prod_{t=1}^{T} p(w_t \mid w_{t-1}, \dots, w_1).$$
#
# An $n$-gram model keeps only the last $n-1$ words of the condition, so it never sees further
# back, and its tables grow as $|V|^{n-1}$. An **RNN language model** keeps *all* of the history,
# but squeezes it into a vector of fixed length $J$, the hidden state
# $\mathbf{h}_t = f_\theta(w_{t-1}, \dots, w_1)$, and predicts the next word from that vector:
#
# $$p(w_1, \dots, w_T) = \prod_{t=1}^{T} p\big(w_t \mid f_\theta(w_{t-1}, \dots, w_1)\big).$$
#
# Unlike the chain rule itself, this *is* a modelling assumption: whatever the model needs to
# remember about the past must fit into $\mathbf{h}_t$.
#
# ## 2. The Elman RNN
#
# With inputs $x_t \in \mathbb{R}^I$, hidden states $h_t \in \mathbb{R}^J$ and outputs
# $y_t \in \mathbb{R}^K$, the Elman network updates its state and reads out a prediction by
#
# $$h_t = \mathcal{H}(W_{xh} x_t + W_{hh} h_{t-1} + b_h), \qquad y_t = W_{hy} h_t + b_y,$$
#
# starting from $h_0 = \mathbf{0}$. We use $\mathcal{H} = \tanh$ (the default of `nn.RNN`).
# The *same* weights are used at every step: that is what lets one network read sequences of
# any length.
#
# **Shapes in code.** PyTorch works on a batch of $B$ examples at once, one example per *row*,
# so the column-vector formula becomes a row-vector one:
#
# | symbol | tensor | shape |
# |---|---|---|
# | $x_t$ for the batch | `x_t` | `(B, I)` |
# | $h_{t-1}$ | `h_prev` | `(B, H)` (here $H = J$, the hidden size) |
# | $W_{xh}$ | `W_xh` | `(H, I)` |
# | $W_{hh}$ | `W_hh` | `(H, H)` |
# | $b_h$ | `b_h` | `(H,)` |
#
# and $h_t = \tanh(x_t W_{xh}^\top + h_{t-1} W_{hh}^\top + b_h)$, shape `(B, H)`. The weights are
# stored exactly like `nn.RNN` stores them (`weight_ih_l0` is $W_{xh}$, `weight_hh_l0` is
# $W_{hh}$), so we can check your network against PyTorch's.

# %% [markdown]
# ### Exercise 1 — one Elman step (2 points)
#
# Write `elman_step`. Use tensor operations (`@`, `.T`, `torch.tanh`), not `nn.RNN`,
# `nn.RNNCell` or `torch.rnn_tanh_cell` (the tests switch those off): the point is to see there is
# nothing more to it. Return a new tensor in the inputs' dtype, and leave the inputs unchanged.

# %% solution="elman_step"
def elman_step(x_t, h_prev, W_xh, W_hh, b_h):
    """One step of the Elman RNN: h_t = tanh(x_t W_xh^T + h_prev W_hh^T + b_h).

    x_t: (B, I) inputs at step t; h_prev: (B, H) the previous hidden state h_{t-1};
    W_xh: (H, I); W_hh: (H, H); b_h: (H,).  Returns h_t: (B, H), in the inputs' dtype.
    The inputs are not changed. The training loop back-propagates through every step: no .detach().
    """
    ### BEGIN SOLUTION
    return torch.tanh(x_t @ W_xh.T + h_prev @ W_hh.T + b_h)
    ### END SOLUTION


# %% tests="elman_step_tests" points=2
# Worked example, B = 1, I = 3, H = 2, done by hand:
#   W_xh x_t    = [0.1*1 + 0.2*2 + 0.3*0,  0*1 - 0.1*2 + 0.4*0] = [0.5, -0.2]
#   W_hh h_prev = [1*0.5 + 0*(-1),         0.5*0.5 + 0.5*(-1)]  = [0.5, -0.25]
#   a_t = [0.5 + 0.5 + 0.0, -0.2 - 0.25 + 0.1] = [1.0, -0.35];  h_t = tanh(a_t)
_f64 = dict(dtype=torch.float64)
_x = torch.tensor([[1.0, 2.0, 0.0]], **_f64)
_h = torch.tensor([[0.5, -1.0]], **_f64)
_Wxh = torch.tensor([[0.1, 0.2, 0.3], [0.0, -0.1, 0.4]], **_f64)
_Whh = torch.tensor([[1.0, 0.0], [0.5, 0.5]], **_f64)
_b = torch.tensor([0.0, 0.1], **_f64)
_out = call_checked(elman_step, _x, _h, _Wxh, _Whh, _b, name="elman_step(worked example)",
                    hint="x_t (B, I) goes with W_xh (H, I), h_prev (B, H) with W_hh (H, H): "
                         "multiply by the transposes, x_t @ W_xh.T and h_prev @ W_hh.T")
check_shape(_out, (1, 2), "elman_step(worked example)", hint="h_t has one row per example and H columns")
check(_out.dtype == torch.float64, f"elman_step returned {_out.dtype} for float64 inputs — keep the inputs' "
                                   "dtype; don't call .float()")
_close = lambda a, b: float((a - torch.tensor(b, **_f64)).abs().max()) < 1e-9  # noqa: E731
check(not _close(_out, [[1.0, -0.35]]),
      "elman_step returned a_t = [1.0, -0.35] itself — apply the nonlinearity: h_t = tanh(a_t)")
check(not _close(_out, [[math.tanh(1.0), math.tanh(-0.45)]]),
      "elman_step gives tanh([1.0, -0.45]): the bias b_h = [0, 0.1] is missing")
check(not _close(_out, [[math.tanh(0.5), math.tanh(-0.6)]]),
      "elman_step computed h_prev @ W_hh without the transpose (W_hh is square, so no shape error warns "
      "you): use h_prev @ W_hh.T")
check(not _close(_out, [[1 / (1 + math.exp(-1.0)), 1 / (1 + math.exp(0.35))]]),
      "elman_step applied the logistic sigmoid; this notebook's nonlinearity H is tanh")
check_tensor_close(_out, [[math.tanh(1.0), math.tanh(-0.35)]], "elman_step(worked example)", atol=1e-12,
                   hint="h_t = tanh(W_xh x_t + W_hh h_{t-1} + b_h): compare each term with the comment above")

# A batch, against PyTorch's own RNN cell with the same weights (float64, tight tolerance).
# Your code runs with PyTorch's recurrent functions (nn.RNNCell, torch.rnn_tanh_cell, ...) switched off.
_no_rnn = lmcourse.rules.rules(lmcourse.reference.rnn.elman_step, torch=lmcourse.reference.rnn.RECURRENT,
                               reason="compute the recurrence yourself with @, .T and torch.tanh")
torch.manual_seed(0)
_cell = nn.RNNCell(4, 4, dtype=torch.float64)  # I = H here, so swapped weights cannot hide behind a shape error
_x, _h = torch.randn(5, 4, **_f64), torch.randn(5, 4, **_f64)
_Wxh, _Whh = _cell.weight_ih.detach(), _cell.weight_hh.detach()
_b = (_cell.bias_ih + _cell.bias_hh).detach()
_x0, _h0, _b0 = _x.clone(), _h.clone(), _b.clone()
with _no_rnn():
    _got = call_checked(elman_step, _x, _h, _Wxh, _Whh, _b, name="elman_step(batch of 5)")
_want = _cell(_x0, _h0).detach()   # after the graded call: no global holds it during one
check(torch.equal(_x, _x0) and torch.equal(_h, _h0) and torch.equal(_b, _b0),
      "elman_step changed its inputs in place (e.g. x_t += ... or h_prev.tanh_()): compute a new tensor")
check_tensor_close(_got, _want, "elman_step(batch of 5) vs nn.RNNCell", atol=1e-12, rtol=1e-10,
                   hint="are W_xh and W_hh each multiplied with the right vector (W_xh with x_t, "
                        "W_hh with h_prev), and each transposed (x_t @ W_xh.T, h_prev @ W_hh.T)? "
                        "Is every row of the batch treated the same way?")

# Gradients, against nn.RNNCell's: training back-propagates through elman_step.
_grad_hint = ("the training loop back-propagates through every step: no .detach() and no in-place "
              "writes into a preallocated tensor")
_h = _h.clone().requires_grad_()
_want = torch.autograd.grad(_cell(_x, _h).pow(2).sum(), [_h, _cell.weight_ih, _cell.weight_hh, _cell.bias_ih])
_ps = [_h.detach().clone().requires_grad_(), _Wxh.clone().requires_grad_(), _Whh.clone().requires_grad_(),
       _b.clone().requires_grad_()]
with _no_rnn():
    _got = call_checked(elman_step, _x, *_ps, name="elman_step(batch of 5, weights requiring grad)")
check(isinstance(_got, torch.Tensor) and _got.requires_grad,
      "elman_step's result does not require grad although its weights do — " + _grad_hint)
_got = call_checked(torch.autograd.grad, _got.pow(2).sum(), _ps, name="backward through elman_step", hint=_grad_hint)
for _a, _w, _n in zip(_got, _want, ["h_prev", "W_xh", "W_hh", "b_h"]):
    check_tensor_close(_a, _w, f"gradient of elman_step w.r.t. {_n} vs nn.RNNCell", atol=1e-10, hint=_grad_hint)
visible_checks_pass("elman_step")
### BEGIN HIDDEN TESTS
_why = "elman_step must compute the step itself, not call nn.RNNCell / nn.RNN / torch.rnn_tanh_cell"
with forbid_torch_functions("rnn_tanh", "rnn_relu", "lstm", "gru", reason=_why):
    for _B, _I, _H in [(1, 1, 1), (3, 7, 5), (8, 5, 9)]:
        _g = torch.Generator().manual_seed(_B * 100 + _I)
        _args = [torch.randn(_B, _I, generator=_g, **_f64), torch.randn(_B, _H, generator=_g, **_f64),
                 torch.randn(_H, _I, generator=_g, **_f64), torch.randn(_H, _H, generator=_g, **_f64),
                 torch.randn(_H, generator=_g, **_f64)]
        _copies = [a.clone() for a in _args]
        check_tensor_close(elman_step(*_args), lmcourse.reference.rnn.elman_step(*_args), f"elman_step {(_B, _I, _H)}",
                           atol=1e-12)
        check(all(torch.equal(a, c) for a, c in zip(_args, _copies)), "elman_step changed its inputs in place")
    # gradients flow to every argument
    _ps = [a.clone().requires_grad_() for a in _args]
    _gs = torch.autograd.grad(elman_step(*_ps).sum(), _ps)
    _ps2 = [a.clone().requires_grad_() for a in _args]
    _gs2 = torch.autograd.grad(lmcourse.reference.rnn.elman_step(*_ps2).sum(), _ps2)
    for _a, _b2 in zip(_gs, _gs2):
        check_tensor_close(_a, _b2, "gradient of elman_step", atol=1e-10)
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Unrolling over a sequence
#
# (The lecture's slide writes the Elman network with other letters: its $a_t$, $W_{ax}$, $W_{ah}$,
# $b_a$ are our $h_t$, $W_{xh}$, $W_{hh}$, $b_h$; its $\sigma$ is our $\tanh$; its $W_{yh}$ and
# $y_t = \mathrm{softmax}(\dots)$ are the output layer of Section 4, where our $y_t$ are the logits
# *before* the softmax.)
#
# Reading a sequence is the Elman pseudo-code from the lecture: start from $h_0$ (zeros unless
# we are continuing from an earlier state), and for $t = 1, \dots, T$ compute
# $h_t$ from $x_t$ and $h_{t-1}$. Each step needs the previous one, so the $T$ steps run one after
# another: the cost of a forward pass grows **linearly** with $T$, and it cannot be spread over
# the positions of a sequence the way the transformer (notebook 03) will.
#
# ### Exercise 2 — the forward pass over a sequence (2 points)
#
# Write `rnn_forward`, returning **every** hidden state $h_1, \dots, h_T$ stacked along the time
# axis (dimension 1), in `x`'s dtype. Use your `elman_step`. `torch.stack(list_of_tensors, dim=1)`
# turns a list of `(B, H)` tensors into one `(B, T, H)` tensor. As in Exercise 1, PyTorch's
# recurrent kernels (`nn.RNN`, `torch.rnn_tanh`, ...) are switched off in the tests, and gradients
# must flow through every step.
#
# The tests of this exercise run your `rnn_forward` with a correct `elman_step` (ours) in place
# of yours, so a mistake in Exercise 1 costs points there only; the same holds for every later
# exercise.

# %% solution="rnn_forward"
def rnn_forward(x, h0, W_xh, W_hh, b_h):
    """Run the Elman RNN over a batch of sequences.

    x: (B, T, I) inputs; h0: (B, H) initial state, or None for zeros.
    Returns hs: (B, T, H) with hs[:, t - 1] = h_t, for t = 1..T (h_0 is not included), in x's dtype.
    The training loop back-propagates through every step: no .detach(), and never overwrite a
    tensor that a later step reads (collecting the h_t in a list and torch.stack-ing them is simplest).
    """
    ### BEGIN SOLUTION
    B, T, _ = x.shape
    h = x.new_zeros(B, W_hh.shape[0]) if h0 is None else h0
    hs = []
    for t in range(T):
        h = elman_step(x[:, t], h, W_xh, W_hh, b_h)  # (B, H)
        hs.append(h)
    return torch.stack(hs, dim=1)  # (B, T, H)
    ### END SOLUTION


# %% tests="rnn_forward_tests" points=2
# One mistake costs once: every call below runs your rnn_forward with our elman_step in place of
# yours, so a slip in Exercise 1 costs points in Exercise 1 only.
def _rnn_forward(*args):
    with substitute(globals(), elman_step=lmcourse.reference.rnn.elman_step):
        return rnn_forward(*args)


_no_rnn = lmcourse.rules.rules(lmcourse.reference.rnn.rnn_forward, torch=lmcourse.reference.rnn.RECURRENT,
                               reason="run the recurrence yourself, with elman_step")

# Hand example: one unit (I = H = 1), W_xh = 1, W_hh = 0.5, b_h = 0, inputs x = 1, 0, 0.
#   h_1 = tanh(1) = 0.7616,  h_2 = tanh(0.5 * h_1) = 0.3634,  h_3 = tanh(0.5 * h_2) = 0.1797
_h0_hint = "h0=None means zeros of shape (B, H), H = W_hh.shape[0], e.g. x.new_zeros(B, H) (same dtype and device as x)"
_one = lambda v: torch.tensor([[v]], dtype=torch.float64)  # noqa: E731
_xs = torch.tensor([[[1.0], [0.0], [0.0]]], dtype=torch.float64)  # (B=1, T=3, I=1)
_hs = call_checked(_rnn_forward, _xs, None, _one(1.0), _one(0.5), torch.zeros(1, dtype=torch.float64),
                   name="rnn_forward(hand example)", hint=_h0_hint)
check_shape(_hs, (1, 3, 1), "rnn_forward(hand example)",
            hint="return h_1..h_T stacked on dimension 1: (B, T, H), without h_0")
check(_hs.dtype == torch.float64, f"rnn_forward returned {_hs.dtype} for float64 inputs — keep the inputs' "
                                  "dtype; don't call .float()")
_h1 = math.tanh(1.0)
_h2 = math.tanh(0.5 * _h1)
_h3 = math.tanh(0.5 * _h2)
check(abs(float(_hs[0, 0, 0])) > 1e-6,
      "the first row of the output is 0 = h_0: the output should hold h_1..h_T, each *after* its update")
check(abs(float(_hs[0, 1, 0])) > 1e-6,
      "h_2 came out 0, but x_2 = 0 and h_1 = 0.76, so h_2 = tanh(0.5 * 0.76) ≠ 0: carry h from one "
      "step to the next (use the updated h, not h0, at every step)")
check_tensor_close(_hs.reshape(-1), torch.tensor([_h1, _h2, _h3], dtype=torch.float64),
                   "rnn_forward(hand example)", atol=1e-12, hint="see the comment above for h_1, h_2, h_3")

# Against nn.RNN with the same weights copied in (float64, tight tolerance), from a given h0.
torch.manual_seed(1)
_ref = nn.RNN(4, 6, batch_first=True, dtype=torch.float64)
_x, _h0 = torch.randn(3, 7, 4, dtype=torch.float64), torch.randn(3, 6, dtype=torch.float64)
_W = [_ref.weight_ih_l0.detach(), _ref.weight_hh_l0.detach(), (_ref.bias_ih_l0 + _ref.bias_hh_l0).detach()]
with _no_rnn():
    _got = call_checked(_rnn_forward, _x, _h0, *_W, name="rnn_forward(B=3, T=7, I=4, H=6)")
_want, _ = _ref(_x, _h0[None])   # the expected states after each graded call: no global holds them during one
check_shape(_got, (3, 7, 6), "rnn_forward(B=3, T=7, I=4, H=6)", hint="(B, T, H): batch first, then time")
check_tensor_close(_got, _want.detach(), "rnn_forward vs nn.RNN", atol=1e-12, rtol=1e-10,
                   hint="does the loop go forward in time (t = 0, 1, ..., T-1) and start from h0 when it is given?")
with _no_rnn():
    _got = call_checked(_rnn_forward, _x, None, *_W, name="rnn_forward(B=3, T=7, I=4, H=6, h0=None)", hint=_h0_hint)
_want0, _ = _ref(_x)  # from zeros
check_shape(_got, (3, 7, 6), "rnn_forward(B=3, T=7, I=4, H=6, h0=None)", hint=_h0_hint)
check_tensor_close(_got, _want0.detach(), "rnn_forward(h0=None) vs nn.RNN", atol=1e-12, rtol=1e-10, hint=_h0_hint)

# Gradients, against nn.RNN's: the training loop back-propagates through every step.
_grad_hint = ("the training loop back-propagates through every step: no .detach() and no in-place writes into "
              "a preallocated tensor — collect the h_t in a list and torch.stack them")
_h0r = _h0.clone().requires_grad_()
_out, _ = _ref(_x, _h0r[None])
_want = torch.autograd.grad(_out.pow(2).sum(), [_h0r, _ref.weight_ih_l0, _ref.weight_hh_l0, _ref.bias_ih_l0])
_ps = [_h0.clone().requires_grad_()] + [_w.clone().requires_grad_() for _w in _W]
with _no_rnn():
    _got = call_checked(_rnn_forward, _x, *_ps, name="rnn_forward(weights requiring grad)", hint=_grad_hint)
check(isinstance(_got, torch.Tensor) and _got.requires_grad,
      "rnn_forward's result does not require grad although h0 and the weights do — " + _grad_hint)
_got = call_checked(torch.autograd.grad, _got.pow(2).sum(), _ps, name="backward through rnn_forward", hint=_grad_hint)
for _a, _w, _n in zip(_got, _want, ["h0", "W_xh", "W_hh", "b_h"]):
    check_tensor_close(_a, _w, f"gradient of rnn_forward w.r.t. {_n} vs nn.RNN", atol=1e-10, hint=_grad_hint)
visible_checks_pass("rnn_forward")
### BEGIN HIDDEN TESTS
_why = "rnn_forward must run the recurrence itself, not call nn.RNN / nn.RNNCell / torch.rnn_tanh"
with forbid_torch_functions("rnn_tanh", "rnn_relu", "lstm", "gru", reason=_why):
    for _B, _T, _I, _H in [(1, 1, 2, 3), (2, 9, 3, 3), (4, 5, 6, 2)]:
        _g = torch.Generator().manual_seed(7 * _T + _H)
        _x = torch.randn(_B, _T, _I, generator=_g, dtype=torch.float64)
        _W1 = torch.randn(_H, _I, generator=_g, dtype=torch.float64) * 0.5
        _W2 = torch.randn(_H, _H, generator=_g, dtype=torch.float64) * 0.5
        _b = torch.randn(_H, generator=_g, dtype=torch.float64)
        _got = _rnn_forward(_x, None, _W1, _W2, _b)   # the expected states are made after it
        _h = torch.zeros(_B, _H, dtype=torch.float64)
        _want = []
        for _t in range(_T):
            _h = torch.tanh(_x[:, _t] @ _W1.T + _h @ _W2.T + _b)
            _want.append(_h)
        check_tensor_close(_got, torch.stack(_want, 1), f"rnn_forward {(_B, _T, _I, _H)}", atol=1e-12)
        del _want, _h
    # gradients reach h0 and the weights, matching nn.RNN's
    _ref = nn.RNN(3, 4, batch_first=True, dtype=torch.float64)
    _x = torch.randn(2, 6, 3, dtype=torch.float64)
    _h0 = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    _Wxh = _ref.weight_ih_l0.detach().clone().requires_grad_()
    _Whh = _ref.weight_hh_l0.detach().clone().requires_grad_()
    _bb = (_ref.bias_ih_l0 + _ref.bias_hh_l0).detach().clone().requires_grad_()
    _gs = torch.autograd.grad(_rnn_forward(_x, _h0, _Wxh, _Whh, _bb).pow(2).sum(), [_h0, _Wxh, _Whh])
_h0b = _h0.detach().clone().requires_grad_()
_out, _ = _ref(_x, _h0b[None])
_gr = torch.autograd.grad(_out.pow(2).sum(), [_h0b, _ref.weight_ih_l0, _ref.weight_hh_l0])
for _a, _b2, _n in zip(_gs, _gr, ["h0", "W_xh", "W_hh"]):
    check_tensor_close(_a, _b2, f"gradient of rnn_forward w.r.t. {_n}", atol=1e-10)
### END HIDDEN TESTS

# %% [markdown]
# ## 4. The RNN language model
#
# A window of text is a sequence of characters $w_0, w_1, \dots, w_{T-1}$; the first one, $w_0$,
# is only read (it plays the lecture's start symbol), every later one is also predicted. The
# input at step $t$ is the character read *before* the one to predict, as an **embedding**:
#
# $$x_t = E[w_{t-1}], \qquad t = 1, 2, \dots,$$
#
# row $w_{t-1}$ of a learned matrix $E \in \mathbb{R}^{|V| \times I}$ (`nn.Embedding`), the same as
# multiplying a one-hot vector by $E$, without building the one-hot vector. So $h_t$ has read
# $w_0, \dots, w_{t-1}$ and nothing after. The output layer turns it into $|V|$ scores, the
# **logits** $y_t = W_{hy} h_t + b_y$ (`nn.Linear`), and a softmax turns scores into the
# distribution of the character the model has *not* read yet, $w_t$:
#
# $$p(w_t = k \mid w_{<t}) = \mathrm{softmax}(y_t)_k, \qquad
#   \mathrm{softmax}(y)_k = \frac{e^{y_k}}{\sum_{k'} e^{y_{k'}}}.$$
#
# This is the lecture's $p(w_t \mid h_t)$ with $h_t = f_\theta(w_{t-1}, \dots)$.
#
# **Indexing in code.** Code counts from 0: `idx[:, j]` holds $w_j$, position `j` reads it, so
# `hs[:, j]` is $h_{j+1}$ and `logits[:, j]` is $y_{j+1}$, which scores the token that comes
# *next*, `idx[:, j + 1]`. The model returns the logits at every position; the loss (next
# section) lines them up with the next tokens, and the last position's logits, which score the
# character after the window, are used only when sampling.
#
# ### Exercise 3 — `RNNLM` (3 points)
#
# Complete `forward_state`: embed the token ids, run *your* `rnn_forward` from `h0`, apply the
# output layer. Return the logits for every position and the last hidden state $h_T$, which lets
# a caller continue the sequence later (the sampler will). `forward` is the one-output version
# that the training loop calls. Use the parameters that `__init__` creates (no `nn.RNN` or
# `nn.RNNCell` modules, which the tests reject), so that every parameter receives a gradient.
# The tests run your `RNNLM` with our `elman_step` and `rnn_forward` in place of yours.

# %% solution="RNNLM"
class RNNLM(nn.Module):
    """Character-level language model: embedding -> your Elman RNN -> output layer."""

    def __init__(self, vocab_size: int, n_embd: int, n_hidden: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)  # E: one row per token
        bound = 1 / math.sqrt(n_hidden)  # nn.RNN draws its weight matrices from U(-bound, bound) too
        self.W_xh = nn.Parameter(torch.empty(n_hidden, n_embd).uniform_(-bound, bound))
        self.W_hh = nn.Parameter(torch.empty(n_hidden, n_hidden).uniform_(-bound, bound))
        self.b_h = nn.Parameter(torch.zeros(n_hidden))  # starts at 0 (nn.RNN draws its two biases at random)
        self.lm_head = nn.Linear(n_hidden, vocab_size)  # W_hy and b_y

    def forward(self, idx, h0=None):
        """idx: (B, T) token ids -> logits (B, T, V); logits[:, t] scores the token after idx[:, t]."""
        return self.forward_state(idx, h0)[0]

    def forward_state(self, idx, h0=None):
        """Returns (logits (B, T, V), h_T (B, H)): the logits and the last hidden state."""
        ### BEGIN SOLUTION
        x = self.wte(idx)  # (B, T, n_embd)
        hs = rnn_forward(x, h0, self.W_xh, self.W_hh, self.b_h)  # (B, T, H)
        return self.lm_head(hs), hs[:, -1]  # (B, T, V), (B, H)
        ### END SOLUTION


# %% tests="RNNLM_tests" points=3
# One mistake costs once: RNNLM runs here with our elman_step and rnn_forward in place of yours,
# so a slip in Exercise 1 or 2 does not cost points here too.
_refs = lambda: substitute(globals(), elman_step=lmcourse.reference.rnn.elman_step,  # noqa: E731
                           rnn_forward=lmcourse.reference.rnn.rnn_forward)
_no_rnn = lambda: forbid_torch_functions(  # noqa: E731
    "rnn_tanh", "rnn_relu", "lstm", "gru", reason="RNNLM must run rnn_forward, not PyTorch's recurrent kernels")

torch.manual_seed(0)
_m = RNNLM(vocab_size=11, n_embd=5, n_hidden=7).double()
_rnn_modules = [type(_mod).__name__ for _mod in _m.modules() if isinstance(_mod, (nn.RNNBase, nn.RNNCellBase))]
check(not _rnn_modules, f"RNNLM contains {_rnn_modules}: no nn.RNN / nn.RNNCell / nn.LSTM modules — use the "
                        "W_xh, W_hh, b_h that __init__ creates")
_idx = torch.randint(11, (2, 6))
with _no_rnn(), _refs():
    _out = call_checked(_m.forward_state, _idx, name="RNNLM.forward_state(idx)")
check(isinstance(_out, (tuple, list)) and len(_out) == 2,
      f"forward_state should return a tuple (logits, h_T), got a {type(_out).__name__}"
      + (f" of length {len(_out)}" if isinstance(_out, (tuple, list)) else "")
      + " — end with: return logits, h_T")
_logits, _hT = _out
check_shape(_logits, (2, 6, 11), "logits", hint="one score per vocabulary entry at every position: (B, T, V)")
check_shape(_hT, (2, 7), "h_T", hint="the last hidden state, one row per sequence: (B, H)")

# The same model, built from PyTorch parts with your weights copied in.
_ref = nn.RNN(5, 7, batch_first=True, dtype=torch.float64)
with torch.no_grad():
    _ref.weight_ih_l0.copy_(_m.W_xh)
    _ref.weight_hh_l0.copy_(_m.W_hh)
    _ref.bias_ih_l0.copy_(_m.b_h)
    _ref.bias_hh_l0.zero_()
    _ref_hs, _ = _ref(_m.wte(_idx))
    _ref_logits = _m.lm_head(_ref_hs)
check_tensor_close(_logits, _ref_logits, "RNNLM logits vs nn.RNN with the same weights", atol=1e-10,
                   hint="embed with self.wte, run rnn_forward with self.W_xh, self.W_hh, self.b_h, "
                        "then apply self.lm_head to every hidden state")
check_tensor_close(_hT, _ref_hs[:, -1], "h_T", atol=1e-10,
                   hint="return the hidden state after the *last* token, hs[:, -1]")

# Continuing from h_T must give what reading the whole sequence at once gives.
with _no_rnn(), _refs():
    _first, _h = _m.forward_state(_idx[:, :4])
    _rest, _ = call_checked(_m.forward_state, _idx[:, 4:], _h, name="RNNLM.forward_state(idx, h0)")
    _whole = _m(_idx)
check_tensor_close(_rest, _logits[:, 4:], "logits continued from h_T", atol=1e-10,
                   hint="pass h0 on to rnn_forward instead of always starting from zeros")
check_tensor_close(_whole, _logits, "RNNLM(idx)", atol=1e-12)

# Training needs a gradient for every parameter: E, W_xh, W_hh, b_h, W_hy and b_y.
_m.zero_grad()
_logits.pow(2).sum().backward()
_no_grad = [_n for _n, _p in _m.named_parameters() if _p.grad is None or float(_p.grad.abs().sum()) == 0]
check(not _no_grad, f"these parameters of RNNLM get no gradient: {_no_grad} — embed with self.wte, run the "
                    "recurrence with self.W_xh, self.W_hh, self.b_h and read out with self.lm_head, without .detach()")
visible_checks_pass("RNNLM")
### BEGIN HIDDEN TESTS
_why = "RNNLM must use your own recurrence, not nn.RNN / nn.RNNCell / torch.rnn_tanh"
with forbid_torch_functions("rnn_tanh", "rnn_relu", "lstm", "gru", reason=_why), _refs():
    torch.manual_seed(3)
    _m = RNNLM(vocab_size=13, n_embd=4, n_hidden=6).double()
    check(not any(isinstance(_mod, (nn.RNNBase, nn.RNNCellBase)) for _mod in _m.modules()),
          "RNNLM must not contain an nn.RNN / nn.RNNCell module")
    _idx = torch.randint(13, (3, 9))
    _logits, _hT = _m.forward_state(_idx)   # the expected logits are made after it
    _x = _m.wte(_idx)
    _h = torch.zeros(3, 6, dtype=torch.float64)
    _hs = []
    for _t in range(9):
        _h = torch.tanh(_x[:, _t] @ _m.W_xh.T + _h @ _m.W_hh.T + _m.b_h)
        _hs.append(_h)
    _want = _m.lm_head(torch.stack(_hs, 1))
    check_tensor_close(_logits, _want, "RNNLM logits (hidden)", atol=1e-10)
    check_tensor_close(_hT, _h, "RNNLM h_T (hidden)", atol=1e-10)
    _logits.sum().backward()
    check(all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in _m.parameters()),
          "every parameter of RNNLM should receive a gradient")
### END HIDDEN TESTS

# %% [markdown]
# ## 5. The loss: cross-entropy on shifted targets
#
# Training is maximum likelihood, as for the $n$-gram model, but with no closed form: we write
# down the log-likelihood, let autograd compute its gradient, and follow it downhill with
# mini-batch SGD (or a variant of it). For one window $w_0, \dots, w_{T-1}$ the negative
# log-likelihood of the characters after the first is a sum of one cross-entropy term per
# predicted token, each scoring a character the model has not read yet ($h_t$ has read
# $w_0, \dots, w_{t-1}$):
#
# $$\ell = -\log p(w_1, \dots, w_{T-1} \mid w_0) = \sum_{t=1}^{T-1} \ell_t, \qquad
#   \ell_t = -\log p(w_{t} \mid h_{t}) = -\log \mathrm{softmax}(y_{t})_{w_{t}}.$$
#
# We report the **mean** over predicted tokens (nats per character), so that numbers do not
# depend on the batch or sequence length.
#
# In code: for token ids `idx` of shape `(B, T)`, the logits at position `j` (that is $y_{j+1}$)
# predict `idx[:, j + 1]`. So positions `0 .. T-2` have targets `idx[:, 1:]`, and the last
# position has no target inside the window: we compare `logits[:, :-1]` with `idx[:, 1:]`,
# $B(T-1)$ predictions in all.
#
# This is **teacher forcing**: during training the input at every position is the *true*
# previous character, never the model's own guess, so all positions are scored in one pass.
#
# ### Exercise 4 — the language-model loss (2 points)
#
# `F.cross_entropy(scores, targets)` takes *logits* of shape `(N, V)` (it applies the log-softmax
# itself) and integer targets of shape `(N,)`, and returns the mean of $-\log p$ over the $N$ rows.
# (`F.nll_loss` is different: it expects log-probabilities that are already normalised, so on raw
# logits it returns a wrong number without any error.) Return a scalar tensor in the logits'
# dtype that autograd can differentiate.

# %% solution="lm_loss"
def lm_loss(logits, idx):
    """Mean cross-entropy, in nats per predicted token, of next-token predictions.

    logits: (B, T, V) scores computed from idx; idx: (B, T) token ids.
    logits[:, t] predicts idx[:, t + 1]; the last position has no target.
    Returns a scalar tensor in the logits' dtype (autograd must be able to differentiate it).
    """
    ### BEGIN SOLUTION
    B, T, V = logits.shape
    return F.cross_entropy(logits[:, :-1].reshape(B * (T - 1), V), idx[:, 1:].reshape(B * (T - 1)))
    ### END SOLUTION


# %% tests="lm_loss_tests" points=2
# Worked example: V = 3, one sequence idx = [0, 1, 1]. The logits are log-probabilities, so
# softmax(logits[0, t]) is exactly the distribution written next to it:
#   position 0 predicts idx[1] = 1:  p = [0.5, 0.25, 0.25]  -> -log 0.25
#   position 1 predicts idx[2] = 1:  p = [0.1, 0.8, 0.1]    -> -log 0.8
#   position 2 has no target        (p = [0.2, 0.2, 0.6], unused)
# loss = (-log 0.25 - log 0.8) / 2 = 0.804719
_rules = lmcourse.rules.rules(lmcourse.reference.rnn.lm_loss, reason="compute the loss yourself, "
                              "with F.cross_entropy on the shifted logits and targets")
_P = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]], dtype=torch.float64)
_idx = torch.tensor([[0, 1, 1]])
with _rules():
    _loss = call_checked(lm_loss, _P.log(), _idx, name="lm_loss(worked example)")
check(isinstance(_loss, torch.Tensor) and _loss.dim() == 0,
      f"lm_loss should return a scalar tensor (shape ()), got {type(_loss).__name__} "
      f"{tuple(getattr(_loss, 'shape', ()))} — average over every prediction")
check(_loss.dtype == torch.float64, f"lm_loss returned {_loss.dtype} for float64 logits (the numbers look the "
                                    "same but lose precision) — keep the inputs' dtype; don't call .float()")
_val = float(_loss)
_expected = (-math.log(0.25) - math.log(0.8)) / 2
check(abs(_val - (-math.log(0.5) - math.log(0.8) - math.log(0.2)) / 3) > 1e-6,
      "lm_loss scored position t against idx[:, t] itself: the targets must be shifted, "
      "logits[:, :-1] against idx[:, 1:]")
check(abs(_val - 2 * _expected) > 1e-6,
      "lm_loss is the *sum* over predictions (1.609); report the mean (0.805) instead")
_soft = F.softmax(_P.log(), -1)
_double = (F.cross_entropy(_soft[0, :2], _idx[0, 1:])).item()
check(abs(_val - _double) > 1e-6,
      "lm_loss applied softmax before F.cross_entropy, which applies log-softmax itself: pass the raw logits")
check_close(_val, _expected, "lm_loss(worked example)", rel=1e-9,
            hint="mean over the B*(T-1) predictions of -log p(next token)")

# Two sequences (B = 2, T = 2, V = 3), idx = [[0, 1], [2, 0]]: position 0 of each row predicts
# position 1 of the *same* row, and the last positions predict nothing:
#   row 0 predicts idx[0, 1] = 1 with p = [0.5, 0.25, 0.25]   -> -log 0.25
#   row 1 predicts idx[1, 1] = 0 with p = [0.6, 0.3, 0.1]     -> -log 0.6
# loss = (-log 0.25 - log 0.6) / 2 = 0.948560
_P2 = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]], [[0.6, 0.3, 0.1], [0.2, 0.7, 0.1]]], dtype=torch.float64)
_idx2 = torch.tensor([[0, 1], [2, 0]])
with _rules():
    _val = float(call_checked(lm_loss, _P2.log(), _idx2, name="lm_loss(two sequences)"))
_shift_hint = ("shift within each sequence (logits[:, :-1] vs idx[:, 1:]); flattening first makes row b's last "
               "position predict row b+1's first token")
check(abs(_val - (-math.log(0.25) - math.log(0.8) - math.log(0.6)) / 3) > 1e-6,
      "lm_loss(two sequences) scored row 0's last position against row 1's first token — " + _shift_hint)
check(abs(_val - (-math.log(0.25) - math.log(0.6))) > 1e-6,
      "lm_loss(two sequences) added up the two rows' losses: take the mean over all B*(T-1) predictions")
check_close(_val, (-math.log(0.25) - math.log(0.6)) / 2, "lm_loss(two sequences)", rel=1e-9,
            hint="the mean over all B*(T-1) predictions, each row's logits[b, :-1] against its own idx[b, 1:]")

# Logits are not log-probabilities: adding the same number to every logit of a position leaves
# its softmax, and so the loss, unchanged. Above, the logits happened to be normalised (log P).
_shift = torch.tensor([[[3.0], [-2.0], [7.0]]], dtype=torch.float64)  # one constant per position
with _rules():
    _val = float(call_checked(lm_loss, _P.log() + _shift, _idx,
                              name="lm_loss(worked example + a constant per position)"))
_nll_raw = -(float(_P[0, 0, 1].log() + _shift[0, 0, 0]) + float(_P[0, 1, 1].log() + _shift[0, 1, 0])) / 2
check(abs(_val - _nll_raw) > 1e-6,
      "lm_loss treated the raw logits as log-probabilities: F.nll_loss expects log_softmax(logits), not logits — "
      "use F.cross_entropy(logits, targets), or F.nll_loss(F.log_softmax(logits, dim=-1), targets)")
check_close(_val, _expected, "lm_loss(worked example + a constant per position)", rel=1e-9,
            hint="adding a constant to every logit of a position does not change its softmax, so it must "
                 "not change the loss: normalise the logits with a (log-)softmax over the vocabulary")

# A model that knows nothing (all logits equal) pays log V per prediction, whatever the batch.
with _rules():
    _uniform = call_checked(lm_loss, torch.zeros(4, 10, 7), torch.randint(7, (4, 10)), name="lm_loss(uniform)")
check(abs(float(_uniform)) > 1e-6, "lm_loss of all-zero logits is 0, as if the logits were log-probabilities "
                                   "(F.nll_loss on raw logits?): a uniform model pays log 7 = 1.946 per prediction")
check_close(float(_uniform), math.log(7), "lm_loss of a uniform model over 7 tokens", rel=1e-6,
            hint="the mean over all B*(T-1) predictions of -log softmax(logits)[target]")

# Gradients must flow back to the logits (the training loop calls backward on this value).
_lg = torch.randn(2, 5, 4, requires_grad=True)
with _rules():
    _lgl = call_checked(lm_loss, _lg, torch.randint(4, (2, 5)))
_lgl.backward()
check(_lg.grad is not None and float(_lg.grad[:, -1].abs().sum()) == 0.0,
      "the last position has no target, so its logits should get no gradient")
visible_checks_pass("lm_loss")
### BEGIN HIDDEN TESTS
for _B, _T, _V in [(1, 2, 2), (3, 8, 5), (5, 17, 29)]:
    _g = torch.Generator().manual_seed(_B + _T + _V)
    _lg = torch.randn(_B, _T, _V, generator=_g, dtype=torch.float64) * 3
    _ix = torch.randint(_V, (_B, _T), generator=_g)
    with _rules():
        _got = lm_loss(_lg, _ix)
    check_close(float(_got), float(F.cross_entropy(_lg[:, :-1].reshape(-1, _V), _ix[:, 1:].reshape(-1))),
                f"lm_loss {(_B, _T, _V)}", rel=1e-10)
    _lgr = _lg.clone().requires_grad_()
    with _rules():
        _got = lm_loss(_lgr, _ix)
    _ga, = torch.autograd.grad(_got, _lgr)
    _lgr2 = _lg.clone().requires_grad_()
    _gb, = torch.autograd.grad(F.cross_entropy(_lgr2[:, :-1].reshape(-1, _V), _ix[:, 1:].reshape(-1)), _lgr2)
    check_tensor_close(_ga, _gb, "gradient of lm_loss", atol=1e-12)
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Perplexity
#
# As in notebook 01, perplexity is the exponential of the mean negative log-likelihood per
# token,
#
# $$\mathrm{PPL} = \exp\Big(\frac{1}{N}\sum_{i=1}^{N} \ell_i\Big),$$
#
# the size of a uniform die that would be as surprised by the text as the model is. A model that
# spreads its bets evenly over $|V|$ characters has perplexity $|V|$; a perfect one has 1.
# Losses here are in nats (natural log), so the base is $e$; dividing a loss by $\ln 2$ gives bits.
#
# ### Exercise 5 — perplexity (1 point)

# %% solution="perplexity"
def perplexity(token_losses):
    """token_losses: 1-D tensor of per-token negative log-likelihoods, in nats.
    Returns the perplexity as a Python float."""
    ### BEGIN SOLUTION
    return math.exp(float(token_losses.double().mean()))
    ### END SOLUTION


# %% tests="perplexity_tests" points=1
_p = call_checked(perplexity, torch.full((50,), math.log(84.0), dtype=torch.float64),
                  name="perplexity(uniform over 84)")
check_type(_p, float, "perplexity(...)", hint="return a Python float, e.g. math.exp(x) or float(tensor)")
check_close(_p, 84.0, "perplexity of a uniform model over 84 characters", rel=1e-9)
# Two tokens with losses log 2 and log 8: the mean loss is log 4, so the perplexity is 4.
_p = perplexity(torch.tensor([math.log(2.0), math.log(8.0)]))
check(abs(_p - 16.0) > 1e-6, "perplexity 16 = exp(sum of losses): use the *mean* loss, exp(mean)")
check(abs(_p - 5.0) > 1e-6, "perplexity 5 = mean of exp(loss): take the exp of the mean, not the mean of the exps")
check(abs(_p - 2 ** math.log(4.0)) > 1e-6, "the losses are in nats, so the base is e: math.exp, not 2 **")
check_close(_p, 4.0, "perplexity([log 2, log 8])", rel=1e-6, hint="exp of the mean loss")
visible_checks_pass("perplexity")
### BEGIN HIDDEN TESTS
_l = torch.rand(1000, generator=torch.Generator().manual_seed(5)) * 4
check_close(perplexity(_l), math.exp(float(_l.double().mean())), "perplexity(random losses)", rel=1e-6)
check_close(perplexity(torch.zeros(3)), 1.0, "perplexity of a perfect model", rel=1e-12)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Sampling, one character at a time
#
# To generate text we roll the model's die again and again, as in the lecture: feed a prompt,
# read the distribution of the next character, draw one, feed the drawn character back in (with
# the hidden state carried over), and repeat. A **temperature** $\tau$ reshapes the die:
# $p \propto \exp(y / \tau)$, so $\tau < 1$ makes the likely characters likelier and $\tau > 1$
# flattens the distribution.
#
# Draws must be repeatable, so they use the `generator` you are given:
# `torch.multinomial(probs, num_samples=1, generator=generator)` draws one index with
# probabilities `probs` (a 1-D CPU tensor). Taking the arg-max instead is *greedy decoding*: it
# always picks the single most likely character, and it is not sampling.
#
# ### Exercise 6 — the sampler (2 points)
#
# Use `model.forward_state(idx, state)`, which returns `(logits, state)`: your `RNNLM` has it,
# and so does the LSTM model below. Run the prompt through once, then one character per step.

# %% solution="sample"
@torch.no_grad()
def sample(model, prompt_ids, n_new, generator, temperature=1.0):
    """Draw n_new token ids from the model, continuing the list of ids prompt_ids (length >= 1).

    model.forward_state(idx (1, T), state) -> (logits (1, T, V), new state); state=None at first.
    Build each idx on the model's device, next(model.parameters()).device.
    Returns a list of n_new ints (the prompt is not included).
    """
    ### BEGIN SOLUTION
    device = next(model.parameters()).device
    logits, state = model.forward_state(torch.tensor([prompt_ids], device=device))
    out = []
    for _ in range(n_new):
        probs = F.softmax(logits[0, -1].float().cpu() / temperature, dim=-1)  # (V,)
        nxt = int(torch.multinomial(probs, num_samples=1, generator=generator))
        out.append(nxt)
        logits, state = model.forward_state(torch.tensor([[nxt]], device=device), state)
    return out
    ### END SOLUTION


# %% tests="sample_tests" points=2
class _Counter(nn.Module):
    """Always (almost surely) predicts 'the token after the one just read', modulo 5."""

    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward_state(self, idx, state=None):
        return 50.0 * F.one_hot((idx + 1) % 5, 5).float(), state


class _Die(nn.Module):
    """Ignores its input: the next token is 0, 1 or 2 with probabilities 0.7, 0.2, 0.1."""

    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward_state(self, idx, state=None):
        B, T = idx.shape
        return torch.tensor([0.7, 0.2, 0.1]).log().expand(B, T, 3), state


class _Clock(nn.Module):
    """Ignores which tokens it reads; its state counts them, and it predicts (count mod 5)."""

    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(1))

    def forward_state(self, idx, state=None):
        B, T = idx.shape
        count = (0 if state is None else state) + torch.arange(1, T + 1)  # tokens read so far
        return 50.0 * F.one_hot(count % 5, 5).float().expand(B, T, 5), int(count[-1])


_probs_hint = ("torch.multinomial needs probabilities (non-negative): apply softmax to the logits first, "
               "F.softmax(logits / temperature, dim=-1)")
_g = torch.Generator().manual_seed(0)
_s = call_checked(sample, _Counter(), [4, 2], 6, _g, name="sample(counter model, prompt [4, 2], 6 tokens)",
                  hint=_probs_hint)
check_type(_s, list, "sample(...)", hint="return a list of ints")
check(len(_s) == 6, f"sample(..., n_new=6) returned {len(_s)} tokens; return only the 6 new ones")
check(all(isinstance(t, int) for t in _s), "sample should return Python ints (use int(...) or .item())")
check(_s != [3] * 6, "sample gave [3, 3, 3, ...]: feed each drawn token back into the model, "
                     "with the state, before drawing the next one")
check(_s[0] != 0, "the first token should continue the *last* prompt token (2 -> 3), but it continued the "
                 "first one (4 -> 0): use the logits of the last position, logits[0, -1]")
check_equal(_s, [3, 4, 0, 1, 2, 3], "sample(counter model, prompt [4, 2], 6 tokens)",
            hint="the counter model predicts (last token + 1) mod 5 with near certainty")
_s = call_checked(sample, _Clock(), [0, 0], 4, _g, name="sample(clock model, prompt [0, 0], 4 tokens)",
                  hint=_probs_hint)
check_equal(_s, [2, 3, 4, 0], "sample(clock model, prompt [0, 0], 4 tokens)",
            hint="the clock model's prediction depends on its state: pass the state returned by "
                 "forward_state back in with the next token")

_draws = call_checked(sample, _Die(), [0], 3000, torch.Generator().manual_seed(1), name="sample(die, 3000)",
                      hint=_probs_hint)
_freq = [_draws.count(k) / len(_draws) for k in range(3)]
check(_freq[0] < 0.99, "sample always returned the most likely token: that is arg-max (greedy), not "
                       "sampling — draw with torch.multinomial(probs, 1, generator=generator)")
check(all(abs(f - p) < 0.04 for f, p in zip(_freq, [0.7, 0.2, 0.1])),
      f"token frequencies {[round(f, 3) for f in _freq]} should be near [0.7, 0.2, 0.1] — draw from "
      "softmax(logits of the *last* position)")
_a = sample(_Die(), [0], 50, torch.Generator().manual_seed(7))
_b = sample(_Die(), [0], 50, torch.Generator().manual_seed(7))
check(_a == _b, "the same seed gave different samples: pass generator=generator to torch.multinomial")
_cold = sample(_Die(), [0], 300, torch.Generator().manual_seed(2), temperature=0.05)
check(_cold.count(0) > 290, f"at temperature 0.05 the most likely token should win almost always, got "
                            f"{_cold.count(0)}/300 — divide the logits by the temperature before the softmax")
visible_checks_pass("sample")
### BEGIN HIDDEN TESTS
class _Markov(_Die):
    """Next token depends on the last one read: after k, the next is k (prob 0.8) or k+1 mod 4 (0.2)."""

    def __init__(self):
        super().__init__()
        T = torch.full((4, 4), 1e-12)
        for k in range(4):
            T[k, k], T[k, (k + 1) % 4] = 0.8, 0.2
        self.table = T.log()

    def forward_state(self, idx, state=None):  # the state is not needed: the last token decides
        return self.table[idx], state


_s = sample(_Markov(), [3, 1], 4000, torch.Generator().manual_seed(11))
_prev = [1] + _s[:-1]
_stay = sum(a == b for a, b in zip(_prev, _s)) / len(_s)
check(abs(_stay - 0.8) < 0.03, f"sample: the chain stayed put {_stay:.3f} of the time, expected 0.8")
check(all(b in (a, (a + 1) % 4) for a, b in zip(_prev, _s)), "sample drew a token the model forbids")
_hot = sample(_Die(), [0], 3000, torch.Generator().manual_seed(3), temperature=2.0)
_f0 = _hot.count(0) / 3000
_p = torch.softmax(torch.tensor([0.7, 0.2, 0.1]).log() / 2.0, 0)
check(abs(_f0 - float(_p[0])) < 0.04,
      f"at temperature 2 token 0 should come {float(_p[0]):.3f} of the time, got {_f0:.3f}")
### END HIDDEN TESTS

# %% [markdown]
# ## 8. Training on Shakespeare
#
# Now the real thing. The corpus is Shakespeare's plays, split **by play**: the validation text
# (*Julius Caesar*, *Twelfth Night*, *Richard II*) is never seen in training. Each split is encoded
# once into a long tensor of character ids.

# %%
corpus = load_shakespeare()
tok = CharTokenizer.from_text(corpus.text("train"))
train_ids = encode_split(corpus, "train", tok)
val_ids = encode_split(corpus, "val", tok)
P = rt.profile
print(f"{tok.vocab_size} tokens in the vocabulary (the training text's characters and <unk>); "
      f"{len(train_ids):,} training and "
      f"{len(val_ids):,} validation characters")
print(f"profile {P.name}: {P.train_steps} steps of {P.batch_size} x {P.block_size} characters, "
      f"embedding and hidden size {P.n_embd}")
print(f"a uniform guess costs log |V| = {math.log(tok.vocab_size):.2f} nats per character")

# %% [markdown]
# ### One optimisation step, by hand
#
# Training is the lecture's mini-batch SGD: take a batch, compute the loss $\ell(\theta)$, and move
# every parameter a little downhill, $\theta \leftarrow \theta - \eta\, \nabla_\theta \ell$, with
# learning rate $\eta$. In PyTorch one step is four moves:
#
# 1. **loss**: the mean next-token loss of the batch, `lm_loss(model(idx), idx)` — the forward
#    pass records a graph of the computation;
# 2. **backward**: `loss.backward()` walks the graph back and *adds* $\partial \ell / \partial p$
#    into `p.grad` for every parameter `p`;
# 3. **update**: `p -= lr * p.grad` for every parameter, inside `with torch.no_grad():` — the
#    update is not part of the model, so autograd must not record it (and PyTorch refuses an
#    in-place change of a parameter it is recording). Change `p` *in place*: `p = p - lr * p.grad`
#    only rebinds the name `p` and leaves the model as it was;
# 4. **clear the gradients**: `model.zero_grad()` (or `p.grad = None`), because the next
#    `backward()` would *add* its gradients to these.
#
# ### Exercise 7 — one SGD step (2 points)
#
# Write `train_step` with these four moves, by hand: not with `torch.optim` (the tests switch it
# off; the point is to see what an optimiser's `step()` does). Skip parameters whose `.grad` is
# `None` (a frozen parameter, `requires_grad=False`, gets none). Return the loss *before* the
# update as a Python float, and leave every `.grad` cleared (`None` or zeros) for the next step.
# The tests run your `train_step` with our `lm_loss` in place of yours, on a small model of
# their own.

# %% solution="train_step"
def train_step(model, idx, lr):
    """One step of plain mini-batch SGD on a batch of token windows idx (B, T).

    loss = lm_loss(model(idx), idx); backward; p <- p - lr * p.grad for every parameter that has a
    gradient (in place, under torch.no_grad()); then clear the gradients (None or zeros).
    Returns the loss before the update, as a Python float. No torch.optim.
    """
    ### BEGIN SOLUTION
    logits = model(idx)  # (B, T, V)
    loss = lm_loss(logits, idx)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    model.zero_grad()
    return loss.item()
    ### END SOLUTION


# %% tests="train_step_tests" points=2
# One mistake costs once: train_step runs here with our lm_loss in place of yours, on a small
# model of the tests' own (an embedding, a frozen scale, an output layer).
class _BigramLM(nn.Module):
    def __init__(self, V=5, E=3):
        super().__init__()
        self.wte = nn.Embedding(V, E)
        self.scale = nn.Parameter(torch.ones(E), requires_grad=False)  # frozen: gets no gradient
        self.lm_head = nn.Linear(E, V)

    def forward(self, idx):
        return self.lm_head(self.wte(idx) * self.scale)  # (B, T, V)


_no_optim = lambda: forbid_calls(  # noqa: E731 (torch.optim.Optimizer.__init__ runs for every optimiser)
    torch.optim.Optimizer, importlib.import_module("torch.optim.sgd"),
    reason="write the update yourself, p -= lr * p.grad, not torch.optim")
_refs = lambda: substitute(globals(), lm_loss=lmcourse.reference.rnn.lm_loss)  # noqa: E731
torch.manual_seed(0)
_m = _BigramLM().double()
_idx = torch.tensor([[0, 1, 2, 3, 4, 0], [4, 4, 3, 1, 0, 2]])
_before = {_n: _p.detach().clone() for _n, _p in _m.named_parameters()}
_params = dict(_m.named_parameters())
_requires = {_n: _p.requires_grad for _n, _p in _m.named_parameters()}
_m_start = copy.deepcopy(_m)
_lr = 0.5
with _no_optim(), _refs():
    _ret = call_checked(train_step, _m, _idx, _lr, name="train_step(model, idx, lr=0.5)",
                        hint="inside `with torch.no_grad():` update each parameter in place, skipping those "
                             "whose .grad is None (the frozen scale has none)")
# what the step must have done, computed here without your code, on the copy taken before it
_loss_want = lmcourse.reference.rnn.lm_loss(_m_start(_idx), _idx)
_grads = dict(zip([_n for _n, _p in _m_start.named_parameters() if _p.requires_grad],
                  torch.autograd.grad(_loss_want, [_p for _p in _m_start.parameters() if _p.requires_grad])))
check_type(_ret, float, "train_step(...)", hint="return loss.item(), the loss as a Python float")
with torch.no_grad():
    _loss_after = lmcourse.reference.rnn.lm_loss(_m(_idx), _idx).item()
check(abs(_ret - _loss_want.item()) < 1e-9 or abs(_ret - _loss_after) > 1e-9,
      "train_step returned the loss *after* the update: return the loss computed before it")
check_close(_ret, _loss_want.item(), "train_step's returned loss", rel=1e-9,
            hint="the mean next-token loss lm_loss(model(idx), idx), before the update")
check(all(_p is _params[_n] for _n, _p in _m.named_parameters()),
      "train_step replaced the model's parameters by new tensors: update them in place, p -= lr * p.grad")
check(all(_p.is_leaf and _p.requires_grad == _requires[_n] for _n, _p in _m.named_parameters()),
      "after train_step a parameter is no longer a leaf that requires grad: do the update under torch.no_grad()")
_moved = {_n: float((_p.detach() - _before[_n]).abs().max()) for _n, _p in _m.named_parameters()}
_left = [_n for _n, _p in _m.named_parameters() if _p.grad is not None and float(_p.grad.abs().max()) > 0]
check(any(_v > 0 for _v in _moved.values()) or not _left,
      "train_step did not change any parameter, and this batch's gradients are still in p.grad: the update "
      "ran before loss.backward() — the order is loss, backward, update, clear the gradients")
check(any(_v > 0 for _v in _moved.values()),
      "train_step did not change any parameter. Either the gradients were cleared before the update used "
      "them (clear them last), or the update did not change p in place: `p = p - lr * p.grad` only rebinds "
      "the name p, and an out-of-place p.data.sub(...) is thrown away — use p -= lr * p.grad under torch.no_grad()")
check(_moved["scale"] == 0.0, "train_step changed the frozen parameter `scale` (requires_grad=False), "
                              "which has no gradient: skip parameters whose .grad is None")
for _n, _g in _grads.items():
    _got = _params[_n].detach()
    check(float((_got - (_before[_n] + _lr * _g)).abs().max()) > 1e-12 or float(_g.abs().max()) == 0,
          f"train_step moved {_n} *uphill*, p + lr * grad: gradient descent subtracts, p -= lr * p.grad")
    check(float((_got - (_before[_n] - _g)).abs().max()) > 1e-12 or float(_g.abs().max()) == 0,
          f"train_step moved {_n} by the whole gradient: multiply it by the learning rate, p -= lr * p.grad")
    check_tensor_close(_got, _before[_n] - _lr * _g, f"{_n} after one step of train_step", atol=1e-12,
                       hint="p <- p - lr * dloss/dp, with the gradient of *this* batch's loss: backward first, "
                            "then the update, then clear the gradients")
_left = [_n for _n, _p in _m.named_parameters() if _p.grad is not None and float(_p.grad.abs().max()) > 0]
check(not _left, f"after train_step, {_left} still hold gradients: clear them after the update (model.zero_grad() "
                 "or p.grad = None); the next backward() would add to them")

# Three more steps on other batches must follow plain SGD exactly: torch.optim.SGD, run here, agrees.
_m2 = copy.deepcopy(_m)
_opt = torch.optim.SGD([_p for _p in _m2.parameters() if _p.requires_grad], lr=0.3)
for _k, _b in enumerate([_idx.flip(1), _idx % 3, _idx.roll(1, 1)]):
    with _no_optim(), _refs():
        call_checked(train_step, _m, _b, 0.3, name=f"train_step (step {_k + 2})")
    _opt.zero_grad()   # SGD steps after train_step: while it runs, _m2 is one step behind
    lmcourse.reference.rnn.lm_loss(_m2(_b), _b).backward()
    _opt.step()
for (_n, _p), _p2 in zip(_m.named_parameters(), _m2.parameters()):
    check_tensor_close(_p.detach(), _p2.detach(), f"{_n} after 4 steps vs torch.optim.SGD", atol=1e-12,
                       hint="each step must use only its own batch's gradient: clear the gradients every step")
visible_checks_pass("train_step")
### BEGIN HIDDEN TESTS
class _TwoLayerLM(nn.Module):
    def __init__(self, V=7, E=4, H=6):
        super().__init__()
        self.emb = nn.Embedding(V, E)
        self.mix = nn.Linear(E, H)
        self.frozen = nn.Linear(H, H)
        self.frozen.requires_grad_(False)
        self.lm_head = nn.Linear(H, V)

    def forward(self, idx):
        return self.lm_head(torch.tanh(self.frozen(torch.tanh(self.mix(self.emb(idx))))))


torch.manual_seed(11)
_m = _TwoLayerLM().double()
_m2 = copy.deepcopy(_m)
_opt = torch.optim.SGD([_p for _p in _m2.parameters() if _p.requires_grad], lr=0.7)
_g = torch.Generator().manual_seed(4)
for _k in range(5):
    _b = torch.randint(7, (3, 8), generator=_g)
    with _refs(), _no_optim():
        _ret = train_step(_m, _b, 0.7)
    _opt.zero_grad()   # the reference's step after the graded one (no expected value while it runs)
    _want = lmcourse.reference.rnn.lm_loss(_m2(_b), _b)
    _want.backward()
    _opt.step()
    check(isinstance(_ret, float), "train_step must return a Python float")
    check_close(_ret, _want.item(), f"train_step loss at step {_k + 1}", rel=1e-9)
    del _want
for (_n, _q), _q2 in zip(_m.named_parameters(), _m2.parameters()):
    check_tensor_close(_q.detach(), _q2.detach(), f"{_n} after 5 steps (hidden)", atol=1e-12)
    check(_q.grad is None or float(_q.grad.abs().max()) == 0, "train_step must clear the gradients")
### END HIDDEN TESTS

# %% [markdown]
# **Your loop.** `lmcourse.data.get_batch` draws `batch_size` windows of `block_size + 1`
# consecutive characters at random offsets and cuts each into inputs `x = window[:-1]` and
# targets `y = window[1:]`. Here we glue each window back together, `idx = window`, so that
# `lm_loss` can do the shift itself, and take a few hundred plain SGD steps with your
# `train_step` on a fresh RNN (learning rate 1, no schedule, no clipping).

# %%
import matplotlib.pyplot as plt

torch.manual_seed(rt.seed)
rnn_sgd = RNNLM(tok.vocab_size, n_embd=P.n_embd, n_hidden=P.n_embd).to(rt.device)
batch_gen = torch.Generator().manual_seed(rt.seed)
sgd_losses = []
for _ in range(min(200, P.train_steps // 5)):
    x, y = get_batch(train_ids, P.batch_size, P.block_size, batch_gen, rt.device)
    window = torch.cat([x, y[:, -1:]], dim=1)  # (B, T + 1): x plus the last target
    sgd_losses.append(train_step(rnn_sgd, window, lr=1.0))
print(f"{len(sgd_losses)} SGD steps: loss {sgd_losses[0]:.3f} -> {sum(sgd_losses[-10:]) / len(sgd_losses[-10:]):.3f} "
      "nats/char (mean of the last 10)")
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(range(1, len(sgd_losses) + 1), sgd_losses, lw=0.8)
ax.set_xlabel("step")
ax.set_ylabel("training loss (nats/char)")
ax.set_title("Plain SGD with your train_step");

# %% [markdown]
# ### Handing over to `lmcourse.train`
#
# `lmcourse.train.train(model, train_ids, val_ids, cfg)` repeats the same four moves (the
# targets come already shifted from `get_batch`, so its loss is the cross-entropy of `model(x)`
# against `y` at every position), with the improvements every modern model uses:
#
# * **AdamW** instead of plain SGD (per-parameter step sizes from running gradient statistics);
# * a **learning-rate schedule**: a short linear warm-up, then a cosine decay to 10% of the peak;
# * **gradient clipping**: if the gradient's global norm $\lVert g \rVert$ exceeds $c$, it is
#   rescaled to $g \cdot c / \lVert g \rVert$ (same direction, bounded step) — more in Section 10;
# * a validation estimate every `eval_interval` steps, a progress bar with the loss and the
#   throughput, and a seed, so that a rerun gives the same curve.
#
# Every later notebook trains with this same loop. The sizes come from the profile (`tiny` when
# grading, `cpu` on a laptop, `gpu` on a GPU), printed by the setup cell.

# %% [markdown]
# ### Your RNN
#
# AdamW's learning rate of 3e-3 is typical for small character models. The clipping threshold
# $c = 0.5$ is set from the gradient norms these models actually have (Section 10 plots them):
# the customary $c = 1$ would never act here.

# %%
from lmcourse.recipes import rnn as rnn_recipe

# the recipe (lmcourse.recipes.rnn): Adam at 3e-3, clipping at 0.5, validated 5x as often as the
# profile says, so the curves show the fast early drop
R = rnn_recipe.recipe(P.name)
cfg = R.train_config(seed=rt.seed)
torch.manual_seed(rt.seed)
rnn = RNNLM(tok.vocab_size, **R.model_sizes())
hist_rnn = train(rnn, train_ids, val_ids, cfg)

# %% [markdown]
# ### An LSTM
#
# The **long short-term memory** cell keeps a second state, the *cell* $c_t \in \mathbb{R}^J$,
# which is changed only by element-wise gates. From the same input $x_t$ and previous hidden
# state $h_{t-1}$ as the Elman step, it computes three gates with the logistic sigmoid
# $\sigma(a) = 1 / (1 + e^{-a})$, each a vector of numbers between 0 and 1, and a candidate
# content $\tilde c_t$:
#
# $$\begin{aligned}
# i_t &= \sigma(W_{xi} x_t + W_{hi} h_{t-1} + b_i) && \text{input gate: how much new content to write}\\
# f_t &= \sigma(W_{xf} x_t + W_{hf} h_{t-1} + b_f) && \text{forget gate: how much of the old cell to keep}\\
# \tilde c_t &= \tanh(W_{xc} x_t + W_{hc} h_{t-1} + b_c) && \text{candidate content}\\
# o_t &= \sigma(W_{xo} x_t + W_{ho} h_{t-1} + b_o) && \text{output gate: how much of the cell to show}\\
# c_t &= f_t \odot c_{t-1} + i_t \odot \tilde c_t, \qquad h_t = o_t \odot \tanh(c_t),
# \end{aligned}$$
#
# with $\odot$ the element-wise product and $h_0 = c_0 = \mathbf{0}$. Each gate has its own
# weights, four times the Elman step's. Because $c_t$ is updated by addition (scaled by $f_t$)
# rather than squashed through a matrix and a $\tanh$ at every step, information (and gradient)
# can survive many steps: with $f_t \approx 1$ and $i_t \approx 0$ the cell simply carries its
# content on. We use PyTorch's `nn.LSTM` with the same sizes and the same training budget. It
# stores the four input matrices stacked in one `weight_ih_l0` of shape $(4J, I)$, in the order
# $i, f, \tilde c, o$ (likewise `weight_hh_l0`, and two bias vectors that it adds); the next
# cell checks the equations above against it, step by step.

# %%
class LSTMLM(nn.Module):
    """Embedding -> nn.LSTM -> output layer, with the same interface as RNNLM."""

    def __init__(self, vocab_size: int, n_embd: int, n_hidden: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.lstm = nn.LSTM(n_embd, n_hidden, batch_first=True)
        self.lm_head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx, state=None):
        return self.forward_state(idx, state)[0]

    def forward_state(self, idx, state=None):
        out, state = self.lstm(self.wte(idx), state)  # (B, T, H), ((1, B, H), (1, B, H))
        return self.lm_head(out), state


torch.manual_seed(rt.seed)
lstm = LSTMLM(tok.vocab_size, **R.model_sizes())

# The gate equations, written out with nn.LSTM's own weights, give nn.LSTM's outputs.
_cell = lstm.lstm
W_i, W_f, W_c, W_o = _cell.weight_ih_l0.detach().chunk(4)  # each (J, I)
U_i, U_f, U_c, U_o = _cell.weight_hh_l0.detach().chunk(4)  # each (J, J)
b_i, b_f, b_c, b_o = (_cell.bias_ih_l0 + _cell.bias_hh_l0).detach().chunk(4)
xs = lstm.wte(torch.randint(tok.vocab_size, (2, 5))).detach()  # (B, T, I)
h = c = torch.zeros(2, P.n_embd)
hs_by_hand = []
with torch.no_grad():
    for t in range(xs.shape[1]):
        i_t = torch.sigmoid(xs[:, t] @ W_i.T + h @ U_i.T + b_i)
        f_t = torch.sigmoid(xs[:, t] @ W_f.T + h @ U_f.T + b_f)
        c_tilde = torch.tanh(xs[:, t] @ W_c.T + h @ U_c.T + b_c)
        o_t = torch.sigmoid(xs[:, t] @ W_o.T + h @ U_o.T + b_o)
        c = f_t * c + i_t * c_tilde
        h = o_t * torch.tanh(c)
        hs_by_hand.append(h)
    hs_lstm, _ = _cell(xs)
print(f"largest difference between the equations and nn.LSTM: "
      f"{float((torch.stack(hs_by_hand, 1) - hs_lstm).abs().max()):.1e}")

hist_lstm = train(lstm, train_ids, val_ids, cfg)

# %%
ax = plot.loss_curves({"RNN": hist_rnn, "LSTM": hist_lstm}, title=f"Character models on Shakespeare ({P.name})")
ax.axhline(math.log(tok.vocab_size), color="gray", lw=0.8, ls=":", label="uniform guess")
ax.legend()
for name, h in [("RNN", hist_rnn), ("LSTM", hist_lstm)]:
    v = h.final_val_loss
    print(f"{name:<5} validation loss {v:.3f} nats/char = {v / math.log(2):.3f} bits/char, "
          f"perplexity {perplexity(torch.tensor([v])):.2f}   ({h.tokens_per_sec:,.0f} chars/s)")

# %% [markdown]
# **Bits per character, and notebook 01's per-word perplexity.** Dividing a loss in nats by
# $\ln 2$ gives **bits per character** (bpc): the average number of yes/no questions the model
# needs to pin down the next character; a uniform guess over $|V|$ characters needs $\log_2 |V|$.
# A per-character perplexity of 5 sounds far better than notebook 01's per-word perplexities in
# the hundreds, but the units differ: a word costs the sum of its characters' losses (its letters
# and the space or punctuation after it). If a word token of notebook 01 spans $L$ characters on
# average, the character model's loss per word is about $L$ times its loss per character, so
#
# $$\mathrm{PPL}_\text{word} \approx e^{L \cdot \text{nats/char}} = 2^{L \cdot \text{bpc}}
#   = \mathrm{PPL}_\text{char}^{\,L}.$$
#
# The next cell measures $L$ on notebook 01's validation text (the spoken lines, split into words,
# punctuation marks and one `</s>` per sentence, as in 01) and the character models' loss on that
# same text. The comparison favours notebook 01: its models lower-case the text and predict one
# `<unk>` for every rare word, while a character model must spell out each word, capitals included.

# %%
from lmcourse.data import spoken_text
from lmcourse.tokenizers import split_sentences
from lmcourse.train import estimate_loss

spoken = spoken_text(corpus.text("val"))
n_word_tokens = sum(len(s) + 1 for s in split_sentences(spoken))  # words, punctuation, </s>
L = len(spoken) / n_word_tokens
spoken_ids = torch.tensor(tok.encode(spoken), dtype=torch.long)
print(f"notebook 01's validation text: {len(spoken):,} characters, {n_word_tokens:,} word tokens, "
      f"L = {L:.2f} characters per token")
for name, model in [("RNN", rnn), ("LSTM", lstm)]:
    v = estimate_loss(model, spoken_ids, P.batch_size, P.block_size, P.eval_batches, seed=rt.seed,
                      device=next(model.parameters()).device)
    print(f"{name:<5} on it: {v / math.log(2):.3f} bits/char -> about {math.exp(L * v):,.0f} per word token "
          "(compare with notebook 01's Kneser-Ney validation perplexity)")

# %% [markdown]
# ## 9. Samples, and a guessing game
#
# Both models continue the same prompt. With the `tiny` profile they are barely trained and the
# output is noise; on the `cpu` profile you should see words, line breaks and speaker names.

# %%
prompt = "BRUTUS.\n"
gen = torch.Generator().manual_seed(rt.seed)
for name, model in [("RNN", rnn), ("LSTM", lstm)]:
    model.eval()
    text = tok.decode(sample(model, tok.encode(prompt), 300, gen, temperature=0.8))
    print(f"----- {name} (temperature 0.8) -----\n{prompt}{text}\n")

# %% [markdown]
# **Which one is the real Shakespeare?** One of the two passages below comes from a validation
# play, the other is the LSTM's continuation of that passage's first line. Decide before you
# run the next cell.

# %%
import random

_rng = random.Random(rt.seed + 2)
val_text = corpus.text("val")
start = val_text.find("\n\n", _rng.randrange(len(val_text) - 2000)) + 2
first_line_end = val_text.index("\n", start) + 1
real = val_text[start:start + 400]
fake = val_text[start:first_line_end] + tok.decode(
    sample(lstm, tok.encode(val_text[start:first_line_end]), 400 - (first_line_end - start), gen, temperature=0.8))
passages = [("real", real), ("sample", fake)]
_rng.shuffle(passages)
for label, (_, text) in zip("AB", passages):
    print(f"===== {label} =====\n{text}\n")

# %%
print("The real one is", "A" if passages[0][0] == "real" else "B")

# %% [markdown]
# ## 10. Vanishing gradients, seen
#
# How much does the prediction at the end of a window depend on a character $k$ steps back? Ask
# the gradient: $\lVert \partial \ell_T / \partial x_{T-k} \rVert$, where $x$ are the input
# embeddings. For the Elman RNN, the chain rule through the recurrence multiplies one Jacobian
# per step,
#
# $$\frac{\partial h_T}{\partial h_{T-k}} = \prod_{s=T-k+1}^{T} \mathrm{diag}\big(1 - h_s^2\big)\, W_{hh},$$
#
# and a product of $k$ matrices whose norms are below 1 shrinks geometrically in $k$ — the
# gradient *vanishes*, so the model learns little about long-range dependencies. (If the norms
# are above 1 it can instead *explode*.) The LSTM's additive cell path avoids much of this.
# The cell below measures both trained models on validation windows (averaged over a batch).

# %%
def gradient_by_distance(model, ids, n_windows=8, length=None):
    """Mean norm of d(loss at the last position) / d(input embedding k steps back), k = 0..T-1."""
    model = copy.deepcopy(model).double().cpu()  # float64: tiny gradients would underflow in float32
    length = length or min(2 * P.block_size, 100)
    g = torch.Generator().manual_seed(0)
    starts = torch.randint(len(ids) - length - 1, (n_windows,), generator=g)
    window = ids[starts[:, None] + torch.arange(length + 1)]  # (W, T + 1)
    idx, target = window[:, :-1], window[:, -1]
    x = model.wte(idx).detach().requires_grad_()  # (W, T, E): differentiate w.r.t. the inputs
    if isinstance(model, RNNLM):
        hs = rnn_forward(x, None, model.W_xh, model.W_hh, model.b_h)
    else:
        hs, _ = model.lstm(x)
    loss = F.cross_entropy(model.lm_head(hs[:, -1]), target)
    (grad,) = torch.autograd.grad(loss, x)  # (W, T, E)
    per_position = grad.norm(dim=-1).mean(dim=0)  # (T,)
    return per_position.flip(0).tolist()  # index k = k steps back from the last input


norms = {"RNN": gradient_by_distance(rnn, val_ids), "LSTM": gradient_by_distance(lstm, val_ids)}
plot.gradient_by_distance(norms)
for name, ys in norms.items():
    print(f"{name:<5} gradient 20 steps back / at the last step: {ys[20] / ys[0]:.2e}")

# %% [markdown]
# **Clipping.** Vanishing gradients are a property of the architecture; *exploding* ones are
# handled in the training loop. The loop measured the global gradient norm at every step before
# clipping it to `grad_clip` $= 0.5$; the plot shows those norms and how often clipping acted.
# A threshold only matters relative to the norms a model has: these small models keep theirs
# below 1 (typically around 0.2–0.4), so the customary $c = 1$ would never act, while $c = 0.5$
# catches the larger gradients of the first, fast-changing steps and the occasional spike later
# (in the `cpu` profile we measured 1.9% of the RNN's steps clipped and 0.7% of the LSTM's).
# The rescaling keeps the direction of the gradient and only bounds the length of the step, so one
# unlucky batch cannot throw the weights far away.

# %%
fig, ax = plt.subplots(figsize=(7, 3.5))
for name, h in [("RNN", hist_rnn), ("LSTM", hist_lstm)]:
    ax.semilogy(h.steps, h.grad_norm, lw=0.8,
                label=f"{name} (clipped on {h.clipped_fraction(cfg.grad_clip):.1%} of steps)")
    g = sorted(h.grad_norm)
    first = h.steps[next((i for i, n in enumerate(h.grad_norm) if n <= cfg.grad_clip), len(g) - 1)]
    print(f"{name:<5} gradient norm: median {g[len(g) // 2]:.2f}, largest {g[-1]:.2f}; clipped on "
          f"{h.clipped_fraction(cfg.grad_clip):.1%} of steps (the first unclipped step: {first}); "
          f"a threshold of 1 would have clipped {h.clipped_fraction(1.0):.1%}")
ax.axhline(cfg.grad_clip, color="k", ls="--", lw=1, label="clip threshold")
ax.set_xlabel("step")
ax.set_ylabel("gradient norm before clipping")
ax.legend(fontsize=8, loc="upper right")
ax.set_title("Gradient norms during training");

# %% [markdown]
# ## 11. Questions
#
# Answer each multiple-choice question by setting the variable to one letter, e.g.
# `answer_q1 = "A"`.
#
# **Q1.** Why can't the $T$ steps of an RNN's forward pass be computed in parallel, the way
# the positions of a batch can?
#
# * A. Because `nn.Embedding` must look tokens up one at a time.
# * B. Because $h_t$ depends on $h_{t-1}$, which must be computed first.
# * C. Because the softmax normalises over the time axis.
# * D. Because the weights $W_{hh}$ differ from one step to the next.

# %% solution="q1"
# Your answer, one letter: answer_q1 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q1 = "B"
### END SOLUTION

# %% tests="q1_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q1, "ABCD", "answer_q1")
visible_checks_pass("answer_q1")
### BEGIN HIDDEN TESTS
check_choice(answer_q1, "ABCD", "answer_q1", correct="B")
### END HIDDEN TESTS

# %% [markdown]
# **Q2.** A character model reaches a validation loss of 1.6 nats per character. Its perplexity
# is about
#
# * A. 1.6
# * B. 3.0
# * C. 5.0
# * D. 40

# %% solution="q2"
# Your answer, one letter: answer_q2 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q2 = "C"
### END SOLUTION

# %% tests="q2_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q2, "ABCD", "answer_q2")
visible_checks_pass("answer_q2")
### BEGIN HIDDEN TESTS
check_choice(answer_q2, "ABCD", "answer_q2", correct="C")
### END HIDDEN TESTS

# %% [markdown]
# **Q3.** The global gradient norm of a step is 5 and `grad_clip` is 1. What does clipping by
# norm do?
#
# * A. Multiplies every gradient entry by 1/5, keeping the direction and making the norm 1.
# * B. Sets every gradient entry larger than 1 in magnitude to ±1.
# * C. Skips the step.
# * D. Divides the learning rate by 5 for the rest of training.

# %% solution="q3"
# Your answer, one letter: answer_q3 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q3 = "A"
### END SOLUTION

# %% tests="q3_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q3, "ABCD", "answer_q3")
visible_checks_pass("answer_q3")
### BEGIN HIDDEN TESTS
check_choice(answer_q3, "ABCD", "answer_q3", correct="A")
### END HIDDEN TESTS

# %% [markdown]
# **Q4.** During training with teacher forcing, what is the input at position $t + 1$?
#
# * A. The character the model sampled at position $t$.
# * B. The most likely character under the model at position $t$.
# * C. A padding token, so the model cannot cheat.
# * D. The true character from the training text.

# %% solution="q4"
# Your answer, one letter: answer_q4 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q4 = "D"
### END SOLUTION

# %% tests="q4_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q4, "ABCD", "answer_q4")
visible_checks_pass("answer_q4")
### BEGIN HIDDEN TESTS
check_choice(answer_q4, "ABCD", "answer_q4", correct="D")
### END HIDDEN TESTS

# %% [markdown]
# **Q5 (free text, graded by hand).** In two to four sentences: which model reached the lower
# validation loss on your run, and how does your gradient-by-distance plot help explain why?
# Mention what the Jacobian product in Section 10 does as $k$ grows.

# %% [markdown] answer="q5_free_text" points=2
# *Model answer.* The LSTM reached the lower validation loss. In the plot, the RNN's gradient
# with respect to inputs k steps back falls by orders of magnitude within a few dozen steps,
# because each step multiplies it by diag(1 - h²) W_hh, whose norm is typically below 1, so
# the product shrinks geometrically; the RNN therefore gets almost no learning signal from
# characters far back. The LSTM's cell state is updated additively through gates, so its
# gradient decays much more slowly and it can use longer context (e.g. to close a word or a line).

# %% [markdown]
# ## Wrap-up
#
# You built an RNN language model from its one-line recurrence: a step, the loop over time, the
# embedding and output layers around it, the shifted cross-entropy loss, perplexity, a sampler and
# one SGD step by hand. You trained it and an LSTM with the course's training loop and saw where
# the plain RNN falls short: everything it knows about the past must squeeze through one vector,
# updated by a matrix product at every step, so its gradients fade with distance and its
# computation is strictly sequential.
#
# **Next (notebook 03):** attention lets every position look *directly* at every earlier one —
# no fixed-length bottleneck, no chain of Jacobians, and all positions computed in parallel —
# which is the heart of the transformer.
