# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 10 · Scaling laws: predict a bigger model's loss from small ones, then train it
#
# **What you will build.** The arithmetic and the fits behind the lectures' last claim — that "the
# performance of large language models is mainly determined by 3 factors: model size (the number
# of parameters not counting embeddings), dataset size, and amount of compute". You will count a
# transformer's parameters, price its training in FLOPs and petaflop/s-days, fit power laws with
# and without an irreducible loss, find the compute-optimal model size two ways (Chinchilla's
# IsoFLOP parabolas and the closed form of a parametric fit), and then measure the law on the
# course's own GPTs: a sweep of sizes and budgets, a prediction for a run larger than any in the
# sweep, written down **before** that run is trained, and the run itself.
#
# **Prerequisites.** Notebook 05 (the GPT and `lmcourse.train`); logarithms and least squares.
#
# **Time.** About an hour of work. At the `cpu` profile the notebook trains the sweep the course's
# table was made with (five sizes, three budgets) and one held-out run: 5 to 10 minutes of CPU time,
# and on a busy machine up to twice that of waiting; under the autograder, seconds. Every analysis
# also runs on the table the course ships, so nothing depends on your run finishing. Measured
# figures: [10_scaling](../docs/notebooks.md#10_scaling).
#
# **How the checks work.** Cells marked `# YOUR CODE HERE` are yours; the cell after each one
# checks your answer and says what looks wrong, and the autograder runs hidden tests of the same
# rules. Results are plain Python numbers (an `int` or a `float`; a NumPy float is fine), tuples
# and dicts as each exercise says. Where an exercise calls an earlier one (`isoflop_minima` calls
# your `isoflop_parabola`, `fit_exponents` your `fit_power_law`, `tokens_per_parameter` your
# `compute_optimal`), its tests run it with the course's version of the earlier one; the course's
# answers (`lmcourse.reference.scaling`) are absent while the notebook is graded. The tests never
# depend on a training run: they use numbers from the lectures, synthetic losses drawn from laws
# whose constants are known, and rows shaped like the course's table. Every rule in one place
# (threads, the course's files, TorchScript, questions): [How the checks
# work](../docs/notebooks.md#how-the-checks-work).

# %% locked="setup"
import math
import time

import numpy as np
import torch

import lmcourse
import lmcourse.marking
from lmcourse import scaling
from lmcourse.data import encode_split, load_shakespeare
from lmcourse.nn.gpt import GPT, GPTConfig
from lmcourse.recipes import scaling as scaling_recipe
from lmcourse.tokenizers import CharTokenizer

rt = lmcourse.setup(seed=0)
P = rt.profile
R = scaling_recipe.recipe(P.name)     # sizes, budgets, batch, context, learning rate of this profile
TABLE = scaling.shipped_sweep("cpu")  # the course's own cpu sweep: lmcourse/data_files/scaling_sweep_cpu.csv
tests = lmcourse.marking.Exam("10_scaling", globals())
NOTEBOOK_START = time.perf_counter()

# %% [markdown]
# ## 0. The claim
#
# The lectures close with GPT-3's table of eight models, from 125 M to 175 B parameters, trained on
# 300 B tokens with "50 petaflop/s-days" of compute, sized "based on the analysis in Scaling Laws
# for Neural Language Models". That analysis (Kaplan et al. 2020) and its revision (Hoffmann et
# al. 2022, "Chinchilla") say that the loss $L$ falls as a power of the model size $N$, the data
# $D$ and the compute $C$, and that for a fixed $C$ there is a best split between $N$ and $D$.
#
# The plan: **count** $N$ (section 1), **price** $C$ (2), **fit** power laws (3), find the
# compute-optimal split two ways (4, 5), then measure all of it on GPTs you train (6).
#
# ## 1. Parameters
#
# A block of the course's GPT has $d$-wide residual stream, attention of width $d_\text{attn}$
# (all heads together) and an MLP of width $d_\text{ff}$. Its matrices:
#
# * attention: $W_Q, W_K, W_V$ ($d \times d_\text{attn}$ each) and the output projection
#   ($d_\text{attn} \times d$): $4\, d\, d_\text{attn}$;
# * MLP: $d \times d_\text{ff}$ and back: $2\, d\, d_\text{ff}$.
#
# Over $n_\text{layer}$ blocks that is the lecture's
#
# $$N \approx 2\, d\, n_\text{layer}\, (2\, d_\text{attn} + d_\text{ff}),$$
#
# and with the usual $d_\text{attn} = d$, $d_\text{ff} = 4d$: $N \approx 12\, n_\text{layer}\, d^2$.
# This is the **non-embedding** count: the token table ($V \times d$) and the position table
# ($T \times d$) are left out, and so are the biases and LayerNorms (vectors of length $d$, tiny
# next to $d^2$).
#
# ### Exercise 1 — counting (2 points)
# Write the two counts, in one cell:
#
# * `non_embedding_params(n_layer, d_model)`, the usual shape's count $12\, n_\text{layer}\, d^2$,
#   returned as an `int` (the tests check the type: counts of ints stay ints, while `12.0`, `/`,
#   `math.pow` or `1e...` make a float);
# * `transformer_params(n_layer, d_model, d_attn=None, d_ff=None)`, the general one,
#   $2\, d\, n_\text{layer}\, (2\, d_\text{attn} + d_\text{ff})$, where a `None` means the default
#   ($d_\text{attn} = d$, $d_\text{ff} = 4d$; each defaults on its own).
#
# With the defaults the two agree: the first is the second at $d_\text{attn} = d$, $d_\text{ff} = 4d$.

# %% solution="transformer_params"
def non_embedding_params(n_layer, d_model):
    """12 n_layer d^2: four d x d attention projections and the MLP's d x 4d and 4d x d per block."""
    ### BEGIN SOLUTION
    return 12 * n_layer * d_model ** 2
    ### END SOLUTION


def transformer_params(n_layer, d_model, d_attn=None, d_ff=None):
    """2 d n_layer (2 d_attn + d_ff); d_attn defaults to d, d_ff to 4 d."""
    ### BEGIN SOLUTION
    d_attn = d_model if d_attn is None else d_attn
    d_ff = 4 * d_model if d_ff is None else d_ff
    return 2 * d_model * n_layer * (2 * d_attn + d_ff)
    ### END SOLUTION


# %% tests="transformer_params_tests" points=2
# 12 n_layer d² as an int (GPT-3, 96 layers of d = 12,288: about 1.74e11), then 2 d n_layer (2 d_attn + d_ff),
# each of d_attn and d_ff defaulting on its own.
tests.check("transformer_params")
### BEGIN HIDDEN TESTS
tests.grade("transformer_params")
### END HIDDEN TESTS

# %% [markdown]
# Check the count on a real model. The course's GPT has biases and LayerNorms too: per block two
# LayerNorms ($4d$), the biases of the four attention projections ($4d$, as one QKV bias of $3d$
# and the output's $d$), and of the MLP ($4d + d$): $13d$; the final LayerNorm adds $2d$. Its
# **matrices** outside the embedding tables are exactly $12\, n_\text{layer}\, d^2$:

# %%
demo = GPT(GPTConfig(vocab_size=65, block_size=40, n_layer=3, n_head=4, n_embd=48, dropout=0.0))
L_, d_ = demo.config.n_layer, demo.config.n_embd
matrices = sum(p.numel() for name, p in demo.named_parameters() if p.dim() == 2 and not name.startswith(("wte", "wpe")))
print(f"2-D weights outside the embeddings: {matrices:,}; 12 L d² = {non_embedding_params(L_, d_):,}")
print(f"num_params(non_embedding=True) = {demo.num_params(non_embedding=True):,} "
      f"= 12 L d² + 13 d L + 2 d = {non_embedding_params(L_, d_) + 13 * d_ * L_ + 2 * d_:,}")
print(f"with the embeddings (V d + T d more): {demo.num_params():,}")

# %% [markdown]
# And GPT-3, from the lecture's table: 96 layers, $d = 12{,}288$. (The slide prints 12,882, a typo:
# that would give 191 B.) The smallest model of the table, GPT-3 Small (12 layers, $d = 768$) has a
# vocabulary of 50,257 and a context of 2,048: its embeddings are a third of it.

# %%
print(f"GPT-3:       12 · 96 · 12288² = {non_embedding_params(96, 12288) / 1e9:.1f} B")
small = non_embedding_params(12, 768)
small_emb = (50257 + 2048) * 768
print(f"GPT-3 Small: {small / 1e6:.0f} M in the blocks + {small_emb / 1e6:.0f} M of embeddings "
      f"= {(small + small_emb) / 1e6:.0f} M")

# %% [markdown]
# ## 2. Compute
#
# Training on $D$ tokens costs
#
# $$C \approx 6\, N\, D \text{ FLOPs}.$$
#
# Why 6: in the forward pass every parameter takes part in one multiply and one add per token (2
# FLOPs); the backward pass computes two products per weight, the gradient of the layer's input
# and the gradient of the weight itself (4 FLOPs). Attention's own products (scores and weighted
# sum) have no parameters; Kaplan et al. count them as $2\, n_\text{layer}\, n_\text{ctx}\,
# d_\text{attn}$ FLOPs per token forward, three times that for training:
#
# $$C \approx 6\, N\, D + 6\, n_\text{layer}\, n_\text{ctx}\, d_\text{attn}\, D.$$
#
# Big runs are priced in **petaflop/s-days**: $10^{15}$ FLOPs a second for a day,
# $1\ \text{PF-day} = 10^{15} \cdot 86{,}400 = 8.64 \times 10^{19}$ FLOPs.
#
# ### Exercise 2 — the price of training (2 points)
# Write, in one cell:
#
# * `training_flops(n_params, n_tokens, n_layer=None, n_ctx=None, d_attn=None)`: $6ND$ as a
#   `float`, plus the attention term when `n_layer`, `n_ctx` and `d_attn` are all given;
# * `pf_days(flops)`: those FLOPs in petaflop/s-days (a `float`; 8.64e19 FLOPs is exactly one).

# %% solution="training_flops"
def training_flops(n_params, n_tokens, n_layer=None, n_ctx=None, d_attn=None):
    """6 N D, plus 6 n_layer n_ctx d_attn D when the attention's sizes are given."""
    ### BEGIN SOLUTION
    flops = 6.0 * n_params * n_tokens
    if n_layer is not None and n_ctx is not None and d_attn is not None:
        flops += 3 * 2.0 * n_layer * n_ctx * d_attn * n_tokens
    return flops
    ### END SOLUTION


def pf_days(flops):
    """FLOPs in petaflop/s-days (1 PF-day = 1e15 * 86400 FLOPs)."""
    ### BEGIN SOLUTION
    return flops / (1e15 * 86_400)
    ### END SOLUTION


# %% tests="training_flops_tests" points=2
# 6 N D: 2 FLOPs forward and 4 backward per parameter per token; attention adds 3 · 2 n_layer n_ctx d_attn per token.
# Then pf_days: 1 PF-day = 1e15 FLOPs a second for 86,400 seconds.
tests.check("training_flops")
### BEGIN HIDDEN TESTS
tests.grade("training_flops")
### END HIDDEN TESTS

# %% [markdown]
# Is $6ND$ what a GPT really costs? PyTorch can count: `torch.utils.flop_counter.FlopCounterMode`
# adds up the FLOPs of every matrix product it sees, forward and backward. On a small GPT with the
# explicit attention (`fast=False`) its total is exactly $6ND$ plus two terms the rule leaves out:
# the output head ($6\, d\, V$ per token: it is tied to the token table, so it is not in $N$, but
# it computes) and attention's products over the **full** $T \times T$ square (the causal mask
# throws half away only after computing it), twice Kaplan's causal-half term.

# %%
from torch.utils.flop_counter import FlopCounterMode

cfg = GPTConfig(vocab_size=65, block_size=40, n_layer=3, n_head=4, n_embd=48, dropout=0.0, fast=False)
model = GPT(cfg)
B_, T_ = 2, cfg.block_size
x = torch.randint(0, cfg.vocab_size, (B_, T_))
with FlopCounterMode(display=False) as counter:
    _, loss = model(x, x)
    loss.backward()
D_, N_ = B_ * T_, non_embedding_params(cfg.n_layer, cfg.n_embd)
rule = training_flops(N_, D_)
extra = 6 * cfg.n_embd * cfg.vocab_size * D_ + 12 * cfg.n_layer * T_ * cfg.n_embd * D_
print(f"FlopCounterMode: {counter.get_total_flops():,}")
print(f"6 N D = {rule:,.0f}; + head and full attention = {rule + extra:,.0f}")

# %% [markdown]
# With the fused kernel (`fast=True`, what training uses) the CPU count has no formula for the
# attention and leaves it out: a counter counts what it knows, no more.
#
# GPT-3 175B on 300 B tokens, and the slide's "50 petaflop/s-days": that figure is from the
# caption of the paper's figure 2.2, about **GPT-3 2.7B** (and RoBERTa-Large), not the largest
# model. (The slide's "500 billion" tokens is the size of the dataset; the model saw 300 B.)

# %%
for name, n in (("GPT-3 175B", 175e9), ("GPT-3 2.7B", 2.7e9)):
    c = training_flops(n, 300e9)
    print(f"{name}: C = {c:.3g} FLOPs = {pf_days(c):,.0f} PF-days")

# %% [markdown]
# **Question.** Where does the 6 of $C \approx 6ND$ come from?
#
# * **A.** Six layers of a small GPT, one FLOP each per token.
# * **B.** Two FLOPs per parameter per token forward (a multiply and an add), four backward (the
#   gradients of the layer's input and of its weights).
# * **C.** The three projections Q, K, V, forward and backward.
# * **D.** Adam's two moments and the weights, each read and written once.
#
# Set `answer_q_six` to `"A"`, `"B"`, `"C"` or `"D"`.

# %% solution="q_six"
### BEGIN SOLUTION
answer_q_six = "B"
### END SOLUTION

# %% tests="q_six_tests" points=1
# One letter, "A", "B", "C" or "D".
tests.check("q_six")
### BEGIN HIDDEN TESTS
tests.grade("q_six")
### END HIDDEN TESTS

# %% [markdown]
# ## 3. Power laws
#
# A power law $L = A\, x^{-\alpha}$ is a straight line on log-log axes:
#
# $$\ln L = \ln A - \alpha \ln x,$$
#
# so least squares of $\ln L$ on $\ln x$ gives $-\alpha$ as the slope and $\ln A$ as the intercept.
# Real losses do not fall to zero: text has an entropy no model beats, so the law gets an
# **irreducible** term,
#
# $$L = E + A\, x^{-\alpha},$$
#
# which is no longer a line in any axes. Hoffmann et al. fit it by minimising the Huber loss
# ($\delta = 10^{-3}$) of the residuals in log space,
#
# $$\sum_i \operatorname{Huber}_\delta\!\big(\log(e^{e} + e^{a - \alpha \ln x_i}) - \ln L_i\big),
# \qquad E = e^{e},\ A = e^{a},$$
#
# with L-BFGS from a **grid of starting points**, keeping the best: the objective has long flat
# valleys where $A$ and $\alpha$ trade off, and a single start can stop in one. (The log-sum-exp
# keeps $E$ and $A$ positive and the residuals on one scale.)
#
# ### Exercise 3 — fitting power laws (5 points)
# Write `fit_power_law(x, y)`, returning `(A, alpha)` of $y = A x^{-\alpha}$ by least squares in
# log space (natural logs), and `fit_power_law_offset(x, y)`, returning `(E, A, alpha)` of
# $y = E + A x^{-\alpha}$. Inputs are lists of positive floats. No SciPy: NumPy and PyTorch are
# enough (`np.polyfit`, `torch.optim.LBFGS`). What the tests ask:
#
# * noise-free points of a law give its constants back: `fit_power_law` within $10^{-6}$,
#   `fit_power_law_offset` within $10^{-4}$ (relative);
# * noisy points (the tests add seeded noise of 0.5 % of $y$): `fit_power_law` equals least squares
#   in log space (within $10^{-6}$); `fit_power_law_offset` is within 3 % for $E$, 10 % for
#   $\alpha$ and 25 % for $A$ of the course's fit of the same points (noise moves $A$ most: it trades
#   off with $\alpha$).

# %% solution="fit_power_law"
def fit_power_law(x, y):
    """(A, alpha) of y = A x^(-alpha): least squares of log y = log A - alpha log x."""
    ### BEGIN SOLUTION
    slope, intercept = np.polyfit(np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float)), 1)
    return float(math.exp(intercept)), float(-slope)
    ### END SOLUTION


# %% tests="fit_power_law_tests" points=2
# (A, alpha) from the line in log space: alpha = -slope, A = exp(intercept), natural logs.
tests.check("fit_power_law")
### BEGIN HIDDEN TESTS
tests.grade("fit_power_law")
### END HIDDEN TESTS

# %% solution="fit_power_law_offset"
def fit_power_law_offset(x, y, delta=1e-3):
    """(E, A, alpha) of y = E + A x^(-alpha): Huber loss in log space, L-BFGS from a grid of starts."""
    ### BEGIN SOLUTION
    lx = torch.tensor(np.log(np.asarray(x, dtype=float)), dtype=torch.float64)
    ly = torch.tensor(np.log(np.asarray(y, dtype=float)), dtype=torch.float64)

    def objective(theta):
        pred = torch.logsumexp(torch.stack([theta[0].expand_as(lx), theta[1] - theta[2] * lx]), dim=0)
        r = pred - ly
        return torch.where(r.abs() <= delta, 0.5 * r * r, delta * (r.abs() - 0.5 * delta)).sum()

    def run_from(start):
        """One L-BFGS run from start = (e, a, alpha): where it ends and the objective there."""
        theta = torch.tensor(start, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([theta], max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15,
                                line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = objective(theta)
            loss.backward()
            return loss

        opt.step(closure)
        return theta.detach().tolist(), float(objective(theta.detach()))

    best, best_loss = None, math.inf
    y_min, y_first = float(np.min(y)), float(y[0])
    for f in (0.1, 0.5, 0.9):                       # E as a share of the lowest loss
        for alpha in (0.05, 0.2, 0.5, 1.0):
            e0 = math.log(y_min * f)
            a0 = math.log(max(y_first - y_min * f, 1e-6)) + alpha * float(lx[0])   # the law through the first point
            theta, loss = run_from([e0, a0, alpha])
            if math.isfinite(loss) and loss < best_loss:
                best, best_loss = theta, loss
    return math.exp(best[0]), math.exp(best[1]), best[2]
    ### END SOLUTION


# %% tests="fit_power_law_offset_tests" points=3
# (E, A, alpha): noise-free data back to 1e-4; with 0.5 % noise E within 3 %, alpha 10 %, A 25 %.
tests.check("fit_power_law_offset")
### BEGIN HIDDEN TESTS
tests.grade("fit_power_law_offset")
### END HIDDEN TESTS

# %% [markdown]
# Both fits on the same noisy points of Chinchilla's data term ($E = 1.69$): the fit without $E$
# has to bend a straight line through a curve that levels off, and its exponent comes out far
# smaller than the true 0.34. Kaplan's $\alpha_N \approx 0.076$ is an exponent of that kind.

# %%
import matplotlib.pyplot as plt

true = dict(E=1.69, A=406.4, alpha=0.34)
xs = np.logspace(6, 10, 12)
ys = (true["E"] + true["A"] * xs ** -true["alpha"]) * (1 + 0.005 * np.random.default_rng(0).standard_normal(12))
A0, a0 = fit_power_law(xs, ys)
E1, A1, a1 = fit_power_law_offset(xs, ys)
grid = np.logspace(5.5, 11, 100)
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.loglog(xs, ys, "o", label="data (0.5 % noise)")
ax.loglog(grid, A0 * grid ** -a0, "--", label=f"A x^-α: α = {a0:.3f}")
ax.loglog(grid, E1 + A1 * grid ** -a1, "-", label=f"E + A x^-α: E = {E1:.2f}, α = {a1:.3f}")
ax.set_xlabel("x (e.g. parameters N)")
ax.set_ylabel("loss")
ax.legend()
plt.show()

# %% [markdown]
# ## 4. The compute-optimal size, first way: IsoFLOP curves
#
# Fix a budget $C$ and train models of several sizes $N$, each on $D = C / (6N)$ tokens: a small
# model sees many tokens, a big one few. The loss against $\ln N$ is a valley; Chinchilla's
# approach 2 fits a parabola to it,
#
# $$L \approx a (\ln N)^2 + b \ln N + c, \qquad N_\text{opt} = \exp\!\Big(-\frac{b}{2a}\Big),$$
#
# which has a minimum only when $a > 0$. Then, across budgets, a line in log-log space:
#
# $$N_\text{opt} = k_N\, C^{a}, \qquad D_\text{opt} = \frac{C}{6 N_\text{opt}} = k_D\, C^{b}.$$
#
# Since $\ln D_\text{opt} = \ln C - \ln 6 - \ln N_\text{opt}$, the two exponents add up to one,
# $a + b = 1$, and $k_N k_D = 1/6$, whatever the data.
# (Here $a$ is the exponent of $N_\text{opt}$; the parabola's $a$ is its own.)
#
# ### Exercise 4 — IsoFLOP analysis (5 points)
# * `isoflop_parabola(params, losses)`: the least-squares parabola in $\ln N$ (natural log) of one
#   budget's runs and its minimiser, as `((a, b, c), N_opt)` — `a` the coefficient of
#   $(\ln N)^2$. If $a \le 0$ there is no minimum: raise `ValueError`.
# * `isoflop_minima(budgets, params, losses)`: parallel lists, one entry per run, rows of a budget
#   anywhere in them; return `{budget: N_opt}`, one parabola per budget (call your
#   `isoflop_parabola`).
# * `fit_exponents(budgets, n_opt)`: `{"a": ..., "k_N": ..., "b": ..., "k_D": ...}` from least
#   squares in log space (call your `fit_power_law`: note the sign of its exponent), with
#   $D_\text{opt} = C / (6 N_\text{opt})$.
#
# The tests use parabolas with known minima (within $10^{-6}$) and power laws with known exponents.

# %% solution="isoflop_parabola"
def isoflop_parabola(params, losses):
    """((a, b, c), N_opt) of L = a (ln N)^2 + b ln N + c; ValueError when a <= 0."""
    ### BEGIN SOLUTION
    a, b, c = np.polyfit(np.log(np.asarray(params, dtype=float)), np.asarray(losses, dtype=float), 2)
    if a <= 0:
        raise ValueError("the losses of this budget do not bend upwards: no minimum in log N")
    return (float(a), float(b), float(c)), float(math.exp(-b / (2 * a)))
    ### END SOLUTION


# %% tests="isoflop_parabola_tests" points=2
# ((a, b, c), N_opt) in ln N, N_opt = exp(-b / 2a); a <= 0 raises ValueError.
tests.check("isoflop_parabola")
### BEGIN HIDDEN TESTS
tests.grade("isoflop_parabola")
### END HIDDEN TESTS

# %% solution="isoflop_minima"
def isoflop_minima(budgets, params, losses):
    """{budget: N_opt}: the runs grouped by budget, one isoflop_parabola each."""
    ### BEGIN SOLUTION
    out = {}
    for budget in sorted(set(budgets)):
        mine = [(n, lo) for c, n, lo in zip(budgets, params, losses) if c == budget]
        out[budget] = isoflop_parabola([n for n, _ in mine], [lo for _, lo in mine])[1]
    return out
    ### END SOLUTION


# %% tests="isoflop_minima_tests" points=1
# {budget: N_opt}, one parabola per budget (run with the course's isoflop_parabola).
tests.check("isoflop_minima")
### BEGIN HIDDEN TESTS
tests.grade("isoflop_minima")
### END HIDDEN TESTS

# %% solution="fit_exponents"
def fit_exponents(budgets, n_opt):
    """{"a", "k_N", "b", "k_D"}: N_opt = k_N C^a, D_opt = C / (6 N_opt) = k_D C^b."""
    ### BEGIN SOLUTION
    k_n, minus_a = fit_power_law(budgets, n_opt)
    d_opt = [c / (6 * n) for c, n in zip(budgets, n_opt)]
    k_d, minus_b = fit_power_law(budgets, d_opt)
    return {"a": -minus_a, "k_N": k_n, "b": -minus_b, "k_D": k_d}
    ### END SOLUTION


# %% tests="fit_exponents_tests" points=2
# a, k_N, b, k_D with D_opt = C / (6 N_opt): a + b = 1 (run with the course's fit_power_law).
tests.check("fit_exponents")
### BEGIN HIDDEN TESTS
tests.grade("fit_exponents")
### END HIDDEN TESTS

# %% [markdown]
# Now the course's own sweep (`TABLE`): five sizes of the GPT, from 1 block of width 16 to 3 of
# width 64, each trained at three budgets on Shakespeare's characters, on one CPU thread
# (`lmcourse/data_files/scaling_sweep_cpu.csv`; its header says how it was made). Every run's
# cosine schedule ends at its own last step.

# %%
def analyse(rows, count="params"):
    """IsoFLOP minima and exponents of a sweep's rows, N counted by the column ``count``."""
    budgets = [r.budget for r in rows]
    sizes = [getattr(r, count) for r in rows]
    losses = [r.val_loss for r in rows]
    minima = isoflop_minima(budgets, sizes, losses)
    fits = fit_exponents(list(minima), list(minima.values()))
    coefs = {c: isoflop_parabola([s for b, s in zip(budgets, sizes) if b == c],
                                 [lo for b, lo in zip(budgets, losses) if b == c])[0] for c in minima}
    return minima, fits, coefs


minima, fits, coefs = analyse(TABLE)
for c, n in minima.items():
    best = min((r for r in TABLE if r.budget == c), key=lambda r: r.val_loss)
    print(f"C = {c:.0e}: N_opt = {n:,.0f} (lowest loss at N = {best.params:,}, {best.val_loss:.3f}); "
          f"{c / (6 * n) / n:,.0f} tokens per parameter")
print(f"N_opt ∝ C^{fits['a']:.2f}, D_opt ∝ C^{fits['b']:.2f}")
fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
scaling.isoflop_curves(TABLE, parabolas=coefs, ax=axes[0])
scaling.optimal_sizes(list(minima), list(minima.values()), exponent=fits["a"], coefficient=fits["k_N"], ax=axes[1],
                      published={"Kaplan": 0.73, "Chinchilla": 0.50, "Epoch": 0.51})
plt.show()

# %% [markdown]
# Over a factor of 4 in compute the minima move fast: the exponent is far above Chinchilla's 0.5,
# and in the course's table the tokens per parameter fall from about 740 to about 215, where
# Chinchilla's rule would keep them constant. Look at the curves before
# trusting the number: they are asymmetric (the loss rises slowly to the left of the minimum and
# steeply to the right, where the big models get only a few hundred steps), and the smallest
# budget has a single point left of its minimum. Three budgets make a line, not a law.
#
# A check of the method on a law whose answer is known: slices of Chinchilla's parametric law at
# fixed $C$ must give $a = \beta / (\alpha + \beta) = 0.28 / 0.62 = 0.452$ (section 5 shows why).

# %%
chin = dict(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)
synthetic_budgets, synthetic_n_opt = [1e19, 1e20, 1e21, 1e22], []
for c in synthetic_budgets:
    ns = np.logspace(7, 11, 40)
    ls = chin["E"] + chin["A"] * ns ** -chin["alpha"] + chin["B"] * (c / (6 * ns)) ** -chin["beta"]
    keep = np.argsort(ls)[:9]                       # the valley around the minimum
    synthetic_n_opt.append(isoflop_parabola(ns[keep], ls[keep])[1])
print(f"approach 2 on Chinchilla's law: a = {fit_exponents(synthetic_budgets, synthetic_n_opt)['a']:.3f} "
      f"(β / (α + β) = {chin['beta'] / (chin['alpha'] + chin['beta']):.3f})")

# %% [markdown]
# ## 5. The compute-optimal size, second way: the closed form
#
# Chinchilla's approach 3 fits one law of both $N$ and $D$,
#
# $$L(N, D) = E + \frac{A}{N^{\alpha}} + \frac{B}{D^{\beta}},$$
#
# and minimises it under $C = 6ND$. Setting the derivative along the constraint to zero gives
#
# $$N_\text{opt} = G \Big(\frac{C}{6}\Big)^{\frac{\beta}{\alpha + \beta}}, \quad
# G = \Big(\frac{\alpha A}{\beta B}\Big)^{\frac{1}{\alpha + \beta}}, \quad
# D_\text{opt} = \frac{C / 6}{N_\text{opt}}.$$
#
# $E$ does not move the optimum. Hoffmann et al. published $E = 1.69$, $A = 406.4$, $B = 410.7$,
# $\alpha = 0.34$, $\beta = 0.28$; Besiroglu et al. (Epoch, 2024) refitted the same data and found
# $E = 1.82$, $A = 482$, $B = 2085$, $\alpha = 0.348$, $\beta = 0.366$.
#
# ### Exercise 5 — the closed form (3 points)
# Write `compute_optimal(C, A, B, alpha, beta)`, returning `(N_opt, D_opt)` as floats, and
# `tokens_per_parameter(C, A, B, alpha, beta)`: $D_\text{opt} / N_\text{opt}$ (call your
# `compute_optimal`). Checked within $10^{-9}$ (relative).

# %% solution="compute_optimal"
def compute_optimal(C, A, B, alpha, beta):
    """(N_opt, D_opt) minimising E + A/N^alpha + B/D^beta under C = 6 N D."""
    ### BEGIN SOLUTION
    G = (alpha * A / (beta * B)) ** (1 / (alpha + beta))
    n_opt = G * (C / 6) ** (beta / (alpha + beta))
    return n_opt, (C / 6) / n_opt
    ### END SOLUTION


# %% tests="compute_optimal_tests" points=2
# N_opt = G (C/6)^(beta/(alpha+beta)), D_opt = (C/6) / N_opt.
tests.check("compute_optimal")
### BEGIN HIDDEN TESTS
tests.grade("compute_optimal")
### END HIDDEN TESTS

# %% solution="tokens_per_parameter"
def tokens_per_parameter(C, A, B, alpha, beta):
    """D_opt / N_opt at compute C."""
    ### BEGIN SOLUTION
    n, d = compute_optimal(C, A, B, alpha, beta)
    return d / n
    ### END SOLUTION


# %% tests="tokens_per_parameter_tests" points=1
# D_opt / N_opt (run with the course's compute_optimal).
tests.check("tokens_per_parameter")
### BEGIN HIDDEN TESTS
tests.grade("tokens_per_parameter")
### END HIDDEN TESTS

# %% [markdown]
# At Chinchilla's own budget ($5.76 \times 10^{23}$ FLOPs; Chinchilla is 70 B parameters on 1.4 T
# tokens, 20 tokens per parameter):

# %%
epoch = dict(A=482.0, B=2085.0, alpha=0.348, beta=0.366)
published = {k: chin[k] for k in ("A", "B", "alpha", "beta")}
for C in (1e21, 5.76e23):
    for name, law in (("published", published), ("Epoch's refit", epoch)):
        n, d = compute_optimal(C, **law)
        print(f"C = {C:.2e}, {name:>13}: N_opt = {n / 1e9:6.1f} B, D_opt = {d / 1e9:7.0f} B tokens, "
              f"{tokens_per_parameter(C, **law):5.1f} tokens per parameter")

# %% [markdown]
# Only the refit agrees with the "20 tokens per parameter" rule of thumb and with Chinchilla itself.
#
# **Question.** Epoch's refit has $\beta = 0.366 > \alpha = 0.348$. As the budget $C$ grows, what
# happens to the compute-optimal tokens per parameter $D_\text{opt} / N_\text{opt}$ under it?
#
# * **A.** They grow: a bigger budget should go mostly to data.
# * **B.** They stay at exactly 20 whatever $C$.
# * **C.** They shrink slowly: $D_\text{opt}/N_\text{opt} \propto C^{(\alpha - \beta)/(\alpha + \beta)}$,
#   a negative power when $\beta > \alpha$.
#
# Set `answer_q_trend` to `"A"`, `"B"` or `"C"`.

# %% solution="q_trend"
### BEGIN SOLUTION
answer_q_trend = "C"
### END SOLUTION

# %% tests="q_trend_tests" points=1
# One letter, "A", "B" or "C".
tests.check("q_trend")
### BEGIN HIDDEN TESTS
tests.grade("q_trend")
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Your own law, and a prediction put to the test
#
# The sweep of this profile: every size of the recipe at every budget, each run a fresh GPT (05's
# model, `lmcourse.train`, one seed) with its own warm-up and cosine schedule that end at its own
# last step. That matters: a run read off the middle of a longer schedule has not decayed its
# learning rate yet and looks worse than a run planned for that length (a pitfall of early scaling
# work). A budget $C$ buys a size $N$ exactly $D = C / (6N)$ tokens.

# %%
corpus = load_shakespeare(quiet=True)
tok = CharTokenizer.from_text(corpus.text("train"))
train_ids = encode_split(corpus, "train", tok)
val_ids = encode_split(corpus, "val", tok)
print(f"profile {P.name}: sizes {R.sizes}, budgets {R.budgets}, batch {R.batch_size} × {R.block_size}")
print("one run's settings (the largest model at the largest budget):", R.train_config())


def report(row):
    print(f"  {row.n_layer}×{row.n_embd:<3} N = {row.params:>7,}  C = {row.flops:.1e}  {row.steps:>6,} steps  "
          f"loss {row.val_loss:.3f}  ({row.seconds:.1f} s)")


t0 = time.perf_counter()
rows = scaling.run_sweep(R, train_ids, val_ids, tok.vocab_size, seed=rt.seed, device=rt.device, on_run=report)
print(f"the sweep took {time.perf_counter() - t0:.0f} s")
scaling.frontier(rows)
plt.show()

# %% [markdown]
# A parabola needs three sizes per budget. The `tiny` profile sweeps two (it exists to run in
# seconds), so there the IsoFLOP analysis below uses the course's table; at `cpu` and `gpu` it is
# yours.

# %%
own = rows if min(len(v) for v in scaling.by_budget(rows).values()) >= 3 else TABLE
print("IsoFLOP analysis on", "your sweep" if own is rows else "the course's table (this profile sweeps two sizes)")
results = {}
for count in ("params", "params_with_embeddings"):
    minima_c, fits_c, _ = analyse(own, count)
    results[count] = (minima_c, fits_c)
    print(f"N counted as {count:>22}: N_opt ∝ C^{fits_c['a']:.2f}, D_opt ∝ C^{fits_c['b']:.2f}")
print("published: Kaplan 0.73, Chinchilla 0.50 / 0.49 / 0.46 (its three approaches), Epoch's refit 0.51")

# %% [markdown]
# Counting the embeddings in or out changes every $N$ by a table of $V d + T d$ parameters, a large
# share of a small model and a small share of a big one. Here it barely moves the IsoFLOP slope (in
# our run at `cpu` both lines printed $C^{0.93}$: the optimal sizes sit in a narrow range), but it
# moves every $N_\text{opt}$, and over a wider range of sizes it changes the slope too (Kaplan's
# 0.73 counts the parameters without the embeddings).
#
# **The moment of truth.** From the fits alone, predict the loss of a run at
# `R.predict_factor` times the largest budget swept: the frontier (the lowest loss per budget)
# follows $L = A\, C^{-\alpha}$; the IsoFLOP line says which size to train. The prediction is
# printed **before** the run starts.

# %%
minima_n, fits_n = results["params"]
best = {c: min(r.val_loss for r in runs) for c, runs in scaling.by_budget(rows).items()}
A_c, alpha_c = fit_power_law(list(best), list(best.values()))
C_next = R.predict_factor * max(R.budgets)
n_target = fits_n["k_N"] * C_next ** fits_n["a"]
n_layer, n_embd = min(R.sizes, key=lambda s: abs(math.log(non_embedding_params(*s) / n_target)))
predicted = A_c * C_next ** -alpha_c
print(f"frontier: L = {A_c:.3g} C^-{alpha_c:.3f}")
print(f"PREDICTION at C = {C_next:.2e}: N_opt ≈ {n_target:,.0f}, so {n_layer}×{n_embd}; loss {predicted:.3f}")
if own is TABLE:
    print("(the N_opt line is the course's table's, made at far larger budgets: here it only picks a size)")

# %%
held = scaling.train_one(R, n_layer, n_embd, C_next, train_ids[:R.max_chars] if R.max_chars else train_ids,
                         val_ids, tok.vocab_size, seed=rt.seed, device=rt.device)
error = (predicted - held.val_loss) / held.val_loss
print(f"measured {held.val_loss:.3f}, predicted {predicted:.3f}: off by {error:+.1%}")
scaling.frontier(rows + [held], law=lambda c: A_c * c ** -alpha_c, law_label="frontier fit",
                 predicted=(C_next, predicted), measured=(held.flops, held.val_loss))
plt.show()

# %% [markdown]
# The course's own held-out runs are shipped next to the table
# (`lmcourse/data_files/scaling_heldout_cpu.csv`), at the budget of the `cpu` profile's held-out run:
# $1.2 \times 10^{12}$ FLOPs, `R.predict_factor` = 3 times the table's largest budget, trained with
# the same recipe and seed. At `cpu` your run above is one of them, so the numbers compare directly
# (the `tiny` and `gpu` profiles predict at 4 times their own, other, budgets). In our run at `cpu`
# the prediction picked 2×48 ($N_\text{opt} \approx 53{,}000$), predicted 1.764 and measured 1.818,
# 3 % above the line; the shipped 2×48 reached 1.817 and the shipped 2×32 1.807: the size below the
# pick did a hundredth better, a difference one seed does not settle. The miss has a visible cause:
# the frontier flattens (its best losses 2.036, 1.929, 1.884 fell by 0.107, then by 0.045), and a
# straight line in log-log axes through it runs below where it goes next
# ([10_scaling](../docs/notebooks.md#10_scaling)).

# %%
from pathlib import Path

for r in scaling.read_csv(Path(scaling.__file__).with_name("data_files") / "scaling_heldout_cpu.csv"):
    print(f"course's held-out run: {r.n_layer}×{r.n_embd} at C = {r.flops:.2e}: loss {r.val_loss:.3f}")

# %% [markdown] answer="q_exponents" points=2
# **Question (free text).** Your exponents (and the course's table's) are far from Kaplan's,
# Chinchilla's and Epoch's. Give three reasons why exponents measured on models of $10^3$–$10^5$
# parameters, trained for minutes on characters, differ from the published ones.
#
# ### BEGIN SOLUTION
# At these sizes the embeddings, biases, LayerNorms and the output head are a large share of the
# parameters and of the compute, so 12 n_layer d² (and 6ND) describe the models badly — and
# counting the embeddings in or out changes the sizes, and over a wide range of sizes the exponent.
# The data are characters (a vocabulary of 85, a different loss floor and a different E) rather
# than subword tokens of web text. One learning rate, batch and warm-up share were used for every
# size, though the best ones change with size; the largest models got only a few hundred steps, a
# large part of them warm-up. Three budgets over a factor of 4 of compute, one seed each, make a fit
# whose noise is as large as the effect, and the parabolas are asymmetric with few points on one side
# of the minimum.
# ### END SOLUTION

# %% [markdown] answer="q_gpt3" points=2
# **Question (free text).** GPT-3 175B was trained on 300 B tokens. How many tokens per parameter is
# that? What do Chinchilla's rule of thumb and Epoch's refit say a budget of $3.14 \times 10^{23}$
# FLOPs should have bought (size and tokens)? Use your functions in a cell of your own.
#
# ### BEGIN SOLUTION
# 300e9 / 175e9 ≈ 1.7 tokens per parameter. Epoch's refit at 3.14e23 FLOPs gives N_opt ≈ 53 B
# parameters on ≈ 1.0 T tokens, about 19 tokens per parameter — in line with the 20-per-parameter
# rule (which gives about 51 B on 1.0 T). GPT-3 was about 3 times too big for its compute, trained
# on about a third of the data it should have seen. Hoffmann et al.'s published constants would say
# 24 B on 2.1 T tokens, 87 per parameter.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You counted a transformer's parameters as the lecture does and checked the count on the course's
# GPT; priced training at $6ND$ and checked that against PyTorch's FLOP counter and GPT-3's
# figures; fitted power laws with and without an irreducible loss; found the compute-optimal size
# with IsoFLOP parabolas and with the closed form of a parametric law; and predicted a run's loss
# before training it. To extend your law by an order of magnitude on a GPU or a cluster,
# `lmcourse train sweep` runs the same sweep from the command line and writes a table this
# notebook reads (`scaling.read_csv`).

# %%
print(f"the whole notebook: {time.perf_counter() - NOTEBOOK_START:.0f} s at profile {P.name}")
