# %% [markdown]
# # 03 · Attention: from one query to multi-head causal self-attention
#
# **What you will build.** The layer at the heart of every transformer, from the inside out:
# a numerically stable softmax, attention scores $q \cdot k / \sqrt{d_k}$, the causal mask,
# scaled dot-product attention $\mathrm{softmax}(QK^\top/\sqrt{d_k} + M)\,V$, and finally a
# `MultiHeadAttention` module that works on batches of shape `(B, T, C)`, causal or not. You will
# check it against PyTorch's own implementations, look at attention weights as pictures, and
# measure why long contexts are expensive.
#
# **Prerequisites.** Notebook 02 (PyTorch tensors, `nn.Module`, `nn.Linear`), matrix
# multiplication and broadcasting. No training happens here: notebook 04 puts this layer into a
# transformer language model.
#
# **Time.** About 1.5–2 hours to work through. Every cell runs in seconds on a laptop CPU (the
# whole notebook in about a minute on the `cpu` profile); a GPU only makes the timing plot
# reach longer sequences.
#
# **How this notebook works.** Cells marked `# YOUR CODE HERE` are yours. The cell right after
# each one checks your answer: when a check fails, its message says what looks wrong. The
# autograder runs further hidden tests, so make your function correct in general, not only for
# the examples. Three rules hold for every graded function, and the visible tests already check
# them, so a check that passes here will not fail for these reasons in grading:
#
# * **Your own code.** Write the computation with basic tensor operations (`@`, `.exp()`, `.max()`,
#   `.sum()`, `.transpose()`, `.view()`). A ready-made softmax (`torch.softmax`, `F.softmax`,
#   `x.softmax`, `nn.Softmax`, `x.log_softmax(dim).exp()`, `torch._softmax`, ...), a ready-made
#   attention (`F.scaled_dot_product_attention`, `nn.MultiheadAttention`) or the course's reference
#   `lmcourse.nn.attention` scores 0. The tests run your code with these switched off, whatever
#   name you call them by.
# * **Dtype, device, inputs.** A function returns tensors in its input's dtype (float32 in,
#   float32 out) and on its input's device, and never changes its inputs in place.
# * **One mistake costs once.** The tests of a later function run it with the reference versions
#   of the earlier ones (your `softmax`, `attention_scores` and `causal_mask` are graded by their
#   own tests), so a slip in `softmax` does not also cost the points of `MultiHeadAttention`.

# %% locked="setup"
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
import lmcourse.nn.attention
import lmcourse.reference.attention
from lmcourse.confine import graded_call  # no thread, process or course-source read in a graded call
from lmcourse import plot
from lmcourse.checks import (CheckFailed, call_checked, check, check_equal, check_shape, check_tensor_close,
                             check_type, own_code, substitute, visible_checks_pass)

rt = lmcourse.setup(seed=0)

# %% [markdown]
# ## 1. Why a word needs its context
#
# Compare three sentences:
#
# * *I hope the dog next door doesn't **bark** tonight.*
# * *Birch **bark** peels off in thin white sheets.*
# * *She broke the chocolate **bark** into pieces.*
#
# A word embedding gives "bark" one vector, whatever the sentence: it has to blend the sound a
# dog makes, the skin of a tree and a sweet. Everything downstream must then untangle which
# meaning is meant. Better: let each position **look at the other words** and gather a context
# vector $x'_i$ from the words that matter for it ("dog", "birch", "chocolate"), then adjust its
# own vector to $x_i + x'_i$ (notebook 04 adds it this way). Attention is how $x'_i$ is
# gathered: a **soft look-up**.
#
# Every position plays three roles, each a learned linear map of its vector $x_j$:
#
# | role | vector | meaning |
# |---|---|---|
# | query | $q_i = x_i W_q$ | what position $i$ is looking for ("bark" looks for an animal) |
# | key | $k_j = x_j W_k$ | what position $j$ offers, to be matched against queries |
# | value | $v_j = x_j W_v$ | what position $j$ hands over when it is chosen |
#
# For one query $q_i$ the look-up has three steps:
#
# $$s_{i,j} = \frac{q_i \cdot k_j}{\sqrt{d_k}} \quad\text{(scores)}, \qquad
#   a_{i} = \mathrm{softmax}(s_{i}) \quad\text{(weights, summing to 1)}, \qquad
#   x'_i = \sum_j a_{i,j}\, v_j \quad\text{(output)}.$$
#
# Unlike a Python `dict`, which returns the value of the one key that matches exactly, attention
# returns a **blend** of all values, weighted by how well each key matches. The weights come
# from a softmax, so that is where we start.

# %% [markdown]
# ## 2. A softmax that does not overflow
#
# $$\mathrm{softmax}(z)_j = \frac{e^{z_j}}{\sum_{k} e^{z_k}}
#   = \frac{e^{z_j - m}}{\sum_{k} e^{z_k - m}} \qquad\text{for any constant } m.$$
#
# Both forms are equal on paper (the factor $e^{-m}$ cancels). On a computer they are not:
# `exp(1000.0)` is `inf` in floating point, and `inf / inf` is `nan`. Choosing $m = \max_k z_k$
# makes the largest exponent $e^0 = 1$, so nothing overflows and the sum is at least 1.
#
# Masked scores are $-\infty$, and $e^{-\infty - m} = 0$: a masked entry gets weight exactly 0,
# as long as the row has at least one finite score (the causal mask always leaves one).
#
# ### Exercise 1 — stable softmax
# Write `softmax(x, dim=-1)`: the softmax of a tensor along dimension `dim` (every other
# dimension is a batch). Subtract the maximum along `dim` first; `keepdim=True` keeps shapes
# broadcastable. `x.max(dim=dim, keepdim=True)` returns a pair (values, indices): take its
# `.values`, or use `x.amax(dim=dim, keepdim=True)`, which returns only the values. Use `.exp()`,
# `.max()` and `.sum()`, not a ready-made softmax (`torch.softmax`, `F.softmax`, `x.softmax`,
# `x.log_softmax(dim).exp()`, ...). Return a new tensor of the same shape, **dtype** and device as
# `x` (a float32 `x` gives a float32 result), and leave `x` unchanged.

# %% solution="softmax"
def softmax(x, dim=-1):
    """Softmax of tensor x along dimension dim, stable for large inputs and -inf entries."""
    ### BEGIN SOLUTION
    shifted = x - x.max(dim=dim, keepdim=True).values
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)
    ### END SOLUTION


# %% tests="softmax_tests" points=3
# Your softmax runs with every ready-made softmax switched off (and lmcourse's reference versions).
_rule = ("write softmax yourself with .exp(), .max() and .sum(): a ready-made softmax (torch.softmax, "
         "F.softmax, x.softmax, nn.Softmax, x.log_softmax(dim).exp(), torch._softmax, ...) or lmcourse's "
         "reference scores 0 here")
_keepdim_hint = ("keep the reduced dimension so that it lines up with x: x.max(dim=dim, keepdim=True).values "
                 "and e.sum(dim=dim, keepdim=True) have size 1 along dim and broadcast against x")
_dtype_hint = ("return the input's dtype: compute in x's own dtype (no .double() or dtype=torch.float64 on "
               "the way), or convert the result back with .to(x.dtype)")
_device_hint = ("compute from x only: a tensor you create yourself (torch.zeros(...), torch.tensor(...)) "
                "lives on the CPU unless you pass device=x.device")


def _softmax(x, *args, **kwargs):
    """Your softmax, under the rules of this notebook, with errors explained."""
    with own_code("softmax", "softmin", calls=(lmcourse.nn.attention, lmcourse.reference.attention),
                  reason=_rule), graded_call():
        try:
            return softmax(x, *args, **kwargs)
        except CheckFailed:
            raise
        except Exception as err:
            if type(err) is NotImplementedError and str(err).startswith("Exercise "):   # the stub: not answered yet
                raise
            text = str(err)
            hint = (_keepdim_hint if "must match the size" in text else
                    _device_hint if "device" in text or "meta" in text else None)
            raise CheckFailed(f"softmax of a tensor of shape {tuple(x.shape)} raised {type(err).__name__}: "
                              f"{text}" + (f" — {hint}" if hint else "")) from None


_z = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
_e = [math.exp(1.0), math.exp(2.0), math.exp(3.0)]
check_tensor_close(_softmax(_z), torch.tensor([v / sum(_e) for v in _e], dtype=torch.float64),
                   "softmax([1, 2, 3])", atol=1e-12, rtol=1e-12,
                   hint="softmax(z)_j = exp(z_j) / sum_k exp(z_k)")
check_shape(_softmax(torch.zeros(2, 3, 4)), (2, 3, 4), "softmax of a (2, 3, 4) tensor",
            hint="softmax keeps the shape of its input; " + _keepdim_hint)
_input = torch.tensor([[1.0, 2.0, 3.0], [0.0, float("-inf"), 5.0]], dtype=torch.float64)
_input_before = _input.clone()
_softmax(_input)
check_tensor_close(_input, _input_before, "your input tensor after calling softmax", atol=0, rtol=0,
                   hint="do not modify x in place (x -= ..., x.sub_(...), x.exp_()): build new tensors "
                        "instead, with out-of-place operations such as y = x - m and y.exp()")
check_tensor_close(_softmax(_z + 1000.0), _softmax(_z), "softmax([1001, 1002, 1003])", atol=1e-12, rtol=1e-12,
                   hint="exp(1001) overflows to inf and inf/inf is nan: subtract the maximum "
                        "before exponentiating")
_neg = torch.tensor([0.0, float("-inf"), 0.0], dtype=torch.float64)
check_tensor_close(_softmax(_neg), torch.tensor([0.5, 0.0, 0.5], dtype=torch.float64),
                   "softmax([0, -inf, 0])", atol=1e-12, rtol=1e-12,
                   hint="exp(-inf) = 0, so a -inf score must get weight exactly 0 and the rest share 1")
_x = torch.arange(6, dtype=torch.float64).view(2, 3)
check_tensor_close(_softmax(_x, dim=0).sum(dim=0), torch.ones(3, dtype=torch.float64),
                   "softmax(x, dim=0).sum(dim=0)", atol=1e-12, rtol=1e-12,
                   hint="use the dim argument in both .max(dim=dim, keepdim=True) and .sum(dim=dim, keepdim=True)")
check_tensor_close(_softmax(_x).sum(dim=-1), torch.ones(2, dtype=torch.float64),
                   "softmax(x).sum(dim=-1)", atol=1e-12, rtol=1e-12,
                   hint="the default is the last dimension: each row sums to 1, not the whole tensor")
_levels = torch.tensor([[0.0, 1.0], [1000.0, 1001.0]], dtype=torch.float64)
_p = 1 / (1 + math.e)
check_tensor_close(_softmax(_levels), torch.tensor([[_p, 1 - _p], [_p, 1 - _p]], dtype=torch.float64),
                   "softmax([[0, 1], [1000, 1001]])",
                   atol=1e-12, rtol=1e-12,
                   hint="subtract each row's own maximum (x.max(dim=dim, keepdim=True)), not the largest "
                        "value of the whole tensor: exp(0 - 1001) underflows to 0 and 0/0 is nan")
# The input's dtype and device: float32 in, float32 out; the "meta" device stands in for a GPU here
# (a tensor with a shape and a dtype but no values).
check_equal(_softmax(_z).dtype, torch.float64, "the dtype of softmax of a float64 tensor", hint=_dtype_hint)
_f32 = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, -1.0]])
_out32 = _softmax(_f32)
check_equal(_out32.dtype, torch.float32, "the dtype of softmax of a float32 tensor", hint=_dtype_hint)
_e32 = [[math.exp(v - max(row)) for v in row] for row in _f32.tolist()]
check_tensor_close(_out32, [[v / sum(row) for v in row] for row in _e32], "softmax of a float32 tensor",
                   atol=1e-6, rtol=1e-5)
_reads_values = ("item() cannot be called on meta", "Meta tensors", "data-independent")
try:
    _on_meta = _softmax(torch.empty(2, 3, device="meta"))
except CheckFailed as _err:   # code that reads values (if bool(...), .item()) cannot run on meta: not a fault
    if not any(_s in str(_err) for _s in _reads_values):
        raise
else:
    check_equal(str(_on_meta.device), "meta", "the device of softmax of a tensor on the meta device",
                hint=_device_hint)
visible_checks_pass("softmax")
### BEGIN HIDDEN TESTS
check(softmax not in (torch.softmax, F.softmax, torch.special.softmax),
      "softmax must be your own function, not torch's")
_g = torch.Generator().manual_seed(301)
_r = torch.randn(3, 4, 5, generator=_g, dtype=torch.float64) * 5
_r[0, 1, 2] = float("-inf")
_r[2, :3, 0] = float("-inf")   # along dim=1 one entry of that slice stays finite
_big = torch.randn(4, 6, generator=_g, dtype=torch.float64) * 1e4
_f32 = torch.randn(5, 7, generator=_g)
# each expected value is made after its graded call (the arguments run left to right): no global holds it during one
for _d in (0, 1, 2, -1):
    check_tensor_close(_softmax(_r.clone(), dim=_d), torch.softmax(_r, dim=_d),
                       f"softmax(x, dim={_d}) on a random (3, 4, 5) tensor", atol=1e-12, rtol=1e-10)
_out = _softmax(_big.clone())
check_tensor_close(_out, torch.softmax(_big, dim=-1), "softmax of scores spread over ±1e4", atol=1e-12, rtol=1e-10)
_out32 = _softmax(_f32.clone(), dim=1)
check_equal(_out32.dtype, torch.float32, "dtype of softmax of a float32 tensor")
check_tensor_close(_out32, torch.softmax(_f32, dim=1), "softmax of a float32 tensor", atol=1e-6, rtol=1e-5)
check_tensor_close(_softmax(torch.full((2, 3), 1e4, dtype=torch.float64)),
                   torch.full((2, 3), 1 / 3, dtype=torch.float64), "softmax of equal huge scores",
                   atol=1e-12, rtol=1e-12)
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Scores for all queries at once
#
# One query at a time is a loop; a GPU wants matrices. Stack the vectors of a sequence of
# length $T$ as rows: $X$ is $T \times d_{\text{model}}$, and
#
# $$Q = X W_q, \qquad K = X W_k, \qquad V = X W_v, \qquad
#   S = \frac{Q K^\top}{\sqrt{d_k}}, \quad S_{i,j} = \frac{q_i \cdot k_j}{\sqrt{d_k}}.$$
#
# Row $i$ of $S$ holds the scores of query $i$ against every key. Why divide by $\sqrt{d_k}$? If
# the entries of $q$ and $k$ are independent with **mean 0** and variance 1, each product
# $q_m k_m$ has mean 0 and variance $\mathbb{E}[q_m^2]\,\mathbb{E}[k_m^2] = 1$, so the dot
# product, a sum of $d_k$ such independent terms, has mean 0 and variance $d_k$. (Without mean 0
# each term has a variance above 1 and the sum drifts away from 0 as $d_k$ grows.) Without the
# scaling, wider heads would produce larger scores, the softmax would put almost all weight on
# one key, and its gradients would vanish. Dividing by $\sqrt{d_k}$ brings the variance back to 1.
#
# In practice tensors carry extra leading dimensions — a batch, and later the heads:
# `Q` is `(..., T_q, d_k)` and `K` is `(..., T_k, d_k)`. `K.transpose(-2, -1)` swaps only the last
# two dimensions (`K.T` would reverse all of them), and `@` batches over the leading ones.
#
# ### Exercise 2 — attention scores
# Write `attention_scores(Q, K)` returning $QK^\top/\sqrt{d_k}$ of shape `(..., T_q, T_k)`, where
# $d_k$ is the size of the last dimension of `Q`, in the dtype of `Q` and `K`, leaving both unchanged.

# %% solution="attention_scores"
def attention_scores(Q, K):
    """Scaled dot-product scores: (..., T_q, d_k) x (..., T_k, d_k) -> (..., T_q, T_k)."""
    ### BEGIN SOLUTION
    d_k = Q.size(-1)
    return Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    ### END SOLUTION


# %% tests="attention_scores_tests" points=2
_rule = ("compute the scores yourself with @ and .transpose(): F.scaled_dot_product_attention or lmcourse's "
         "reference scores 0 here")


def _scores(Q, K, hint=None):
    """Your attention_scores, under the rules of this notebook."""
    with own_code("scaled_dot_product_attention", calls=(lmcourse.nn.attention, lmcourse.reference.attention),
                  reason=_rule), graded_call():
        return call_checked(attention_scores, Q, K, hint=hint,
                            name=f"attention_scores on queries {tuple(Q.shape)} and keys {tuple(K.shape)}")


_Q = torch.tensor([[1.0, 0.0, 1.0, 0.0],
                   [0.0, 2.0, 0.0, 0.0]], dtype=torch.float64)    # 2 queries, d_k = 4
_K = torch.tensor([[1.0, 1.0, 1.0, 1.0],
                   [0.0, 0.0, 2.0, 0.0],
                   [1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)    # 3 keys
# q_1·k_1 = 2, q_1·k_2 = 2, q_1·k_3 = 1, q_2·k_1 = 2, q_2·k_2 = 0, q_2·k_3 = 0; sqrt(d_k) = 2
_Q_before, _K_before = _Q.clone(), _K.clone()
_S = _scores(_Q, _K)
check_shape(_S, (2, 3), "attention_scores(Q, K) for 2 queries and 3 keys",
            hint="row i belongs to query i and column j to key j: Q @ K^T, not K @ Q^T")
check_tensor_close(_S, torch.tensor([[1.0, 1.0, 0.5], [1.0, 0.0, 0.0]], dtype=torch.float64),
                   "attention_scores(Q, K)", atol=1e-12, rtol=1e-12,
                   hint="S = Q K^T / sqrt(d_k) with d_k = 4: divide the dot products by 2 "
                        "(not by d_k = 4, and not by nothing)")
check(torch.equal(_Q, _Q_before) and torch.equal(_K, _K_before),
      "attention_scores changed Q or K in place (Q /= ..., Q.div_(...)): build a new tensor instead")
_g = torch.Generator().manual_seed(302)
_Qb = torch.randn(2, 3, 5, 4, generator=_g, dtype=torch.float64)   # (B, h, T_q, d_k)
_Kb = torch.randn(2, 3, 6, 4, generator=_g, dtype=torch.float64)   # (B, h, T_k, d_k)
_batch_hint = "transpose only the last two dimensions of K: K.transpose(-2, -1) (K.T reverses all of them)"
_Sb = _scores(_Qb, _Kb, hint=_batch_hint)
check_shape(_Sb, (2, 3, 5, 6), "attention_scores on (2, 3, 5, 4) queries and (2, 3, 6, 4) keys", hint=_batch_hint)
check_tensor_close(_Sb, torch.einsum("bhqd,bhkd->bhqk", _Qb, _Kb) / 2.0, "batched attention_scores",
                   atol=1e-12, rtol=1e-12,
                   hint="d_k is the size of the last dimension, Q.size(-1) (Q.shape[1] is d_k only for a 2-D Q), "
                        "and the batch dimensions must be carried along unchanged")
check_equal(_scores(_Qb.float(), _Kb.float()).dtype, torch.float32, "the dtype of attention_scores in float32",
            hint="return the input's dtype: no .double() on the way")
visible_checks_pass("attention_scores")
### BEGIN HIDDEN TESTS
for _shape_q, _shape_k in [((7, 9), (5, 9)), ((3, 4, 1), (3, 8, 1)), ((2, 2, 6, 16), (2, 2, 6, 16))]:
    _q = torch.randn(*_shape_q, generator=_g, dtype=torch.float64)
    _k = torch.randn(*_shape_k, generator=_g, dtype=torch.float64)
    check_tensor_close(_scores(_q.clone(), _k.clone()),   # the expected scores are made after the graded call
                       torch.einsum("...qd,...kd->...qk", _q, _k) / math.sqrt(_shape_q[-1]),
                       f"attention_scores for Q {_shape_q}, K {_shape_k}", atol=1e-12, rtol=1e-10)
_q32 = torch.randn(3, 5, generator=_g)
check_tensor_close(_scores(_q32, _q32), _q32 @ _q32.T / math.sqrt(5), "attention_scores in float32",
                   atol=1e-5, rtol=1e-5)
### END HIDDEN TESTS

# %% [markdown]
# ## 4. No peeking: the causal mask
#
# A language model predicts token $t+1$ from tokens $1..t$. During training we feed whole
# sequences at once, so if position $t$ could attend to positions after it, it would simply read
# the answer. The fix is an additive mask $M$ with $M_{i,j} = 0$ where query $i$ may look at key
# $j$ and $M_{i,j} = -\infty$ where it may not:
#
# $$A = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right), \qquad X' = A V.$$
#
# Adding $-\infty$ before the softmax gives weight exactly 0 (section 2), and the remaining
# weights of the row still sum to 1.
#
# **Question (lecture quiz).** For a causal language model, which is the right $M$ for $T = 4$?
# (Rows are queries $i$, columns are keys $j$.)
#
# $$\text{A: }\begin{bmatrix} 0 & 0 & 0 & 0 \\ -\infty & 0 & 0 & 0 \\ -\infty & -\infty & 0 & 0 \\
#   -\infty & -\infty & -\infty & 0 \end{bmatrix}\qquad
# \text{B: }\begin{bmatrix} 0 & -\infty & -\infty & -\infty \\ 0 & 0 & -\infty & -\infty \\
#   0 & 0 & 0 & -\infty \\ 0 & 0 & 0 & 0 \end{bmatrix}\qquad
# \text{C: }\begin{bmatrix} 0 & -\infty & -\infty & -\infty \\ -\infty & 0 & -\infty & -\infty \\
#   -\infty & -\infty & 0 & -\infty \\ -\infty & -\infty & -\infty & 0 \end{bmatrix}$$
#
# Set `answer_q_mask` to `"A"`, `"B"` or `"C"`.

# %% solution="q_mask"
### BEGIN SOLUTION
answer_q_mask = "B"
### END SOLUTION

# %% tests="q_mask_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q_mask, "ABC", "answer_q_mask")
visible_checks_pass("answer_q_mask")
### BEGIN HIDDEN TESTS
check_choice(answer_q_mask, "ABC", "answer_q_mask", correct="B")
### END HIDDEN TESTS

# %% [markdown]
# **Question (lecture quiz).** In $A = \mathrm{softmax}(S + M)$, is the softmax applied
# **A.** column-wise (each column of $A$ sums to 1) or **B.** row-wise (each row sums to 1)?
# Think about what one row of $S$ holds. Set `answer_q_softmax` to `"A"` or `"B"`.

# %% solution="q_softmax"
### BEGIN SOLUTION
answer_q_softmax = "B"
### END SOLUTION

# %% tests="q_softmax_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q_softmax, "AB", "answer_q_softmax")
visible_checks_pass("answer_q_softmax")
### BEGIN HIDDEN TESTS
check_choice(answer_q_softmax, "AB", "answer_q_softmax", correct="B")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3 — the causal mask
# Write `causal_mask(T)`: a float32 tensor (the default dtype) of shape `(T, T)` with `0.0` where $j \le i$ (the past
# and the token itself) and `float("-inf")` where $j > i$ (the future). Use a true $-\infty$, not a
# large negative number such as `-1e9`: it is exact in every dtype, and it says what it means.
# `torch.ones(T, T).triu(diagonal=1)` or `torch.tril` help, and so does `masked_fill`.

# %% solution="causal_mask"
def causal_mask(T):
    """(T, T) float32 tensor: 0 on and below the diagonal, -inf above it."""
    ### BEGIN SOLUTION
    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    return torch.zeros(T, T).masked_fill(future, float("-inf"))
    ### END SOLUTION


# %% tests="causal_mask_tests" points=2
_rule = "build the mask yourself: calling lmcourse's reference causal_mask, under any name, scores 0 here"


def _mask(T):
    """Your causal_mask, under the rules of this notebook."""
    with own_code(calls=(lmcourse.nn.attention, lmcourse.reference.attention), reason=_rule), graded_call():
        return call_checked(causal_mask, T, name=f"causal_mask({T})")


_inf = float("-inf")
_M = _mask(4)
check_type(_M, torch.Tensor, "causal_mask(4)")
check(_M.dtype.is_floating_point, f"causal_mask(4) should hold floats (0.0 and -inf), got dtype {_M.dtype} "
      "— the mask is added to the scores")
check_equal(_M.dtype, torch.float32, "the dtype of causal_mask(4)",
            hint="build the mask in the default dtype, float32 (no dtype=torch.float64): code that uses it "
                 "converts it with .to(...) where it needs another dtype")
check_tensor_close(_M, torch.tensor([[0, _inf, _inf, _inf],
                                     [0, 0, _inf, _inf],
                                     [0, 0, 0, _inf],
                                     [0, 0, 0, 0]]), "causal_mask(4)", atol=0, rtol=0,
                   hint="row i is the query: it may see keys j <= i (0, including the diagonal), "
                        "never j > i (-inf above the diagonal); -inf means float('-inf'), not -1e9")
check_tensor_close(_mask(1), torch.zeros(1, 1), "causal_mask(1)", atol=0, rtol=0,
                   hint="a single token may always look at itself")
visible_checks_pass("causal_mask")
### BEGIN HIDDEN TESTS
for _T in (2, 7, 16):   # the expected mask is made after the graded call
    check_tensor_close(_mask(_T), torch.tensor([[0.0 if j <= i else _inf for j in range(_T)] for i in range(_T)]),
                       f"causal_mask({_T})", atol=0, rtol=0)
check(causal_mask is not lmcourse.nn.attention.causal_mask, "causal_mask must be your own function")
### END HIDDEN TESTS

# %% [markdown]
# Here is the mask as a picture: dark cells are the future that each query must not see.

# %%
plot.attention_mask(causal_mask(6), tokens=["the", "dog", "did", "not", "bark", "."])
plt.show()

# %% [markdown]
# ## 5. Scaled dot-product attention
#
# Put the pieces together:
#
# $$\mathrm{Attention}(Q, K, V) = \underbrace{\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} +
#   M\right)}_{A \;:\; T_q \times T_k} V .$$
#
# Shapes: `Q` is `(..., T_q, d_k)`, `K` is `(..., T_k, d_k)`, `V` is `(..., T_k, d_v)`; the output is
# `(..., T_q, d_v)` and the weights `A` are `(..., T_q, T_k)`, with `A[..., i, j]` the weight that
# query $i$ gives key $j$. `mask` is either `None` (no mask: every query sees every key) or an
# additive mask like yours that broadcasts to `(..., T_q, T_k)`.
#
# ### Exercise 4 — scaled dot-product attention
# Write `scaled_dot_product_attention(Q, K, V, mask=None)` returning the pair `(output, weights)`,
# both in the dtype of the inputs. Reuse your `attention_scores` and `softmax` (call them by these
# names: the tests put the reference versions in their place, so that only this function is graded
# here).

# %% solution="scaled_dot_product_attention"
def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + mask) V; returns (output (..., T_q, d_v), weights (..., T_q, T_k))."""
    ### BEGIN SOLUTION
    scores = attention_scores(Q, K)
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, dim=-1)
    return weights @ V, weights
    ### END SOLUTION


# %% tests="scaled_dot_product_attention_tests" points=4
# Your softmax, attention_scores and causal_mask are graded by their own tests: here the reference
# versions stand in for them, so a slip there does not cost these points too. Your function runs with
# every ready-made softmax and attention function switched off.
_ref = lmcourse.reference.attention
_rule = ("compute the weights with your softmax (or .exp(), .max(), .sum()): a ready-made softmax or "
         "attention (torch.softmax, x.softmax, F.scaled_dot_product_attention, ...) or lmcourse's reference "
         "scores 0 here")


def _attend(Q, K, V, mask=None, name="scaled_dot_product_attention(Q, K, V, mask)"):
    """Your scaled_dot_product_attention, with the reference earlier functions, under the rules."""
    with substitute(globals(), softmax=_ref.softmax, attention_scores=_ref.attention_scores,
                    causal_mask=_ref.causal_mask), \
            own_code("softmax", "softmin", "scaled_dot_product_attention", "multi_head_attention",
                     calls=(lmcourse.nn.attention, _ref.scaled_dot_product_attention), reason=_rule), graded_call():
        return call_checked(scaled_dot_product_attention, Q, K, V, mask, name=name)


# With Q = 0 every score is 0, so each query spreads its weight evenly over the keys it may see.
_Q0 = torch.zeros(4, 2, dtype=torch.float64)
_K0 = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]], dtype=torch.float64)
_V0 = torch.tensor([[1.0], [2.0], [3.0], [4.0]], dtype=torch.float64)
_M0 = _ref.causal_mask(4).double()
_inputs_before = [t.clone() for t in (_Q0, _K0, _V0, _M0)]
_res = _attend(_Q0, _K0, _V0, _M0)
check(isinstance(_res, (tuple, list)) and len(_res) == 2,
      f"scaled_dot_product_attention should return a tuple (output, weights), got a {type(_res).__name__}"
      + (f" of length {len(_res)}" if isinstance(_res, (tuple, list)) else ""))
_out, _w = _res
check(not (getattr(_out, "shape", None) == (4, 4) and getattr(_w, "shape", None) == (4, 1)),
      "scaled_dot_product_attention returned (weights, output): return (output, weights), in that order")
check_shape(_out, (4, 1), "the output for 4 queries and values of size 1",
            hint="the output is weights @ V: (T_q, T_k) @ (T_k, d_v) — use V, not K")
check_shape(_w, (4, 4), "the weights for 4 queries and 4 keys")
check_tensor_close(_w, torch.tensor([[1, 0, 0, 0], [1 / 2, 1 / 2, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0],
                                     [1 / 4, 1 / 4, 1 / 4, 1 / 4]], dtype=torch.float64),
                   "causal weights when all scores are 0", atol=1e-12, rtol=1e-12,
                   hint="row i must spread its weight evenly over keys 0..i and give exactly 0 to the "
                        "future: add the mask to the scores before the softmax, softmax each row "
                        "(dim=-1), and return the weights as (T_q, T_k), query in the row")
check(bool((_w.triu(1) == 0).all()), "the weights of masked (future) keys must be exactly 0, not just small "
      "— add the -inf mask to the scores before the softmax")
check_tensor_close(_out, torch.tensor([[1.0], [1.5], [2.0], [2.5]], dtype=torch.float64),
                   "causal output when all scores are 0 (a running mean of the values)", atol=1e-12,
                   rtol=1e-12, hint="the output is weights @ V")
check(all(torch.equal(a, b) for a, b in zip((_Q0, _K0, _V0, _M0), _inputs_before)),
      "scaled_dot_product_attention changed Q, K, V or the mask in place: build new tensors instead")
_out_nomask, _ = _attend(_Q0, _K0, _V0)
check_tensor_close(_out_nomask, torch.full((4, 1), 2.5, dtype=torch.float64), "output without a mask",
                   atol=1e-12, rtol=1e-12, hint="mask=None means no masking: every query sees all keys")
# Cross-attention: 4 queries look at 7 keys whose values have size 2 (T_q != T_k, d_v != d_k).
_g = torch.Generator().manual_seed(303)
_out, _w = _attend(torch.randn(4, 3, generator=_g, dtype=torch.float64),
                   torch.randn(7, 3, generator=_g, dtype=torch.float64),
                   torch.randn(7, 2, generator=_g, dtype=torch.float64), name="cross-attention (T_q=4, T_k=7)")
check_shape(_out, (4, 2), "the output of 4 queries over 7 keys with values of size 2",
            hint="the output is (..., T_q, d_v): weights (T_q, T_k) @ V (T_k, d_v)")
check_shape(_w, (4, 7), "the weights of 4 queries over 7 keys")
# Against PyTorch's own implementation, batched, in float64.
_Qr, _Kr = (torch.randn(2, 3, 5, 8, generator=_g, dtype=torch.float64) for _ in range(2))
_Vr = torch.randn(2, 3, 5, 6, generator=_g, dtype=torch.float64)
_out, _w = _attend(_Qr, _Kr, _Vr, _ref.causal_mask(5).double())
check_tensor_close(_out, F.scaled_dot_product_attention(_Qr, _Kr, _Vr, is_causal=True),
                   "causal attention on random (2, 3, 5, 8) inputs vs F.scaled_dot_product_attention",
                   atol=1e-10, rtol=1e-8,
                   hint="scale by sqrt(d_k) = sqrt(8), softmax over the keys (last dimension)")
check_tensor_close(_w.sum(dim=-1), torch.ones(2, 3, 5, dtype=torch.float64), "the sum of each row of weights",
                   atol=1e-12, rtol=1e-12, hint="each query's weights over the keys sum to 1")
check_tensor_close(_out, _w @ _Vr, "output vs weights @ V", atol=1e-10, rtol=1e-8,
                   hint="return the weights you used, as (..., T_q, T_k), without transposing them")
_out, _ = _attend(_Qr, _Kr, _Vr)
check_tensor_close(_out, F.scaled_dot_product_attention(_Qr, _Kr, _Vr),
                   "attention without a mask vs F.scaled_dot_product_attention",
                   atol=1e-10, rtol=1e-8)
_out32, _w32 = _attend(_Qr.float(), _Kr.float(), _Vr.float(), _ref.causal_mask(5))
check_equal((_out32.dtype, _w32.dtype), (torch.float32, torch.float32), "the dtypes of (output, weights) "
            "for float32 inputs", hint="return the input's dtype: no .double() on the way")
visible_checks_pass("scaled_dot_product_attention")
### BEGIN HIDDEN TESTS
check(scaled_dot_product_attention is not lmcourse.nn.attention.scaled_dot_product_attention,
      "scaled_dot_product_attention must be your own function")
_cases = []
_q = torch.randn(3, 4, 6, generator=_g, dtype=torch.float64)    # cross-attention: T_q = 4, T_k = 7
_k = torch.randn(3, 7, 6, generator=_g, dtype=torch.float64)
_v = torch.randn(3, 7, 2, generator=_g, dtype=torch.float64)
_cases.append(("cross-attention (T_q=4, T_k=7, d_v=2)", _q, _k, _v, None, None))
_pad = torch.zeros(4, 7, dtype=torch.float64)
_pad[:, 5:] = float("-inf")   # a padding mask: keys 5, 6 unseen
_cases.append(("a padding mask", _q, _k, _v, _pad, ~torch.isinf(_pad)))
_q = torch.randn(2, 2, 9, 16, generator=_g, dtype=torch.float64) * 30   # large scores
_k = torch.randn(2, 2, 9, 16, generator=_g, dtype=torch.float64) * 30
_v = torch.randn(2, 2, 9, 16, generator=_g, dtype=torch.float64)
_cases.append(("causal attention with large scores", _q, _k, _v, _ref.causal_mask(9).double(),
               torch.ones(9, 9, dtype=torch.bool).tril()))
for _name, _q, _k, _v, _m, _allowed in _cases:
    _out, _w = _attend(_q, _k, _v, _m, name=_name)   # the expected values are made after the graded call
    _ref_w = torch.softmax(_q @ _k.transpose(-2, -1) / math.sqrt(_q.size(-1))
                           + (0 if _m is None else _m), dim=-1)
    check_tensor_close(_out, _ref_w @ _v, f"output for {_name}", atol=1e-10, rtol=1e-8)
    check_tensor_close(_w, _ref_w, f"weights for {_name}", atol=1e-10, rtol=1e-8)
    del _ref_w
    if _allowed is not None:
        check(bool((_w.masked_select(~_allowed.expand_as(_w)) == 0).all()),
              f"masked weights for {_name} must be exactly 0")
# causality: changing the future leaves the past unchanged
_x = torch.randn(1, 8, 4, generator=_g, dtype=torch.float64)
_x2 = _x.clone()
_x2[:, 5:] = torch.randn(1, 3, 4, generator=_g, dtype=torch.float64)
_a, _ = _attend(_x, _x, _x, _ref.causal_mask(8).double())
_b, _ = _attend(_x2, _x2, _x2, _ref.causal_mask(8).double())
check_tensor_close(_b[:, :5], _a[:, :5], "outputs 0..4 after changing tokens 5..7", atol=0, rtol=0)
### END HIDDEN TESTS

# %% [markdown]
# ### Attention weights as a picture
#
# Trained weights come in notebook 05; here we **set** $W_q$ by hand to see what a head does.
# The words get one-hot embeddings and $W_k = I$, so $k_j$ says which word sits at position $j$.
# A head's $W_q$ decides what each word looks for: with $q_{\text{bark}} = c\sqrt{d_k}\, e_{\text{dog}}$
# the score of "bark" against "dog" is $c$ and 0 against everything else. A word whose query is
# zero scores every key 0, and spreads its weight evenly over what the mask lets it see.
#
# Three heads, stacked as a batch dimension of your `scaled_dot_product_attention`:
# **head 0** has all queries zero, **head 1** lets "bark" look for "dog" (who barks?),
# **head 2** lets "bark" look for "tree" and "tree" for "old" (which bark?).

# %%
words = "the dog near the old tree began to bark".split()
vocab = list(dict.fromkeys(words))                    # distinct words, in order of appearance
d = len(vocab)
X = torch.eye(d)[[vocab.index(w) for w in words]]    # (T, d): one-hot embeddings
T = len(words)


def hand_made_query(looks_for, strength=4.0):
    """Queries (T, d) from a W_q where word a looks for word b: score(a, b) = strength."""
    W_q = torch.zeros(d, d)
    for a, b in looks_for.items():
        W_q[vocab.index(a), vocab.index(b)] = strength * math.sqrt(d)
    return X @ W_q


Q_heads = torch.stack([hand_made_query({}),
                       hand_made_query({"bark": "dog"}),
                       hand_made_query({"bark": "tree", "tree": "old"})])   # (h, T, d)
K_heads = X.expand(3, T, d)                                                 # W_k = I for every head
_, weights_heads = scaled_dot_product_attention(Q_heads, K_heads, K_heads, causal_mask(T))
plot.attention_heatmap(weights_heads[1], tokens=words, title='head 1: "bark" looks for "dog"')
plt.show()
plot.attention_heads(weights_heads, tokens=words,
                     titles=["head 0: all queries 0", "head 1: bark → dog", "head 2: bark → tree, tree → old"])
plt.show()

# %% [markdown]
# Read the pictures row by row: each row is one query and sums to 1. In head 0 every row is
# uniform over its past, so row $i$ is just the mean of the first $i+1$ values. In head 1 the
# last row puts most of its weight on "dog" ($e^4 \approx 55$ times the weight of any other
# word); the other rows are unchanged. Head 2 gathers something else for the same word. A
# multi-head layer runs several such heads side by side, each with its own $W_q, W_k, W_v$, so
# "bark" can gather the animal and the tree at once.

# %% [markdown]
# ## 6. Attention does not know the order of words
#
# **Question (lecture poll).** Take four embeddings and the weights that query 4 gives them,
# with $W_v = I$ (so $v_j = x_j$):
#
# | $j$ | $x_j$ | $a_{4,j}$ |
# |---|---|---|
# | 1 | $[1, 0, 0, 0]$ | 0.1 |
# | 2 | $[0, 1, 0, 0]$ | 0.2 |
# | 3 | $[0, 0, 2, 0]$ | 0.6 |
# | 4 | $[0, 0, 0, 1]$ | 0.1 |
#
# Then $x'_4 = \sum_j a_{4,j} v_j = [0.1, 0.2, 1.2, 0.1]$. Now swap the embeddings of positions 2 and 3,
# so that $x_2 = [0, 0, 2, 0]$ and $x_3 = [0, 1, 0, 0]$, and run self-attention again (remember
# where the weights come from). What is $x'_4$ now?
#
# * **A.** $[0.1, 0.6, 0.4, 0.1]$: positions 2 and 3 keep their weights 0.2 and 0.6
# * **B.** $[0.1, 0.2, 1.2, 0.1]$: nothing changes
# * **C.** it cannot be computed without knowing the positions of the words
#
# Set `answer_q_swap` to `"A"`, `"B"` or `"C"`.

# %% solution="q_swap"
### BEGIN SOLUTION
answer_q_swap = "B"
### END SOLUTION

# %% tests="q_swap_tests" points=1
from lmcourse.checks import check_choice

check_choice(answer_q_swap, "ABC", "answer_q_swap")
visible_checks_pass("answer_q_swap")
### BEGIN HIDDEN TESTS
check_choice(answer_q_swap, "ABC", "answer_q_swap", correct="B")
### END HIDDEN TESTS

# %% [markdown]
# Check your answer with your own attention. The weights are not given by the positions: they
# come from the scores $q_4 \cdot k_j$, i.e. from the **content** at each position. Below, $W_k = I$
# and $q_4$ is chosen so that the scores reproduce the weights of the table.

# %%
X_poll = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 2.0, 0], [0, 0, 0, 1.0]])
d_k = X_poll.size(1)
q4 = math.sqrt(d_k) * torch.tensor([math.log(0.1), math.log(0.2), math.log(0.6) / 2, math.log(0.1)])
for label, X_now in [("before the swap", X_poll), ("after the swap ", X_poll[[0, 2, 1, 3]])]:
    x4_new, a4 = scaled_dot_product_attention(q4[None, :], X_now, X_now)   # K = V = X (W_k = W_v = I)
    print(f"{label}: a_4 = {[round(a, 3) for a in a4[0].tolist()]}, "
          f"x'_4 = {[round(v, 3) for v in x4_new[0].tolist()]}")

# %% [markdown]
# The weights travel **with the embeddings**: after the swap, position 3 holds $[0, 1, 0, 0]$ and
# gets its weight 0.2. The weighted sum is a sum, and sums do not care about order, so $x'_4$
# is unchanged. In general, without a mask, permuting the input rows of self-attention just
# permutes its output rows (it is *permutation equivariant*); your `MultiHeadAttention` below is
# tested for exactly that.

# %% [markdown] answer="q_swap_why" points=2
# **Question (free text).** In two or three sentences: why does $x'_4$ not change, what does that
# mean for a language model reading "dog bites man" versus "man bites dog", and what must be
# added to the input so that order matters?
#
# ### BEGIN SOLUTION
# The weights $a_{4,j}$ are computed from the content of each position ($q_4 \cdot k_j$), so
# swapping two embeddings swaps their weights too, and the output is a sum over positions,
# which is the same in any order. Self-attention alone therefore sees a *set* of words: the
# last token of "dog bites man" and of "man bites dog" gets exactly the same vector, although
# the meanings differ. Adding a position-dependent vector $p_t$ to each token embedding
# (learned or sinusoidal positional encodings, notebook 04) makes equal words at different
# positions different inputs, so order can influence the scores.
# ### END SOLUTION

# %% [markdown]
# ## 7. Many heads at once
#
# One head produces one set of weights per query, so it can look for one kind of thing.
# Multi-head attention runs $h$ heads in parallel, each on its own $d_k = d_{\text{model}}/h$
# channels, and glues the results back together:
#
# $$\mathrm{head}_i = \mathrm{softmax}\!\left(\frac{Q^{(i)} K^{(i)\top}}{\sqrt{d_k}} + M\right)V^{(i)},
#   \quad Q^{(i)} = X W_q^{(i)},\ K^{(i)} = X W_k^{(i)},\ V^{(i)} = X W_v^{(i)},$$
#
# $$\mathrm{MultiHead}(X) = \mathrm{concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W_O .$$
#
# Choosing $d_k = d_{\text{model}}/h$ makes the concatenation $d_{\text{model}}$ wide again, so the
# layer maps `(B, T, C)` to `(B, T, C)` with `C` $= d_{\text{model}}$ and can be stacked.
#
# The efficient way does all heads with **one** `nn.Linear` each for $Q$, $K$, $V$ (the $h$ matrices
# $W_q^{(i)}$ side by side form one $C \times C$ matrix) and then reshapes: channels
# `i*d_k ... (i+1)*d_k - 1` belong to head `i`.
#
# ```
# q = self.W_q(x)                    # (B, T, C)
# q = q.view(B, T, h, d_k)           # (B, T, h, d_k): split the channels into heads
# q = q.transpose(1, 2)              # (B, h, T, d_k): heads become a batch dimension
# ```
#
# `view(B, h, T, d_k)` directly would have the right shape but the wrong content (it mixes time
# steps and heads). After attention, undo it: `out.transpose(1, 2).contiguous().view(B, T, C)`,
# then apply $W_O$.
#
# ### Exercise 5 — `MultiHeadAttention`
# `__init__` is written for you (keep the names: the tests copy weights into `W_q`, `W_k`, `W_v`,
# `W_o`). Write `forward(x, return_weights=False)`: `x` is `(B, T, C)`; return the output
# `(B, T, C)`, or the pair `(output, weights)` with weights `(B, h, T, T)` when `return_weights`
# is true. Apply your `causal_mask` only when `self.causal` is true, moved to the input's device
# and dtype with `.to(x.device, x.dtype)`. Use your own `scaled_dot_product_attention` (by that
# name: the tests put the reference versions of the earlier functions in place of yours). The output
# has the input's dtype and device (the tests run the layer in float32, float64 and bfloat16, and on
# PyTorch's "meta" device), with and without biases (`bias=False`), every weight must receive a
# gradient, and `x` stays unchanged.

# %% solution="multi_head_attention"
class MultiHeadAttention(nn.Module):
    """Multi-head self-attention on batch-first input (B, T, C), causal or not."""

    def __init__(self, n_embd, n_head, causal=True, bias=True):
        super().__init__()
        if n_embd % n_head != 0:
            raise ValueError(f"n_embd={n_embd} must be divisible by n_head={n_head}")
        self.n_embd, self.n_head, self.d_k = n_embd, n_head, n_embd // n_head
        self.causal = causal
        self.W_q = nn.Linear(n_embd, n_embd, bias=bias)   # all heads' W_q^(i), side by side
        self.W_k = nn.Linear(n_embd, n_embd, bias=bias)
        self.W_v = nn.Linear(n_embd, n_embd, bias=bias)
        self.W_o = nn.Linear(n_embd, n_embd, bias=bias)   # W_O, applied to the concatenated heads

    def forward(self, x, return_weights=False):
        ### BEGIN SOLUTION
        B, T, C = x.shape
        q = self.W_q(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
        k = self.W_k(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
        v = self.W_v(x).view(B, T, self.n_head, self.d_k).transpose(1, 2)   # (B, h, T, d_k)
        mask = causal_mask(T).to(x.device, x.dtype) if self.causal else None
        out, weights = scaled_dot_product_attention(q, k, v, mask)          # (B, h, T, d_k), (B, h, T, T)
        out = out.transpose(1, 2).contiguous().view(B, T, C)                # (B, T, C): heads side by side
        y = self.W_o(out)                                                   # (B, T, C)
        return (y, weights) if return_weights else y
        ### END SOLUTION


# %% tests="multi_head_attention_tests" points=6
# The reference causal_mask and scaled_dot_product_attention (and softmax, attention_scores) stand in
# for yours here: only forward is graded. It runs with every ready-made softmax and attention switched off.
_ref = lmcourse.reference.attention
_rule = ("compute attention with your scaled_dot_product_attention (or by hand): a ready-made softmax or "
         "attention (x.softmax, F.scaled_dot_product_attention, nn.MultiheadAttention, ...) or lmcourse's "
         "reference attention scores 0 here")
_mask_hint = "create the mask inside forward with causal_mask(T).to(x.device, x.dtype)"
_bias_hint = ("with bias=False the layers have no bias (W_q.bias is None): call the layers, self.W_q(x), "
              "rather than using their weight and bias yourself")
_merge_hint = ("after .transpose(1, 2) the tensor is not contiguous in memory, and .view needs it to be: merge "
               "the heads with out.transpose(1, 2).contiguous().view(B, T, C) (or .reshape(B, T, C))")


def _run(module, x, name, **kwargs):
    """Your forward, with the reference earlier functions, under the rules; errors explained."""
    with substitute(globals(), softmax=_ref.softmax, attention_scores=_ref.attention_scores,
                    causal_mask=_ref.causal_mask, scaled_dot_product_attention=_ref.scaled_dot_product_attention), \
            own_code("softmax", "softmin", "scaled_dot_product_attention", "multi_head_attention",
                     calls=(lmcourse.nn.attention,), reason=_rule), graded_call():
        try:
            return module(x, **kwargs)
        except CheckFailed:
            raise
        except Exception as err:
            if type(err) is NotImplementedError and str(err).startswith("Exercise "):   # the stub: not answered yet
                raise
            text = str(err)
            hint = (_merge_hint if "view" in text and "stride" in text else
                    _mask_hint if "dtype" in text or "device" in text or "Half" in text or "BFloat16" in text else
                    _bias_hint if "NoneType" in text else
                    "split with .view(B, T, h, d_k).transpose(1, 2), merge with "
                    ".transpose(1, 2).contiguous().view(B, T, C)")
            raise CheckFailed(f"{name} raised {type(err).__name__}: {text} — {hint}") from None


def _compare_with_torch(n_embd, n_head, causal, x, hint, bias=True):
    torch.manual_seed(n_embd * 10 + n_head)
    mine = MultiHeadAttention(n_embd, n_head, causal=causal, bias=bias).double()
    ref = lmcourse.reference.attention.torch_twin(mine)
    T = x.size(1)
    blocked = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None
    label = f"MultiHeadAttention({n_embd}, {n_head}, causal={causal}, bias={bias})"
    with torch.no_grad():
        want, want_w = ref(x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False)
        got = _run(mine, x, label)
        got_w = _run(mine, x, label, return_weights=True)[1]
    check_tensor_close(got, want, f"{label} vs nn.MultiheadAttention with the same weights",
                       atol=1e-10, rtol=1e-8, hint=hint)
    check_tensor_close(got_w, want_w, f"the weights of {label} vs nn.MultiheadAttention's",
                       atol=1e-10, rtol=1e-8, hint="return the weights of every head, (B, h, T, T), as "
                       "scaled_dot_product_attention gives them")
    return mine, want_w


_g = torch.Generator().manual_seed(304)
_x = torch.randn(2, 5, 16, generator=_g, dtype=torch.float64)
_x_before = _x.clone()
_mha = MultiHeadAttention(16, 4).double()
_y = _run(_mha, _x, "MultiHeadAttention(16, 4) on x of shape (2, 5, 16)")
check_shape(_y, (2, 5, 16), "MultiHeadAttention(16, 4) on x of shape (2, 5, 16)",
            hint="the heads are concatenated back to (B, T, C) and projected with W_o")
check(torch.equal(_x, _x_before), "forward changed its input x in place: build new tensors instead")
_res = _run(_mha, _x, "MultiHeadAttention(16, 4)(x, return_weights=True)", return_weights=True)
check(isinstance(_res, (tuple, list)) and len(_res) == 2,
      f"with return_weights=True, forward should return a tuple (output, weights), got a {type(_res).__name__}"
      + (f" of length {len(_res)}" if isinstance(_res, (tuple, list)) else ""))
check(not (getattr(_res[0], "shape", None) == (2, 4, 5, 5) and getattr(_res[1], "shape", None) == (2, 5, 16)),
      "with return_weights=True, forward returned (weights, output): return (output, weights), in that order")
check_shape(_res[1], (2, 4, 5, 5), "the weights of MultiHeadAttention(16, 4) on (2, 5, 16)",
            hint="split C = 16 into h = 4 heads of d_k = 4: (B, T, C) -> (B, h, T, d_k); weights are (B, h, T, T)")
_compare_with_torch(16, 1, True, _x, hint="with a single head: scale by sqrt(d_k), add the causal mask "
                    "before the softmax, and apply W_o to the result")
_compare_with_torch(16, 4, True, _x, hint="one head works but four do not? Split heads with "
                    ".view(B, T, h, d_k).transpose(1, 2), scale by sqrt(d_k) where d_k = C / h "
                    "(not sqrt(C)), merge with .transpose(1, 2).contiguous().view(B, T, C)")
_compare_with_torch(16, 4, False, _x, hint="causal=False means no mask at all")
_compare_with_torch(16, 4, True, _x, bias=False, hint=_bias_hint)
# Causality: changing the tokens after position t must leave outputs 0..t unchanged.
_x2 = _x.clone()
_x2[:, 3:] = torch.randn(2, 2, 16, generator=_g, dtype=torch.float64)
with torch.no_grad():
    _a, _b = _run(_mha, _x, "MultiHeadAttention(16, 4)"), _run(_mha, _x2, "MultiHeadAttention(16, 4)")
check_tensor_close(_b[:, :3], _a[:, :3], "outputs at positions 0..2 after changing the inputs at 3..4",
                   atol=1e-12, rtol=0, hint="with causal=True the mask must hide the future from every head")
# Without a mask, permuting the positions permutes the outputs.
_free = MultiHeadAttention(16, 4, causal=False).double()
_perm = torch.tensor([3, 0, 4, 1, 2])
with torch.no_grad():
    check_tensor_close(_run(_free, _x[:, _perm], "MultiHeadAttention(16, 4, causal=False)"),
                       _run(_free, _x, "MultiHeadAttention(16, 4, causal=False)")[:, _perm],
                       "output of a permuted input (causal=False)", atol=1e-10, rtol=1e-8,
                       hint="self-attention without a mask treats the input as a set: "
                       "work on each (batch, head) pair along the T dimension only")
# Training back-propagates through the layer: every weight gets a finite gradient.
_run(_mha, _x, "MultiHeadAttention(16, 4)").sum().backward()
check(all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in _mha.parameters()),
      "every weight of MultiHeadAttention should receive a finite gradient: no torch.no_grad() or .detach() "
      "inside forward")
# The input's dtype and device. float32 in, float32 out; a bfloat16 layer shows a mask left in float32,
# and the "meta" device (shapes, no values: it stands in for a GPU here) a mask left on the CPU.
_m32 = MultiHeadAttention(8, 2)
with torch.no_grad():
    _y32 = _run(_m32, torch.randn(2, 6, 8, generator=_g), "MultiHeadAttention(8, 2) in float32")
check_equal(_y32.dtype, torch.float32, "dtype of the output for a float32 input", hint=_mask_hint)
_m16 = MultiHeadAttention(8, 2).to(torch.bfloat16)
_m64 = MultiHeadAttention(8, 2).double()
_m64.load_state_dict(_m16.state_dict())
_x16 = torch.randn(2, 6, 8, generator=_g).to(torch.bfloat16)
with torch.no_grad():
    _y16 = _run(_m16, _x16, "MultiHeadAttention(8, 2) in bfloat16")
    _y64 = _run(_m64, _x16.double(), "MultiHeadAttention(8, 2) in float64")
check_equal(_y16.dtype, torch.bfloat16, "dtype of the output for a bfloat16 input", hint=_mask_hint)
check_tensor_close(_y16, _y64, "MultiHeadAttention(8, 2) in bfloat16 vs float64", atol=0.05, rtol=0.05,
                   hint=_mask_hint)
_reads_values = ("item() cannot be called on meta", "Meta tensors", "data-independent")
try:
    _y_meta = _run(MultiHeadAttention(8, 2).to("meta"), torch.empty(2, 6, 8, device="meta"),
                   "MultiHeadAttention(8, 2) on the meta device")
except CheckFailed as _err:   # code that reads values (if bool(...), .item()) cannot run on meta: not a fault
    if not any(_s in str(_err) for _s in _reads_values):
        raise
else:
    check_equal(str(_y_meta.device), "meta", "device of the output for an input on the meta device",
                hint=_mask_hint)
visible_checks_pass("MultiHeadAttention")
### BEGIN HIDDEN TESTS
torch.manual_seed(305)
_cases = [(24, 6, True, False, (3, 9)), (24, 3, False, True, (2, 7)), (8, 2, True, True, (1, 1)),
          (12, 12, True, True, (2, 4))]
_models = [MultiHeadAttention(c, h, causal=cz, bias=bz).double() for c, h, cz, bz, _ in _cases]
_refs = [lmcourse.reference.attention.torch_twin(m) for m in _models]
for (_c, _h, _cz, _bz, (_B, _T)), _m, _tw in zip(_cases, _models, _refs):
    _xx = torch.randn(_B, _T, _c, generator=_g, dtype=torch.float64)
    _blocked = torch.ones(_T, _T, dtype=torch.bool).triu(1) if _cz else None
    _got, _got_w = _run(_m, _xx, f"MultiHeadAttention({_c}, {_h})", return_weights=True)
    with torch.no_grad():   # the expected values are made after the graded call
        _want, _want_w = _tw(_xx, _xx, _xx, attn_mask=_blocked, need_weights=True, average_attn_weights=False)
    check_tensor_close(_got, _want, f"MultiHeadAttention({_c}, {_h}, causal={_cz}, bias={_bz}) on "
                       f"({_B}, {_T}, {_c})", atol=1e-10, rtol=1e-8)
    check_tensor_close(_got_w, _want_w, f"weights of MultiHeadAttention({_c}, {_h}, causal={_cz})",
                       atol=1e-10, rtol=1e-8)
    del _want, _want_w
    _got.sum().backward()
    check(all(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in _m.parameters()),
          "every weight of MultiHeadAttention should receive a finite gradient")
### END HIDDEN TESTS

# %% [markdown]
# Your layer computes what `lmcourse.nn.CausalSelfAttention` computes, the reference that the
# next notebooks build on. It keeps $W_q, W_k, W_v$ in a single `nn.Linear(C, 3C)` (`c_attn`) and
# can run either your explicit formula or PyTorch's fused kernel. Copy your weights in and
# compare both paths:

# %%
torch.manual_seed(rt.seed)
C, h = rt.profile.n_embd, rt.profile.n_head
mine = MultiHeadAttention(C, h)
x = torch.randn(2, rt.profile.block_size, C)
for fast in (False, True):
    cfg = lmcourse.nn.AttentionConfig(n_embd=C, n_head=h, block_size=rt.profile.block_size, fast=fast)
    ref = lmcourse.nn.CausalSelfAttention(cfg)
    with torch.no_grad():
        ref.c_attn.weight.copy_(torch.cat([mine.W_q.weight, mine.W_k.weight, mine.W_v.weight]))
        ref.c_attn.bias.copy_(torch.cat([mine.W_q.bias, mine.W_k.bias, mine.W_v.bias]))
        ref.c_proj.weight.copy_(mine.W_o.weight)
        ref.c_proj.bias.copy_(mine.W_o.bias)
        diff = (ref(x) - mine(x)).abs().max().item()
    print(f"reference ({'fused kernel' if fast else 'explicit'}) vs yours: largest difference {diff:.2e}")

# %% [markdown]
# And all heads of your (untrained) layer on a sequence of 12 **random vectors**: the rows of `x`
# are drawn from a normal distribution, standing in for the embeddings of real tokens (there is no
# vocabulary yet). With random weights the heads attend almost evenly to the past; training
# (notebook 05) is what makes them specialise.

# %%
with torch.no_grad():
    _, w_rand = mine(x[:1, :12], return_weights=True)      # (1, h, 12, 12)
plot.attention_heads(w_rand[0], title="untrained heads on 12 random vectors (positions 0-11)")
plt.show()

# %% [markdown]
# ## 8. The price of attention: $T \times T$
#
# The explicit formula builds the scores and the weights, two `(B, h, T, T)` tensors: doubling the
# context multiplies that memory by four. Fused kernels (`F.scaled_dot_product_attention`, which
# uses FlashAttention-style algorithms where available) compute the same result in tiles and
# never store the whole matrix. Below we time your explicit attention against the fused kernel
# as $T$ grows. The memory plot shows the bytes each method must hold: for yours the inputs,
# output and the $T \times T$ scores and weights; for the fused kernel the inputs and output
# (measured with `torch.cuda.max_memory_allocated` when running on a GPU). The sequence lengths
# come from the profile, so this cell takes seconds in `tiny`. `bench/bench_attention.py`
# measures CPU memory in separate processes.

# %%
lengths = {"tiny": [32, 64, 128, 256], "cpu": [64, 128, 256, 512, 1024, 2048],
           "gpu": [256, 512, 1024, 2048, 4096, 8192]}[rt.profile.name]
n_head, head_size = rt.profile.n_head, rt.profile.n_embd // rt.profile.n_head
on_gpu = rt.device.type == "cuda"


def explicit_attention(q, k, v, M):
    return scaled_dot_product_attention(q, k, v, M)          # yours: stores (B, h, T, T) twice


def fused_attention(q, k, v, M):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)   # builds its own mask


def time_and_memory(fn, args, repeats=3):
    """Best-of-`repeats` seconds per call, and the peak extra bytes on CUDA (None elsewhere)."""
    fn(*args)                                              # warm-up
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        if on_gpu:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    peak = torch.cuda.max_memory_allocated() - base if on_gpu else None
    return best, peak


methods = {"explicit (yours)": explicit_attention, "fused F.scaled_dot_product_attention": fused_attention}
seconds = {name: [] for name in methods}
memory = {name: [] for name in methods}
for n in lengths:
    args = [torch.randn(1, n_head, n, head_size, device=rt.device) for _ in range(3)]   # q, k, v: (B, h, T, d_k)
    args.append(causal_mask(n).to(rt.device))                                           # M: (T, T)
    one = args[0].numel() * args[0].element_size()        # bytes of one (B, h, T, d_k) tensor
    tt_bytes = 2 * n_head * n * n * args[0].element_size()  # scores + weights: (B, h, T, T) twice
    for name, fn in methods.items():
        s, peak = time_and_memory(fn, args)
        seconds[name].append(s)
        if peak is None:                                  # CPU: count what the call must hold at once
            peak = one + (tt_bytes if fn is explicit_attention else 0)
        memory[name].append(3 * one + peak)               # q, k, v + what the call allocates
    del args
print(f"B=1, heads={n_head}, head size={head_size}, device={rt.device}")
print(f"{'T':>6} {'explicit ms':>12} {'fused ms':>10} {'explicit MiB':>13} {'fused MiB':>10}")
e, f = methods
for i, n in enumerate(lengths):
    print(f"{n:>6} {seconds[e][i] * 1e3:>12.2f} {seconds[f][i] * 1e3:>10.2f} "
          f"{memory[e][i] / 2**20:>13.2f} {memory[f][i] / 2**20:>10.2f}")
plot.attention_cost(lengths, seconds, memory, title=f"Causal attention on {rt.device.type}")
plt.show()

# %% [markdown] answer="q_cost" points=2
# **Question (free text).** Use the figures above. (a) When $T$ doubles, by what factor does the
# explicit path's extra memory grow, and why? (b) GPT-3 has a context of 2048 tokens and 96
# heads per layer. How many bytes do the attention weights of **one** layer take for **one**
# sequence in 16-bit floats, and what does that suggest about the fused kernel?
#
# ### BEGIN SOLUTION
# (a) By about 4: the scores and weights hold one number per (query, key) pair, $T^2$ of them
# per head, while inputs and outputs grow only like $T$; the time also grows roughly like $T^2$
# once $T$ is large, because every query is compared with every key. (b) $96 \times 2048^2
# \times 2$ bytes $\approx 805$ MB (768 MiB) per layer and per sequence, for the weights alone,
# and the same again for the scores; with 96 layers and a batch of sequences this cannot be
# kept around. The fused kernel computes the same output tile by tile, keeping only running
# maxima and sums per query, so its memory grows linearly with $T$, and it is faster because it
# moves far less data.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You built, and checked against PyTorch:
#
# * a softmax that survives huge scores and $-\infty$ entries (subtract the row maximum);
# * scores $QK^\top/\sqrt{d_k}$, and why the $\sqrt{d_k}$;
# * the causal mask $M$ ($0$ on and below the diagonal, $-\infty$ above) and where it goes
#   (before the softmax);
# * scaled dot-product attention, returning the output and the weights you can plot;
# * `MultiHeadAttention`: split into heads with `view` + `transpose`, attend, merge, project
#   with $W_O$ — causal for a language model, bidirectional otherwise.
#
# You also saw that self-attention by itself ignores word order, and that its cost grows with
# $T^2$. **Next, notebook 04:** positional encodings fix the order problem, and attention joins
# layer norm, residual connections and an MLP in a transformer block, stacked into a language
# model. From there on the course uses `lmcourse.nn.CausalSelfAttention`, the reference version
# of what you just wrote.
