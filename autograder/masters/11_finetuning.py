# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 11 · Using a language model: tasks as word prediction, fine-tuning, LoRA
#
# **What you will build.** Ways to put a pretrained language model to work on a task it was not
# built for. The lectures say that "many NLP tasks can be cast as tasks of word prediction": to
# classify a text, compare the probabilities of the labels' words after it. They also say that
# pretraining is "a smart weight initialization for the new task": put a small classifier on top of
# the pretrained network and train on labelled examples. You will write both: the score of a
# continuation, zero-shot classification (length-normalised and **calibrated**), a classifier that
# pools the GPT's hidden states, the choice of what to train, and **LoRA**, which trains two small
# matrices beside each frozen weight. Then you measure, on the GPT of notebook 05 and two tasks made
# from Shakespeare, *when* prompting works and what labelled data pretraining saves.
#
# **Prerequisites.** Notebook 05 (the GPT; its trained model is loaded here) and the lectures on
# transformers as language models and on fine-tuning (pooling, sequence classification).
#
# **Time.** About 90 minutes to work through. Under the autograder (profile `tiny`) the notebook
# runs in seconds. At `cpu` it loads 05's model from the course cache, or trains one with a third of
# 05's steps when it is not there, then runs the experiments; the last cell prints the time taken.
# Run notebook 05 first, at the same profile: the figures this notebook quotes were measured with 05's
# model, and the one trained here with a third of the steps is weaker (at `cpu`, validation loss 2.09
# against 1.72), too weak for some of the lessons to show.
#
# **How this notebook works.** Cells marked `# YOUR CODE HERE` are yours; the cell after each one
# checks your answer and says what looks wrong. The autograder runs further hidden tests, which
# check exactly what each exercise states. Rules for every graded cell:
#
# * your answers are your own code: the course's answers (`lmcourse.reference.finetuning`) are not
#   there when the notebook is graded, `lmcourse.decoding.sequence_logprob` (a course helper that
#   scores continuations) is refused in exercise 1, and the Python code of the `transformers` and
#   `peft` libraries is refused everywhere (the tests watch what runs);
# * **a mistake costs once:** where an exercise uses an earlier one (`SequenceClassifier` calls
#   your `pool_hidden`, `add_lora` your `LoRALinear`), its tests run it with the course's version
#   of the earlier one;
# * results keep their inputs' dtype and device unless an exercise says otherwise, and inputs are
#   never changed in place.

# %% locked="setup"
import copy
import time

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

import lmcourse
import lmcourse.marking
from lmcourse import finetune
from lmcourse.data import data_dir, encode_split, load_shakespeare
from lmcourse.nn import GPT, GPTConfig, load_gpt, save_gpt
from lmcourse.recipes import finetuning as finetuning_recipe
from lmcourse.runtime import is_autograding
from lmcourse.tasks_data import genre_task, speaker_task
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import train

NOTEBOOK_START = time.perf_counter()
rt = lmcourse.setup(seed=0)
P = rt.profile
R = finetuning_recipe.recipe(P.name)   # this profile's task sizes and fine-tuning runs
tests = lmcourse.marking.Exam("11_finetuning", globals())

# %% [markdown]
# ## 1. The pretrained model
#
# Notebook 05 saved its trained GPT to the course cache; it comes back here as the given
# `lmcourse.nn.GPT` with its character vocabulary. Without that checkpoint this cell trains one the
# way 05 does (this profile's sizes, a third of 05's steps at `cpu`) and saves it; under the
# autograder it always trains the tiny one and saves nothing.

# %%
corpus = load_shakespeare(quiet=True)
checkpoint = data_dir() / "checkpoints" / f"05_gpt_{P.name}.pt"
if checkpoint.exists() and not is_autograding():
    backbone, extra = load_gpt(checkpoint, rt.device)
    tok = CharTokenizer(extra["vocabulary"])
    print(f"loaded notebook 05's model from {checkpoint} (validation loss {extra.get('val_loss', float('nan')):.3f})")
else:
    tok = CharTokenizer.from_text(corpus.text("train"))
    torch.manual_seed(rt.seed)
    backbone = GPT(GPTConfig(vocab_size=tok.vocab_size, **R.model_sizes())).to(rt.device)
    _t = time.perf_counter()
    hist = train(backbone, encode_split(corpus, "train", tok), encode_split(corpus, "val", tok),
                 R.train_config(seed=rt.seed, quiet=True))
    backbone.eval()
    print(f"no checkpoint from notebook 05 at {checkpoint}: trained one here, {R.backbone_steps} steps in "
          f"{time.perf_counter() - _t:.0f} s, validation loss {hist.final_val_loss:.3f}")
    if not is_autograding():
        save_gpt(backbone, checkpoint, vocabulary=list(tok.itos), profile=P.name, val_loss=hist.final_val_loss,
                 steps=R.backbone_steps)
for p in backbone.parameters():
    p.requires_grad_(False)
print(backbone.config)

# %% [markdown]
# ## 2. Two tasks from the corpus
#
# * **Who speaks next** in *Othello*, among Othello, Iago, Desdemona and Cassio: the text before a
#   speech, labelled by the name of its speaker. The pretraining text *holds* this task — every
#   speech follows a heading such as `\n\nIAGO.\n` — and *Othello* is one of the training plays.
# * **Which genre** a passage is from: comedy, tragedy or history (the First Folio's sections).
#   Nothing in the plays says "this is a comedy": the pretraining text does *not* hold this task.
#   Its training passages come from the training plays and its test passages from the six held-out
#   plays, so the split is by play.
#
# Each example is `(text, label)`. A task's **verbalisers** are what a language model would write for
# each label (`"IAGO."`, `"comedy"`), and its **template** puts an example as a prompt. The context
# of 05's GPT is `block_size` characters, so the texts are cut to leave room for the longest
# verbaliser. The majority class is the baseline every method must beat.

# %%
T_max = backbone.config.block_size
speakers = speaker_task(corpus.documents, context_chars=T_max - len("DESDEMONA."), seed=rt.seed)
genres = genre_task(corpus.documents, corpus.splits, passage_chars=T_max - len("\nGenre: history"),
                    per_play=R.per_play, seed=rt.seed)
tasks = {"speaker": speakers.limited(R.max_eval), "genre": genres.limited(R.max_eval)}
for task in tasks.values():
    print(task.describe())
    text, label = task.test[0]
    print(f"  e.g. {task.prompt(text)!r} -> {task.verbalisers[label]!r}")

# %% [markdown]
# ## 3. The score of a continuation
#
# A language model gives the probability of a continuation $c = c_1 \dots c_m$ after a prompt
# $p = p_1 \dots p_n$ by the chain rule,
#
# $$\log P(c \mid p) = \sum_{j=1}^{m} \log P(c_j \mid p_1 \dots p_n, c_1 \dots c_{j-1}).$$
#
# One forward pass over the concatenation $w = p\,c$ gives all the factors: the logits at position
# $t$ (counting from 0) are the distribution of token $t + 1$. So the first continuation token,
# $w_n$, is predicted at the prompt's **last** position $n - 1$, and the continuation's tokens
# $w_n \dots w_{n+m-1}$ are read at positions $n - 1 \dots n + m - 2$. The prompt's own tokens are
# not scored.
#
# Many pairs go in one batch: each row is `prompt + continuation`, then `pad_id` up to the longest
# row (**right padding**). The model is causal, so a position never sees the pads after it, and a
# score reads only the positions of its own tokens: padding changes nothing.
#
# ### Exercise 1 — `score_continuations(model, prompts, continuations, pad_id=0)`
# `prompts` and `continuations` are lists of N lists of token ids (every prompt has at least one
# token; a row fits in `model.config.block_size`). `model(idx)` returns `(logits, loss)` as 05's GPT
# does; put `idx` on the model's device. Return a 1-D tensor of the N summed log-probabilities, in
# **float64** (cast the logits with `.double()` before the log-softmax: sums of many small
# log-probabilities lose digits in float32), in one forward pass. Leave the lists unchanged.
# Checked within $10^{-10}$ against the course's version, with the test's weights.

# %% solution="score_continuations"
def score_continuations(model, prompts, continuations, pad_id=0):
    """(N,) float64: log P(continuations[i] | prompts[i]), one right-padded batch."""
    ### BEGIN SOLUTION
    seqs = [list(p) + list(c) for p, c in zip(prompts, continuations)]
    device = next(model.parameters()).device
    idx = torch.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=torch.long, device=device)
    for i, s in enumerate(seqs):
        idx[i, :len(s)] = torch.tensor(s, dtype=torch.long, device=device)
    logits, _ = model(idx)  # (N, T, V)
    logp = torch.log_softmax(logits.double(), dim=-1)  # (N, T, V)
    scores = []
    for i, (p, c) in enumerate(zip(prompts, continuations)):
        start, end = len(p), len(p) + len(c)
        predicted = logp[i, start - 1:end - 1]  # position t predicts token t + 1
        scores.append(predicted.gather(-1, idx[i, start:end, None]).sum())
    return torch.stack(scores)
    ### END SOLUTION


# %% tests="score_continuations_tests" points=3
# The boundary: the first continuation token is read at the prompt's last position; pads change nothing; float64.
tests.check("score_continuations")
### BEGIN HIDDEN TESTS
tests.grade("score_continuations")
### END HIDDEN TESTS

# %% [markdown]
# What does the model expect after the text before one of Iago's speeches? Every speaker's heading,
# scored:

# %%
text, label = tasks["speaker"].test[0]
prompt_ids = tok.encode(text)
with torch.no_grad():
    s = score_continuations(backbone, [prompt_ids] * 4, [tok.encode(v) for v in speakers.verbalisers])
for v, lp in zip(speakers.verbalisers, s.tolist()):
    print(f"log P({v!r:13} | ...{text[-30:]!r}) = {lp:7.2f}")
print("true next speaker:", speakers.labels[label])

# %% [markdown]
# ## 4. Zero-shot classification
#
# To classify a text $x$ into labels $y_1 \dots y_K$ with verbalisers $v_1 \dots v_K$, score each
# verbaliser after the prompt, $s_k = \log P(v_k \mid \text{template}(x))$, and pick the largest.
# Two corrections:
#
# * **Length.** A longer verbaliser multiplies more probabilities below 1, so it loses for being
#   long. Divide by its number of tokens $|v_k|$: the mean log-probability per token.
# * **Calibration** (Zhao et al. 2021, "Calibrate before use"). A model prefers some labels
#   whatever the input — a frequent word, a name the template favours. Measure that preference on a
#   **content-free** input (an empty text in the template) and divide it out:
#   $\hat p(y_k \mid x) \propto P(v_k \mid x) \,/\, P(v_k \mid \text{content-free})$, in log space
#   $s_k - s^{\text{cf}}_k$.
#
# The result is renormalised over the $K$ labels, a distribution over the labels:
#
# $$\log \hat p(y_k \mid x) = \operatorname{log\,softmax}_k\!\left(\frac{s_k - s^{\text{cf}}_k}{|v_k|}\right).$$
#
# ### Exercise 2 — `zero_shot_scores(logprobs, lengths=None, content_free=None)`
# `logprobs` is an `(N, K)` tensor of the $s_k$ of N examples; `lengths` a `(K,)` tensor of the
# verbalisers' lengths or `None`; `content_free` a `(K,)` tensor of the $s^{\text{cf}}_k$ or `None`.
# Return the `(N, K)` log-probabilities over the labels: divide both the scores and the content-free
# scores by `lengths` when it is given, subtract the content-free scores when they are given, then a
# log-softmax over the labels. Keep the dtype of `logprobs`; no in-place changes of the inputs.
# Checked within $10^{-10}$ in float64 and $10^{-5}$ in float32.

# %% solution="zero_shot_scores"
def zero_shot_scores(logprobs, lengths=None, content_free=None):
    """(N, K) log-probabilities over the labels, length-normalised and calibrated when asked."""
    ### BEGIN SOLUTION
    scores, free = logprobs, content_free
    if lengths is not None:
        scores = scores / lengths
        free = None if free is None else free / lengths
    if free is not None:
        scores = scores - free
    return torch.log_softmax(scores, dim=-1)
    ### END SOLUTION


# %% tests="zero_shot_scores_tests" points=2
# log_softmax over the labels of s / |v| - s_cf / |v|, each part when given; the dtype of logprobs.
tests.check("zero_shot_scores")
### BEGIN HIDDEN TESTS
tests.grade("zero_shot_scores")
### END HIDDEN TESTS

# %% [markdown]
# Zero-shot on both tasks' test sets (their first `R.max_eval` examples, which the majority class is
# measured on too), with your two functions:

# %%
zero_shot = {}
for key, task in tasks.items():
    test = task.test
    lp = finetune.label_logprobs(score_continuations, backbone, tok, task, [t for t, _ in test])
    free = finetune.label_logprobs(score_continuations, backbone, tok, task, [task.content_free])[0]
    lengths = torch.tensor([float(len(tok.encode(v))) for v in task.verbalisers], dtype=torch.float64)
    labels = [y for _, y in test]
    zero_shot[key] = {"plain": finetune.accuracy(zero_shot_scores(lp), labels),
                      "per token": finetune.accuracy(zero_shot_scores(lp, lengths), labels),
                      "calibrated": finetune.accuracy(zero_shot_scores(lp, lengths, free), labels)}
    shares = zero_shot_scores(lp, lengths).argmax(-1).bincount(minlength=len(task.labels)) / len(test)
    print(f"{task.name}: majority {task.majority()[1]:.1%}; zero-shot " +
          ", ".join(f"{k} {v:.1%}" for k, v in zero_shot[key].items()) +
          "; predicted label shares before calibration " +
          ", ".join(f"{lab} {s:.0%}" for lab, s in zip(task.labels, shares.tolist())))

# %% [markdown]
# **Question.** Why divide by the label's probability after a content-free input?
#
# * **A.** It makes the probabilities sum to one over the whole vocabulary.
# * **B.** It makes every verbaliser the same length.
# * **C.** The model prefers some labels whatever the input (frequent words, what the template
#   favours); the content-free input measures that preference, and dividing by it removes it.
# * **D.** It turns log-probabilities into accuracies.
#
# Set `answer_q_calibrate` to `"A"`, `"B"`, `"C"` or `"D"`.

# %% solution="q_calibrate"
### BEGIN SOLUTION
answer_q_calibrate = "C"
### END SOLUTION

# %% tests="q_calibrate_tests" points=1
# One letter, "A", "B", "C" or "D".
tests.check("q_calibrate")
### BEGIN HIDDEN TESTS
tests.grade("q_calibrate")
### END HIDDEN TESTS

# %% [markdown]
# ## 5. A classifier on the pretrained network
#
# Fine-tuning keeps the pretrained network and replaces its output layer. The GPT without its LM
# head maps ids $w_1 \dots w_T$ to final hidden states $h_1 \dots h_T$ (after the last block and the
# final LayerNorm $\text{LN}_f$); a sequence classifier **pools** them into one vector and a linear
# head gives the $K$ class logits, $z = W_c\, \text{pool}(h) + b_c$.
#
# * **Last-token pooling**: $h_t$ at the last real token. In a causal model it is the only position
#   that has read the whole text.
# * **Mean pooling**: $\frac{1}{n} \sum_{t \le n} h_t$ over the $n$ real tokens.
#
# Rows of a batch are right-padded; `mask` is a `(B, T)` bool tensor, True at real tokens (they come
# first; every row has at least one). Pads must change nothing, so neither pooling reads them.
#
# ### Exercise 3 — `pool_hidden(hidden, mask, how)`
# `hidden` is `(B, T, d)`. Return `(B, d)`: for `how="last"` the hidden state at each row's last real
# position, for `how="mean"` the mean over its real positions; any other `how` raises `ValueError`.
# Keep `hidden`'s dtype. Checked within $10^{-12}$ in float64 and $10^{-6}$ in float32.

# %% solution="pool_hidden"
def pool_hidden(hidden, mask, how):
    """(B, d): hidden (B, T, d) pooled over the positions where mask (B, T) is True."""
    ### BEGIN SOLUTION
    if how == "last":
        last = mask.long().sum(dim=1) - 1  # (B,)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    if how == "mean":
        weights = mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1)
    raise ValueError(f"how must be 'last' or 'mean', not {how!r}")
    ### END SOLUTION


# %% tests="pool_hidden_tests" points=2
# 'last': the last position where mask is True; 'mean': the mean over those positions; ValueError otherwise.
tests.check("pool_hidden")
### BEGIN HIDDEN TESTS
tests.grade("pool_hidden")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4 — `SequenceClassifier(backbone, n_classes, pooling="last")`
# An `nn.Module` that keeps the given GPT as `self.backbone` (the object itself), the pooling name as
# `self.pooling`, and `self.head`, a linear layer from the GPT's `n_embd` to `n_classes` (with a bias); no
# other parameters. `forward(idx, mask)` returns the `(B, n_classes)` logits: the hidden states are
# `drop(wte(idx) + wpe(0..T-1))` through every block of `backbone.blocks` and then `backbone.ln_f`
# (05's GPT without its `lm_head`), pooled with your `pool_hidden(h, mask, self.pooling)`, then the
# head. Fine-tuning trains through `forward`: no `torch.no_grad()`, `.detach()` or `eval()` in it, and
# in training mode the backbone's dropouts run in the order its own forward runs them, with no dropout
# of the classifier's own (a test compares the logits and the backbone's gradients with dropout on,
# seeded). The tests load weights by these names and compare within $10^{-10}$ in float64.

# %% solution="SequenceClassifier"
class SequenceClassifier(nn.Module):
    """The GPT backbone without its LM head, pooled, then a linear head: (B, T) ids -> (B, n_classes)."""

    def __init__(self, backbone, n_classes, pooling="last"):
        super().__init__()
        ### BEGIN SOLUTION
        self.backbone = backbone
        self.pooling = pooling
        self.head = nn.Linear(backbone.config.n_embd, n_classes)
        ### END SOLUTION

    def forward(self, idx, mask):
        ### BEGIN SOLUTION
        g = self.backbone
        pos = torch.arange(idx.shape[1], device=idx.device)  # (T,)
        x = g.drop(g.wte(idx) + g.wpe(pos))  # (B, T, C)
        for block in g.blocks:
            x = block(x)
        return self.head(pool_hidden(g.ln_f(x), mask, self.pooling))  # (B, K)
        ### END SOLUTION


# %% tests="SequenceClassifier_tests" points=3
# Run with the course's pool_hidden: the backbone's final hidden states, pooled, then self.head; pads change nothing.
tests.check("SequenceClassifier")
### BEGIN HIDDEN TESTS
tests.grade("SequenceClassifier")
### END HIDDEN TESTS

# %% [markdown]
# ## 6. What to train
#
# With few labelled examples, training all of a network's parameters overfits and costs the most;
# training only the new head keeps the pretrained features as they are. Between the two: the last
# $k$ blocks, with the final LayerNorm that reads them, and the head. A parameter trains when its
# `requires_grad` is True (the optimiser is given only those).
#
# ### Exercise 5 — `freeze(model, what, k=1)`
# `model` has `model.backbone` (05's GPT) and `model.head`. Make trainable exactly: for `what="head"`
# the head's parameters; for `"last"` those of the last `k` blocks (`model.backbone.blocks[-k:]`),
# `model.backbone.ln_f` and the head; for `"all"` every parameter. Every other parameter gets
# `requires_grad=False` (a second call undoes the first). Return the number of trainable parameters
# as an `int`, each tensor counted once (the LM head is tied to the token table: one tensor).

# %% solution="freeze"
def freeze(model, what, k=1):
    """Train only the head, the last k blocks (+ ln_f + head) or all; returns the trainable parameter count."""
    ### BEGIN SOLUTION
    if what not in ("head", "last", "all"):
        raise ValueError(f"what must be 'head', 'last' or 'all', not {what!r}")
    train_these = {id(p) for p in model.head.parameters()}
    if what == "last":
        for module in [*model.backbone.blocks[-k:], model.backbone.ln_f]:
            train_these |= {id(p) for p in module.parameters()}
    for p in model.parameters():
        p.requires_grad_(what == "all" or id(p) in train_these)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
    ### END SOLUTION


# %% tests="freeze_tests" points=2
# Exactly the parameters asked for train, the rest are frozen; the count is an int, tied tensors once.
tests.check("freeze")
### BEGIN HIDDEN TESTS
tests.grade("freeze")
### END HIDDEN TESTS

# %% [markdown]
# **Question.** With a few hundred labelled examples, which parameters do you unfreeze first?
#
# * **A.** The token embeddings: they are the first layer, so they matter most.
# * **B.** The first block: its features are the most specific to the task.
# * **C.** All of them at once, always: freezing never helps.
# * **D.** The head, then the last block(s) with the final LayerNorm: the last layers are the most
#   specific to the pretraining objective, the early ones general, and few trainable parameters
#   overfit less on few examples.
#
# Set `answer_q_unfreeze` to `"A"`, `"B"`, `"C"` or `"D"`.

# %% solution="q_unfreeze"
### BEGIN SOLUTION
answer_q_unfreeze = "D"
### END SOLUTION

# %% tests="q_unfreeze_tests" points=1
# One letter, "A", "B", "C" or "D".
tests.check("q_unfreeze")
### BEGIN HIDDEN TESTS
tests.grade("q_unfreeze")
### END HIDDEN TESTS

# %% [markdown]
# ## 7. LoRA
#
# LoRA (Hu et al. 2021) freezes a pretrained weight $W$ ($d_\text{out} \times d_\text{in}$) and learns
# a low-rank change beside it: two matrices $A$ ($r \times d_\text{in}$) and $B$ ($d_\text{out}
# \times r$) with $r$ small,
#
# $$y = W x + b + \frac{\alpha}{r}\, B A x.$$
#
# $B$ starts at **zero**, so at step 0 the model is exactly the pretrained one; $A$ starts with small
# random values (with both at zero no gradient would reach either). The factor $\alpha / r$ keeps the
# update's size from changing when you change $r$. After training, $W + \frac{\alpha}{r} B A$ is one
# matrix: **merging** gives a plain linear layer, with no extra cost at inference.
#
# ### Exercise 6 — `LoRALinear(base, r, alpha)`
# Wrap the `nn.Linear` `base`: keep it as `self.base` (the object itself) with its parameters frozen;
# `self.lora_A` an `nn.Parameter` of shape `(r, in_features)` with small random values (any: the tests
# set their own), `self.lora_B` an `nn.Parameter` of zeros `(out_features, r)`, both in the base's
# dtype and on its device; `self.scaling = alpha / r`. `forward(x)` returns
# `base(x) + scaling · x Aᵀ Bᵀ` for inputs of any leading shape. `merge()` returns a new plain
# `nn.Linear` (the base's dtype and device) with weight $W + \frac{\alpha}{r} B A$ and the base's bias
# (none when it has none), leaving the LoRA layer unchanged. Outputs are checked within $10^{-10}$ in
# float64 (at initialisation, against `base(x)` within $10^{-6}$).

# %% solution="LoRALinear"
class LoRALinear(nn.Module):
    """base(x) + (alpha / r) B A x around a frozen nn.Linear; B starts at zero."""

    def __init__(self, base, r, alpha):
        super().__init__()
        ### BEGIN SOLUTION
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        self.scaling = alpha / r
        w = base.weight
        self.lora_A = nn.Parameter(torch.randn(r, base.in_features, dtype=w.dtype, device=w.device)
                                   / base.in_features ** 0.5)
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, dtype=w.dtype, device=w.device))
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        return self.base(x) + self.scaling * F.linear(F.linear(x, self.lora_A), self.lora_B)
        ### END SOLUTION

    def merge(self):
        ### BEGIN SOLUTION
        base = self.base
        merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None,
                           device=base.weight.device, dtype=base.weight.dtype)
        with torch.no_grad():
            merged.weight.copy_(base.weight + self.scaling * self.lora_B @ self.lora_A)
            if base.bias is not None:
                merged.bias.copy_(base.bias)
        return merged
        ### END SOLUTION


# %% tests="LoRALinear_tests" points=3
# B = 0 and A random at the start, scaling alpha / r, only A and B train; merge() gives one nn.Linear, same outputs.
tests.check("LoRALinear")
### BEGIN HIDDEN TESTS
tests.grade("LoRALinear")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 7 — `add_lora(model, r, alpha)`
# In every block of `model.backbone.blocks`, replace the attention's two projections,
# `block.attn.c_attn` (queries, keys and values) and `block.attn.c_proj` (the output), by your
# `LoRALinear(layer, r, alpha)` around them. Afterwards only the LoRA matrices and `model.head` train;
# everything else is frozen. Return the number of trainable parameters (an `int`). The tests then
# draw every weight, the LoRA matrices included, and compare the model's outputs.

# %% solution="add_lora"
def add_lora(model, r, alpha):
    """LoRA on attn.c_attn and attn.c_proj of every block; only LoRA and the head train. Returns the count."""
    ### BEGIN SOLUTION
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.backbone.blocks:
        block.attn.c_attn = LoRALinear(block.attn.c_attn, r, alpha)
        block.attn.c_proj = LoRALinear(block.attn.c_proj, r, alpha)
    for p in model.head.parameters():
        p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
    ### END SOLUTION


# %% tests="add_lora_tests" points=2
# Run with the course's LoRALinear: both projections of every block wrapped; LoRA and the head train; unchanged outputs.
tests.check("add_lora")
### BEGIN HIDDEN TESTS
tests.grade("add_lora")
### END HIDDEN TESTS

# %% [markdown]
# **Question.** Why does $B$ start at zero rather than $A$ (or both)?
#
# * **A.** With $B = 0$ the wrapped model computes exactly the pretrained model at step 0, and $A$'s
#   random values still give $B$ a gradient, so training starts where pretraining ended.
# * **B.** So that the merged weight has a lower rank than $W$.
# * **C.** Because `merge()` cannot add a matrix whose entries are not zero.
# * **D.** It halves the number of trainable parameters.
#
# Set `answer_q_lora_b` to `"A"`, `"B"`, `"C"` or `"D"`.

# %% solution="q_lora_b"
### BEGIN SOLUTION
answer_q_lora_b = "A"
### END SOLUTION

# %% tests="q_lora_b_tests" points=1
# One letter, "A", "B", "C" or "D".
tests.check("q_lora_b")
### BEGIN HIDDEN TESTS
tests.grade("q_lora_b")
### END HIDDEN TESTS

# %% [markdown]
# ## 8. Prompting or fine-tuning? Measured
#
# Each run below copies the pretrained GPT, puts your `SequenceClassifier` on it with **mean**
# pooling, chooses what trains with your `freeze` or `add_lora`, and trains for `R.steps` steps of
# AdamW on `n` labelled examples (`finetune.fit_classifier`: cross-entropy on random batches of
# `R.batch_size`), then measures test accuracy. Why mean pooling: in a causal model the last
# position's state is built to predict the *next* character, and after a template's last words it
# holds little of the passage; the mean over every position keeps what each part of it said (at the
# `cpu` profile, last-token pooling left the genre task at chance in every setting; mean pooling
# lifted the pretrained network above the random one). The same network from **random initialisation**,
# all of it trained, shows what pretraining is worth. The legend gives each setting's trainable
# parameters and its wall time at the largest `n`.

# %%
def run(task, n, setting, pretrained=True):
    """Test accuracy, trainable parameters and seconds of one fine-tuning run on n labelled examples."""
    torch.manual_seed(rt.seed)
    net = copy.deepcopy(backbone) if pretrained else GPT(backbone.config).to(rt.device)
    model = SequenceClassifier(net, len(task.labels), "mean").to(rt.device)
    if setting == "LoRA":
        n_train = add_lora(model, R.lora_r, R.lora_alpha)
    else:
        n_train = freeze(model, {"head only": "head", "last block": "last", "all": "all"}[setting])
    train_set, test = task.train[:n], task.test
    idx, mask = finetune.encode_examples(tok, [t for t, _ in train_set], rt.device)
    lr = R.lr_head if setting in ("head only", "LoRA") else R.lr_full
    secs = finetune.fit_classifier(model, idx, mask, [y for _, y in train_set], R.steps, lr, R.batch_size, rt.seed)
    test_idx, test_mask = finetune.encode_examples(tok, [t for t, _ in test], rt.device)
    acc = finetune.accuracy(finetune.predict(model, test_idx, test_mask), [y for _, y in test])
    return acc, n_train, secs


SETTINGS = [("head only", True), ("last block", True), ("all", True), ("LoRA", True), ("all", False)]
curves, legend, table = {}, {}, {}
t0 = time.perf_counter()
for key, task in tasks.items():
    sizes = [n for n in R.curve_sizes if n <= len(task.train)]
    for setting, pretrained in SETTINGS:
        name = f"{'pretrained' if pretrained else 'random init'}, {setting}"
        points = []
        for n in sizes:
            acc, n_train, secs = run(task, n, setting, pretrained)
            points.append((n, acc))
        curves[key, name] = points
        legend[key, name] = f"{name}: {n_train:,} trainable, {secs:.1f} s"
        table[key, name] = points[-1][1]
print(f"fine-tuning runs: {time.perf_counter() - t0:.0f} s")
for key, task in tasks.items():      # the curves' points, to read off the labels pretraining saves
    rows = {setting: points for (k, setting), points in curves.items() if k == key}
    print(f"{task.name}, test accuracy with n labelled examples:")
    print(f"  {'n =':30}" + "".join(f"{n:>7}" for n, _ in next(iter(rows.values()))))
    for setting, points in rows.items():
        print(f"  {setting:30}" + "".join(f"{a:7.1%}" for _, a in points))
fig, axes = plt.subplots(1, 2, figsize=(14, 4.5))
for ax, (key, task) in zip(axes, tasks.items()):
    finetune.plot_curves({legend[k]: v for k, v in curves.items() if k[0] == key}, task.majority()[1],
                         f"{task.name} (profile {P.name})", ax=ax)
plt.show()

# %% [markdown]
# The two tasks side by side: zero-shot (section 4) against fine-tuning at the largest number of
# labelled examples.

# %%
print(f"{'':18}{'majority':>9}{'zero-shot':>10}{'per token':>10}{'calibrated':>11}{'head':>7}{'last':>7}"
      f"{'all':>7}{'LoRA':>7}{'random':>8}")
for key, task in tasks.items():
    z = zero_shot[key]
    ft = [table[key, f"pretrained, {s}"] for s in ("head only", "last block", "all", "LoRA")]
    print(f"{task.name:18}{task.majority()[1]:9.1%}{z['plain']:10.1%}{z['per token']:10.1%}{z['calibrated']:11.1%}"
          + "".join(f"{a:7.1%}" for a in ft) + f"{table[key, 'random init, all']:8.1%}")

# %% [markdown]
# Read the table and the curves with the profile in mind: under `tiny` the model is barely trained
# and every number is noise. Where zero-shot beats the majority class, the pretraining text held the
# task; where it does not, only labelled examples help, and the gap between the pretrained and the
# random-init curves is what pretraining saves.
#
# What the `cpu` profile measured (05's model after its own `cpu` run, one seed; a test set of 165 or
# 180 examples has a standard error of about 3.5 points): zero-shot stayed at the majority class on
# both tasks (30.3 % and 33.3 %; calibrated 29.1 % and 31.7 %): a model of 0.8 million parameters
# that reads 64 characters has not learnt who speaks after whom well enough to be asked. Fine-tuning
# did better, most clearly on genre: the pretrained network trained whole reached 40.0 % from 32
# labelled examples, LoRA 45.6 %, where the same network from random initialisation stayed at
# 33.3 % even with 512: pretraining saved at least sixteen times the labels there. LoRA trained 1.5 %
# of the parameters and landed on either side of training everything (genre at 512: 43.9 % against
# 37.8 %; who speaks next at 128: 26.1 % against 33.3 %), differences the size of the noise. The
# prompting half of the lesson needs a larger model than a laptop trains in minutes: the `gpu`
# profile's.
#
# LoRA's trainable share of the network:

# %%
probe = SequenceClassifier(copy.deepcopy(backbone), 3)
n_lora = add_lora(probe, R.lora_r, R.lora_alpha)
n_all = sum(p.numel() for p in probe.parameters())
print(f"LoRA r = {R.lora_r}: {n_lora:,} of {n_all:,} parameters train ({n_lora / n_all:.1%}, the head included)")

# %% [markdown] answer="q_curve" points=3
# **Question (free text).** From your curves and table: on which task does prompting work, and why
# there? How many labelled examples does the pretrained network need to reach the accuracy that the
# random-init network reaches with the most examples (or does it never get there)? How close does
# LoRA come to training everything, for what share of the parameters? Quote your own numbers and
# your profile.
#
# ### BEGIN SOLUTION
# Prompting can only work on who-speaks-next: the pretraining text holds that task (every speech
# follows its speaker's heading, and Othello is a training play), so the verbalisers' probabilities
# can carry the answer, and calibration removes the model's preference for the most frequent names
# (at `cpu` it did not: the model is too small, and a good answer says so from its table). On
# the genre task no text ever names the genre, so zero-shot stays at the majority class or below
# whatever the correction. A good answer reads off its own table: the zero-shot accuracies against
# the majority baseline on each task; on the learning curve, the smallest n at which a pretrained
# setting matches the random-init network's best accuracy (the labels pretraining saves); LoRA's
# accuracy against "all" at the largest n, and its trainable share printed above. It also says
# which numbers are noise: one seed, under two hundred test examples (a standard error of about 3.5
# points), and the tiny profile's numbers mean nothing.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You scored continuations with an exact boundary and padding that changes nothing, classified by
# word prediction with and without calibration, put a pooled classifier on the pretrained GPT,
# chose what trains, and wrote LoRA with its merge. Notebook 12 goes on from here: instruction
# tuning, and what a model memorises.

# %%
print(f"the whole notebook: {time.perf_counter() - NOTEBOOK_START:.0f} s at profile {P.name}")
