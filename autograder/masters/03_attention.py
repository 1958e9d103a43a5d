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
# **Time.** About 1.5–2 hours of work; every cell runs in seconds on a laptop CPU. Measured
# figures: [03_attention](../docs/notebooks.md#03_attention).
#
# **How the checks work.** Cells marked `# YOUR CODE HERE` are yours; the cell after each one
# checks your answer and says what looks wrong, and the autograder runs hidden tests of the same
# rules. Write the computation with basic tensor operations (`@`, `.exp()`, `.max()`, `.sum()`,
# `.transpose()`, `.view()`): a ready-made softmax (`torch.softmax`, `F.softmax`, `x.softmax`,
# `nn.Softmax`, `x.log_softmax(dim).exp()`, ...), one that another function computes for you (the
# gradient of `F.cross_entropy`, `torch.distributions`' normalised logits) or attention
# (`F.scaled_dot_product_attention`, `nn.MultiheadAttention`) scores 0 under any name, and the
# course's own attention (`lmcourse.nn.attention`) is absent while the autograder runs. Return the
# input's dtype and device; never change an input in place. Your `softmax`, `attention_scores` and
# `causal_mask` are graded by their own tests: later exercises run with the course's versions of
# them. Every rule in one place (threads, the course's files, TorchScript, questions): [How the
# checks
# work](../docs/notebooks.md#how-the-checks-work).

# %% locked="setup"
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
import lmcourse.marking
from lmcourse import plot
from lmcourse.runtime import given

tests = lmcourse.marking.Exam("03_attention", globals())   # the test cells below: tests.check("softmax")
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
# Write `softmax(x, dim=-1)`: the softmax of a tensor along dimension `dim` (every other dimension
# is a batch). Subtract the maximum along `dim` first; `keepdim=True` keeps shapes broadcastable.
# `x.max(dim=dim, keepdim=True)` returns a pair (values, indices): take its `.values`, or use
# `x.amax(dim=dim, keepdim=True)`, which returns only the values. Use `.exp()`, `.max()` and
# `.sum()`, not a ready-made softmax (`torch.softmax`, `F.softmax`, `x.softmax`,
# `x.log_softmax(dim).exp()`, `F.cross_entropy`'s gradient, `torch.distributions`, ...). Return a
# new tensor of the same shape, **dtype** and device as `x` (a float32 `x` gives a float32
# result), and leave `x` unchanged.

# %% solution="softmax"
def softmax(x, dim=-1):
    """Softmax of tensor x along dimension dim, stable for large inputs and -inf entries."""
    ### BEGIN SOLUTION
    shifted = x - x.max(dim=dim, keepdim=True).values
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)
    ### END SOLUTION


# %% tests="softmax_tests" points=3
# softmax along dim, stable for huge scores and -inf entries; the input's shape, dtype and device, x unchanged.
tests.check("softmax")
### BEGIN HIDDEN TESTS
tests.grade("softmax")
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
# Q K^T / sqrt(d_k) over the last two dimensions, batched; the input's dtype, Q and K unchanged.
tests.check("attention_scores")
### BEGIN HIDDEN TESTS
tests.grade("attention_scores")
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
# \text{B: }\begin{bmatrix} 0 & -\infty & -\infty & -\infty \\ -\infty & 0 & -\infty & -\infty \\
#   -\infty & -\infty & 0 & -\infty \\ -\infty & -\infty & -\infty & 0 \end{bmatrix}\qquad
# \text{C: }\begin{bmatrix} 0 & -\infty & -\infty & -\infty \\ 0 & 0 & -\infty & -\infty \\
#   0 & 0 & 0 & -\infty \\ 0 & 0 & 0 & 0 \end{bmatrix}$$
#
# Set `answer_q_mask` to `"A"`, `"B"` or `"C"`.

# %% solution="q_mask"
### BEGIN SOLUTION
answer_q_mask = "C"
### END SOLUTION

# %% tests="q_mask_tests" points=1
tests.check("q_mask")
### BEGIN HIDDEN TESTS
tests.grade("q_mask")
### END HIDDEN TESTS

# %% [markdown]
# **Question (lecture quiz).** In $A = \mathrm{softmax}(S + M)$, is the softmax applied
# **A.** row-wise (each row sums to 1) or **B.** column-wise (each column of $A$ sums to 1)?
# Think about what one row of $S$ holds. Set `answer_q_softmax` to `"A"` or `"B"`.

# %% solution="q_softmax"
### BEGIN SOLUTION
answer_q_softmax = "A"
### END SOLUTION

# %% tests="q_softmax_tests" points=1
tests.check("q_softmax")
### BEGIN HIDDEN TESTS
tests.grade("q_softmax")
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
# a float32 (T, T) tensor: 0.0 on and below the diagonal, float('-inf') above it.
tests.check("causal_mask")
### BEGIN HIDDEN TESTS
tests.grade("causal_mask")
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
# (output, weights) of softmax(Q K^T / sqrt(d_k) + mask) V, with or without a mask; the reference
# softmax, attention_scores and causal_mask stand in for yours here (one mistake costs once).
tests.check("scaled_dot_product_attention")
### BEGIN HIDDEN TESTS
tests.grade("scaled_dot_product_attention")
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
tests.check("q_swap")
### BEGIN HIDDEN TESTS
tests.grade("q_swap")
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
# forward on (B, T, C), causal or not, with and without biases, in the input's dtype and device;
# the tests load weights into W_q, W_k, W_v, W_o, and the reference earlier functions stand in for yours.
tests.check("multi_head_attention")
### BEGIN HIDDEN TESTS
tests.grade("multi_head_attention")
### END HIDDEN TESTS

# %% [markdown]
# Your layer computes what `lmcourse.nn.CausalSelfAttention` computes, the course's version that the
# next notebooks build on. It keeps $W_q, W_k, W_v$ in a single `nn.Linear(C, 3C)` (`c_attn`) and
# can run either your explicit formula or PyTorch's fused kernel. Copy your weights in and
# compare both paths (at home: while this notebook is graded the course's layer is absent):

# %%
torch.manual_seed(rt.seed)
C, h = rt.profile.n_embd, rt.profile.n_head
mine = MultiHeadAttention(C, h)
x = torch.randn(2, rt.profile.block_size, C)
course = given("lmcourse.nn.attention", "the comparison with the course's attention layer")
for fast in ((False, True) if course else ()):
    cfg = course.AttentionConfig(n_embd=C, n_head=h, block_size=rt.profile.block_size, fast=fast)
    ref = course.CausalSelfAttention(cfg)
    with torch.no_grad():
        ref.c_attn.weight.copy_(torch.cat([mine.W_q.weight, mine.W_k.weight, mine.W_v.weight]))
        ref.c_attn.bias.copy_(torch.cat([mine.W_q.bias, mine.W_k.bias, mine.W_v.bias]))
        ref.c_proj.weight.copy_(mine.W_o.weight)
        ref.c_proj.bias.copy_(mine.W_o.bias)
        diff = (ref(x) - mine(x)).abs().max().item()
    print(f"the course's ({'fused kernel' if fast else 'explicit'}) vs yours: largest difference {diff:.2e}")

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
# per head, while inputs and outputs grow only like $T$. The time grows at least as fast once $T$
# is large, because every query is compared with every key (in our run at `cpu`, about ×6 per
# doubling from $T = 512$ on; a single timing on a busy machine jumps around, so read the slope
# over several doublings). (b) $96 \times 2048^2
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
# model. From there on the course uses `lmcourse.nn.CausalSelfAttention`, the course's version
# of what you just wrote.
