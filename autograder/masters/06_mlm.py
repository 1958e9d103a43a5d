# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 06 · Masked language modelling: a small BERT, trained and asked to fill blanks
#
# **What you will build.** The other half of the transformer family: an *encoder* trained as a
# masked language model, the recipe of BERT. You will write BERT's corruption of the input
# (`mask_tokens`: 15% of the tokens chosen, of those 80% hidden behind `[MASK]`, 10% swapped for a
# random word, 10% left alone), the model (`MaskedLM`: the blocks of notebook 04 with attention
# in both directions, BERT's prediction head tied to the embedding, a loss over the chosen
# positions only), a `fill_mask` that lists the most likely words for every blank, and the
# **pseudo-log-likelihood** of a sentence. Then you train it on Shakespeare, word by word, and
# measure what seeing both sides of a blank buys against the same network trained left to right,
# show what goes wrong when nothing is hidden, and test BERT's 80/10/10 rule against plain
# `[MASK]`.
#
# **Prerequisites.** Notebooks 01 (the word tokenizer), 04 (the block, pre-LN and post-LN,
# causal or not) and 05 (a model around a stack of blocks, `lmcourse.train`). The block is
# `lmcourse.nn.Block`, the reference version of the one you wrote in notebook 04.
#
# **Time.** About 75 minutes of work; several minutes of computing on a laptop CPU (the `cpu`
# profile: four small models trained); minutes on a GPU; seconds under the autograder. Measured
# figures: [06_mlm](../docs/notebooks.md#06_mlm).
#
# **How the checks work.** Cells marked `# YOUR CODE HERE` are yours; the cell after each one
# checks your answer and says what looks wrong, and the autograder runs hidden tests of the same
# rules. Write each exercise with the pieces it names (`torch` operations, `nn.Embedding`,
# `nn.Linear`, `lmcourse.nn.Block`, a LayerNorm, ...): the course's answers
# (`lmcourse.reference.mlm`) are absent while the autograder runs, and `transformers`' code (its
# BERT, its masking collator) scores 0 under any name. Results follow the dtypes each exercise
# states, and inputs are never changed in place. The tests run on the CPU: creating tensors on a
# device is good practice, not graded, except that `MaskedLM`'s logits must be on the device of
# its input (tested on PyTorch's `meta` device). Every rule in one place (threads, the course's
# files, TorchScript, questions): [How the checks work](../docs/notebooks.md#how-the-checks-work).

# %% locked="setup"
import math
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
import lmcourse.marking
from lmcourse import course_runs, plot
from lmcourse.data import encode_text, get_batch, load_shakespeare
from lmcourse.nn import Block, BlockConfig, LayerNorm, MLMConfig
from lmcourse.nn.checkpoint import ModelCheckpointError
from lmcourse.runtime import is_autograding
from lmcourse.tokenizers import SPECIALS, WordTokenizer
from lmcourse.train import train

_notebook_start = time.perf_counter()
rt = lmcourse.setup(seed=0)
P = rt.profile
torch.jit._state.disable()  # TorchScript off: torch.jit.script / trace return plain Python, which the tests can see
tests = lmcourse.marking.Exam("06_mlm", globals())   # the test cells below: tests.check("mask_tokens")

# %% [markdown]
# ## 1. Two ways to train on text
#
# A GPT (notebook 05) factorises the probability of a sequence $x_1, \dots, x_n$ from left to
# right, and at position $i$ it sees only the past:
# $$p(x) = \prod_{i=1}^{n} p(x_i \mid x_1, \dots, x_{i-1}) .$$
# That is what generation needs, but a reader of a finished sentence has both sides. In
# *"The name anteater refers to the species' ____, which consists mainly of ants and termites"*
# the words after the blank decide it: *diet*. A **masked language model** is trained on
#
# $$p(x_i \mid x_1, \dots, x_{i-1}, x_{i+1}, \dots, x_n) ,$$
#
# with a transformer *encoder*: the blocks of notebook 04 **without** the causal mask, so that
# $h_i = \mathrm{Transformer}(x)_i \in \mathbb{R}^d$ depends on every position.
#
# **Why the input must be hidden.** Train such an encoder to give back the token at position $i$
# while $x_i$ is in its input, and it learns the identity: attention (or just the residual stream)
# copies $x_i$ to the output, the loss drops to nearly zero, and nothing about language has been
# learned. Section 4 runs exactly this experiment. BERT's fix: replace some input tokens by a
# placeholder `[MASK]` and predict the originals *there only*.

# %% [markdown]
# ## 2. Masking the input
#
# BERT's recipe, for a batch of token ids:
#
# 1. **choose** each position with probability $p = 0.15$, independently — but never a
#    *special* token (padding, `<s>`, `</s>`, `<unk>`, `[MASK]`): they carry no word to guess;
# 2. of the chosen positions, **80%** get `[MASK]`, **10%** a random *ordinary* token, and
#    **10%** keep their token;
# 3. the **labels** hold the original token at the chosen positions and $-100$ everywhere else.
#    $-100$ is the default `ignore_index` of `F.cross_entropy`: those positions add nothing to
#    the loss, and the mean is over the chosen positions.
#
# Why not always `[MASK]`? The token `[MASK]` never appears when the model is used on real text;
# a model that only ever predicted behind `[MASK]` would have learned nothing it is asked to do at
# positions that show a real word. The 10% random and 10% unchanged make it keep a useful guess
# for every position, without knowing which ones were tampered with (question Q3 asks for more).
#
# This is the convention of `transformers`' `DataCollatorForLanguageModeling`, with one
# deliberate difference: its random replacement is any id of the vocabulary (a special token
# included), ours is an **ordinary** token only. (A test of the course compares the rates of the
# course's reference `mask_tokens` with the collator's on the same input.)
#
# ### Exercise 1 — `mask_tokens` (4 points)
# Write `mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None)` for
# `tokens` of shape `(B, T)` (ids, `torch.long`). Return `(inputs, labels)`, two **new** tensors
# of the shape and dtype of `tokens`, on its device (do not change `tokens`):
#
# * each position whose id is **not** in `special_ids` (a list, tuple or set of ints) is chosen
#   with probability `p`, independently of every other position — so each sequence of the batch
#   gets its own draw; special positions are never chosen;
# * a chosen position becomes `mask_id` with probability 0.8, a random ordinary id with
#   probability 0.1, and keeps its id with probability 0.1. An **ordinary** id is one of
#   `0 .. vocab_size - 1` that is neither in `special_ids` nor `mask_id`, all equally likely
#   (whether or not the caller listed `mask_id` among the specials);
# * unchosen positions keep their id; `labels` is the original id at chosen positions, `-100`
#   elsewhere;
# * every random draw uses `generator` (`torch.rand(shape, generator=generator)`,
#   `torch.randint(n, shape, generator=generator)`), so one seed gives one result whatever the
#   global seed.
#
# Work with whole tensors (a boolean mask per decision); a loop over sequences works too, a loop
# over every token is slow. The tests check the proportions **statistically** on a large batch:
# a count of independent choices with probability $q$ out of $n$ lies within a few
# $\sqrt{n q (1 - q)}$ of $n q$. They check the same way that the random replacements are spread
# evenly over the ordinary ids, and that the number of chosen positions per sequence varies as
# independent choices make it vary (a fixed count of $p \cdot$ length per sequence does not).

# %% solution="mask_tokens"
def mask_tokens(tokens, mask_id, vocab_size, special_ids, p=0.15, generator=None):
    """BERT's corruption: (inputs, labels), labels -100 where nothing is to be predicted."""
    ### BEGIN SOLUTION
    device = tokens.device
    special = torch.tensor(sorted(set(int(i) for i in special_ids)), dtype=tokens.dtype, device=device)
    is_special = torch.isin(tokens, special)  # (B, T)
    chosen = (torch.rand(tokens.shape, generator=generator, device=device) < p) & ~is_special
    r = torch.rand(tokens.shape, generator=generator, device=device)  # (B, T): what a chosen one becomes
    to_mask = chosen & (r < 0.8)
    to_random = chosen & (r >= 0.8) & (r < 0.9)
    ordinary = torch.ones(vocab_size, dtype=torch.bool, device=device)
    ordinary[special[(special >= 0) & (special < vocab_size)]] = False
    ordinary[mask_id] = False
    pool = ordinary.nonzero().flatten()  # (n_ordinary,)
    pick = torch.randint(len(pool), tokens.shape, generator=generator, device=device)  # (B, T)
    inputs = tokens.clone()
    inputs[to_mask] = mask_id
    inputs[to_random] = pool[pick[to_random]]
    labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))
    return inputs, labels
    ### END SOLUTION


# %% tests="mask_tokens_tests" points=4
# Specials never chosen; of the chosen, 80% [MASK], 10% a random ordinary id, 10% kept; labels -100 elsewhere.
tests.check("mask_tokens")
### BEGIN HIDDEN TESTS
tests.grade("mask_tokens")
### END HIDDEN TESTS

# %% [markdown]
# What it does to a line of Shakespeare (each word is one token; ids 0-4 are the specials):

# %%
MASK = "[MASK]"
_demo_tok = WordTokenizer.from_text("to be or not to be that is the question whether tis nobler in the mind to "
                                    "suffer the slings and arrows of outrageous fortune",
                                    specials=list(SPECIALS) + [MASK])
_demo = torch.tensor([_demo_tok.encode("to be or not to be that is the question whether tis nobler in the mind")] * 3)
_di, _dl = mask_tokens(_demo, _demo_tok.stoi[MASK], _demo_tok.vocab_size, range(5), p=0.3,
                       generator=torch.Generator().manual_seed(rt.seed))
for _row_in, _row_lab in zip(_di, _dl):
    print(" ".join(_demo_tok.itos[i] if lab < 0 else f"{_demo_tok.itos[i]}({_demo_tok.itos[lab]})"
                   for i, lab in zip(_row_in.tolist(), _row_lab.tolist())))
print("word(label): a chosen position; one draw per sequence, p = 0.3 here")

# %% [markdown]
# ## 3. The model
#
# BERT's layout, in the course's names ($d$ = `n_embd`, $|V|$ = `vocab_size`):
#
# 1. **Embed**: $x_i = \mathrm{LN}_{\text{emb}}\big(W^{\text{embed}}[w_i] + p_i\big)$, then dropout.
#    BERT normalises the sum of embeddings, because its blocks are **post-LN**: each block adds
#    and then normalises, $h \leftarrow \mathrm{LN}(h + f(h))$, so the stream entering every block
#    is normalised and the first one must be too.
# 2. **Transform**: $L$ reference blocks, `Block(BlockConfig(..., causal=False, prenorm=False))`:
#    attention in both directions, post-LN. A post-LN stack ends normalised: no final LayerNorm.
# 3. **Predict**, BERT's head: a dense layer, GELU and a LayerNorm, then scores against every row
#    of the embedding matrix (tied, as in notebook 05) plus a bias per token:
#    $$z_i = \mathrm{LN}_{\text{head}}\big(\mathrm{GELU}(W_{\text{dense}} h_i^{(L)} + b_{\text{dense}})\big),
#      \qquad \text{logits}_i = W^{\text{embed}} z_i + b_{\text{out}} \in \mathbb{R}^{|V|} .$$
# 4. **Loss**: the mean cross-entropy over the positions whose label is not $-100$:
#    $$\mathcal{L} = -\frac{1}{|M|} \sum_{(b, i) \in M} \log p(x_{b,i} \mid \tilde x_b), \qquad
#      M = \{(b, i) : \text{label}_{b,i} \ne -100\},$$
#    where $\tilde x_b$ is the corrupted input; `F.cross_entropy(..., ignore_index=-100)` does it.
#
# What differs from BERT: no segment (sentence A/B) embeddings and no next-sentence prediction
# (we train on windows of running text), no padding mask in attention (no window is padded),
# LayerNorm $\epsilon = 10^{-5}$ (BERT: $10^{-12}$), and words of Shakespeare instead of WordPiece.
# With those set aside it is the same network: a test of the course copies the weights of the
# reference `MaskedLM` into `transformers`' `BertForMaskedLM` (random small configuration, float64)
# and gets the same logits.
#
# The configuration is given, `lmcourse.nn.MLMConfig`: `vocab_size`, `block_size`, `n_layer`,
# `n_head`, `n_embd`, `dropout`, `bias`, and **`causal`** (default `False`). With `causal=True` the
# same network reads left to right only: section 5 trains it as a GPT-style model, the fair
# opponent of the masked LM.

# %%
print(MLMConfig())

# %% [markdown]
# ### Exercise 2 — `MaskedLM` (5 points)
# Write `MaskedLM(config)` as an `nn.Module` with these attributes (the tests copy weights into
# them by name):
#
# * `self.config = config`;
# * `self.wte = nn.Embedding(vocab_size, n_embd)`, `self.wpe = nn.Embedding(block_size, n_embd)`;
# * `self.ln_emb = LayerNorm(n_embd, bias=bias)` and `self.drop = nn.Dropout(dropout)`;
# * `self.blocks`, an `nn.ModuleList` (or `nn.Sequential`) of `n_layer` reference blocks
#   `Block(BlockConfig(n_embd=..., n_head=..., block_size=..., dropout=..., bias=...,
#   causal=config.causal, prenorm=False))`;
# * the head: `self.head_dense = nn.Linear(n_embd, n_embd, bias=bias)`, the exact GELU
#   (`F.gelu` or `nn.GELU()`), `self.head_ln = LayerNorm(n_embd, bias=bias)`, and
#   `self.lm_head = nn.Linear(n_embd, vocab_size)` **with** its bias $b_{\text{out}}$, whose weight
#   **is** `self.wte.weight` (assign the parameter itself, as in notebook 05).
#
# `forward(idx, targets=None)` takes ids `(B, T)`, `T <= block_size`, and returns
# `(logits, loss)`: logits `(B, T, vocab_size)` at **every** position, in the model's dtype;
# `loss` is `None` without targets, otherwise the mean cross-entropy over the positions whose
# target is not `-100` (targets `(B, T)`, the labels of `mask_tokens`; there is no shift), with
# its gradients reaching every parameter (nothing detached in `forward`). Leave
# the initialisation to PyTorch's defaults. The logits are on the device of `idx` (a test runs the
# model on PyTorch's `meta` device, which has shapes but no values: no `.item()` or branch on a
# tensor's values in `forward`); make the positions on `idx.device` too, so that the model runs on
# a GPU (not graded: on the CPU and on `meta` it makes no difference).

# %% solution="masked_lm"
class MaskedLM(nn.Module):
    """LN(token + position embeddings) -> post-LN blocks -> dense, GELU, LN -> tied decoder + bias."""

    def __init__(self, config):
        super().__init__()
        ### BEGIN SOLUTION
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # (V, C)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # (block_size, C)
        self.ln_emb = LayerNorm(config.n_embd, bias=config.bias)
        self.drop = nn.Dropout(config.dropout)
        block_cfg = BlockConfig(n_embd=config.n_embd, n_head=config.n_head, block_size=config.block_size,
                                dropout=config.dropout, bias=config.bias, causal=config.causal, prenorm=False)
        self.blocks = nn.ModuleList([Block(block_cfg) for _ in range(config.n_layer)])
        self.head_dense = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.head_ln = LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)
        self.lm_head.weight = self.wte.weight  # tied: one tensor
        ### END SOLUTION

    def forward(self, idx, targets=None):
        ### BEGIN SOLUTION
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.drop(self.ln_emb(self.wte(idx) + self.wpe(pos)))  # (B, T, C)
        for block in self.blocks:
            x = block(x)  # (B, T, C)
        logits = self.lm_head(self.head_ln(F.gelu(self.head_dense(x))))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)
        return logits, loss
        ### END SOLUTION


# %% tests="masked_lm_tests" points=5
# The test loads its weights by the attribute names above; logits (B, T, V), loss over the chosen positions.
tests.check("masked_lm")
### BEGIN HIDDEN TESTS
tests.grade("masked_lm")
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Training on Shakespeare, and what happens when nothing is hidden
#
# The course corpus, split **by play** (the validation plays are never seen in training), one
# token per word with notebook 01's word tokenizer, its vocabulary cut to the most frequent words
# (the rest become `<unk>`) and one special added: `[MASK]`. The specials are never chosen and
# never predicted.
#
# `lmcourse.train` trains any model that returns logits; it takes the batches from a `batch_fn`
# (by default `get_batch`, the shifted next-token batches of notebook 05). The masked LM's batch
# function draws the same random windows and corrupts them with your `mask_tokens`; the labels'
# $-100$ make the loss skip every unchosen position. The sizes come from the profile.
#
# **Each model is kept at its best validation point.** Every run validates `R.evals` times
# (every `steps // evals` steps: 4 times in `tiny` and `cpu`, 20 in `gpu`, plus once before
# training) on the same windows of the validation plays, and `TrainConfig(keep_best=True)` makes
# `lmcourse.train` keep a copy of the weights each time the validation loss is the lowest so far and
# put that copy back when the run ends (`History.best_step` says which step it is from). Training
# itself is unchanged. This is early stopping judged after the run, and it keeps the comparisons of
# this notebook fair: a model that starts to overfit, fitting the training plays ever better while
# its validation loss rises, is compared at its best instead of being penalised for a budget that
# is too long for it. In the `tiny` and `cpu` runs every model's last validation is its lowest, so
# the models are exactly the ones at the end of training; in the larger `gpu` runs the left-to-right
# model can overfit (a run reported its validation loss rising from 4.6 to 7.6 nats without this;
# the course has not yet measured it on a GPU), and there it is scored at its best step.

# %%
from lmcourse.recipes import mlm as mlm_recipe

corpus = load_shakespeare()
R = mlm_recipe.recipe(P.name)  # this profile's sizes and run, in one place (lmcourse.recipes.mlm)
_train_text = corpus.text("train") if R.chars is None else corpus.text("train")[:R.chars]
_val_text = corpus.text("val") if R.chars is None else corpus.text("val")[:R.chars // 5]
tok = WordTokenizer.from_text(_train_text, max_size=R.vocab, specials=list(SPECIALS) + [MASK])
train_ids, val_ids = encode_text(_train_text, tok), encode_text(_val_text, tok)
V, MASK_ID = tok.vocab_size, tok.stoi[MASK]
SPECIAL_IDS = [tok.stoi[s] for s in SPECIALS] + [MASK_ID]
print(f"{V} tokens ({', '.join(tok.itos[i] for i in SPECIAL_IDS)} special); {len(train_ids):,} training and "
      f"{len(val_ids):,} validation words; <unk> is {float((val_ids == tok.stoi['<unk>']).double().mean()):.1%} "
      "of the validation words")


def mlm_batch(tokens, batch_size, block_size, generator, device):
    """Random windows, corrupted by mask_tokens: (inputs, labels with -100 where not chosen)."""
    x, _ = get_batch(tokens, batch_size, block_size, generator)
    inputs, labels = mask_tokens(x, MASK_ID, V, SPECIAL_IDS, p=0.15, generator=generator)
    return inputs.to(device), labels.to(device)


def no_mask_batch(tokens, batch_size, block_size, generator, device):
    """The same labels, but the input left as it is: the model sees what it must predict."""
    x, _ = get_batch(tokens, batch_size, block_size, generator)
    _, labels = mask_tokens(x, MASK_ID, V, SPECIAL_IDS, p=0.15, generator=generator)
    return x.to(device), labels.to(device)


def new_model(causal=False):
    """Your MaskedLM with BERT's initialisation: weights ~ N(0, 0.02^2), biases 0, LayerNorms 1 and 0."""
    torch.manual_seed(rt.seed)
    model = MaskedLM(MLMConfig(vocab_size=V, **R.model_sizes(causal=causal)))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
            elif "ln" in name and name.endswith("weight"):
                p.fill_(1.0)
            else:
                p.zero_()
    return model


train_cfg = R.train_config(seed=rt.seed, quiet=True, compile=rt.device.type == "cuda")


def best_of(run):
    """The validation loss the model ends with (keep_best: its lowest) and the step it is from."""
    return f"{run.best_val_loss:.3f} nats (step {run.best_step} of {run.steps[-1]})"


runs, models = {}, {}
_t = time.perf_counter()
models["masked LM"] = new_model()
runs["masked LM"] = train(models["masked LM"], train_ids, val_ids, train_cfg, batch_fn=mlm_batch)
print(f"masked LM: {time.perf_counter() - _t:.0f} s, validation loss over the chosen positions "
      f"{best_of(runs['masked LM'])} (uniform guess: ln V = {math.log(V):.2f})")
_t = time.perf_counter()
models["no masking"] = new_model()
runs["no masking"] = train(models["no masking"], train_ids, val_ids, train_cfg, batch_fn=no_mask_batch)
print(f"no masking: {time.perf_counter() - _t:.0f} s, validation loss {best_of(runs['no masking'])}")
ax = plot.loss_curves({k: runs[k] for k in ("masked LM", "no masking")}, title=f"Masked LM vs no masking ({P.name})")
plt.show()

# %% [markdown]
# The model trained without masking can drive its loss towards zero: the answer is in its input, and
# copying it is all it has to learn. How far it gets depends on the profile: the `cpu` run ends
# near 0.06 nats, while the seconds-long `tiny` run (the autograder's) stops far above that, since
# it has barely started to copy. Section 5 shows that it cannot fill a real blank.

# %% [markdown]
# ## 5. Fill in the blank
#
# ### Exercise 3 — `fill_mask` (2 points)
# Write `fill_mask(model, tokenizer, text, top_k=5)`: `text` is a line in which every blank is
# written `[MASK]`, e.g. `"to be or [MASK] to be"`. Return one list per `[MASK]`, left to right;
# each list holds the `top_k` most likely tokens at that blank as `(token, probability)` pairs,
# most likely first, the token a string (`tokenizer.itos[id]`) and the probability a Python float
# from a softmax over the **whole** vocabulary.
#
# * Ids: split the text at `"[MASK]"`, encode every piece with `tokenizer.encode`, and put
#   `tokenizer.stoi["[MASK]"]` between the pieces (the word tokenizer alone would read `[MASK]` as
#   the word *mask*).
# * Call `model(ids)` with ids of shape `(1, T)` on the device of the model's parameters; it
#   returns `(logits, loss)`. The prediction for a blank is read **at the blank's own position**
#   (not one before it, as in a GPT). No gradients are needed; the text fits in `block_size`.

# %% solution="fill_mask"
def fill_mask(model, tokenizer, text, top_k=5):
    """The top_k (token, probability) pairs for every [MASK] in text, left to right."""
    ### BEGIN SOLUTION
    mask_id = tokenizer.stoi["[MASK]"]
    ids = []
    for k, piece in enumerate(text.split("[MASK]")):
        if k > 0:
            ids.append(mask_id)
        ids += tokenizer.encode(piece)
    device = next(model.parameters()).device
    idx = torch.tensor([ids], dtype=torch.long, device=device)  # (1, T)
    with torch.no_grad():
        logits = model(idx)[0][0]  # (T, V)
    result = []
    for t in range(len(ids)):
        if ids[t] == mask_id:
            probs = torch.softmax(logits[t], dim=-1)  # (V,)
            values, indices = torch.topk(probs, top_k)
            result.append([(tokenizer.itos[i], float(v)) for v, i in zip(values.tolist(), indices.tolist())])
    return result
    ### END SOLUTION


# %% tests="fill_mask_tests" points=2
# Ids with the [MASK] id between the encoded pieces; the top_k (token, probability) pairs at each blank.
tests.check("fill_mask")
### BEGIN HIDDEN TESTS
tests.grade("fill_mask")
### END HIDDEN TESTS

# %% [markdown]
# The trained masked LM at work on a few lines (in the `tiny` profile the model has barely
# trained, so expect frequent words):

# %%
models["masked LM"].eval()
for line in ["to be or [MASK] to be , that is the question .", "my [MASK] , my lord , i am your servant .",
             "what is your [MASK] ?", "the king is [MASK] ."]:
    blanks = fill_mask(models["masked LM"], tok, line, top_k=5)
    print(line)
    for b in blanks:
        print("    " + ", ".join(f"{w} {q:.2f}" for w, q in b))

# %% [markdown]
# ### Masked LM vs left-to-right, on the same blanks
#
# The fair opponent: the **same network**, `MaskedLM(config with causal=True)`, trained as a
# GPT on next-token prediction (the default batches of `lmcourse.train`), on the same data with the
# same steps, batch, learning rate and validation schedule, and kept at its best validation point
# like the others (section 4). It predicts the word at position $i$ from position $i-1$,
# seeing $x_1 \dots x_{i-1}$ only; the masked LM sees the window with $x_i$ replaced by `[MASK]`.
# Both are scored on the **same** blanks: random positions ($i \ge 1$, a word of the vocabulary,
# not `<unk>`) of windows of the validation plays. Top-$k$ accuracy: the true word is among the $k$
# most likely. A per-step caveat: the left-to-right model is scored at every position of every
# window during training, the masked one at 15% of them.

# %%
_t = time.perf_counter()
models["left-to-right"] = new_model(causal=True)
runs["left-to-right"] = train(models["left-to-right"], train_ids, val_ids, train_cfg)
print(f"left-to-right: {time.perf_counter() - _t:.0f} s, validation loss {best_of(runs['left-to-right'])} "
      "(next word, every position)")


def blanks(ids, n, block_size, seed):
    """n windows of ids and one blank position in each: (windows (n, T), positions (n,))."""
    g = torch.Generator().manual_seed(seed)
    x, _ = get_batch(ids, n, block_size, g)
    ordinary = ~torch.isin(x, torch.tensor(SPECIAL_IDS))
    ordinary[:, 0] = False  # the left-to-right model needs one word before the blank
    pos = torch.multinomial(ordinary.double(), 1, generator=g)[:, 0]  # (n,)
    return x, pos


@torch.no_grad()
def blank_logits(model, x, pos, causal):
    """The logits for the blank of every window: at pos with [MASK] there, or at pos - 1 left to right."""
    model.eval()
    rows = torch.arange(len(x))
    if causal:
        return model(x.to(rt.device))[0][rows, pos - 1].cpu()
    masked = x.clone()
    masked[rows, pos] = MASK_ID
    return model(masked.to(rt.device))[0][rows, pos].cpu()


def top_k_accuracy(logits, targets, ks=(1, 5)):
    top = logits.topk(max(ks), dim=-1).indices  # (n, k)
    return {k: float((top[:, :k] == targets[:, None]).any(dim=1).double().mean()) for k in ks}


n_blanks = R.n_blanks
eval_x, eval_pos = blanks(val_ids, n_blanks, R.block, seed=rt.seed + 6)
eval_true = eval_x[torch.arange(n_blanks), eval_pos]
accuracy = {}
for name in ("masked LM", "left-to-right", "no masking"):
    accuracy[name] = top_k_accuracy(blank_logits(models[name], eval_x, eval_pos, causal=name == "left-to-right"),
                                    eval_true)
_freq = torch.bincount(train_ids, minlength=V).double()
_freq[SPECIAL_IDS] = 0
accuracy["most frequent words"] = {k: float(torch.isin(eval_true, _freq.topk(k).indices).double().mean())
                                   for k in (1, 5)}
# Beside yours, never in their place: the same two networks and recipe trained longer by the course's own
# command, shipped with the course (lmcourse.course_runs), scored on the same blanks. False leaves them out.
show_course_run = True
if show_course_run and not is_autograding() and f"06_mlm_{P.name}" in course_runs.RUNS:
    for name, key, causal in (("masked LM", f"06_mlm_{P.name}", False),
                              ("left-to-right", f"06_mlm_causal_{P.name}", True)):
        try:  # into your MaskedLM: its attribute names are the exercise's
            longer, run, extra = course_runs.load_course_run(key, rt.device, model_class=MaskedLM,
                                                             config_class=MLMConfig)
        except (course_runs.CourseRunError, ModelCheckpointError) as exc:
            print(f"the course's {name} run is left out: {exc}")
            continue
        if extra.get("vocabulary") != list(tok.itos):
            print(f"the course's {name} run is left out: it was trained on another vocabulary")
            continue
        accuracy[f"{name}, longer (course)"] = top_k_accuracy(
            blank_logits(longer, eval_x, eval_pos, causal=causal), eval_true)
        print(f"the course's {name}: the same network and recipe, `{run.command}`")
print(f"{n_blanks} blanks in validation windows of {R.block} words ({P.name} profile)")
print(f"{'model':<32}{'top-1':>8}{'top-5':>8}")
for name, acc in accuracy.items():
    print(f"{name:<32}{acc[1]:>8.1%}{acc[5]:>8.1%}")
fig, ax = plt.subplots(figsize=(6.5, 3.5))
_names = list(accuracy)
for j, k in enumerate((1, 5)):
    ax.bar([i + 0.38 * j for i in range(len(_names))], [accuracy[n][k] for n in _names], width=0.38,
           label=f"top-{k}", hatch=["//" if "(course)" in n else "" for n in _names])
ax.set_xticks([i + 0.19 for i in range(len(_names))], [n.replace(", ", ",\n") for n in _names], fontsize=8)
ax.set_ylabel("accuracy on the same blanks")
ax.set_title(f"Fill in the blank ({P.name} profile)")
ax.legend()
plt.show()

# %% [markdown]
# Read the table with the profile in mind (the run above printed it; in the `tiny` profile no model
# has learned much). The `cpu` run (800 steps of 32 windows each) printed, with the course's longer runs
# (hatched bars) below it:
#
# | model | top-1 | top-5 |
# |---|---|---|
# | masked LM | 10.1% | 24.8% |
# | left-to-right | 14.0% | 35.1% |
# | no masking | 2.1% | 3.1% |
# | most frequent words | 10.1% | 25.3% |
# | masked LM, longer (course) | 23.9% | 47.7% |
# | left-to-right, longer (course) | 20.3% | 42.0% |
#
# Within your run's budget the bidirectional model does **not** win: the masked LM has not left the
# plateau a masked LM starts on, where it predicts roughly the word frequencies at every blank (its
# top-1 equals the most frequent word's share); `fill_mask` above lists the same words with the same
# probabilities for every line. The course's runs are the same two networks and recipe, trained on 12.5
# times the windows (`lmcourse train mlm --profile cpu --batch_size 128 --steps 2500 --seed 0`, and the
# same with `--causal`; on one core they took 26 minutes on a busy machine and 8 on a lightly loaded one;
# shipped with the course and scored here on your blanks). There the lecture's point shows: reading both
# sides of the blank, the masked LM fills 23.9% of them, the left-to-right model, which sees only the words
# before, 20.3%.
#
# Why so late? In the course's runs the masked LM's validation loss over the chosen positions creeps down
# to about 4.9 nats and then drops, after 120,000 to 480,000 windows (25,600 in your run). Before the
# drop the model ignores the order of its window: shuffle the other words and its top-1 stays where it
# was; after it, shuffling cuts top-1 from 25% to 4.5%. It must learn attention that picks positions,
# from learned position vectors, with a loss at 15% of the positions only. The same network read left
# to right has the previous word in its own position's stream (a bigram for free) and passes the
# frequency baseline early. Nothing cheap brought the drop into the `cpu` budget: learning rates from
# 3e-4 to 1e-2, pre-LN, one layer and one head, shorter windows, smaller vocabularies, more positions
# chosen, larger batches: after 800 to 3,000 steps every top-1 lay between 8.4% and 11.3%. To watch the
# drop yourself, run the course's command above in a terminal (`--steps 20000` with the default batch
# of 32 gets there too: top-1 25.0%, top-5 49.3%, in about half an hour on one core).
#
# The model trained without masking has never seen `[MASK]` stand for a missing word: its loss went
# to almost zero in the `cpu` run (0.06 nats, by copying) and it fills real blanks worst of all,
# far below guessing the most frequent words.

# %% [markdown]
# ## 6. The probability of a sentence
#
# A left-to-right model gives the log-probability of a sentence in one pass, by the chain rule,
# $\log p(x) = \sum_i \log p(x_i \mid x_{<i})$. A masked LM has no such factorisation: its
# conditionals $p(x_i \mid x_{\setminus i})$ each condition on all the other words. The lecture's
# $p(x) = \prod_i p(x_i \mid x_{\setminus i})$ is a *score* built from them, not a factorisation:
# the chain rule multiplies conditionals that each see only the words before, so the product is the
# joint exactly; a product of conditionals that each see all the others counts every dependency
# twice, and over all sentences it does not sum to one (nor do a model's conditionals need to agree
# with any joint). Its logarithm is the **pseudo-log-likelihood**
# $$\mathrm{PLL}(x) = \sum_{i=1}^{n}
#   \log p\big(x_i \mid x_1, \dots, x_{i-1}, \texttt{[MASK]}, x_{i+1}, \dots, x_n\big),$$
# masking **one** position at a time: $n$ forward passes (or one pass over a batch of $n$ copies)
# for a sentence of $n$ words, where the left-to-right model needs one. It is not a probability,
# but it is used to compare sentences: one whose every word fits its context should score higher
# (the comparison after the exercise shows how far your model has got).
#
# ### Exercise 4 — `pseudo_log_likelihood` (2 points)
# Write `pseudo_log_likelihood(model, ids, mask_id)`: `ids` is a 1-D `torch.long` tensor of $n$
# ids (`n <= block_size`). Return the PLL in nats as a Python `float`. For every position $i$, the
# model sees `ids` with position $i$ (only) replaced by `mask_id`, and contributes
# $\log \mathrm{softmax}(\text{logits at } i)[\text{ids}_i]$. Batch the $n$ masked copies into one
# `(n, n)` input (one call) or loop over positions; `model(x)` returns `(logits, loss)`; no
# gradients are needed; do not change `ids`.

# %% solution="pseudo_log_likelihood"
def pseudo_log_likelihood(model, ids, mask_id):
    """sum_i log p(x_i | x with position i masked), in nats."""
    ### BEGIN SOLUTION
    n = ids.numel()
    batch = ids.repeat(n, 1)  # (n, n): copy i will have position i masked
    rows = torch.arange(n, device=ids.device)
    batch[rows, rows] = mask_id
    with torch.no_grad():
        logits = model(batch)[0]  # (n, n, V)
    logp = torch.log_softmax(logits[rows, rows], dim=-1)  # (n, V): position i of copy i
    return float(logp[rows, ids].sum())
    ### END SOLUTION


# %% tests="pseudo_log_likelihood_tests" points=2
# The sum over positions of log p(x_i | ids with only position i masked), as a float; ids unchanged.
tests.check("pseudo_log_likelihood")
### BEGIN HIDDEN TESTS
tests.grade("pseudo_log_likelihood")
### END HIDDEN TESTS

# %% [markdown]
# Real lines of the validation plays against the same words shuffled: the masked LM's PLL, next to
# the left-to-right model's exact log-likelihood (one pass each, from the second word on).

# %%
@torch.no_grad()
def causal_log_likelihood(model, ids):
    """log p(x_2 .. x_n | x_1) by the chain rule, one pass."""
    model.eval()
    logp = torch.log_softmax(model(ids[None].to(rt.device))[0][0, :-1].double(), dim=-1).cpu()  # (n-1, V)
    return float(logp[torch.arange(len(ids) - 1), ids[1:]].sum())


_g = torch.Generator().manual_seed(rt.seed)
print(f"{'':<48}{'PLL':>9}{'shuffled':>10}{'  L-to-R':>9}{'shuffled':>10}")
_wins = 0
_lines = [" ".join(text.split()) for text in _val_text.split("\n") if 8 <= len(text.split()) <= 14][:200:20]
for line in _lines:
    ids = torch.tensor(tok.encode(line)[: R.block])
    shuffled = ids[torch.randperm(len(ids), generator=_g)]
    pll = (pseudo_log_likelihood(models["masked LM"], ids.to(rt.device), MASK_ID),
           pseudo_log_likelihood(models["masked LM"], shuffled.to(rt.device), MASK_ID))
    _wins += pll[0] > pll[1]
    ll = causal_log_likelihood(models["left-to-right"], ids), causal_log_likelihood(models["left-to-right"], shuffled)
    print(f"{line[:46]:<48}{pll[0]:>9.1f}{pll[1]:>10.1f}{ll[0]:>9.1f}{ll[1]:>10.1f}")
print(f"the masked LM prefers the real line in {_wins} of {len(_lines)}")

# %% [markdown]
# ## 7. Why 80/10/10? An ablation
#
# Train the masked LM a second time with **every** chosen position set to `[MASK]` (same steps,
# same choices of positions), and compare on three tasks on the validation blanks:
#
# * **[MASK] blank**: the blank shown as `[MASK]` (what both were trained on);
# * **random word**: the blank shown as a random ordinary word, predict the original;
# * **no blank**: the window as it is, predict the word at the position (it is in the input).
#
# The last two use inputs without any `[MASK]`, as text is when the model is put to use.

# %%
def all_mask_batch(tokens, batch_size, block_size, generator, device):
    """Every chosen position becomes [MASK] (the labels of mask_tokens, its 10%/10% undone)."""
    x, _ = get_batch(tokens, batch_size, block_size, generator)
    _, labels = mask_tokens(x, MASK_ID, V, SPECIAL_IDS, p=0.15, generator=generator)
    return torch.where(labels != -100, MASK_ID, x).to(device), labels.to(device)


@torch.no_grad()
def three_tasks(model, x, pos, seed):
    model.eval()
    rows = torch.arange(len(x))
    true = x[rows, pos]
    ordinary = torch.tensor([i for i in range(V) if i not in SPECIAL_IDS])
    swapped = x.clone()
    picks = torch.randint(len(ordinary), (len(x),), generator=torch.Generator().manual_seed(seed))
    swapped[rows, pos] = ordinary[picks]
    out = {"[MASK] blank": top_k_accuracy(blank_logits(model, x, pos, causal=False), true)[1]}
    out["random word"] = top_k_accuracy(model(swapped.to(rt.device))[0][rows, pos].cpu(), true)[1]
    out["no blank"] = top_k_accuracy(model(x.to(rt.device))[0][rows, pos].cpu(), true)[1]
    return out


_t = time.perf_counter()
models["all [MASK]"] = new_model()
runs["all [MASK]"] = train(models["all [MASK]"], train_ids, val_ids, train_cfg, batch_fn=all_mask_batch)
print(f"all [MASK]: {time.perf_counter() - _t:.0f} s, validation loss {best_of(runs['all [MASK]'])}")
ablation = {name: three_tasks(models[name], eval_x, eval_pos, seed=rt.seed + 7) for name in ("masked LM", "all [MASK]")}
print(f"top-1 accuracy on {n_blanks} validation blanks ({P.name} profile)")
print(f"{'trained with':<16}" + "".join(f"{task:>15}" for task in ablation["masked LM"]))
for name, res in ablation.items():
    print(f"{'80/10/10' if name == 'masked LM' else name:<16}" + "".join(f"{v:>15.1%}" for v in res.values()))

# %% [markdown]
# In the `cpu` run both models scored 10.1% top-1 on all three tasks, the share of the most
# frequent word: neither has yet learned to use the word at the position or its neighbours, so the
# ablation shows no difference at this budget. What the 80/10/10 rule is for shows once a model
# reads its input: trained with `[MASK]` alone, it is never asked anything at a position that shows
# a word (the "no blank" and "random word" tasks), whereas 80/10/10 asks it at 20% of the chosen
# positions. Past the drop of section 5 the columns separate, and by more than that: in separate
# runs (reference code, these settings, 5,000 steps of 128 windows, one seed) the 80/10/10 model
# scored 30.2% / 25.0% / 93.7% on the three tasks, while the all-`[MASK]` model never left the
# plateau (9.7% / 9.6% / 9.9%, validation loss 5.45 nats against 3.63). Shown the true word at 10%
# of the chosen positions, a model first learns to carry a word's identity through the network to
# the output, which it can then use for the neighbours of a blank; behind `[MASK]` alone it has no
# such start. Already at 800 steps, in 11 of 14 other initial draws of the weights, the 80/10/10
# model gave the word in the input back at the "no blank" task (19% to 68%), with the `[MASK]`
# blanks still at the frequency baseline.

# %% [markdown]
# ## 8. Questions
#
# Answer each multiple-choice question by setting the variable to one letter, e.g.
# `answer_q1 = "A"`.
#
# **Q1.** A batch of 4 windows of 64 words contains no special token. `mask_tokens` with
# $p = 0.15$ chose 40 positions: 31 became `[MASK]`, 4 a random word, 5 were left unchanged. Over
# how many positions is the masked LM's loss averaged?
#
# * A. 31: only the positions that show `[MASK]`.
# * B. 35: the positions whose input was changed.
# * C. 40: every chosen position, the unchanged ones included.
# * D. 256: every position of the batch.

# %% solution="q1"
# Your answer, one letter: answer_q1 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q1 = "C"
### END SOLUTION

# %% tests="q1_tests" points=1
# One letter, as a string.
tests.check("q1")
### BEGIN HIDDEN TESTS
tests.grade("q1")
### END HIDDEN TESTS

# %% [markdown]
# **Q2.** To score a sentence of $n$ words, a left-to-right model needs one forward pass. The
# pseudo-log-likelihood of a masked LM needs
#
# * A. one pass too: mask every word at once and add the log-probabilities.
# * B. $n$ passes (or one pass over $n$ copies), one per masked position, because each
#   conditional $p(x_i \mid x_{\setminus i})$ needs an input in which only $x_i$ is hidden.
# * C. $n^2$ passes, one per pair of positions.
# * D. none: the masked LM's training loss is already the sentence's log-probability.

# %% solution="q2"
# Your answer, one letter: answer_q2 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q2 = "B"
### END SOLUTION

# %% tests="q2_tests" points=1
# One letter, as a string.
tests.check("q2")
### BEGIN HIDDEN TESTS
tests.grade("q2")
### END HIDDEN TESTS

# %% [markdown]
# **Q3 (free text, graded by hand).** In three to five sentences: why does BERT replace only 80% of
# the chosen tokens by `[MASK]`, and what do the 10% random and the 10% unchanged each teach the
# model? Use what your ablation in section 7 printed.

# %% [markdown] answer="q3_free_text" points=2
# ### BEGIN SOLUTION
# `[MASK]` never occurs in the text a trained encoder is later given, so a model trained only with
# `[MASK]` learns to predict only where it sees `[MASK]`; at a position showing a real word it was
# never asked anything, and its output there is whatever training left behind (in the `cpu` run
# both models were still at the frequency plateau, 10.1% on every task, so the ablation could not
# show the difference yet; a longer run is needed to see the "no blank" and "random word" columns
# separate). The 10% random words teach the model not to trust the word it sees: any
# position might be a corrupted one, so it must check every word against its context (the
# "random word" task). The 10% unchanged teach it that the word it sees is often right, so its
# representation of a real word should lean towards that word (the "no blank" task), without
# ever becoming a pure copy, since it cannot know which positions are scored. Keeping 80% as
# `[MASK]` keeps most of the training signal the clear fill-the-blank task.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You wrote BERT's masking, built a small BERT from the reference blocks (bidirectional, post-LN,
# BERT's head tied to the embedding, a loss over the chosen positions only), filled blanks with it
# and scored sentences by pseudo-log-likelihood. The experiments measured, rather than assumed,
# what the lecture says: an encoder that sees its answer learns to copy, and fills real blanks worse
# than guessing the most frequent words;
# the fill-in-the-blank table put the masked LM and the same network read left to right on the
# same blanks, with the same budget (section 5 says what the `cpu` run showed). (Tests of the course
# check the reference `MaskedLM` against `transformers`' `BertForMaskedLM`, logit for logit, and
# the reference `mask_tokens`' rates against `DataCollatorForLanguageModeling`.)
#
# **Next:** notebook 07 goes back to the GPT of notebook 05 and decodes from it.

# %%
print(f"whole notebook: {time.perf_counter() - _notebook_start:.0f} s in profile {P.name} on {rt.device} "
      f"with {rt.threads} CPU thread(s)")
