# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 07 · Decoding: greedy, sampling and its filters, beam search, and a KV cache
#
# **What you will build.** Everything that turns a trained language model into text. A model
# gives a score to every word of the vocabulary after a prefix; *decoding* decides which word comes
# next. You will write the **temperature**, three **filters** that remove unlikely words (top-k,
# top-p and epsilon), a **sampler** and **greedy** choice, a generation loop that takes any list of
# filters, **beam search**, and a **KV cache** that makes each new token cost one position of work
# instead of the whole context. Then you will look at what each method writes, measure how diverse
# and how likely its outputs are, and time the cache.
#
# **Prerequisites.** Notebook 05 (the GPT and its sampler; its trained model is loaded here) and
# the lectures on sequence generation (ancestral sampling, temperature, greedy and beam search,
# top-k / top-p sampling).
#
# **Time.** About 90 minutes of work; about a minute of computing on a laptop CPU when notebook
# 05's `cpu` model is in the course cache (without it the notebook first trains one, a few minutes
# more); seconds under the autograder. Measured figures:
# [07_decoding](../docs/notebooks.md#07_decoding).
#
# **How the checks work.** Cells marked `# YOUR CODE HERE` are yours; the cell after each one
# checks your answer and says what looks wrong, and the autograder runs hidden tests of the same
# rules. Write the decoding yourself: the course's answers (`lmcourse.reference.decoding`) and
# 05's sampling loop (`lmcourse.nn.sampling`) are absent while the autograder runs, and
# `transformers`' generation code scores 0 under any name. Where a test needs one of your earlier
# answers it uses the course's version, so one mistake costs once. Filters take logits and return
# logits: same shape, same **dtype**, same **device**, `-inf` where a word is removed; inputs are
# never changed in place. Every rule in one place (threads, the course's files, TorchScript,
# questions): [How the checks work](../docs/notebooks.md#how-the-checks-work).

# %% locked="setup"
import math
import time

import matplotlib.pyplot as plt
import torch

import lmcourse
import lmcourse.marking
from lmcourse.data import data_dir, encode_split, load_shakespeare
from lmcourse.nn import GPT, GPTConfig, load_gpt, save_gpt
from lmcourse.runtime import is_autograding
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, train

_notebook_start = time.perf_counter()
rt = lmcourse.setup(seed=0)
P = rt.profile
torch.jit._state.disable()  # TorchScript off: torch.jit.script / trace return plain Python, which the tests can see
tests = lmcourse.marking.Exam("07_decoding", globals())   # the test cells below: tests.check("top_k_filter")

# %% [markdown]
# ## 1. The model to decode from
#
# Notebook 05 saved its trained GPT to the course cache. Here it comes back as the reference
# `lmcourse.nn.GPT` (the same attribute names as yours), with the character vocabulary it was
# trained with. If the checkpoint is not there (you have not run 05 with this profile), the cell
# trains one the way 05 does, with this profile's sizes and a shorter run, and says so. Under the
# autograder it always trains the tiny one (a few seconds) and writes nothing to the cache.

# %%
checkpoint = data_dir() / "checkpoints" / f"05_gpt_{P.name}.pt"
if checkpoint.exists() and not is_autograding():
    model, extra = load_gpt(checkpoint, rt.device)
    tok = CharTokenizer(extra["vocabulary"])
    print(f"loaded notebook 05's model from {checkpoint} (validation loss {extra.get('val_loss', float('nan')):.3f})")
else:
    corpus = load_shakespeare()
    tok = CharTokenizer.from_text(corpus.text("train"))
    train_ids, val_ids = encode_split(corpus, "train", tok), encode_split(corpus, "val", tok)
    torch.manual_seed(rt.seed)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=P.block_size, n_layer=P.n_layer,
                          n_head=P.n_head, n_embd=P.n_embd)).to(rt.device)
    steps = P.train_steps // 3 if P.name == "cpu" else P.train_steps
    cfg = TrainConfig.from_profile(P, steps=steps, lr=1e-3 if P.name == "gpu" else 5e-3, weight_decay=0.1,
                                   warmup_steps=max(1, steps // 20), seed=rt.seed, quiet=True)
    _t = time.perf_counter()
    hist = train(model, train_ids, val_ids, cfg)
    model.eval()
    print(f"no checkpoint from notebook 05 at {checkpoint}: trained one here, {steps} steps in "
          f"{time.perf_counter() - _t:.0f} s, validation loss {hist.final_val_loss:.3f}")
    if not is_autograding():
        save_gpt(model, checkpoint, vocabulary=list(tok.itos), profile=P.name, val_loss=hist.final_val_loss,
                 steps=steps)
        print(f"saved to {checkpoint}")
print(model.config)


def encode(text):
    """A (1, T) tensor of ids on the model's device."""
    return torch.tensor([tok.encode(text)], device=rt.device)


prompt_text = "\n\nBRUTUS.\nI "
prompt = encode(prompt_text)
with torch.no_grad():
    next_logits = model(prompt)[0][0, -1].float().cpu()  # (V,): the scores s(w) of every next character

# %% [markdown]
# ## 2. From scores to the next word: temperature, sampling, greedy
#
# The model's last position gives a score $s(w)$ to every word $w$ of the vocabulary (the logits).
# **Ancestral sampling** draws the next word from the distribution they define, and a
# **temperature** $\tau > 0$ reshapes it first:
# $$p(x_i = w \mid x_1, \dots, x_{i-1}) = \frac{\exp(s(w)/\tau)}{\sum_{w'} \exp(s(w')/\tau)} .$$
# $\tau = 1$ is the model's own distribution; $\tau < 1$ sharpens it (as $\tau \to 0$ all the mass
# goes to the most likely word, greedy choice); $\tau > 1$ flattens it towards uniform. The
# temperature divides the *scores*, before the softmax.
#
# Then the next word is picked from those (reshaped) logits in one of two ways: **sample** it from
# their softmax, or take the **most likely** one, $x_i = \arg\max_{w} p(w \mid x_1, \dots, x_{i-1})$
# (greedy decoding, an estimate of the most likely sequence made one word at a time).
#
# ### Exercise 1 — `apply_temperature`, `sample_next` and `greedy_next` (3 points)
# The three steps from scores to a word, in one cell:
#
# * `apply_temperature(logits, tau)`: return `logits / tau`, for logits of any shape (`(V,)`,
#   `(B, V)`, ...): the scores, not probabilities. Same shape, dtype and device; do not change
#   `logits` in place (return a new tensor). Entries that are `-inf` (removed words) stay `-inf`.
# * `sample_next(logits, generator=None)`: logits `(B, V)` (possibly with `-inf`); return `(B,)`
#   ids (`torch.long`), one per row, drawn from the row's softmax with `generator` (e.g.
#   `torch.multinomial(probs, 1, generator=generator)`), so that the same seed gives the same ids
#   and successive calls with one generator go on along its stream (do not reseed anything from it);
# * `greedy_next(logits)`: logits `(B, V)`; return the `(B,)` ids of each row's largest logit.
#
# Sampling at temperature $\tau$ is then `sample_next(apply_temperature(logits, tau), generator)`.

# %% solution="next_token"
def apply_temperature(logits, tau):
    """Scores divided by the temperature tau > 0."""
    ### BEGIN SOLUTION
    return logits / tau
    ### END SOLUTION


def sample_next(logits, generator=None):
    """One id per row of logits (B, V), drawn from softmax(logits) with generator: (B,)."""
    ### BEGIN SOLUTION
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    ### END SOLUTION


def greedy_next(logits):
    """The id of the largest logit of each row of logits (B, V): (B,)."""
    ### BEGIN SOLUTION
    return logits.argmax(dim=-1)
    ### END SOLUTION


# %% tests="next_token_tests" points=3
# apply_temperature divides the scores by tau (same shape, dtype, device; the logits given unchanged);
# sample_next draws (B,) ids from softmax(logits) with the generator given; greedy_next takes each row's argmax.
tests.check("next_token")
### BEGIN HIDDEN TESTS
tests.grade("next_token")
### END HIDDEN TESTS

# %% [markdown]
# What temperature does to the next-character distribution after the prompt (the 12 most likely
# characters at $\tau = 1$):

# %%
def show_char(c):
    return {"\n": "\\n", " ": "␣"}.get(c, c)


top12 = next_logits.topk(12).indices
fig, axes = plt.subplots(1, 3, figsize=(12, 3), sharey=True)
for ax, tau in zip(axes, (0.5, 1.0, 2.0)):
    probs = torch.softmax(apply_temperature(next_logits, tau), dim=-1)
    ax.bar(range(12), probs[top12].numpy(), color="tab:blue")
    ax.set_xticks(range(12), [show_char(tok.itos[i]) for i in top12.tolist()])
    ax.set_title(f"τ = {tau}: top 12 hold {probs[top12].sum():.0%}")
axes[0].set_ylabel("probability")
fig.suptitle(f"next character after {prompt_text!r}")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 3. Filters: top-k, top-p, epsilon
#
# Sampling from the full distribution sometimes picks a word from its long tail of unlikely ones,
# and one such word can derail the rest of the text. The filters of the lecture trade diversity for
# coherence by **masking out** low-probability words before sampling (their logit becomes $-\infty$,
# so the softmax gives them probability 0 and renormalises the rest):
#
# * **top-k**: keep the $k$ words with the largest scores. With $k = 1$ it is greedy decoding;
# * **top-p** (nucleus): keep the smallest set $V^{(p)}$ of most likely words with
#   $\sum_{w \in V^{(p)}} p(w \mid x_{<i}) \ge p$: sort the probabilities in decreasing order, add
#   them up, and stop at the first word that makes the sum reach $p$ (that word is kept);
# * **epsilon**: keep the words whose probability is at least $\varepsilon$.
#
# A filter takes logits and returns logits, so filters compose, e.g.
# `top_p_filter(top_k_filter(apply_temperature(s, 0.8), 20), 0.9)`; and each filter sees the
# probabilities of the logits it is given (the softmax of logits that may already hold `-inf`).
# None may remove every word: **the most likely word is always kept**. All of them work on one
# row `(V,)` or a batch `(B, V)`, each row on its own (the last dimension is the vocabulary).
#
# ### Exercise 2 — `top_k_filter` (2 points)
# Write `top_k_filter(logits, k)`: keep the `k` largest logits of each row, set the others to
# `-inf`. Words tied with the k-th largest are kept too (`logits < kth_largest` are removed). A
# `k` larger than the vocabulary keeps everything. Return logits (not probabilities).

# %% solution="top_k_filter"
def top_k_filter(logits, k):
    """-inf everywhere but the k largest logits of each row."""
    ### BEGIN SOLUTION
    k = min(k, logits.size(-1))
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)
    return logits.masked_fill(logits < kth, float("-inf"))
    ### END SOLUTION


# %% tests="top_k_filter_tests" points=2
# The k largest logits of each row kept (ties with the k-th too), -inf elsewhere; k > V keeps every word.
tests.check("top_k_filter")
### BEGIN HIDDEN TESTS
tests.grade("top_k_filter")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3 — `top_p_filter` (2 points)
# Write `top_p_filter(logits, p)` for `0 < p <= 1`: per row, turn the logits into probabilities
# (softmax), sort them in **decreasing** order, and keep the words up to and including the first
# one at which the running sum reaches `p`. Equivalently: a word is removed when the words ranked
# above it already hold at least `p`. The most likely word is always kept. Return the logits with
# `-inf` at the removed words, in the original order.

# %% solution="top_p_filter"
def top_p_filter(logits, p):
    """Keep the smallest set of most likely words whose probability reaches p."""
    ### BEGIN SOLUTION
    sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
    probs = torch.softmax(sorted_logits, dim=-1)
    above = torch.cumsum(probs, dim=-1) - probs  # mass of the words ranked above each word
    drop_sorted = above >= p
    drop_sorted[..., 0] = False  # the most likely word stays
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return logits.masked_fill(drop, float("-inf"))
    ### END SOLUTION


# %% tests="top_p_filter_tests" points=2
# Per row, the most likely words kept until their probabilities reach p (that word kept), -inf elsewhere.
tests.check("top_p_filter")
### BEGIN HIDDEN TESTS
tests.grade("top_p_filter")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4 — `epsilon_filter` (1 point)
# Write `epsilon_filter(logits, eps)`: per row, remove the words whose probability (softmax of
# the row) is below `eps`; the most likely word is kept whatever `eps` is.

# %% solution="epsilon_filter"
def epsilon_filter(logits, eps):
    """-inf at the words whose probability is below eps (but never at the most likely one)."""
    ### BEGIN SOLUTION
    probs = torch.softmax(logits, dim=-1)
    drop = probs < eps
    drop = drop.scatter(-1, logits.argmax(dim=-1, keepdim=True), False)
    return logits.masked_fill(drop, float("-inf"))
    ### END SOLUTION


# %% tests="epsilon_filter_tests" points=1
# Per row, the words whose probability is below eps removed; each row keeps its most likely word.
tests.check("epsilon_filter")
### BEGIN HIDDEN TESTS
tests.grade("epsilon_filter")
### END HIDDEN TESTS

# %% [markdown]
# What top-k and top-p keep on a **peaked** distribution (the model is sure of the next character)
# and on a **flat** one (it is not), from real contexts: top-k keeps the same number of characters
# on both; top-p keeps few on the peaked one and many on the flat one — the lecture's argument for
# top-p. (In our run at `cpu`: top-k 5 on both, 99 % and 42 % of the mass; top-p 1 character and
# 19.)

# %%
with torch.no_grad():
    _ids = encode("\n\nBRUTUS.\nI will not do it, for I am a man of Rome and honour.")
    _all_logits = model(_ids[:, -model.config.block_size:])[0][0].float().cpu()  # (T, V)
_entropy = -(torch.softmax(_all_logits, -1) * torch.log_softmax(_all_logits, -1)).sum(-1)
peaked, flat = _all_logits[_entropy.argmin()], _all_logits[_entropy.argmax()]
fig, axes = plt.subplots(2, 2, figsize=(12, 5), sharey="row")
for row, (label, s) in enumerate((("peaked", peaked), ("flat", flat))):
    probs = torch.softmax(s, -1)
    order = probs.argsort(descending=True)[:20]
    for col, (name, kept) in enumerate((("top-k, k = 5", top_k_filter(s, 5)),
                                        ("top-p, p = 0.9", top_p_filter(s, 0.9)))):
        ax = axes[row, col]
        keep = torch.isfinite(kept[order])
        ax.bar(range(20), probs[order].numpy(), color=["tab:blue" if k else "lightgray" for k in keep.tolist()])
        ax.set_xticks(range(20), [show_char(tok.itos[i]) for i in order.tolist()])
        n_kept = int(torch.isfinite(kept).sum())
        kept_words = f"{n_kept} character{'' if n_kept == 1 else 's'}"
        share = probs[torch.isfinite(kept)].sum()
        # two lines: on one, the titles of neighbouring panels run into each other
        ax.set_title(f"{label} (entropy {_entropy.min() if row == 0 else _entropy.max():.2f} nats):\n{name} keeps "
                     f"{kept_words}, {share:.0%} of the mass", fontsize=10)
        print(f"{label:>6} distribution, {name}: {kept_words} kept, {share:.0%} of the mass")
axes[0, 0].set_ylabel("probability")
axes[1, 0].set_ylabel("probability")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 4. A generation loop
#
# ### Exercise 5 — `generate` (2 points)
# Write `generate(model, prompt, max_new_tokens, filters=(), generator=None)`, ancestral sampling
# with any list of filters:
#
# * `prompt` is `(B, T)`; return `(B, T + max_new_tokens)`: the prompt followed by the new ids,
#   without changing `prompt`;
# * at each step call `model(context)` with `context` the last `model.config.block_size` ids (all of
#   them when there are fewer); it returns `(logits, loss)` with logits `(B, T, V)`; the next word is
#   predicted by the **last** position;
# * apply each filter of `filters` in turn to those `(B, V)` logits (each is a function of the
#   logits alone, e.g. `lambda s: top_k_filter(s, 10)`), then draw the next ids with your
#   `sample_next(logits, generator)`;
# * no gradients: work under `torch.no_grad()`.
#
# Greedy decoding is then `filters=[lambda s: top_k_filter(s, 1)]`.

# %% solution="generate"
def generate(model, prompt, max_new_tokens, filters=(), generator=None):
    """Sample max_new_tokens ids after prompt (B, T), filtering the logits at every step."""
    ### BEGIN SOLUTION
    block_size = model.config.block_size
    idx = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, _ = model(idx[:, -block_size:])  # (B, T, V)
            last = logits[:, -1, :]  # (B, V)
            for f in filters:
                last = f(last)
            idx = torch.cat([idx, sample_next(last, generator)[:, None]], dim=1)
    return idx
    ### END SOLUTION


# %% tests="generate_tests" points=2
# Your generate runs with the reference sample_next (and top_k_filter), so a slip there costs its own points only.
tests.check("generate")
### BEGIN HIDDEN TESTS
tests.grade("generate")
### END HIDDEN TESTS

# %% [markdown]
# Greedy decoding against sampling on the trained model (the same prompt; the sampled lines use
# one generator, so the cell gives the same text every time):

# %%
n_new = 40 if P.name == "tiny" else 160
sample_gen = torch.Generator(device=rt.device).manual_seed(rt.seed)  # on the device where sampling runs
greedy_ids = generate(model, prompt, n_new, filters=[lambda s: top_k_filter(s, 1)], generator=sample_gen)
greedy_text = tok.decode(greedy_ids[0, prompt.size(1):].tolist())
print("--- greedy\n" + prompt_text + greedy_text)
for name, filters in (("tau = 1", []), ("tau = 0.8, top-p 0.9", [lambda s: apply_temperature(s, 0.8),
                                                                  lambda s: top_p_filter(s, 0.9)])):
    ids = generate(model, prompt, n_new, filters=filters, generator=sample_gen)
    sampled_text = tok.decode(ids[0, prompt.size(1):].tolist())
    print(f"--- sampled, {name}\n" + prompt_text + sampled_text)


def repeated_share(text, n=8):
    """Share of the text's n-character windows that occurred earlier in it."""
    grams = [text[i:i + n] for i in range(len(text) - n + 1)]
    return sum(g in set(grams[:i]) for i, g in enumerate(grams)) / max(1, len(grams))


print(f"\nrepetition: {repeated_share(greedy_text):.0%} of greedy's 8-character windows occurred earlier in it")

# %% [markdown]
# ## 5. Beam search
#
# Greedy decoding commits to the best *word* at each step; the most likely *sequence* may start
# with a word that is not the best on its own. Beam search keeps the $b$ (`beam_size`) best partial
# sequences instead of one. Each partial sequence $y_{1..t}$ has a score, its log-probability,
# $$\text{score}(y_{1..t}) = \sum_{i=1}^{t} \log p(y_i \mid x, y_{<i}),$$
# a *sum* of logs (a product of probabilities underflows to 0 after a few hundred words). At each
# step every live beam is extended by **every** word of the vocabulary ($b \cdot |V|$ candidates,
# each scored by its parent's score plus the new word's log-probability), and the $b$ best
# candidates become the new beams. A candidate that ends in the end token `eos_id` is
# **finished**: it is set aside and never extended, and the beam narrows by one. When
# `max_new_tokens` steps are done, the live beams are finished as they are. Finished hypotheses
# of different lengths are compared by
# $$\frac{\text{score}}{n^{\alpha}}$$
# with $n$ the number of new words (the end token included) and $\alpha$ the `length_penalty`
# ($\alpha = 0$: plain sum, which favours short hypotheses; $\alpha = 1$: mean log-probability per
# word). With $b = 1$ beam search is greedy decoding.
#
# ### Exercise 6 — `beam_search` (4 points)
# Write `beam_search(model, prompt, beam_size, max_new_tokens, length_penalty=1.0, eos_id=None)`:
#
# * `prompt`: a 1-D tensor of ids `(T,)`; the model is called as in `generate` (ids `(nb, T')`,
#   the last `block_size` of them, returning `(logits, loss)`);
# * **one model call per step for all the live beams together**, as a batch `(nb, T')` — not a
#   Python loop over beams;
# * log-probabilities from `log_softmax` of the last position's logits; compute the scores in
#   float64 (`.double()`) whatever the model's dtype;
# * at the first step there is one beam, the prompt; at each step keep the `beam_size - f` best
#   candidates over all beams and words (`torch.topk` of the flattened `(nb, V)` scores), `f` being
#   the number of hypotheses finished so far; those that end in `eos_id` are finished, the others
#   are the next step's beams;
# * stop when `max_new_tokens` steps are done or no beam is left; with `max_new_tokens = 0`
#   nothing is scored (and $n = 0$ would divide by zero): return `[(prompt, 0.0)]`;
# * return a list of at most `beam_size` pairs `(ids, score)` sorted best first: `ids` a 1-D tensor,
#   the prompt followed by the new words, and `score` a Python float, the sum of log-probabilities
#   divided by `n ** length_penalty`.

# %% solution="beam_search"
def beam_search(model, prompt, beam_size, max_new_tokens, length_penalty=1.0, eos_id=None):
    """The beam_size best hypotheses after prompt (T,), best first: [(ids, score), ...]."""
    ### BEGIN SOLUTION
    block_size = model.config.block_size
    beams = prompt.reshape(1, -1)  # (nb, T)
    scores = torch.zeros(1, dtype=torch.float64, device=prompt.device)  # (nb,)
    finished = []
    width = beam_size
    n = 0
    with torch.no_grad():
        for step in range(max_new_tokens):
            logits, _ = model(beams[:, -block_size:])  # (nb, T, V)
            logp = torch.log_softmax(logits[:, -1, :].double(), dim=-1)  # (nb, V)
            cand = scores[:, None] + logp  # (nb, V)
            V = cand.size(1)
            top, flat = torch.topk(cand.reshape(-1), min(width, cand.numel()))
            parent, word = flat // V, flat % V
            beams = torch.cat([beams[parent], word[:, None]], dim=1)
            scores = top
            n = step + 1
            if eos_id is not None:
                done = word == eos_id
                for ids, sc in zip(beams[done], scores[done].tolist()):
                    finished.append((ids, sc / n ** length_penalty))
                width -= int(done.sum())
                beams, scores = beams[~done], scores[~done]
            if width == 0:
                break
    for ids, sc in zip(beams, scores.tolist()):
        if n > 0:
            finished.append((ids, sc / n ** length_penalty))
    if max_new_tokens == 0:
        return [(prompt.reshape(-1), 0.0)]
    finished.sort(key=lambda pair: -pair[1])
    return finished[:beam_size]
    ### END SOLUTION


# %% tests="beam_search_tests" points=4
# One batched model call per step, log-probabilities summed in float64, finished hypotheses narrow the beam.
tests.check("beam_search")
### BEGIN HIDDEN TESTS
tests.grade("beam_search")
### END HIDDEN TESTS

# %% [markdown]
# On the trained model: greedy ($b = 1$) against wider beams, and the summed log-probability of
# what each finds. Wider beams usually find sequences the model thinks more likely (in our run at
# `cpu`: −56.5, −43.2 and −42.2 for beam sizes 1, 4 and 8, the first widening gaining most), and
# they can be just as repetitive:

# %%
n_beam = 24 if P.name == "tiny" else 60
beam_rows = []
for b in (1, 4, 8):
    _t = time.perf_counter()
    ids, score = beam_search(model, prompt[0], b, n_beam, length_penalty=1.0)[0]
    text = tok.decode(ids[prompt.size(1):].tolist())
    beam_rows.append((b, score * n_beam, time.perf_counter() - _t, text))
    print(f"--- beam size {b}: log-probability {score * n_beam:.2f}, {beam_rows[-1][2]:.2f} s\n{prompt_text}{text}")
print(f"\nside by side, the first {n_beam} characters after {prompt_text!r} (line breaks as /):")
for name, text in (("greedy", greedy_text), ("beam 4", beam_rows[1][3]), ("sampled, τ 0.8, top-p 0.9", sampled_text)):
    print(f"{name:>26} | {text[:n_beam].replace(chr(10), ' / ')}")

# %% [markdown]
# ## 6. Diversity against likelihood
#
# Each method trades how *likely* its text is under the model against how *diverse* it is. Two
# numbers per method, over several continuations of the prompt:
#
# * **mean log-probability** per character of the continuations, under the model at $\tau = 1$
#   (higher: the model finds the text more typical of what it learned);
# * **distinct-2**: the share of distinct character bigrams among all the bigrams of a
#   continuation, averaged over the continuations (1: no bigram repeats within a text; greedy and
#   beam search give the same continuation every time, so theirs is that of one text).

# %%
def mean_logprob(ids, n_prompt):
    """Mean log-probability per new id of each row of ids (B, T) under the model (T <= block_size)."""
    with torch.no_grad():
        logp = torch.log_softmax(model(ids[:, :-1])[0].double(), dim=-1)
        tok_lp = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)[:, n_prompt - 1:]  # (B, n_new)
    return tok_lp.mean(-1)


def distinct_n(rows, n=2):
    """Distinct n-grams over all n-grams of each row, averaged over the rows."""
    shares = []
    for r in rows:
        grams = [tuple(r[i:i + n]) for i in range(len(r) - n + 1)]
        shares.append(len(set(grams)) / max(1, len(grams)))
    return sum(shares) / len(shares)


n_cont = model.config.block_size - prompt.size(1)  # continuations that fit one window
n_samples = 4 if P.name == "tiny" else 16
methods = {"greedy": [lambda s: top_k_filter(s, 1)]}
methods |= {f"τ = {t}": [lambda s, t=t: apply_temperature(s, t)] for t in (0.5, 0.8, 1.0, 1.3)}
methods |= {f"top-k {k}": [lambda s, k=k: top_k_filter(s, k)] for k in (3, 10)}
methods |= {f"top-p {p}": [lambda s, p=p: top_p_filter(s, p)] for p in (0.5, 0.9)}
methods |= {"epsilon 0.02": [lambda s: epsilon_filter(s, 0.02)]}
points = {}
gen = torch.Generator(device=rt.device).manual_seed(rt.seed)
for name, filters in methods.items():
    ids = generate(model, prompt.expand(n_samples, -1), n_cont, filters=filters, generator=gen)
    points[name] = (distinct_n(ids[:, prompt.size(1):].tolist()), float(mean_logprob(ids, prompt.size(1)).mean()))
beam_ids = beam_search(model, prompt[0], 4, n_cont)[0][0][None]
points["beam 4"] = (distinct_n(beam_ids[:, prompt.size(1):].tolist()), float(mean_logprob(beam_ids, prompt.size(1))))
fig, ax = plt.subplots(figsize=(7, 4.5))
# Several methods land close together: a legend, one marker each, stays readable where labels would collide.
# Red is kept for the two deterministic methods; the sampled ones take the other colours in turn.
markers = "osDv^<>pP*XdH"
sampled_colours = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
                   "tab:olive", "tab:cyan"]
for i, (name, (d, lp)) in enumerate(points.items()):
    deterministic = name in ("greedy", "beam 4")
    colour = "tab:red" if deterministic else sampled_colours[i % len(sampled_colours)]
    ax.scatter(d, lp, marker=markers[i % len(markers)], s=50, label=name, color=colour)
ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
ax.set_xlabel("distinct-2 of the continuations (diversity)")
ax.set_ylabel("mean log-probability per character (likelihood)")
ax.set_title(f"{n_samples} continuations of {n_cont} characters per method ({P.name})")
plt.show()
for name, (d, lp) in points.items():
    print(f"{name:>13}: distinct-2 {d:.2f}, mean log-probability {lp:.2f}")

# %% [markdown]
# ## 7. A KV cache
#
# `generate` runs the model on the whole window at every step, so the $t$-th new word costs work
# for all $t$ positions before it, although their keys and values have not changed: causal
# attention means that position $j$'s queries, keys and values depend only on the words up to
# $j$. A **KV cache** keeps, for every block, the keys $K$ and values $V$ of the positions seen so
# far; a new word then needs its own query, key and value only, and attends over the cached keys
# and values plus its own:
# $$q_t = x_t W_q,\quad K = \begin{bmatrix} K_{\text{cache}} \\ x_t W_k \end{bmatrix},\quad
#   V = \begin{bmatrix} V_{\text{cache}} \\ x_t W_v \end{bmatrix},\quad
#   \text{out}_t = \mathrm{softmax}\!\Big(\frac{q_t K^\top}{\sqrt{d_k}}\Big) V .$$
# Two things change from the ordinary forward pass: the new words' **positions** start after the
# cached ones (position vector $p_{T_{\text{past}}}$, not $p_0$), and when several new words come
# at once, each attends to the cache and to the new words up to itself (a causal mask shifted by
# $T_{\text{past}}$).
#
# ### Exercise 7 — `cached_forward` (4 points)
# Write `cached_forward(model, idx, cache=None)` for a GPT with the attribute names of notebook
# 05 (`model.wte`, `model.wpe`, `model.drop`, `model.blocks`, `model.ln_f`, `model.lm_head`; each
# block pre-LN with `block.ln1`, `block.attn`, `block.ln2`, `block.mlp`, and the attention's
# `attn.c_attn` (the $W_q, W_k, W_v$ of all heads, `C -> 3C`), `attn.c_proj` ($W_O$),
# `attn.n_head`):
#
# * `idx`: the new ids `(B, T_new)`; `cache`: `None` (nothing seen yet) or a list with one pair
#   `(K, V)` per block, each `(B, n_head, T_past, C // n_head)`;
# * the new positions are `T_past, ..., T_past + T_new - 1`; raise a `ValueError` if
#   `T_past + T_new > block_size`;
# * per block: `h = block.ln1(x)`, `q, k, v = attn.c_attn(h).split(C, dim=2)`, split into heads
#   `(B, n_head, T_new, hs)`, append `k` and `v` to the block's cached ones (along the time axis),
#   attend (each new position sees every cached position and the new ones up to itself; a scale of
#   $1/\sqrt{hs}$), merge the heads, `x = x + attn.c_proj(y)`, then `x = x + block.mlp(block.ln2(x))`;
# * return `(logits, new_cache)`: logits `(B, T_new, V)` for the new positions only
#   (`model.lm_head(model.ln_f(x))`), and a **new** list of the blocks' `(K, V)`, now
#   `T_past + T_new` long; do not change the cache you were given (a caller may extend one cache in
#   several ways);
# * do not run the model's or the blocks' or the attention's own `forward` (that recomputes every
#   position: the tests refuse it); no gradients.
#
# The test runs a small float64 GPT and compares your logits with a full forward pass at every
# step, to 1e-10.

# %% solution="cached_forward"
def cached_forward(model, idx, cache=None):
    """Logits of the new ids idx (B, T_new) after the cached positions, and the extended cache."""
    ### BEGIN SOLUTION
    B, T = idx.shape
    past = cache[0][0].size(2) if cache else 0
    if past + T > model.config.block_size:
        raise ValueError(f"{past} cached + {T} new positions exceed block_size {model.config.block_size}")
    with torch.no_grad():
        pos = torch.arange(past, past + T, device=idx.device)  # (T,)
        x = model.drop(model.wte(idx) + model.wpe(pos))  # (B, T, C)
        C = x.size(-1)
        new_cache = []
        for i, block in enumerate(model.blocks):
            attn = block.attn
            nh = attn.n_head
            q, k, v = attn.c_attn(block.ln1(x)).split(C, dim=2)
            q = q.view(B, T, nh, C // nh).transpose(1, 2)  # (B, nh, T, hs)
            k = k.view(B, T, nh, C // nh).transpose(1, 2)
            v = v.view(B, T, nh, C // nh).transpose(1, 2)
            if past:
                k = torch.cat([cache[i][0], k], dim=2)  # (B, nh, past + T, hs)
                v = torch.cat([cache[i][1], v], dim=2)
            new_cache.append((k, v))
            att = q @ k.transpose(-2, -1) / math.sqrt(C // nh)  # (B, nh, T, past + T)
            allowed = torch.ones(T, past + T, dtype=torch.bool, device=idx.device).tril(diagonal=past)
            att = torch.softmax(att.masked_fill(~allowed, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + attn.c_proj(y)  # (B, T, C)
            x = x + block.mlp(block.ln2(x))  # (B, T, C)
        return model.lm_head(model.ln_f(x)), new_cache
    ### END SOLUTION


# %% tests="cached_forward_tests" points=4
# The test's small float64 GPT: your logits and cache against the reference's, to 1e-10, at every step.
tests.check("cached_forward")
### BEGIN HIDDEN TESTS
tests.grade("cached_forward")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 8 — `generate_cached` (2 points)
# Write `generate_cached(model, prompt, max_new_tokens, filters=(), generator=None)`: what
# `generate` does, with your `cached_forward`:
#
# * run `cached_forward` once on the window, the last `block_size` ids of the prompt (all of them
#   when there are fewer), then for each new id: take the last position's logits, apply the
#   filters, draw the id with `sample_next`, append it, and feed **only that id** to
#   `cached_forward` with the cache (no model call is needed after the last id is drawn);
# * the cache cannot grow past `block_size` positions (there are only `block_size` position
#   vectors, and every cached key was computed at its absolute position, so the cache cannot simply
#   drop its oldest entry). When it is full and a new id comes, **rebuild** it: run `cached_forward`
#   with no cache on the last `block_size // 2` ids (the new one included), and go on from there;
# * return `(B, T + max_new_tokens)` ids; no gradients.
#
# Each step's logits then equal a full forward pass over the ids the cache holds.

# %% solution="generate_cached"
def generate_cached(model, prompt, max_new_tokens, filters=(), generator=None):
    """generate with a KV cache: one new position of work per new id."""
    ### BEGIN SOLUTION
    block_size = model.config.block_size
    keep = max(1, block_size // 2)
    idx = prompt
    with torch.no_grad():
        logits, cache = cached_forward(model, idx[:, -block_size:], None)
        for step in range(max_new_tokens):
            last = logits[:, -1, :]
            for f in filters:
                last = f(last)
            nxt = sample_next(last, generator)  # (B,)
            idx = torch.cat([idx, nxt[:, None]], dim=1)
            if step == max_new_tokens - 1:
                break
            if cache[0][0].size(2) == block_size:  # full: rebuild from the last `keep` ids
                logits, cache = cached_forward(model, idx[:, -keep:], None)
            else:
                logits, cache = cached_forward(model, nxt[:, None], cache)
    return idx
    ### END SOLUTION


# %% tests="generate_cached_tests" points=2
# Your generate_cached runs with the reference cached_forward and sample_next, against the uncached generation.
tests.check("generate_cached")
### BEGIN HIDDEN TESTS
tests.grade("generate_cached")
### END HIDDEN TESTS

# %% [markdown]
# The cache against `generate`, which runs the model on the last `block_size` ids at every step
# (on the trained model, on this notebook's device, the better of two runs). Without the cache the
# *work* per new id grows with the window until the window is full; with it, the work per id stays
# about the same. Whether the *time* follows the work depends on the device: the cell says what it
# measured here (timings on a busy machine are noisy; the paragraph after it says why either
# outcome happens):

# %%
n_long = 32 if P.name == "tiny" else 256
timings = {}
for name, fn in (("no cache (generate)", generate), ("KV cache (generate_cached)", generate_cached)):
    steps, times = [], []
    for n in sorted({max(1, n_long // 8), n_long // 4, n_long // 2, n_long}):
        best = math.inf
        for _ in range(2):
            _t = time.perf_counter()
            fn(model, prompt[:, :1], n, generator=torch.Generator(device=rt.device).manual_seed(0))
            best = min(best, time.perf_counter() - _t)
        steps.append(n)
        times.append(best / n * 1000)
    timings[name] = (steps, times)
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, (steps, times) in timings.items():
    ax.plot(steps, times, marker="o", label=name)
ax.set_xlabel("new ids generated")
ax.set_ylabel("ms per new id")
ax.set_ylim(bottom=0)
ax.axvline(model.config.block_size, color="gray", ls=":", lw=0.8)
ax.legend()
ax.set_title(f"block_size {model.config.block_size} ({P.name}, {rt.threads} thread(s))")
plt.show()
for name, (steps, times) in timings.items():
    print(f"{name:>27}: " + ", ".join(f"{n} ids {ms:.2f} ms/id" for n, ms in zip(steps, times)))
_full_ms, _cache_ms = timings["no cache (generate)"][1][-1], timings["KV cache (generate_cached)"][1][-1]
_gain = _full_ms / _cache_ms
if _gain >= 1.1:
    _verdict = f"the cache was {_gain:.1f}x faster here"
elif _gain <= 1 / 1.1:
    _verdict = f"recomputing was {1 / _gain:.1f}x faster here (a step's fixed cost outweighs the saved work: see below)"
else:
    _verdict = f"about the same time here ({_gain:.2f}x): the steps are too small for the saved work to show"
print(f"on {rt.device}, {n_long} new ids: {_full_ms:.2f} ms per id without the cache, {_cache_ms:.2f} ms with "
      f"it: {_verdict}")

# %% [markdown]
# Either outcome can happen, and the printed line says which one this device gave. The cache always
# removes *work*: a new id costs one position through every block instead of the whole window. The
# *time* of a step is that work plus a fixed cost per operation: a forward pass is a few dozen small
# operations (embeddings, layer norms, matrix products, a softmax per block), each started from
# Python, and on a GPU each one a kernel launch that costs a few microseconds whatever its size.
#
# * **Where the work dominates, the cache wins**, and more so the longer the window and the wider
#   the model: on a CPU, where a matrix product's time grows with its rows. With the `cpu` profile's
#   small model (64 positions, 128 wide) on a busy 2-core machine this cell measured 1.3× and 2.0× at
#   256 ids, and `bench/bench_decode.py` (which compares the same windows) 2.5× and 2.8×; with the
#   `gpu` profile's sizes (256 positions, 384 wide, 6 layers) on the same CPU, 6.6×.
# * **Where the launches dominate, it need not**: on a GPU a small model's step is *launch-bound*, its
#   kernels finish faster than Python can start the next, so a window of 64 or 256 positions takes
#   about as long as one position, and the cache's own operations (concatenating every block's keys
#   and values, a longer list of small kernels) can make each step slower. One run with the `gpu`
#   profile on an H100 measured the cache at 0.7× the speed of recomputing.
#
# What helps there is fewer launches, not less arithmetic: a cache allocated once at its full length
# (`block_size` slots, the unused ones masked) gives every step the same shapes, so the whole step can
# be recorded once as a CUDA graph and replayed with one launch (`lmcourse.nn.static_cache` and
# `bench/bench_decode.py --vs-transformers` do this; the generated ids are the same as
# `generate_cached`'s).
#
# ## 8. Questions
#
# Answer each multiple-choice question by setting the variable to one letter, e.g.
# `answer_q1 = "A"`.
#
# **Q1.** Which filter keeps the same **number** of words whatever the shape of the distribution?
#
# * A. top-p (nucleus) filtering.
# * B. a temperature below 1.
# * C. epsilon filtering.
# * D. top-k filtering.

# %% solution="q1"
# Your answer, one letter: answer_q1 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q1 = "D"
### END SOLUTION

# %% tests="q1_tests" points=1
# One letter, in quotes.
tests.check("q1")
### BEGIN HIDDEN TESTS
tests.grade("q1")
### END HIDDEN TESTS

# %% [markdown]
# **Q2.** Beam search with `beam_size = 1` and greedy decoding (`top_k_filter(s, 1)`, then a draw)
#
# * A. give the same sequence, since both keep the single best extension at each step.
# * B. differ: beam search with one beam still compares all $|V|$ sequences at the end.
# * C. differ, because greedy decoding samples.
# * D. give the same sequence only when the length penalty is 0.

# %% solution="q2"
# Your answer, one letter: answer_q2 = "A", "B", "C" or "D"
### BEGIN SOLUTION
answer_q2 = "A"
### END SOLUTION

# %% tests="q2_tests" points=1
# One letter, in quotes.
tests.check("q2")
### BEGIN HIDDEN TESTS
tests.grade("q2")
### END HIDDEN TESTS

# %% [markdown]
# **Q3 (free text, graded by hand).** In three to five sentences: look at your scatter plot of
# section 6. Where do greedy decoding and beam search sit, and where does sampling at $\tau = 1$?
# Why is the text the model finds most likely not the text you would most like to read, and which
# setting would you pick for a chatbot that should be both coherent and varied?

# %% [markdown] answer="q3_free_text" points=2
# ### BEGIN SOLUTION
# Greedy decoding and beam search (the red markers) sit at the top left: the highest mean
# log-probability per character and the lowest distinct-2 (in our run at `cpu`: greedy 0.29 and
# −0.93, beam 4 0.35 and −0.69), because they repeat the same few high-probability phrases ("the
# shall the will the ...", "you are you have ..."). Sampling at τ = 1 sits near the other end (0.90
# and −1.67; only τ = 1.3 is further out): diverse text of low likelihood, since every so often it
# draws a character from the long tail and the following ones have to make sense of it. The filters
# and lower temperatures lie in between. The most likely text is generic and repetitive because a
# locally safe choice is always available and each one makes the next repetition more likely still;
# what people find natural is typical text, not the single most probable one. For a chatbot I would
# pick a filter between the two ends, e.g. top-p 0.9 (or a temperature a little below 1 combined
# with it): it cuts the tail where the model is sure and keeps many options where it is not.
# ### END SOLUTION

# %% [markdown]
# ## Wrap-up
#
# You wrote the temperature and three filters that compose because they all map logits to logits,
# a sampler and greedy choice, a generation loop that takes any chain of filters, beam search that
# extends every beam in one batched call and ranks finished hypotheses with a length penalty, and a
# KV cache whose logits equal a full forward pass at every step. (A test of the course checks the
# reference versions of these against the `transformers` library's logits processors and beam
# search, on random logits and on a small random GPT-2 with the same weights. The beam search
# agrees without an end token; with one the two differ by design: here a finished hypothesis
# narrows the beam, while `transformers` keeps `num_beams` live beams and sets finished ones
# aside, so on some inputs the two return different hypotheses.)

# %%
print(f"whole notebook: {time.perf_counter() - _notebook_start:.0f} s in profile {P.name} on {rt.device} "
      f"with {rt.threads} CPU thread(s)")
