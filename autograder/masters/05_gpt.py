# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 05 · A GPT: a decoder-only transformer language model, trained on Shakespeare
#
# **What you will build.** A complete GPT, the architecture of GPT-2: token and position
# embeddings, a stack of pre-LN transformer blocks, a final LayerNorm and a language-model head
# that shares its weights with the token embedding. You will initialise it the way GPT-2 does
# (and see why the residual projections are scaled down), count its parameters (yours, and GPT-2
# small's), write the sampler that makes it talk, check it with three sanity tests every model
# should pass, train it on Shakespeare with the course's training loop, and put it on **the
# ladder**: bits per character of every model of the course so far, on the same validation plays.
#
# **Prerequisites.** Notebooks 02 (the language-model loss, sampling, `lmcourse.train`) and 04
# (the transformer block). From here on the block is `lmcourse.nn.Block`, the reference version
# of the one you wrote in notebook 04, so a slip there does not follow you.
#
# **Time.** About 90 minutes of work; a few minutes of computing on a laptop CPU (the `cpu`
# profile), most of it the training of section 5 and the ladder of section 6; minutes on a GPU;
# seconds under the autograder. Measured figures: [05_gpt](../docs/notebooks.md#05_gpt).
#
# **How the checks work.** Cells marked `# YOUR CODE HERE` are yours; the cell after each one
# checks your answer and says what looks wrong, and the autograder runs hidden tests of the same
# rules. Build the model from the pieces each exercise names (`nn.Embedding`, `nn.Linear`,
# `lmcourse.nn.Block`, a LayerNorm, ...). The course's own GPT (`lmcourse.nn.gpt`) and sampler
# (`lmcourse.nn.sampling`) are absent while the autograder runs; other course code doing the same
# work (`lmcourse.nn.mlm.init_mlm_weights`) and `transformers`' code score 0 under any name.
# Results have the **input's dtype** on the **input's device**; inputs are never changed in place.
# Every rule in one place (threads, the course's files, TorchScript, questions): [How the checks
# work](../docs/notebooks.md#how-the-checks-work).

# %% locked="setup"
import dataclasses
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
import lmcourse.marking
from lmcourse import plot
from lmcourse.data import data_dir, encode_split, load_shakespeare
from lmcourse.nn import Block, BlockConfig, LayerNorm, block_param_count
from lmcourse.runtime import given, is_autograding
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, estimate_loss, train

_notebook_start = time.perf_counter()
rt = lmcourse.setup(seed=0)
P = rt.profile
torch.jit._state.disable()  # TorchScript off: torch.jit.script / trace return plain Python, which the tests can see
tests = lmcourse.marking.Exam("05_gpt", globals())  # the test cells below: tests.check("gpt")

# %% [markdown]
# ## 1. From a block to a language model
#
# Notebook 04 built the block; a GPT is what you put around a stack of them. For token ids
# $w_1, \dots, w_T$ (here characters), in the lectures' notation with $d$ = `n_embd`, $L$ =
# `n_layer` and $|V|$ = `vocab_size`:
#
# 1. **Embed.** Each token's identity is a row of a learned matrix $W^{\text{embed}} \in
#    \mathbb{R}^{|V| \times d}$, and each position $t$ has its own learned vector $p_t$. The
#    model's input at position $t$ is their sum,
#    $$x_t = W^{\text{embed}}[w_t] + p_t .$$
# 2. **Transform.** $h^{(0)} = x$, then $h^{(l)} = \mathrm{Block}_l(h^{(l-1)})$ for
#    $l = 1, \dots, L$: causal, pre-LN blocks, each reading from the residual stream and adding
#    back to it.
# 3. **Predict.** A pre-LN stack leaves the stream un-normalised, so a **final LayerNorm** comes
#    before the **language-model head**, which scores every token of the vocabulary:
#    $$\text{logits}_t = W^{\text{embed}}\,\mathrm{LN}_f\big(h_t^{(L)}\big) \in \mathbb{R}^{|V|},
#      \qquad P(w_{t+1} = v \mid w_{\le t}) = \mathrm{softmax}(\text{logits}_t)_v .$$
#
# The head's matrix is the **embedding matrix itself** — *weight tying*. Embedding maps a token
# to a vector by reading its row; the head scores a vector against every row by a dot product, so
# a token whose embedding points the same way as the final vector gets a high score. One matrix
# does both jobs and is trained by both; the model saves $|V| \cdot d$ parameters (for GPT-2
# small, 38.6 million of its 124 million).
#
# **Teacher forcing.** One forward pass predicts every position at once: position $t$ sees the
# true tokens $w_1..w_t$ (never its own earlier guesses) and is scored on $w_{t+1}$. The batches
# of `lmcourse.data.get_batch` come already shifted: `y[b, t] = x[b, t + 1]`. The loss is the mean
# over all $B \cdot T$ positions,
# $$\mathcal{L} = -\frac{1}{BT} \sum_{b,t} \log P(y_{b,t} \mid x_{b, \le t}) ,$$
# which is `F.cross_entropy(logits.view(B * T, V), y.view(B * T))` (it averages by default).
#
# ### The configuration
# Every size lives in one config object, with the course's naming table (the same names as
# nanoGPT and `lmcourse.nn`):
#
# | field | symbol | meaning |
# |---|---|---|
# | `vocab_size` | $\lvert V\rvert$ | tokens the model embeds and predicts |
# | `block_size` | $T_{\max}$ | longest context, and the number of position vectors $p_t$ |
# | `n_layer` | $L$ | blocks in the stack |
# | `n_head` | $h$ | attention heads per block, each on `n_embd // n_head` channels |
# | `n_embd` | $d$ | width of the residual stream |
# | `dropout` | | dropout after the embeddings and inside the blocks (training only) |
# | `bias` | | biases in the linear layers and LayerNorms |
#
# The config is given: a `@dataclass` with the table's seven fields in its order (so that
# `GPTConfig(65, 256, 6, 6, 384, 0.0, True)` works as well as keywords), with the defaults of
# nanoGPT's Shakespeare-character model except dropout. Run the cell; your `GPT` reads its sizes
# from it (`config.n_embd`, ...).

# %% locked="gpt_config"
@dataclass
class GPTConfig:
    """The sizes of a GPT, with the course's naming table."""

    vocab_size: int = 65  # |V|: tokens embedded and predicted
    block_size: int = 256  # T_max: longest context, number of learned positions
    n_layer: int = 6  # L: transformer blocks
    n_head: int = 6  # attention heads per block
    n_embd: int = 384  # d: width of the residual stream
    dropout: float = 0.0  # dropout probability (training only)
    bias: bool = True  # biases in linear layers and LayerNorms


# %% [markdown]
# ### Exercise 1 — `GPT` (5 points)
# Write `GPT(config)` as an `nn.Module` with these attributes (keep the names: the tests copy
# weights into them by name, and notebook 07 loads your trained model by them):
#
# * `self.config = config`;
# * `self.wte = nn.Embedding(vocab_size, n_embd)` ($W^{\text{embed}}$) and
#   `self.wpe = nn.Embedding(block_size, n_embd)` (row $t$ is $p_t$);
# * `self.drop = nn.Dropout(dropout)`, applied to $x$ (it must do nothing in `model.eval()`);
# * `self.blocks = nn.ModuleList(...)` (or an `nn.Sequential`) of `n_layer` reference blocks,
#   `Block(BlockConfig(n_embd=..., n_head=..., block_size=..., dropout=..., bias=...))`
#   (`BlockConfig`'s other defaults are right: causal, pre-LN);
# * `self.ln_f = LayerNorm(n_embd, bias=bias)` (from `lmcourse.nn`; `nn.LayerNorm` works too);
# * `self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)` whose weight **is** `self.wte.weight`:
#   assign the parameter itself (`self.lm_head.weight = self.wte.weight`), so both names hold one
#   tensor. A copy (`.clone()`, `nn.Parameter(w.clone())`, `copy_`) is two tensors that drift apart.
#
# These hold the model's only parameters (the tests compare parameter names with the reference's).
# A buffer of your own, such as a table of positions made with `register_buffer`, is accepted;
# make it `persistent=False` so that it stays out of the checkpoint saved at the end, which
# notebook 07 loads into the reference GPT (it has no place for it).
#
# `forward(idx, targets=None)` takes ids `idx` of shape `(B, T)` with `T <= block_size` and
# returns a pair `(logits, loss)`:
#
# * `logits` of shape `(B, T, vocab_size)`, for **every** position (training scores them all),
#   in the model's dtype. Position embeddings are indexed by the **position** $0..T-1$ (on
#   `idx`'s device), not by the token;
# * `loss`: `None` without targets; otherwise the **mean** cross-entropy between `logits` and
#   `targets` (`(B, T)`, already shifted: do not shift them again).
#
# Leave the initialisation to PyTorch's defaults for now (exercise 2 replaces it).

# %% solution="gpt"
class GPT(nn.Module):
    """Token + position embeddings -> n_layer pre-LN blocks -> final LayerNorm -> tied LM head."""

    def __init__(self, config):
        super().__init__()
        ### BEGIN SOLUTION
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # W_embed: (V, C)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # p_t: (block_size, C)
        self.drop = nn.Dropout(config.dropout)
        block_cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                                dropout=config.dropout, bias=config.bias)
        self.blocks = nn.ModuleList([Block(block_cfg) for _ in range(config.n_layer)])
        self.ln_f = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied: one tensor
        ### END SOLUTION

    def forward(self, idx, targets=None):
        ### BEGIN SOLUTION
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)
        for block in self.blocks:
            x = block(x)  # (B, T, C)
        logits = self.lm_head(self.ln_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))
        return logits, loss
        ### END SOLUTION


# %% tests="gpt_tests" points=5
# With the test's weights, loaded by the names above: logits, mean loss, tying, dropout, causality, device.
tests.check("gpt")
### BEGIN HIDDEN TESTS
tests.grade("gpt")
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Initialisation, and why the residual projections are scaled
#
# PyTorch initialises every `nn.Linear` for a network where layers are composed; a transformer
# **adds** its layers into the residual stream instead. Each block adds two outputs to it, the
# attention's (through its output projection `attn.c_proj`) and the MLP's (through `mlp.c_proj`),
# so after $L$ blocks the stream holds $x + \sum_{k=1}^{2L} f_k$. If the $2L$ additions are
# roughly independent with variance $\sigma^2$ each, the stream's variance grows like
# $\mathrm{Var}(x) + 2L\,\sigma^2$: deeper models start with a larger and larger stream, and the
# LayerNorm of every later block has to divide more of it away. GPT-2's answer: draw the weights
# of those **residual projections** with a standard deviation $1/\sqrt{2L}$ times smaller, so that
# the sum of their $2L$ contributions has the variance of one of them, whatever the depth.
#
# GPT-2's initialisation, in full:
#
# * every `nn.Linear` weight and every `nn.Embedding` weight $\sim \mathcal{N}(0,\, 0.02^2)$;
# * every bias $= 0$; every LayerNorm gain $= 1$ (and shift $= 0$);
# * then the weights of the residual projections, the parameters whose name ends in
#   `c_proj.weight` (`blocks[i].attn.c_proj.weight` and `blocks[i].mlp.c_proj.weight`),
#   $\sim \mathcal{N}\big(0,\, (0.02/\sqrt{2L})^2\big)$.
#
# The next cell measures it: the standard deviation of the residual stream after each block of
# a 12-layer model, with and without the scaling (on the course's GPT, `lmcourse.nn.gpt`, initialised the
# GPT-2 way; the autograder has no course GPT, and there the cell skips).

# %%
def stream_std(model, idx):
    """Standard deviation of the residual stream after each block."""
    stds = []
    hooks = [b.register_forward_hook(lambda mod, inp, out: stds.append(float(out.std()))) for b in model.blocks]
    with torch.no_grad():
        model(idx)
    for h in hooks:
        h.remove()
    return stds


# the course's GPT, initialised the GPT-2 way (absent while this notebook is graded: the demo skips)
course_gpt = given("lmcourse.nn.gpt", "the initialisation demo runs the course's GPT")
if course_gpt:
    torch.manual_seed(rt.seed)
    _deep = course_gpt.GPT(course_gpt.GPTConfig(vocab_size=65, block_size=32, n_layer=12, n_head=4,
                                                n_embd=64)).eval()
    _idx_demo = torch.randint(65, (16, 32))
    scaled = stream_std(_deep, _idx_demo)
    with torch.no_grad():
        for _name, _p in _deep.named_parameters():
            if _name.endswith("c_proj.weight"):
                _p.normal_(0.0, 0.02)  # the same draw without the 1/sqrt(2L)
    unscaled = stream_std(_deep, _idx_demo)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(1, 13), unscaled, "o-", label="N(0, 0.02²) everywhere")
    ax.plot(range(1, 13), scaled, "o-", label="residual projections × 1/√(2L)")
    ax.set_xlabel("after block l")
    ax.set_ylabel("std of the residual stream")
    ax.set_title("Residual stream at initialisation, L = 12")
    ax.legend()
    plt.show()
    print(f"after 12 blocks: std {unscaled[-1]:.4f} unscaled vs {scaled[-1]:.4f} scaled "
          f"(the embeddings alone: about {0.02 * math.sqrt(2):.4f})")

# %% [markdown]
# ### Exercise 2 — `init_weights` (3 points)
# Write `init_weights(model, n_layer, std=0.02)`, which initialises `model` **in place** as listed
# above, with the argument `std` in place of 0.02 (go through `model.modules()` for the layers and
# `model.named_parameters()` for the residual projections) and returns nothing. It must work for
# any model built from `nn.Embedding`, `nn.Linear` and LayerNorms (`lmcourse.nn.LayerNorm` or
# `nn.LayerNorm`):
#
# * keep the parameters' dtype and device: fill them in place with `nn.init.normal_`,
#   `nn.init.zeros_`, `nn.init.ones_` (or `p.normal_(...)` under `torch.no_grad()`); do not
#   replace them with new tensors, which would also break the tying of the head;
# * use torch's global random generator (what `nn.init` uses), so `torch.manual_seed` makes it
#   repeatable;
# * scale the residual projections with the argument `n_layer` ($L$), not a number of blocks
#   read from the model (the test passes an `n_layer` of its own);
# * with `bias=False` a layer's `bias` is `None` (LayerNorms included): leave it alone.
#
# The test runs your function on the reference GPT, so exercise 1 does not count here.

# %% solution="init_weights"
def init_weights(model, n_layer, std=0.02):
    """GPT-2's initialisation, in place."""
    ### BEGIN SOLUTION
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
    ### END SOLUTION


# %% tests="init_weights_tests" points=3
# On the reference GPT, in place: N(0, std^2) weights, biases 0, LayerNorms 1 and 0, c_proj / sqrt(2 n_layer).
tests.check("init_weights")
### BEGIN HIDDEN TESTS
tests.grade("init_weights")
### END HIDDEN TESTS

# %% [markdown]
# ## 3. How many parameters?
#
# With tying, the parameters of the GPT are the token embedding ($|V| d$), the position
# embeddings ($T_{\max} d$), $L$ blocks of $12d^2 + 13d$ each (notebook 04: attention $4d^2+4d$,
# MLP $8d^2+5d$, two LayerNorms $4d$), and the final LayerNorm ($2d$). The head adds nothing.
# The lecture's rule of thumb, $N \approx 12 L d^2$, counts only the blocks' matrices: the
# *non-embedding* parameters.
#
# ### Exercise 3 — `gpt_param_count` (2 points)
# Write `gpt_param_count(vocab_size, block_size, n_layer, n_embd)`: the number of parameters of
# your `GPT` with biases and a tied head, as a Python `int`, from the formula (do not build a
# model; `block_param_count` from `lmcourse.nn`, notebook 04's count of one block, may be used).
# The test compares it with `sum(p.numel() for p in model.parameters())` of models of several
# sizes; the next cell then prints the count for GPT-2 small.

# %% solution="gpt_param_count"
def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    """Parameters of a GPT with biases and a tied head."""
    ### BEGIN SOLUTION
    d = n_embd
    embeddings = vocab_size * d + block_size * d
    blocks = n_layer * (12 * d * d + 13 * d)
    final_ln = 2 * d
    return embeddings + blocks + final_ln
    ### END SOLUTION


# %% tests="gpt_param_count_tests" points=2
# The formula with biases and a tied head, as a Python int, without building a model.
tests.check("gpt_param_count")
### BEGIN HIDDEN TESTS
tests.grade("gpt_param_count")
### END HIDDEN TESTS

# %%
gpt2_small = gpt_param_count(50257, 1024, 12, 768)
print(f"GPT-2 small (V = 50257, T = 1024, L = 12, d = 768): {gpt2_small:,} parameters")
print(f"  of which the token embedding (shared with the head): {50257 * 768:,} "
      f"({50257 * 768 / gpt2_small:.0%}); an untied head would add as many again")
print(f"  non-embedding (the blocks): {12 * (12 * 768**2 + 13 * 768):,} vs the rule of thumb 12 L d^2 = "
      f"{12 * 12 * 768**2:,}")
_ours = gpt_param_count(65, 256, 6, 384)
print(f"nanoGPT's Shakespeare model (V = 65, T = 256, L = 6, d = 384): {_ours:,} parameters, "
      f"embeddings {(65 + 256) * 384 / _ours:.1%} of them")

# %% [markdown]
# ## 4. Generating text
#
# To continue a text, feed the ids you have, take the logits of the **last** position, turn
# them into probabilities with a softmax at **temperature** $\tau$,
# $$P(v) = \frac{\exp(\text{logits}_v / \tau)}{\sum_{u} \exp(\text{logits}_u / \tau)},$$
# draw the next id from them, append it, and repeat. $\tau = 1$ samples from the model;
# $\tau < 1$ sharpens the distribution (towards the most likely token), $\tau > 1$ flattens it.
# The temperature divides the **logits**, before the softmax. The model has only `block_size`
# position vectors, so once the text is longer it sees only its last `block_size` ids.
#
# ### Exercise 4 — `generate` (3 points)
# Write `generate(model, idx, max_new_tokens, temperature=1.0, generator=None)`:
#
# * `idx` is `(B, T)`; return `(B, T + max_new_tokens)`: `idx` followed by the new ids, on
#   `idx`'s device and with its dtype (`torch.long`), without changing `idx`;
# * at each step call `model(context)` with `context` the last `model.config.block_size` ids
#   (all of them when there are fewer); it returns `(logits, loss)`;
# * draw every id with `generator` (a `torch.Generator`, e.g. `torch.multinomial(probs, 1,
#   generator=generator)`), so that the same seed gives the same text, with fresh random numbers
#   at every step;
# * `temperature` is positive (greedy decoding, the limit $\tau \to 0$, is notebook 07's);
# * no gradients are needed: call the model under `torch.no_grad()`;
# * leave the model's mode as you found it: the caller chooses `model.eval()` (as the training
#   cell below does). If you switch to eval mode inside, switch back before returning.

# %% solution="generate"
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    """Sample max_new_tokens ids after idx (B, T), one at a time."""
    ### BEGIN SOLUTION
    block_size = model.config.block_size
    with torch.no_grad():
        for _ in range(max_new_tokens):
            context = idx[:, -block_size:]  # (B, <= block_size)
            logits, _ = model(context)  # (B, T, V)
            probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)
            nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
            idx = torch.cat([idx, nxt], dim=1)
    return idx
    ### END SOLUTION


# %% tests="generate_tests" points=3
# Sampled from softmax(last logits / temperature) with the generator, the context cropped to block_size, no gradients.
tests.check("generate")
### BEGIN HIDDEN TESTS
tests.grade("generate")
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Training on Shakespeare
#
# The course corpus, split **by play** as in notebook 02 (the validation plays are never seen in
# training), one id per character. The sizes come from the profile: in `cpu`, a 4-layer,
# 128-wide model with 64 characters of context; in `gpu`, nanoGPT's Shakespeare model (6 layers,
# 6 heads, 384 wide, 256 characters, dropout 0.2) trained with bf16 autocast (fp16 with a
# gradient scaler on a T4, whose bf16 is slow), the fused AdamW
# kernel, the fused attention kernel (`F.scaled_dot_product_attention`, which `lmcourse.nn.Block`
# uses) and `torch.compile`.

# %%
from lmcourse.recipes import gpt as gpt_recipe

corpus = load_shakespeare()
tok = CharTokenizer.from_text(corpus.text("train"))
train_ids = encode_split(corpus, "train", tok)
val_ids = encode_split(corpus, "val", tok)
on_gpu = rt.device.type == "cuda"
R = gpt_recipe.recipe(P.name)  # this profile's sizes and run, in one place (lmcourse.recipes.gpt)
config = GPTConfig(vocab_size=tok.vocab_size, **R.model_sizes())
torch.manual_seed(rt.seed)
model = GPT(config)
init_weights(model, config.n_layer)
n_params = sum(p.numel() for p in model.parameters())
print(f"{tok.vocab_size} characters; {len(train_ids):,} training and {len(val_ids):,} validation characters")
by_formula = gpt_param_count(config.vocab_size, config.block_size, config.n_layer, config.n_embd)
print(f"{config}\n{n_params:,} parameters ({by_formula:,} by your formula)")

# %% [markdown]
# ### Three sanity checks, before any training
#
# A model that trains badly costs minutes to notice; these three checks cost seconds and catch
# most wiring mistakes. None of them is graded: they run on **your** GPT, and each prints what it
# found and what that means.
#
# 1. **The loss at initialisation is about $\ln |V|$.** With GPT-2's initialisation the logits
#    start almost equal, so every character gets probability about $1/|V|$ and the cross-entropy
#    is $\ln |V|$ (Q4 asks why). Far above it: the logits are too large, or the loss is a sum.
# 2. **It can overfit one batch.** Trained on the same few windows again and again, a model with
#    this many parameters must learn them by heart: the loss falls towards 0. If it does not, the
#    gradient does not reach the weights (a detached tensor, a frozen layer, a loss on the wrong
#    targets), whatever the data.
# 3. **The future cannot change the past.** Change one character at position $t$: the logits of
#    positions before $t$ must not move at all (the causal mask), and those from $t$ on should.

# %%
def sanity_loss_at_init(model, ids, vocab_size):
    """1. the mean loss of an untrained model on one window, against ln V."""
    device = next(model.parameters()).device
    T = model.config.block_size
    model.eval()
    with torch.no_grad():
        _, loss = model(ids[None, :T].to(device), ids[None, 1:T + 1].to(device))
    model.train()
    ln_v = math.log(vocab_size)
    ok = abs(loss.item() - ln_v) < 0.25 * ln_v
    print(f"1. loss at initialisation {loss.item():.3f} nats; ln V = {ln_v:.3f} (V = {vocab_size}): "
          + ("close, as it should be" if ok
             else "far from ln V: look at the initialisation and at how the loss averages"))
    return loss.item()


def sanity_overfit_one_batch(model, ids, steps=120, batch=4, lr=3e-3):
    """2. a copy of the model trained on one fixed batch: its loss must fall far below where it started."""
    import copy

    device = next(model.parameters()).device
    T = model.config.block_size
    x = ids[:batch * T].view(batch, T).to(device)
    y = ids[1:batch * T + 1].view(batch, T).to(device)
    twin = copy.deepcopy(model).eval()  # eval: no dropout, so the batch can be learnt exactly
    opt = torch.optim.AdamW(twin.parameters(), lr=lr, weight_decay=0.0)
    losses = []
    for _ in range(steps):
        _, loss = twin(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    ok = losses[-1] < 0.25 * losses[0]
    print(f"2. one batch of {batch} windows, {steps} steps: loss {losses[0]:.2f} -> {losses[-1]:.2f}: "
          + ("learnt by heart, so the gradient reaches the weights" if ok
             else "it barely moved: does every layer get a gradient, and is the loss on the shifted targets?"))
    return losses


def sanity_causality(model, ids, t=None):
    """3. change the character at position t: earlier logits must stay exactly where they were."""
    device = next(model.parameters()).device
    T = model.config.block_size
    t = T // 2 if t is None else t
    x = ids[None, :T].to(device)
    changed = x.clone()
    changed[0, t] = (changed[0, t] + 1) % model.config.vocab_size
    model.eval()
    with torch.no_grad():
        before, _ = model(x)
        after, _ = model(changed)
    model.train()
    past = (after[0, :t] - before[0, :t]).abs().max().item()
    future = (after[0, t:] - before[0, t:]).abs().max().item()
    ok = past < 1e-5 and future > 0
    print(f"3. changed position {t} of {T}: earlier logits moved by at most {past:.1e}, later ones by {future:.2f}: "
          + ("the past does not see the future" if ok
             else "positions before the change moved: the attention sees the future (is every block causal?)"))
    return past, future


loss0 = sanity_loss_at_init(model, train_ids, tok.vocab_size)
sanity_overfit_one_batch(model, train_ids)
sanity_causality(model, train_ids);

# %% [markdown]
# The run is cut into four parts; after each, the model writes a few lines. `lmcourse.train`
# saves a checkpoint when it stops and `resume=True` continues from it with exactly the batches
# and learning rates of one uninterrupted run, so the four parts *are* one run.

# %%
# the recipe: AdamW, warm-up over 5 % of the steps, cosine to a tenth, clipping at 1; a high peak
# learning rate for a small model trained briefly (on a CPU, two thirds of the profile's steps)
cfg = R.train_config(seed=rt.seed, compile=on_gpu, quiet=True,
                     checkpoint_path=str(Path(tempfile.mkdtemp()) / "gpt.ckpt"), resume=True)
sample_gen = torch.Generator(device=rt.device).manual_seed(rt.seed)  # on the device where sampling runs
prompt = torch.tensor([tok.encode("\n")], device=rt.device)
train_start = time.perf_counter()
for part in range(1, 5):
    hist = train(model, train_ids, val_ids, cfg, stop_after=part * cfg.steps // 4)
    model.eval()
    text = tok.decode(generate(model, prompt, R.sample_chars, generator=sample_gen)[0].tolist())
    model.train()
    print(f"--- step {hist.steps[-1]}: train loss {hist.train_loss[-1]:.3f}, val loss {hist.final_val_loss:.3f}")
    print(text.strip())
train_seconds = time.perf_counter() - train_start
print(f"\ntrained in {train_seconds:.0f} s ({hist.tokens_per_sec:,.0f} tokens/s on {rt.device})")
ax = plot.loss_curves({"GPT": hist}, title=f"GPT on Shakespeare ({P.name})")
ax.axhline(math.log(tok.vocab_size), color="gray", lw=0.8, ls=":", label="uniform guess, ln V")
ax.legend()
plt.show()

# %% [markdown]
# ### What the trained heads look at
#
# Notebook 03 set attention heads by hand and said that training makes them specialise. Here are
# your trained GPT's heads, on one line of the validation plays: row $i$ is the character being
# read, each column a character it may look at, and the colour the weight it puts there. Look for
# heads that look one or two characters back (a bright line just below the diagonal), heads that
# look back to the last space or the start of the word, and heads that spread their weight evenly
# (an average of the context). A short CPU run leaves them blurrier than a long GPU run does.

# %%
def trained_attention(model, idx):
    """Every block's attention weights (n_layer, n_head, T, T) on idx (1, T), as the blocks see
    their input: LayerNorm first, as in a pre-LN block."""
    device = next(model.parameters()).device
    idx = idx.to(device)
    model.eval()
    weights = []
    with torch.no_grad():
        x = model.wte(idx) + model.wpe(torch.arange(idx.shape[1], device=device))
        for block in model.blocks:
            weights.append(block.attn.attention_weights(block.ln1(x))[0])
            x = block(x)
    model.train()
    return torch.stack(weights)


_T = min(32, config.block_size)
_start = min(1000, len(val_ids) - _T)  # a line of the validation plays
_line = val_ids[_start:_start + _T][None]
_heads = trained_attention(model, _line)
_chars = [c if c not in " \n" else {" ": "␣", "\n": "⏎"}[c] for c in tok.decode(_line[0].tolist())]
for _layer in sorted({0, config.n_layer - 1}):
    plot.attention_heads(_heads[_layer], tokens=_chars, title=f"block {_layer + 1} of {config.n_layer}, trained")
    plt.show()

# %% [markdown]
# The trained model goes to the course cache, where notebook 07 (decoding) picks it up:
# `lmcourse.nn.load_gpt(path)` rebuilds it as the reference GPT (same names, same weights), and
# the saved vocabulary rebuilds the tokenizer, `CharTokenizer(extra["vocabulary"])`. (Nothing is
# written under the autograder.)

# %%
from lmcourse.nn.checkpoint import save_model  # the course's format for every model (what save_gpt writes)

gpt_checkpoint = data_dir() / "checkpoints" / f"05_gpt_{P.name}.pt"
if is_autograding():
    print("autograding: the model is not saved")
else:
    save_model(model, gpt_checkpoint, vocabulary=list(tok.itos), profile=P.name,
               val_loss=hist.final_val_loss, steps=hist.steps[-1])
    print(f"saved to {gpt_checkpoint}")

# %% [markdown]
# ## 6. The ladder: what each step of the course bought
#
# One number per model: **bits per character** on the same validation text (the first
# `eval_batches × batch_size × block_size` characters of the validation plays, in windows of
# `block_size` characters), $\text{bpc} = \text{loss in nats} / \ln 2$. The models:
#
# * a character **n-gram** of order `max_order` with interpolated **Kneser–Ney** smoothing
#   (notebook 01's estimator, `lmcourse.reference.ngram`, counted here on characters);
# * the **RNN** and the **LSTM** of notebook 02, with the same sizes and recipe. Notebook 02 does
#   not save them, so they are trained here within this profile's budget, and kept in the course
#   cache for the next run (the cell says which it did);
# * your **GPT**.
#
# Expect a surprise on a CPU. Counting is cheap: the n-gram has seen every one of the 4.3 million
# training characters, and a 5-gram already knows most spellings. The neural models, after a few
# minutes of training, have seen each character about once. (Measured on the `cpu` profile:
# 5-gram 2.17 bits per character, RNN 2.57, LSTM 2.52, your GPT 2.47 after its 1,000 steps.) The
# count-based model gains nothing from more compute; the neural ones keep improving. The grey bar
# shows how far: the same GPT and recipe, trained for 5,000 steps by the course's own command
# (`lmcourse train gpt --profile cpu --steps 5000 --seed 0 --threads 1`, about twenty minutes on
# one core) and shipped with the course, reaches 2.12 bits per character, past the 5-gram. It is
# the course's run, not yours: set `show_course_run = False` below to leave it out, or run the
# command yourself (with `--checkpoint_path`) and load what it writes.

# %%
from lmcourse import course_runs
from lmcourse.recipes import rnn as rnn_recipe

def bits_per_char(model, ids, block_size):
    """Mean loss in bits over consecutive windows of ids (each window starts without context)."""
    n = (len(ids) - 1) // block_size * block_size
    x = ids[:n].view(-1, block_size).to(rt.device)
    y = ids[1:n + 1].view(-1, block_size).to(rt.device)
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(x), 64):
            out = model(x[i:i + 64])
            logits = out[0] if isinstance(out, tuple) else out
            total += F.cross_entropy(logits.float().flatten(0, 1), y[i:i + 64].flatten(), reduction="sum").item()
    return total / (n * math.log(2))


def ngram_bits_per_char(text_train, text_eval, order, vocab_size):
    """Interpolated Kneser-Ney on characters (notebook 01's answers): bits per character of text_eval."""
    from collections import Counter

    from lmcourse.reference.ngram import build_kn_tables, kneser_ney_prob  # notebook 01's answers

    raw = Counter(tuple(text_train[i:i + order]) for i in range(len(text_train) - order + 1))
    tables = build_kn_tables(raw)
    bits = 0.0
    for i in range(1, len(text_eval)):
        context = tuple(text_eval[max(0, i - order + 1):i])
        bits -= math.log2(kneser_ney_prob(tables, vocab_size, context, text_eval[i]))
    return bits / (len(text_eval) - 1)


class RecurrentLM(nn.Module):
    """Notebook 02's character models: embedding -> nn.RNN or nn.LSTM -> output layer."""

    def __init__(self, kind, vocab_size, n_embd):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.rnn = (nn.LSTM if kind == "LSTM" else nn.RNN)(n_embd, n_embd, batch_first=True)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        return self.lm_head(self.rnn(self.wte(idx))[0])  # (B, T, V)


n_eval = min(len(val_ids) - 1, P.eval_batches * P.batch_size * P.block_size)
eval_ids = val_ids[:n_eval + 1]
ladder = {}
_t = time.perf_counter()
_train_text = corpus.text("train")
if P.max_sentences is not None:  # tiny: count on the first part of the training text only
    _train_text = _train_text[:100 * P.max_sentences]
ladder[f"{P.max_order}-gram, Kneser-Ney"] = ngram_bits_per_char(_train_text, corpus.text("val")[:n_eval + 1],
                                                               P.max_order, tok.vocab_size)
print(f"{P.max_order}-gram counted and scored in {time.perf_counter() - _t:.0f} s")
R02 = rnn_recipe.recipe(P.name)  # notebook 02's recipe; no curves here: validated as the profile says
rnn_cfg = R02.train_config(eval_interval=P.eval_interval, seed=rt.seed, quiet=True)
for kind in ("RNN", "LSTM"):
    torch.manual_seed(rt.seed)
    rnn_model = RecurrentLM(kind, tok.vocab_size, R02.n_embd)
    path = data_dir() / "checkpoints" / f"02_{kind.lower()}_{P.name}.pt"
    # a checkpoint is used only if it was trained exactly as this cell would train it
    recipe = {"kind": kind, "profile": P.name, "n_embd": R02.n_embd, "steps": rnn_cfg.steps,
              "vocabulary": list(tok.itos)}
    saved = torch.load(path, map_location="cpu") if path.exists() and not is_autograding() else None
    if saved is not None and all(saved.get(k) == v for k, v in recipe.items()):
        rnn_model.load_state_dict(saved["model"])
        print(f"{kind}: loaded from {path}")
    else:
        _t = time.perf_counter()
        train(rnn_model, train_ids, val_ids, rnn_cfg)
        print(f"{kind}: trained here, {rnn_cfg.steps} steps in {time.perf_counter() - _t:.0f} s "
              "(no checkpoint of this recipe in the course cache)")
        if not is_autograding():
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"model": rnn_model.state_dict(), **recipe}, path)
    ladder[kind] = bits_per_char(rnn_model.to(rt.device), eval_ids, P.block_size)
ladder["GPT (yours)"] = bits_per_char(model, eval_ids, config.block_size)
# Beside yours, never in its place: the same GPT and recipe trained longer by the course's own command,
# shipped with the course (lmcourse.course_runs). False leaves it out.
show_course_run = True
if show_course_run and not is_autograding() and f"05_gpt_{P.name}" in course_runs.RUNS:
    longer, run, extra = course_runs.load_course_run(f"05_gpt_{P.name}", rt.device)
    if extra.get("vocabulary") == list(tok.itos):
        ladder[f"GPT, {run.steps:,} steps (course)"] = bits_per_char(longer, eval_ids, longer.config.block_size)
        print(f"the course's run: the same GPT and recipe for {run.steps:,} steps, `{run.command}`")
print(f"\nbits per character on {n_eval:,} validation characters (uniform: {math.log2(tok.vocab_size):.2f})")
for name, bpc in ladder.items():
    print(f"  {name:<30} {bpc:.3f}")
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.barh(list(ladder)[::-1], list(ladder.values())[::-1],
        color=["tab:gray" if "(course)" in name else "tab:blue" for name in list(ladder)[::-1]])
for i, v in enumerate(list(ladder.values())[::-1]):
    ax.text(v, i, f" {v:.2f}", va="center")
ax.set_xlabel("validation bits per character (lower is better)")
ax.set_title(f"The ladder ({P.name} profile)")
plt.show()

# %% [markdown]
# ## 7. Questions
#
# Answer each multiple-choice question by setting the variable to one letter, e.g.
# `answer_q1 = "A"`.
#
# **Q1.** A GPT with vocabulary $|V|$ and width $d$ ties its head to its token embedding. Compared
# with an untied head, it has
#
# * A. the same number of parameters: tying only changes how they are initialised.
# * B. $d^2$ fewer parameters, because the head becomes a square matrix.
# * C. $|V| \cdot d$ fewer parameters, and the embedding matrix receives gradient from both the
#   input and the output side.
# * D. half the parameters of the whole model.

# %% solution="q1"
# Your answer, one letter: answer_q1 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q1 = "C"
### END SOLUTION

# %% tests="q1_tests" points=1
# One letter, as a str.
tests.check("q1")
### BEGIN HIDDEN TESTS
tests.grade("q1")
### END HIDDEN TESTS

# %% [markdown]
# **Q2.** You double the depth of a GPT from $L$ to $2L$ layers and keep GPT-2's initialisation.
# The standard deviation of the weights of each residual projection
#
# * A. stays $0.02$.
# * B. is multiplied by $1/2$.
# * C. is multiplied by $\sqrt{2}$, to make up for the extra LayerNorms.
# * D. is multiplied by $1/\sqrt{2}$, so the stream's variance at initialisation stays about the same.

# %% solution="q2"
# Your answer, one letter: answer_q2 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q2 = "D"
### END SOLUTION

# %% tests="q2_tests" points=1
# One letter, as a str.
tests.check("q2")
### BEGIN HIDDEN TESTS
tests.grade("q2")
### END HIDDEN TESTS

# %% [markdown]
# **Q3.** During training, the GPT computes logits for all $T$ positions of a window in one
# forward pass. Why is that allowed?
#
# * A. Because with teacher forcing every position's input is the true text, and the causal mask
#   keeps each position from seeing the token it must predict.
# * B. Because the model predicts all $T$ tokens at once and they are sampled together.
# * C. Because positions are independent: attention does not mix them.
# * D. It is not: the loss should use the last position only.

# %% solution="q3"
# Your answer, one letter: answer_q3 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q3 = "A"
### END SOLUTION

# %% tests="q3_tests" points=1
# One letter, as a str.
tests.check("q3")
### BEGIN HIDDEN TESTS
tests.grade("q3")
### END HIDDEN TESTS

# %% [markdown]
# **Q4 (free text, graded by hand).** In three to five sentences: (a) why should the loss of a
# freshly initialised GPT be close to $\ln |V|$, and what would a loss far above it at step 0 tell
# you? (b) In your ladder, which step of the course bought the most, and which the least? Give
# one reason for each, from what the models can see of the past.

# %% [markdown] answer="q4_free_text" points=2
# ### BEGIN SOLUTION
# (a) After the final LayerNorm every vector has entries of about unit size, and the head scores
# it against rows of the embedding drawn from N(0, 0.02²): each logit has a standard deviation of
# about 0.02·√d (0.23 for d = 128). The logits are nearly equal, the softmax nearly uniform, every
# character gets probability about 1/|V|, and the cross-entropy is ln |V| (4.44 nats for the 85
# characters of the course's corpus, as the first sanity check of section 5 prints). A loss far
# above it says either that the loss is not a mean over positions (a sum
# grows with B·T) or that the model is confidently wrong from the start, with logits far too
# large: weights drawn with std 1 (26.8 nats, measured on a 4-layer, 128-wide model), or
# embeddings left at PyTorch's N(0, 1), which the tied head then uses as its rows (87 nats). The
# first steps of training are then spent undoing the initialisation.
# (b) On the cpu profile (2.17 / 2.57 / 2.51 / 2.47 bits per character) the largest step is
# from the neural models' point of view a step *down*: the 5-gram, counted over the whole
# training text, beats every neural model trained for a few minutes, because counting sees all
# 4.3 million characters at once while gradient descent has seen each about once. Among the
# neural models each step is small after a few minutes of training: the LSTM gains 0.06 bits over
# the RNN (its gates let the gradient reach further back than the RNN's single squashed vector),
# and the GPT 0.05 over the LSTM, the least, although each of its positions attends directly to
# every earlier character of its window: a 64-character window and a short run leave it little
# long context to use.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You built a GPT from the reference blocks — embeddings with learned positions, a pre-LN stack,
# the final LayerNorm and a head tied to the embedding — checked it against the reference in
# float64, gave it GPT-2's initialisation, counted its parameters (and GPT-2 small's 124 million),
# wrote the sampler, and trained it with the course's loop on every device. The ladder shows
# what each model bought *at this profile's budget*: counting is cheap and done at once, while
# attention pays off with training time: your few minutes' GPT behind the 5-gram, the same model
# trained five times longer (the grey bar) past it. (A test of the course checks this architecture against
# the `transformers` library's GPT-2, logit for logit.)
#
# **Next:** notebook 06 trains the other half of the transformer family, a masked language model
# (a small BERT, on words, reading both sides of a blank); notebook 07 decodes from the model you
# just saved: greedy, beam search, top-k and nucleus sampling; subword tokens (byte-level BPE)
# come in notebook 08.

# %%
print(f"whole notebook: {time.perf_counter() - _notebook_start:.0f} s in profile {P.name} on {rt.device} "
      f"with {rt.threads} CPU thread(s)")
