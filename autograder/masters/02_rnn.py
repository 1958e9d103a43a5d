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
# network (RNN). You will write the recurrence, the language-model loss and perplexity, and a
# sampler; then train your RNN and an LSTM on Shakespeare with the course's training loop,
# compare them, play "which one is the real Shakespeare?", and *see* why plain RNNs forget:
# their gradients vanish as they travel back in time.
#
# **Prerequisites.** Notebook 01 (n-gram models, the chain rule, perplexity); PyTorch basics:
# tensors and their shapes, `nn.Module`, autograd (`loss.backward()`).
#
# **Time.** About 60–90 minutes of reading and coding. The two training cells take under a
# minute each on a 2-core CPU (profile `cpu`; measured with one thread: 34 s and 49 s), longer if
# other programs compete for the cores (then try `LMCOURSE_THREADS=1`), and a few minutes each
# on a GPU (profile `gpu`, which trains a larger model for longer; not yet timed). Under the autograder (profile
# `tiny`) the whole notebook runs in well under a minute.
#
# Graded cells say `# YOUR CODE HERE`. Each is followed by a test cell: run it, and if a check
# fails, its message says what to look at. Hidden tests run when the notebook is graded.

# %% locked="setup"
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import lmcourse
from lmcourse import plot
from lmcourse.checks import (call_checked, check, check_close, check_equal, check_shape,
                             check_tensor_close, check_type, forbid_torch_functions)
from lmcourse.data import encode_split, load_shakespeare
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, train

rt = lmcourse.setup()

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
# Write `elman_step`. Use tensor operations (`@`, `.T`, `torch.tanh`), not `nn.RNN` or
# `nn.RNNCell`: the point is to see there is nothing more to it.

# %% solution="elman_step"
def elman_step(x_t, h_prev, W_xh, W_hh, b_h):
    """One step of the Elman RNN: h_t = tanh(x_t W_xh^T + h_prev W_hh^T + b_h).

    x_t: (B, I) inputs at step t; h_prev: (B, H) the previous hidden state h_{t-1};
    W_xh: (H, I); W_hh: (H, H); b_h: (H,).  Returns h_t: (B, H), in the inputs' dtype.
    The training loop back-propagates through every step: no .detach() and no in-place writes
    into a preallocated tensor.
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
_no_rnn = lambda: forbid_torch_functions(  # noqa: E731
    "rnn_tanh", "rnn_relu", "lstm", "gru", reason="compute the recurrence yourself with @, .T and torch.tanh")
torch.manual_seed(0)
_cell = nn.RNNCell(4, 4, dtype=torch.float64)  # I = H here, so swapped weights cannot hide behind a shape error
_x, _h = torch.randn(5, 4, **_f64), torch.randn(5, 4, **_f64)
_Wxh, _Whh = _cell.weight_ih.detach(), _cell.weight_hh.detach()
_b = (_cell.bias_ih + _cell.bias_hh).detach()
_want = _cell(_x, _h).detach()
with _no_rnn():
    _got = call_checked(elman_step, _x, _h, _Wxh, _Whh, _b, name="elman_step(batch of 5)")
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
print("elman_step: all visible checks passed")
### BEGIN HIDDEN TESTS
def _ref_step(x, h, Wxh, Whh, b):
    return torch.tanh(torch.einsum("bi,hi->bh", x, Wxh) + torch.einsum("bj,hj->bh", h, Whh) + b)


_why = "elman_step must compute the step itself, not call nn.RNNCell / nn.RNN / torch.rnn_tanh_cell"
with forbid_torch_functions("rnn_tanh", "rnn_relu", "lstm", "gru", reason=_why):
    for _B, _I, _H in [(1, 1, 1), (3, 7, 5), (8, 5, 9)]:
        _g = torch.Generator().manual_seed(_B * 100 + _I)
        _args = [torch.randn(_B, _I, generator=_g, **_f64), torch.randn(_B, _H, generator=_g, **_f64),
                 torch.randn(_H, _I, generator=_g, **_f64), torch.randn(_H, _H, generator=_g, **_f64),
                 torch.randn(_H, generator=_g, **_f64)]
        _copies = [a.clone() for a in _args]
        check_tensor_close(elman_step(*_args), _ref_step(*_args), f"elman_step {(_B, _I, _H)}", atol=1e-12)
        check(all(torch.equal(a, c) for a, c in zip(_args, _copies)), "elman_step changed its inputs in place")
    # gradients flow to every argument
    _ps = [a.clone().requires_grad_() for a in _args]
    _gs = torch.autograd.grad(elman_step(*_ps).sum(), _ps)
    _ps2 = [a.clone().requires_grad_() for a in _args]
    _gs2 = torch.autograd.grad(_ref_step(*_ps2).sum(), _ps2)
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
# axis (dimension 1). Use your `elman_step`. `torch.stack(list_of_tensors, dim=1)` turns a list
# of `(B, H)` tensors into one `(B, T, H)` tensor.

# %% solution="rnn_forward"
def rnn_forward(x, h0, W_xh, W_hh, b_h):
    """Run the Elman RNN over a batch of sequences.

    x: (B, T, I) inputs; h0: (B, H) initial state, or None for zeros.
    Returns hs: (B, T, H) with hs[:, t - 1] = h_t, for t = 1..T (h_0 is not included), in x's dtype.
    The training loop back-propagates through every step: no .detach() and no in-place writes
    into a preallocated tensor (collect the h_t in a list and torch.stack them).
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
# rnn_forward is built on elman_step: check that first, so that a failure below is rnn_forward's.
_no_rnn = lambda: forbid_torch_functions(  # noqa: E731
    "rnn_tanh", "rnn_relu", "lstm", "gru", reason="run the recurrence yourself, with your elman_step")
_g = torch.Generator().manual_seed(2)
_a = [torch.randn(*_s, generator=_g, dtype=torch.float64) for _s in [(2, 3), (2, 4), (4, 3), (4, 4), (4,)]]
_e = call_checked(elman_step, *_a, name="elman_step", hint="fix elman_step first (see its test cell above)")
check(isinstance(_e, torch.Tensor) and tuple(_e.shape) == (2, 4)
      and float((_e - torch.tanh(_a[0] @ _a[2].T + _a[1] @ _a[3].T + _a[4])).abs().max()) < 1e-9,
      "elman_step is wrong — fix elman_step first (see its test cell above): rnn_forward is built on it")

# Hand example: one unit (I = H = 1), W_xh = 1, W_hh = 0.5, b_h = 0, inputs x = 1, 0, 0.
#   h_1 = tanh(1) = 0.7616,  h_2 = tanh(0.5 * h_1) = 0.3634,  h_3 = tanh(0.5 * h_2) = 0.1797
_h0_hint = "h0=None means zeros of shape (B, H), H = W_hh.shape[0], e.g. x.new_zeros(B, H) (same dtype and device as x)"
_one = lambda v: torch.tensor([[v]], dtype=torch.float64)  # noqa: E731
_xs = torch.tensor([[[1.0], [0.0], [0.0]]], dtype=torch.float64)  # (B=1, T=3, I=1)
_hs = call_checked(rnn_forward, _xs, None, _one(1.0), _one(0.5), torch.zeros(1, dtype=torch.float64),
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
_want, _ = _ref(_x, _h0[None])
_want0, _ = _ref(_x)  # from zeros
_W = [_ref.weight_ih_l0.detach(), _ref.weight_hh_l0.detach(), (_ref.bias_ih_l0 + _ref.bias_hh_l0).detach()]
with _no_rnn():
    _got = call_checked(rnn_forward, _x, _h0, *_W, name="rnn_forward(B=3, T=7, I=4, H=6)")
check_shape(_got, (3, 7, 6), "rnn_forward(B=3, T=7, I=4, H=6)", hint="(B, T, H): batch first, then time")
check_tensor_close(_got, _want.detach(), "rnn_forward vs nn.RNN", atol=1e-12, rtol=1e-10,
                   hint="does the loop go forward in time (t = 0, 1, ..., T-1) and start from h0 when it is given?")
with _no_rnn():
    _got = call_checked(rnn_forward, _x, None, *_W, name="rnn_forward(B=3, T=7, I=4, H=6, h0=None)", hint=_h0_hint)
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
    _got = call_checked(rnn_forward, _x, *_ps, name="rnn_forward(weights requiring grad)", hint=_grad_hint)
check(isinstance(_got, torch.Tensor) and _got.requires_grad,
      "rnn_forward's result does not require grad although h0 and the weights do — " + _grad_hint)
_got = call_checked(torch.autograd.grad, _got.pow(2).sum(), _ps, name="backward through rnn_forward", hint=_grad_hint)
for _a, _w, _n in zip(_got, _want, ["h0", "W_xh", "W_hh", "b_h"]):
    check_tensor_close(_a, _w, f"gradient of rnn_forward w.r.t. {_n} vs nn.RNN", atol=1e-10, hint=_grad_hint)
print("rnn_forward: all visible checks passed")
### BEGIN HIDDEN TESTS
_why = "rnn_forward must run the recurrence itself, not call nn.RNN / nn.RNNCell / torch.rnn_tanh"
with forbid_torch_functions("rnn_tanh", "rnn_relu", "lstm", "gru", reason=_why):
    for _B, _T, _I, _H in [(1, 1, 2, 3), (2, 9, 3, 3), (4, 5, 6, 2)]:
        _g = torch.Generator().manual_seed(7 * _T + _H)
        _x = torch.randn(_B, _T, _I, generator=_g, dtype=torch.float64)
        _W1 = torch.randn(_H, _I, generator=_g, dtype=torch.float64) * 0.5
        _W2 = torch.randn(_H, _H, generator=_g, dtype=torch.float64) * 0.5
        _b = torch.randn(_H, generator=_g, dtype=torch.float64)
        _h = torch.zeros(_B, _H, dtype=torch.float64)
        _want = []
        for _t in range(_T):
            _h = torch.tanh(_x[:, _t] @ _W1.T + _h @ _W2.T + _b)
            _want.append(_h)
        check_tensor_close(rnn_forward(_x, None, _W1, _W2, _b), torch.stack(_want, 1),
                           f"rnn_forward {(_B, _T, _I, _H)}", atol=1e-12)
    # gradients reach h0 and the weights, matching nn.RNN's
    _ref = nn.RNN(3, 4, batch_first=True, dtype=torch.float64)
    _x = torch.randn(2, 6, 3, dtype=torch.float64)
    _h0 = torch.randn(2, 4, dtype=torch.float64, requires_grad=True)
    _Wxh = _ref.weight_ih_l0.detach().clone().requires_grad_()
    _Whh = _ref.weight_hh_l0.detach().clone().requires_grad_()
    _bb = (_ref.bias_ih_l0 + _ref.bias_hh_l0).detach().clone().requires_grad_()
    _gs = torch.autograd.grad(rnn_forward(_x, _h0, _Wxh, _Whh, _bb).pow(2).sum(), [_h0, _Wxh, _Whh])
_h0b = _h0.detach().clone().requires_grad_()
_out, _ = _ref(_x, _h0b[None])
_gr = torch.autograd.grad(_out.pow(2).sum(), [_h0b, _ref.weight_ih_l0, _ref.weight_hh_l0])
for _a, _b2, _n in zip(_gs, _gr, ["h0", "W_xh", "W_hh"]):
    check_tensor_close(_a, _b2, f"gradient of rnn_forward w.r.t. {_n}", atol=1e-10)
### END HIDDEN TESTS

# %% [markdown]
# ## 4. The RNN language model
#
# For characters, the input $x_t$ is an **embedding**: row $w_t$ of a learned matrix
# $E \in \mathbb{R}^{|V| \times I}$ (`nn.Embedding`), the same as multiplying a one-hot vector by
# $E$, without building the one-hot vector. The output layer turns each hidden state into
# $|V|$ scores, the **logits** $y_t = W_{hy} h_t + b_y$ (`nn.Linear`), and a softmax turns scores
# into the distribution over the next character:
#
# $$p(\,\cdot \mid w_{\le t}) = \mathrm{softmax}(y_t), \qquad
#   \mathrm{softmax}(y)_k = \frac{e^{y_k}}{\sum_{k'} e^{y_{k'}}}.$$
#
# **Indexing in code.** Position `t` of a batch reads token `idx[:, t]`, and its logits score the
# token that comes *next*, `idx[:, t + 1]`. (The lecture's $h_t$ conditions on $w_1 \dots w_{t-1}$;
# our `hs[:, t]` has read `idx[:, :t+1]` — the same idea, counted from 0.) The model returns the
# logits at every position; the loss (next section) lines them up with the next tokens.
#
# ### Exercise 3 — `RNNLM` (3 points)
#
# Complete `forward_state`: embed the token ids, run *your* `rnn_forward` from `h0`, apply the
# output layer. Return the logits for every position and the last hidden state $h_T$, which lets
# a caller continue the sequence later (the sampler will). `forward` is the one-output version
# that the training loop calls.

# %% solution="RNNLM"
class RNNLM(nn.Module):
    """Character-level language model: embedding -> your Elman RNN -> output layer."""

    def __init__(self, vocab_size: int, n_embd: int, n_hidden: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)  # E: one row per token
        bound = 1 / math.sqrt(n_hidden)  # the same initialisation as nn.RNN
        self.W_xh = nn.Parameter(torch.empty(n_hidden, n_embd).uniform_(-bound, bound))
        self.W_hh = nn.Parameter(torch.empty(n_hidden, n_hidden).uniform_(-bound, bound))
        self.b_h = nn.Parameter(torch.zeros(n_hidden))
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
# RNNLM is built on elman_step and rnn_forward: check those first, so that a failure below is RNNLM's.
_no_rnn = lambda: forbid_torch_functions(  # noqa: E731
    "rnn_tanh", "rnn_relu", "lstm", "gru", reason="RNNLM must run your own rnn_forward")
_g = torch.Generator().manual_seed(2)
_a = [torch.randn(*_s, generator=_g, dtype=torch.float64) for _s in [(2, 3), (2, 4), (4, 3), (4, 4), (4,)]]
_e = call_checked(elman_step, *_a, name="elman_step", hint="fix elman_step first (see its test cell above)")
check(isinstance(_e, torch.Tensor) and tuple(_e.shape) == (2, 4)
      and float((_e - torch.tanh(_a[0] @ _a[2].T + _a[1] @ _a[3].T + _a[4])).abs().max()) < 1e-9,
      "elman_step is wrong — fix elman_step first (see its test cell above): RNNLM is built on it")
_x = torch.randn(2, 5, 3, generator=_g, dtype=torch.float64)
for _h0 in [_a[1], None]:
    _e = call_checked(rnn_forward, _x, _h0, *_a[2:], name="rnn_forward",
                      hint="fix rnn_forward first (see its test cell above)")
    _h, _want = torch.zeros(2, 4, dtype=torch.float64) if _h0 is None else _h0, []
    for _t in range(5):
        _h = torch.tanh(_x[:, _t] @ _a[2].T + _h @ _a[3].T + _a[4])
        _want.append(_h)
    check(isinstance(_e, torch.Tensor) and tuple(_e.shape) == (2, 5, 4)
          and float((_e - torch.stack(_want, 1)).abs().max()) < 1e-9,
          "rnn_forward is wrong — fix rnn_forward first (see its test cell above): RNNLM is built on it")

torch.manual_seed(0)
_m = RNNLM(vocab_size=11, n_embd=5, n_hidden=7).double()
_idx = torch.randint(11, (2, 6))
with _no_rnn():
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
with _no_rnn():
    _first, _h = _m.forward_state(_idx[:, :4])
    _rest, _ = call_checked(_m.forward_state, _idx[:, 4:], _h, name="RNNLM.forward_state(idx, h0)")
check_tensor_close(_rest, _logits[:, 4:], "logits continued from h_T", atol=1e-10,
                   hint="pass h0 on to rnn_forward instead of always starting from zeros")
check_tensor_close(_m(_idx), _logits, "RNNLM(idx)", atol=1e-12)
print("RNNLM: all visible checks passed")
### BEGIN HIDDEN TESTS
_why = "RNNLM must use your own recurrence, not nn.RNN / nn.RNNCell / torch.rnn_tanh"
with forbid_torch_functions("rnn_tanh", "rnn_relu", "lstm", "gru", reason=_why):
    torch.manual_seed(3)
    _m = RNNLM(vocab_size=13, n_embd=4, n_hidden=6).double()
    check(not any(isinstance(_mod, (nn.RNNBase, nn.RNNCellBase)) for _mod in _m.modules()),
          "RNNLM must not contain an nn.RNN / nn.RNNCell module")
    _idx = torch.randint(13, (3, 9))
    _x = _m.wte(_idx)
    _h = torch.zeros(3, 6, dtype=torch.float64)
    _hs = []
    for _t in range(9):
        _h = torch.tanh(_x[:, _t] @ _m.W_xh.T + _h @ _m.W_hh.T + _m.b_h)
        _hs.append(_h)
    _want = _m.lm_head(torch.stack(_hs, 1))
    _logits, _hT = _m.forward_state(_idx)
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
# mini-batch SGD (or a variant of it). For one sequence the negative log-likelihood is a sum of
# one cross-entropy term per predicted token:
#
# $$\ell = -\log p(w_1, \dots, w_T) = \sum_{t} \ell_t, \qquad
#   \ell_t = -\log p(w_{t} \mid h_{t}) = -\log \mathrm{softmax}(y_{t})_{w_{t}}.$$
#
# We report the **mean** over predicted tokens (nats per character), so that numbers do not
# depend on the batch or sequence length.
#
# In code: for token ids `idx` of shape `(B, T)`, the logits at position `t` predict
# `idx[:, t + 1]`. So positions `0 .. T-2` have targets `idx[:, 1:]`, and the last position has
# no target inside the window: we compare `logits[:, :-1]` with `idx[:, 1:]`, $B(T-1)$
# predictions in all.
#
# This is **teacher forcing**: during training the input at every position is the *true*
# previous character, never the model's own guess, so all positions are scored in one pass.
#
# ### Exercise 4 — the language-model loss (2 points)
#
# `F.cross_entropy(scores, targets)` takes *logits* of shape `(N, V)` (it applies the log-softmax
# itself) and integer targets of shape `(N,)`, and returns the mean of $-\log p$ over the $N$ rows.

# %% solution="lm_loss"
def lm_loss(logits, idx):
    """Mean cross-entropy, in nats per predicted token, of next-token predictions.

    logits: (B, T, V) scores computed from idx; idx: (B, T) token ids.
    logits[:, t] predicts idx[:, t + 1]; the last position has no target.
    Returns a scalar tensor (autograd must be able to differentiate it).
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
_P = torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]], dtype=torch.float64)
_idx = torch.tensor([[0, 1, 1]])
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
_val = float(call_checked(lm_loss, _P2.log(), _idx2, name="lm_loss(two sequences)"))
_shift_hint = ("shift within each sequence (logits[:, :-1] vs idx[:, 1:]); flattening first makes row b's last "
               "position predict row b+1's first token")
check(abs(_val - (-math.log(0.25) - math.log(0.8) - math.log(0.6)) / 3) > 1e-6,
      "lm_loss(two sequences) scored row 0's last position against row 1's first token — " + _shift_hint)
check(abs(_val - (-math.log(0.25) - math.log(0.6))) > 1e-6,
      "lm_loss(two sequences) added up the two rows' losses: take the mean over all B*(T-1) predictions")
check_close(_val, (-math.log(0.25) - math.log(0.6)) / 2, "lm_loss(two sequences)", rel=1e-9,
            hint="the mean over all B*(T-1) predictions, each row's logits[b, :-1] against its own idx[b, 1:]")

# A model that knows nothing (all logits equal) pays log V per prediction, whatever the batch.
_uniform = call_checked(lm_loss, torch.zeros(4, 10, 7), torch.randint(7, (4, 10)), name="lm_loss(uniform)")
check_close(float(_uniform), math.log(7), "lm_loss of a uniform model over 7 tokens", rel=1e-6,
            hint="the mean over all B*(T-1) predictions, not over one sequence only")

# Gradients must flow back to the logits (the training loop calls backward on this value).
_lg = torch.randn(2, 5, 4, requires_grad=True)
call_checked(lm_loss, _lg, torch.randint(4, (2, 5))).backward()
check(_lg.grad is not None and float(_lg.grad[:, -1].abs().sum()) == 0.0,
      "the last position has no target, so its logits should get no gradient")
print("lm_loss: all visible checks passed")
### BEGIN HIDDEN TESTS
for _B, _T, _V in [(1, 2, 2), (3, 8, 5), (5, 17, 29)]:
    _g = torch.Generator().manual_seed(_B + _T + _V)
    _lg = torch.randn(_B, _T, _V, generator=_g, dtype=torch.float64) * 3
    _ix = torch.randint(_V, (_B, _T), generator=_g)
    _want = F.cross_entropy(_lg[:, :-1].reshape(-1, _V), _ix[:, 1:].reshape(-1))
    check_close(float(lm_loss(_lg, _ix)), float(_want), f"lm_loss {(_B, _T, _V)}", rel=1e-10)
    _lgr = _lg.clone().requires_grad_()
    _ga, = torch.autograd.grad(lm_loss(_lgr, _ix), _lgr)
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
_p = call_checked(perplexity, torch.full((50,), math.log(84.0), dtype=torch.float64), name="perplexity(uniform over 84)")
check_type(_p, float, "perplexity(...)", hint="return a Python float, e.g. math.exp(x) or float(tensor)")
check_close(_p, 84.0, "perplexity of a uniform model over 84 characters", rel=1e-9)
# Two tokens with losses log 2 and log 8: the mean loss is log 4, so the perplexity is 4.
_p = perplexity(torch.tensor([math.log(2.0), math.log(8.0)]))
check(abs(_p - 16.0) > 1e-6, "perplexity 16 = exp(sum of losses): use the *mean* loss, exp(mean)")
check(abs(_p - 5.0) > 1e-6, "perplexity 5 = mean of exp(loss): take the exp of the mean, not the mean of the exps")
check(abs(_p - 2 ** math.log(4.0)) > 1e-6, "the losses are in nats, so the base is e: math.exp, not 2 **")
check_close(_p, 4.0, "perplexity([log 2, log 8])", rel=1e-6, hint="exp of the mean loss")
print("perplexity: all visible checks passed")
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
print("sample: all visible checks passed")
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
check(abs(_f0 - float(_p[0])) < 0.04, f"at temperature 2 token 0 should come {float(_p[0]):.3f} of the time, got {_f0:.3f}")
### END HIDDEN TESTS

# %% [markdown]
# ## 8. Training on Shakespeare
#
# Now the real thing. The corpus is Shakespeare's plays, split **by play**: the validation text
# (*Julius Caesar*, *Twelfth Night*, *Richard II*) is never seen in training. Each split is encoded
# once into a long tensor of character ids.
#
# **Batches.** `lmcourse.data.get_batch` draws `batch_size` windows of `block_size + 1`
# consecutive characters at random offsets and cuts each into inputs `x = window[:-1]` and
# targets `y = window[1:]`: the same shift as in Exercise 4, done once on the data side, so the
# loss is simply the cross-entropy of `model(x)` against `y` at every position.
#
# **The loop.** `lmcourse.train.train(model, train_ids, val_ids, cfg)` is the mini-batch SGD of
# the lecture with the improvements every modern model uses:
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
# ### Your RNN
#
# The learning rate and clipping threshold below are typical for small character models.

# %%
# validate 5x as often as the profile says, so the curves show the fast early drop
cfg = TrainConfig.from_profile(P, lr=3e-3, grad_clip=1.0, seed=rt.seed,
                               eval_interval=max(1, P.eval_interval // 5))
torch.manual_seed(rt.seed)
rnn = RNNLM(tok.vocab_size, n_embd=P.n_embd, n_hidden=P.n_embd)
hist_rnn = train(rnn, train_ids, val_ids, cfg)

# %% [markdown]
# ### An LSTM
#
# The **long short-term memory** cell keeps a second state, the *cell* $c_t$, which is changed
# only by element-wise gates: a forget gate $f_t$ scales the old cell, an input gate adds new
# content, an output gate decides what the hidden state shows,
# $c_t = f_t \odot c_{t-1} + i_t \odot \tilde c_t$ and $h_t = o_t \odot \tanh(c_t)$.
# Because $c_t$ is updated by addition rather than squashed through a matrix and a $\tanh$ at
# every step, information (and gradient) can survive many steps. We use PyTorch's `nn.LSTM`
# with the same sizes and the same training budget.

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
lstm = LSTMLM(tok.vocab_size, n_embd=P.n_embd, n_hidden=P.n_embd)
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
import copy


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
# handled in the training loop. The loop measured the gradient norm at every step before
# clipping it to `grad_clip` = 1; here is how often clipping actually acted on each model. The
# rescaling keeps the direction of the gradient and only bounds the length of the step, so one
# unlucky batch cannot throw the weights far away.

# %%
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 3.5))
for name, h in [("RNN", hist_rnn), ("LSTM", hist_lstm)]:
    ax.semilogy(h.steps, h.grad_norm, lw=0.8, label=f"{name} (clipped on {h.clipped_fraction(cfg.grad_clip):.1%} of steps)")
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
check(isinstance(answer_q1, str) and answer_q1.strip().upper() in {"A", "B", "C", "D"},
      f'answer_q1 should be one of "A", "B", "C", "D", got {answer_q1!r}')
### BEGIN HIDDEN TESTS
check(answer_q1.strip().upper() == "B", "Q1: not the right choice")
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
check(isinstance(answer_q2, str) and answer_q2.strip().upper() in {"A", "B", "C", "D"},
      f'answer_q2 should be one of "A", "B", "C", "D", got {answer_q2!r}')
### BEGIN HIDDEN TESTS
check(answer_q2.strip().upper() == "C", "Q2: not the right choice")
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
check(isinstance(answer_q3, str) and answer_q3.strip().upper() in {"A", "B", "C", "D"},
      f'answer_q3 should be one of "A", "B", "C", "D", got {answer_q3!r}')
### BEGIN HIDDEN TESTS
check(answer_q3.strip().upper() == "A", "Q3: not the right choice")
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
check(isinstance(answer_q4, str) and answer_q4.strip().upper() in {"A", "B", "C", "D"},
      f'answer_q4 should be one of "A", "B", "C", "D", got {answer_q4!r}')
### BEGIN HIDDEN TESTS
check(answer_q4.strip().upper() == "D", "Q4: not the right choice")
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
# embedding and output layers around it, the shifted cross-entropy loss, perplexity and a
# sampler. You trained it and an LSTM with the course's training loop and saw where the plain
# RNN falls short: everything it knows about the past must squeeze through one vector, updated
# by a matrix product at every step, so its gradients fade with distance and its computation is
# strictly sequential.
#
# **Next (notebook 03):** attention lets every position look *directly* at every earlier one —
# no fixed-length bottleneck, no chain of Jacobians, and all positions computed in parallel —
# which is the heart of the transformer.
