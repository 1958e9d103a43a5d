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
# **Time.** About 90 minutes to work through. On a laptop CPU (profile `cpu`, one torch thread)
# the notebook runs in about a minute when notebook 05's `cpu` model is in the course cache
# (measured: 36 s to 64 s whole notebook in four runs on a 2-core machine shared with other jobs,
# load 4 to 30; the last cell prints the time). Without the checkpoint it first trains one with a third
# of 05's training steps (500); on that busy machine the training took 347 s. Under the autograder
# (profile `tiny`) it takes seconds.
#
# **How this notebook works.** Cells marked `# YOUR CODE HERE` are yours; the cell after each
# one checks your answer and says what looks wrong. The autograder runs further hidden tests,
# which check exactly the rules stated with each exercise. Rules for every graded cell:
#
# * write the decoding yourself. The course's reference module `lmcourse.decoding` (every function
#   in it), the samplers of `lmcourse.nn.gpt` and the `transformers` library's generation code score
#   0, however they are reached (an alias, a saved reference): the tests watch what runs. Where a
#   test needs one of your earlier answers, it uses the reference version instead, so one mistake
#   costs points once;
# * filters take logits and return logits: same shape, same **dtype**, same **device**, `-inf`
#   where a word is removed; inputs are never changed in place.
#
# TorchScript is switched off in this notebook (the setup cell does it): `torch.jit.script` and
# `torch.jit.trace` hand back plain Python, so a compiled reference runs as Python and the tests
# see it.

# %% locked="setup"
import math
import time

import matplotlib.pyplot as plt
import torch

import lmcourse
import lmcourse.decoding
import lmcourse.reference.decoding
import lmcourse.rules
from lmcourse.checks import (call_checked, check, check_close, check_equal, check_shape, check_tensor_close,
                             visible_checks_pass)
from lmcourse.data import data_dir, encode_split, load_shakespeare
from lmcourse.nn import GPT, GPTConfig, load_gpt, save_gpt
from lmcourse.runtime import is_autograding
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, train

_notebook_start = time.perf_counter()
rt = lmcourse.setup(seed=0)
P = rt.profile
torch.jit._state.disable()  # TorchScript off: torch.jit.script / trace return plain Python, which the tests can see

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
# ## 2. Temperature
#
# The model's last position gives a score $s(w)$ to every word $w$ of the vocabulary (the logits).
# **Ancestral sampling** draws the next word from the distribution they define, and a
# **temperature** $\tau > 0$ reshapes it first:
# $$p(x_i = w \mid x_1, \dots, x_{i-1}) = \frac{\exp(s(w)/\tau)}{\sum_{w'} \exp(s(w')/\tau)} .$$
# $\tau = 1$ is the model's own distribution; $\tau < 1$ sharpens it (as $\tau \to 0$ all the mass
# goes to the most likely word, greedy choice); $\tau > 1$ flattens it towards uniform. The
# temperature divides the *scores*, before the softmax.
#
# ### Exercise 1 — `apply_temperature` (1 point)
# Write `apply_temperature(logits, tau)`: return `logits / tau`, for logits of any shape
# (`(V,)`, `(B, V)`, ...). Same shape, dtype and device; do not change `logits` in place. Entries
# that are `-inf` (removed words) stay `-inf`.

# %% solution="apply_temperature"
def apply_temperature(logits, tau):
    """Scores divided by the temperature tau > 0."""
    ### BEGIN SOLUTION
    return logits / tau
    ### END SOLUTION


# %% tests="apply_temperature_tests" points=1
import torch

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_equal, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"


# Within the block the reference decoding code (but the stand-ins given to _rules(...)), 05's sampler and
# transformers' generation code are refused; importing transformers is noticed too.
_rules = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                              packages=lmcourse.reference.decoding.PACKAGES, reason=_rule)


_s = torch.tensor([[2.0, -1.0, 0.5, float("-inf")], [0.0, 3.0, -2.0, 1.0]])
_before = _s.clone()
_want = torch.tensor([[4.0, -2.0, 1.0, float("-inf")], [0.0, 6.0, -4.0, 2.0]])
with _rules():
    _out = call_checked(apply_temperature, _s, 0.5, name="apply_temperature(logits, 0.5)")
check_tensor_close(_out, _want, "apply_temperature(logits, 0.5)", atol=0, rtol=1e-6,
                   hint="divide the logits by tau (tau = 0.5 doubles them); the scores, not the probabilities "
                        "after a softmax")
check_tensor_close(_s, _before, "logits after apply_temperature", atol=0, rtol=0,
                   hint="return a new tensor (logits / tau), do not divide in place")
with _rules():
    _out2 = apply_temperature(torch.tensor([1.0, -3.0, 0.25], dtype=torch.float64), 4.0)
check_equal(str(_out2.dtype), "torch.float64", "the dtype of apply_temperature on float64 logits")
check_tensor_close(_out2, torch.tensor([0.25, -0.75, 0.0625], dtype=torch.float64), "apply_temperature(1-D, 4.0)",
                   atol=0, rtol=1e-12, hint="tau > 1 shrinks the scores")
visible_checks_pass("apply_temperature")
### BEGIN HIDDEN TESTS
_g = torch.Generator().manual_seed(7)
_r = torch.randn(5, 13, generator=_g)
for _tau in (0.1, 0.9, 1.0, 3.7):
    with _rules():
        _o = apply_temperature(_r, _tau)
    check_tensor_close(_o, _r / _tau, f"apply_temperature(random (5, 13), {_tau})", atol=1e-7, rtol=1e-6)
check_shape(_o, (5, 13), "apply_temperature's output shape")
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
import torch

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_equal, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"


_rules = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                              packages=lmcourse.reference.decoding.PACKAGES, reason=_rule)


_inf = float("-inf")
_s = torch.tensor([[1.0, 5.0, 3.0, 2.0, 4.0], [0.5, -1.0, 2.5, 0.0, -3.0]])
_before = _s.clone()
with _rules():
    _out = call_checked(top_k_filter, _s, 2, name="top_k_filter(logits, 2)")
check_tensor_close(_out, torch.tensor([[_inf, 5.0, _inf, _inf, 4.0], [0.5, _inf, 2.5, _inf, _inf]]),
                   "top_k_filter(logits of shape (2, 5), k=2)", atol=0, rtol=0,
                   hint="keep exactly the k largest logits of each row (not k + 1, not k - 1), unchanged, and -inf "
                        "elsewhere; return logits, not probabilities")
check_tensor_close(_s, _before, "logits after top_k_filter", atol=0, rtol=0, hint="do not change the input in place")
with _rules():
    _o1 = top_k_filter(_s, 1)
    _o3 = top_k_filter(_s[0], 3)
    _all = call_checked(top_k_filter, _s, 9, name="top_k_filter(logits of shape (2, 5), k=9 > V=5)",
                        hint="a k larger than the vocabulary keeps every word: use min(k, V)")
check_tensor_close(_o1, torch.tensor([[_inf, 5.0, _inf, _inf, _inf], [_inf, _inf, 2.5, _inf, _inf]]),
                   "top_k_filter(logits, 1) (greedy)", atol=0, rtol=0)
check_tensor_close(_o3, torch.tensor([_inf, 5.0, 3.0, _inf, 4.0]), "top_k_filter(one row of shape (5,), 3)",
                   atol=0, rtol=0, hint="work along the last dimension, for (V,) as for (B, V)")
check_tensor_close(_all, _s, "top_k_filter(logits, k=9 > V=5)", atol=0, rtol=0, hint="k >= V keeps every word")
with _rules():
    _t = top_k_filter(torch.tensor([[1.0, 3.0, 3.0, 2.0]], dtype=torch.float64), 1)
check_equal(str(_t.dtype), "torch.float64", "top_k_filter's dtype on float64 logits")
check_tensor_close(_t, torch.tensor([[_inf, 3.0, 3.0, _inf]], dtype=torch.float64),
                   "top_k_filter with a tie at the k-th place", atol=0, rtol=0,
                   hint="remove only the logits strictly below the k-th largest")
visible_checks_pass("top_k_filter")
### BEGIN HIDDEN TESTS
_g = torch.Generator().manual_seed(3)
_r = torch.randn(6, 30, generator=_g)
for _k in (1, 4, 29, 30):
    with _rules():
        _o = top_k_filter(_r, _k)
    _kth = _r.sort(dim=-1, descending=True).values[:, _k - 1:_k]
    _w = torch.where(_r >= _kth, _r, torch.full_like(_r, _inf))
    check_tensor_close(_o, _w, f"top_k_filter(random (6, 30), {_k})", atol=0, rtol=0)
    del _kth, _w
_m = _r.clone()
_m[:, :10] = _inf  # already filtered words stay out
with _rules():
    _o = top_k_filter(_m, 3)
check(bool(torch.isinf(_o[:, :10]).all()), "top_k_filter on logits that hold -inf")
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
import math

import torch

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_equal, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"


_rules = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                              packages=lmcourse.reference.decoding.PACKAGES, reason=_rule)


_inf = float("-inf")
# probabilities 0.05, 0.3, 0.5, 0.15 (deliberately not in sorted order)
_s = torch.tensor([[math.log(0.05), math.log(0.3), math.log(0.5), math.log(0.15)]])
_before = _s.clone()
for _p, _kept in ((0.6, "0.5 and 0.3"), (0.9, "0.5, 0.3 and 0.15"), (0.4, "0.5 only"), (1.0, "every word")):
    _want = torch.tensor([lmcourse.reference.decoding.expected_top_p(_s[0].tolist(), _p)])
    with _rules():
        _out = call_checked(top_p_filter, _s, _p, name=f"top_p_filter(logits, {_p})")
    check_tensor_close(_out, _want, f"top_p_filter on probabilities [0.05, 0.3, 0.5, 0.15] with p = {_p} "
                       f"(keeps {_kept})", atol=1e-6, rtol=0,
                       hint="softmax the logits, sort the probabilities in decreasing order, and keep words until "
                            "the running sum reaches p — the word that makes it reach p is kept; the most likely "
                            "word always stays; put -inf back at the original positions")
check_tensor_close(_s, _before, "logits after top_p_filter", atol=0, rtol=0, hint="do not change the input in place")
# scale matters: the same order with other gaps keeps other sets (probabilities, not logits)
_s2 = torch.tensor([[4.0, 0.0, 3.5, -1.0], [0.1, 0.0, 0.2, 0.05]], dtype=torch.float64)
with _rules():
    _o2 = top_p_filter(_s2, 0.7)
check_equal(str(_o2.dtype), "torch.float64", "top_p_filter's dtype on float64 logits")
_want2 = torch.tensor([lmcourse.reference.decoding.expected_top_p(r, 0.7) for r in _s2.tolist()], dtype=torch.float64)
check_tensor_close(_o2, _want2,
                   "top_p_filter(two rows of shape (2, 4), 0.7): a peaked row keeps 2 words, a flat one 3",
                   atol=1e-12, rtol=0, hint="the running sum is over probabilities (softmax of the row), not logits")
# one row (V,): the vocabulary is the last dimension, whatever the number of dimensions
_row = _s[0].clone()
with _rules():
    _o1 = call_checked(top_p_filter, _row, 0.6, name="top_p_filter(one row of shape (4,), 0.6)",
                       hint="work along the last dimension (dim=-1, [..., 0]), not dim=1: one row (V,) is a valid "
                            "input too")
check_tensor_close(_o1, torch.tensor(lmcourse.reference.decoding.expected_top_p(_row.tolist(), 0.6)),
                   "top_p_filter(one row of shape (4,), 0.6)", atol=1e-6, rtol=0,
                   hint="work along the last dimension (dim=-1): one row (V,) is filtered as a row of a batch is")
visible_checks_pass("top_p_filter")
### BEGIN HIDDEN TESTS
_g = torch.Generator().manual_seed(5)
_r = torch.randn(8, 25, generator=_g) * 2
for _p in (0.1, 0.5, 0.83, 0.99):
    with _rules():
        _o = top_p_filter(_r, _p)
    _want = torch.tensor([lmcourse.reference.decoding.expected_top_p(row, _p) for row in _r.tolist()])
    check_tensor_close(_o, _want, f"top_p_filter(random (8, 25), {_p})", atol=1e-6, rtol=0)
    del _want
with _rules():
    _o = top_p_filter(torch.tensor([10.0, 0.0, 0.0]), 0.01)
check_tensor_close(_o, torch.tensor([10.0, _inf, _inf]), "top_p_filter keeps the most likely word", atol=0, rtol=0)
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
import math

import torch

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_equal, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"


_rules = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                              packages=lmcourse.reference.decoding.PACKAGES, reason=_rule)


_inf = float("-inf")
_l = [math.log(0.25), math.log(0.6), math.log(0.05), math.log(0.1)]
_s = torch.tensor([_l, _l[::-1]])
_before = _s.clone()
with _rules():
    _out = call_checked(epsilon_filter, _s, 0.08, name="epsilon_filter(logits, 0.08)")
check_tensor_close(_out, torch.tensor([[_l[0], _l[1], _inf, _l[3]], [_l[3], _inf, _l[1], _l[0]]]),
                   "epsilon_filter on probabilities [0.25, 0.6, 0.05, 0.1] (and reversed), eps = 0.08",
                   atol=0, rtol=0, hint="remove (-inf) the words whose softmax probability is below eps; keep the "
                                        "others' logits unchanged")
check_tensor_close(_s, _before, "logits after epsilon_filter", atol=0, rtol=0, hint="do not change the input in place")
# one row (V,): the vocabulary is the last dimension, whatever the number of dimensions
with _rules():
    _o1 = call_checked(epsilon_filter, _s[0].clone(), 0.08, name="epsilon_filter(one row of shape (4,), 0.08)",
                       hint="work along the last dimension (dim=-1), not dim=1: one row (V,) is a valid input too")
check_tensor_close(_o1, torch.tensor([_l[0], _l[1], _inf, _l[3]]), "epsilon_filter(one row of shape (4,), 0.08)",
                   atol=0, rtol=0, hint="work along the last dimension (dim=-1): one row is filtered as a row of a "
                                        "batch is")
# logits are scores, not log-probabilities: the same rows plus 2 and minus 1 have the same probabilities
_shifted = torch.tensor([[v + 2.0 for v in _l], [v - 1.0 for v in _l[::-1]]])
with _rules():
    _osh = epsilon_filter(_shifted, 0.08)
_keep = torch.tensor([[True, True, False, True], [True, False, True, True]])
check_tensor_close(_osh, torch.where(_keep, _shifted, torch.full_like(_shifted, _inf)),
                   "epsilon_filter on the same probabilities given as logits that are not normalised "
                   "(log-probabilities plus 2, and minus 1), eps = 0.08", atol=0, rtol=0,
                   hint="a word's probability is softmax(logits) of its row; exp(logits) is a probability only when "
                        "the logits happen to be log-probabilities already")
# every word below eps, and rows whose most likely words differ in value: each row keeps its own
_sd = torch.tensor([[v + 3.0 for v in _l], _l[::-1]], dtype=torch.float64)
with _rules():
    _o = epsilon_filter(_sd, 0.9)
check_equal(str(_o.dtype), "torch.float64", "epsilon_filter's dtype on float64 logits")
check_tensor_close(_o, torch.tensor([[_inf, _l[1] + 3.0, _inf, _inf], [_inf, _inf, _l[1], _inf]], dtype=torch.float64),
                   "epsilon_filter(logits, 0.9) on two rows (log-probabilities plus 3, and as they are): every word "
                   "is below eps", atol=1e-12, rtol=0,
                   hint="never remove every word: each row keeps its own most likely word (the argmax along the last "
                        "dimension, keepdim=True), not the largest logit of the whole batch")
visible_checks_pass("epsilon_filter")
### BEGIN HIDDEN TESTS
_g = torch.Generator().manual_seed(9)
_r = torch.randn(7, 20, generator=_g) * 2
for _eps in (1e-3, 0.03, 0.2, 1.0):
    with _rules():
        _o = epsilon_filter(_r, _eps)
    _pr = torch.softmax(_r, -1)
    _keep = (_pr >= _eps) | (_r == _r.max(-1, keepdim=True).values)
    check_tensor_close(_o, torch.where(_keep, _r, torch.full_like(_r, _inf)), f"epsilon_filter(random, {_eps})",
                       atol=0, rtol=0)
    del _pr, _keep
### END HIDDEN TESTS

# %% [markdown]
# What top-k and top-p keep on a **peaked** distribution (the model is sure of the next character)
# and on a **flat** one (it is not), from real contexts: top-k keeps the same number of words on
# both; top-p keeps few on the peaked one and many on the flat one — the lecture's argument for
# top-p.

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
        ax.set_title(f"{label} (entropy {_entropy.min() if row == 0 else _entropy.max():.2f} nats): {name} keeps "
                     f"{int(torch.isfinite(kept).sum())} words, {probs[torch.isfinite(kept)].sum():.0%} of the mass")
        print(f"{label:>6} distribution, {name}: {int(torch.isfinite(kept).sum())} characters kept, "
              f"{probs[torch.isfinite(kept)].sum():.0%} of the mass")
axes[0, 0].set_ylabel("probability")
axes[1, 0].set_ylabel("probability")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## 4. Choosing the next word, and a generation loop
#
# Two ways to pick the next word from (filtered) logits: **sample** it from their softmax, or take
# the **most likely** one, $x_i = \arg\max_{w} p(w \mid x_1, \dots, x_{i-1})$ (greedy decoding, an
# estimate of the most likely sequence made one word at a time).
#
# ### Exercise 5 — `sample_next` and `greedy_next` (2 points)
# * `sample_next(logits, generator=None)`: logits `(B, V)` (possibly with `-inf`); return `(B,)`
#   ids (`torch.long`), one per row, drawn from the row's softmax with `generator` (e.g.
#   `torch.multinomial(probs, 1, generator=generator)`), so that the same seed gives the same ids
#   and successive calls with one generator go on along its stream (do not reseed anything from it);
# * `greedy_next(logits)`: logits `(B, V)`; return the `(B,)` ids of each row's largest logit.

# %% solution="next_token"
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


# %% tests="next_token_tests" points=2
import math

import torch

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_close, check_equal, check_shape, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"


_rules = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                              packages=lmcourse.reference.decoding.PACKAGES, reason=_rule)


_inf = float("-inf")
_s = torch.tensor([[0.1, 2.0, -1.0, 0.5], [3.0, 0.0, 0.0, 4.0], [-2.0, -1.0, -3.0, _inf]])
_before = _s.clone()
with _rules():
    _gr = call_checked(greedy_next, _s, name="greedy_next(logits of shape (3, 4))")
check_shape(_gr, (3,), "greedy_next(logits of shape (3, 4))", hint="one id per row: the argmax over the last dimension")
check_tensor_close(_gr, torch.tensor([1, 3, 1]), "greedy_next(logits)", atol=0, rtol=0,
                   hint="the largest logit of each row (dim=-1), not of each column")
check_equal(str(_gr.dtype), "torch.int64", "greedy_next's dtype")
# sampling: 4000 rows with the same logits, one draw each
_row = torch.tensor([2.0, 1.0, _inf, -1.0, 0.0])
with _rules():
    _d = call_checked(sample_next, _row.expand(4000, 5).clone(), torch.Generator().manual_seed(0),
                      name="sample_next(logits of shape (4000, 5), generator)")
check_shape(_d, (4000,), "sample_next(logits of shape (4000, 5))", hint="return (B,), not (B, 1): .squeeze(-1)")
check_equal(str(_d.dtype), "torch.int64", "sample_next's dtype")
_pw = torch.softmax(_row, -1).tolist()
for _v in range(5):
    check_close(float((_d == _v).double().mean()), _pw[_v], f"the share of id {_v} in 4000 draws from logits "
                f"{_row.tolist()}", rel=0, abs_=0.03,
                hint="draw from softmax(logits) (torch.multinomial), not the argmax; a -inf logit is never drawn")
check_tensor_close(_s, _before, "logits after greedy_next / sample_next", atol=0, rtol=0)
with _rules():
    torch.manual_seed(1)
    _a = sample_next(_row.expand(64, 5).clone(), torch.Generator().manual_seed(42))
    torch.manual_seed(2)
    _b = sample_next(_row.expand(64, 5).clone(), torch.Generator().manual_seed(42))
    _c = sample_next(_row.expand(64, 5).clone(), torch.Generator().manual_seed(43))
check(torch.equal(_a, _b), "two calls of sample_next with generators seeded alike gave different ids: pass "
      "generator= to torch.multinomial")
check(not torch.equal(_a, _c), "generators with different seeds gave the same 64 ids: are you sampling at all?")
_gen = torch.Generator().manual_seed(42)
with _rules():
    _first = sample_next(_row.expand(64, 5).clone(), _gen)
    _second = sample_next(_row.expand(64, 5).clone(), _gen)
check(not torch.equal(_first, _second), "two successive calls of sample_next with the same generator gave the same "
      "64 ids: draw with the generator itself (its state moves on at each draw); do not reseed a random number "
      "generator from it")
visible_checks_pass("sample_next")
### BEGIN HIDDEN TESTS
with _rules():
    _gh = greedy_next(torch.tensor([[1.0, 1.5], [2.0, -1.0]], dtype=torch.float64))
check_tensor_close(_gh, torch.tensor([1, 0]), "greedy_next on float64 logits", atol=0, rtol=0)
_row2 = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
with _rules():
    _d2 = sample_next(_row2.expand(3000, 4).clone(), torch.Generator().manual_seed(5))
_pw2 = torch.softmax(_row2, -1).tolist()
for _v in range(4):
    check_close(float((_d2 == _v).double().mean()), _pw2[_v], f"share of id {_v} (float64 logits)", rel=0, abs_=0.03)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 6 — `generate` (2 points)
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
import functools
import math

import torch

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn.gpt
import lmcourse.reference.gpt
from lmcourse.checks import call_checked, check, check_close, check_equal, check_shape, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"
_ref = lmcourse.decoding


# the rules, with your earlier answers replaced by the reference (a slip there costs its own points only), which
# the rules let through
_stand_ins = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                                  packages=lmcourse.reference.decoding.PACKAGES, reason=_rule,
                                  substitute={"sample_next": _ref.sample_next, "top_k_filter": _ref.top_k_filter},
                                  namespace=globals())(_ref.sample_next, _ref.top_k_filter, _ref.top_p_filter)


# a stand-in model: fixed logits at the last position (reversed ones before it), and a record of what it was given
_Fixed = lmcourse.reference.gpt.FixedLogits
_logits = [2.0, 1.0, 0.0, -1.0]
_m = _Fixed(_logits, block_size=4)
_idx = torch.tensor([[3, 1, 2], [0, 0, 1]])
_before = _idx.clone()
with _stand_ins():
    _out = call_checked(generate, _m, _idx, 6, generator=torch.Generator().manual_seed(0),
                        name="generate(model, prompt of shape (2, 3), 6)")
_m.obeyed()
check_shape(_out, (2, 9), "generate(model, prompt of shape (2, 3), max_new_tokens=6)",
            hint="append one id per step to the prompt, along dim 1")
check_equal(str(_out.dtype), "torch.int64", "the dtype of generate's output")
check_tensor_close(_idx, _before, "prompt after generate", atol=0, rtol=0, hint="build a new tensor (torch.cat)")
check_tensor_close(_out[:, :3], _idx, "the first 3 columns of generate's output", atol=0, rtol=0)
check_equal(len(_m.seen), 6, "the number of model calls for max_new_tokens = 6", hint="one call per new id")
check(not any(_m.grad_on), "generate called the model with gradients on: work under torch.no_grad()")
for _k, _ctx in enumerate(_m.seen):
    _want_ctx = _out[:, max(0, 3 + _k - 4):3 + _k]
    check(_ctx.shape == _want_ctx.shape and bool((_ctx == _want_ctx).all()),
          f"at step {_k + 1} the model should see the last min(T, block_size) ids {_want_ctx.tolist()}, "
          f"it saw {_ctx.tolist()} — crop with idx[:, -block_size:]")
# the distribution: 4000 draws of one id; with top-k 2 only ids 0 and 1 are drawn
for _filters, _want in (((), torch.softmax(torch.tensor(_logits), -1).tolist()),
                        ((functools.partial(_ref.top_k_filter, k=2),),
                         [1 / (1 + math.exp(-1)), 1 / (1 + math.e), 0, 0])):
    _mt = _Fixed(_logits, block_size=4)
    with _stand_ins():
        _draws = generate(_mt, torch.zeros(4000, 3, dtype=torch.long), 1, filters=_filters,
                          generator=torch.Generator().manual_seed(11))[:, -1]
    for _v in range(4):
        check_close(float((_draws == _v).double().mean()), _want[_v],
                    f"the share of id {_v} in 4000 draws ({len(_filters)} filter(s), logits {_logits})", rel=0,
                    abs_=0.03, hint="sample from the filtered logits of the last position (logits[:, -1, :]), "
                                    "not the first")
# filters applied in the order given, each to the previous one's output
_calls = []


def _first(s):
    _calls.append("first")
    return s.masked_fill(torch.arange(s.size(-1)) == 0, float("-inf"))


def _second(s):
    _calls.append("second" if bool(torch.isinf(s[:, 0]).all()) else "second, before the first")
    return s


with _stand_ins():
    _o = generate(_Fixed(_logits, 4), torch.zeros(5, 1, dtype=torch.long), 3, filters=[_first, _second],
                  generator=torch.Generator().manual_seed(1))
check_equal(_calls, ["first", "second"] * 3, "the filters' calls over 3 steps",
            hint="apply every filter, in the order given, each to the output of the one before")
check(not bool((_o[:, 1:] == 0).any()), "id 0 was removed by a filter but generate still drew it")
# the generator decides the draws, whatever the global seed
torch.manual_seed(1)
with _stand_ins():
    _s1 = generate(_Fixed(_logits, 4), torch.zeros(32, 1, dtype=torch.long), 4,
                   generator=torch.Generator().manual_seed(8))
torch.manual_seed(2)
with _stand_ins():
    _s2 = generate(_Fixed(_logits, 4), torch.zeros(32, 1, dtype=torch.long), 4,
                   generator=torch.Generator().manual_seed(8))
check(torch.equal(_s1, _s2), "two calls of generate with generators seeded alike (and different global seeds) gave "
      "different ids: pass the generator on at every step, sample_next(logits, generator)")
visible_checks_pass("generate")
### BEGIN HIDDEN TESTS
_mh = _Fixed([0.0, 3.0, 0.5], block_size=2)
with _stand_ins():
    _oh = generate(_mh, torch.tensor([[1, 2, 0, 1, 2]]), 4, generator=torch.Generator().manual_seed(3))
_mh.obeyed()
check_shape(_oh, (1, 9), "generate with T > block_size from the start")
check(all(c.size(1) == 2 for c in _mh.seen), "context cropped to block_size = 2 from the first step")
with _stand_ins():
    _oe = generate(_Fixed([0.0, 3.0], 5), torch.tensor([[1, 0]]), 0, generator=torch.Generator().manual_seed(3))
check_tensor_close(_oe, torch.tensor([[1, 0]]), "max_new_tokens = 0 returns the prompt", atol=0, rtol=0)
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
# ### Exercise 7 — `beam_search` (4 points)
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
import math
from types import SimpleNamespace

import torch
from torch import nn

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_close, check_equal, check_shape, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"


_rules = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                              packages=lmcourse.reference.decoding.PACKAGES, reason=_rule)


class _Table(nn.Module):
    """A hand-made model over {0: a, 1: b, 2: end}. After the prompt: a 0.6, b 0.4. After a: end 0.5,
    a 0.3, b 0.2. After b: b 0.9, a and end 0.05 each. After an end: b 0.98, a and end 0.01 each.
    Greedy takes a (0.6), then end (0.5): 0.3 in all; the best two words are b b, 0.4 * 0.9 = 0.36."""

    def __init__(self, dtype=torch.float64, block_size=16):
        super().__init__()
        self.config = SimpleNamespace(block_size=block_size)
        self.dtype = dtype
        self.calls = []

    def forward(self, idx, targets=None):
        check(idx.dim() == 2, f"beam_search should call the model with (nb, T) ids, it passed {tuple(idx.shape)}")
        check(idx.size(1) <= self.config.block_size,
              f"beam_search passed {idx.size(1)} ids to a model with block_size {self.config.block_size}: crop the "
              "beams to their last block_size ids, as generate does")
        self.calls.append(tuple(idx.shape))
        B, T = idx.shape
        rows = {0: [0.3, 0.2, 0.5], 1: [0.05, 0.9, 0.05], 2: [0.01, 0.98, 0.01]}
        out = torch.full((B, T, 3), 1 / 3, dtype=torch.float64)
        for b in range(B):
            row = [0.6, 0.4, 0.0] if T == 1 else rows[int(idx[b, -1])]
            out[b, -1] = torch.tensor(row, dtype=torch.float64)
        return out.clamp_min(1e-30).log().to(self.dtype), None


def _ids(result):
    return [ids.tolist() for ids, _ in result]


def _beam(*args, **kwargs):
    with _rules():
        out = call_checked(beam_search, *args, name=f"beam_search(model, prompt, {', '.join(map(str, args[2:]))}"
                           + "".join(f", {k}={v}" for k, v in kwargs.items()) + ")", **kwargs)
    check(isinstance(out, list) and all(isinstance(x, tuple) and len(x) == 2 for x in out),
          "beam_search should return a list of (ids, score) pairs")
    for ids, _ in out:
        check(isinstance(ids, torch.Tensor) and ids.dim() == 1, "beam_search should return each hypothesis's ids as "
              f"a 1-D tensor (the prompt followed by the new words), got {type(ids).__name__}"
              + (f" of shape {tuple(ids.shape)}" if isinstance(ids, torch.Tensor) else "")
              + ": torch.tensor(ids) or the beam's row of the (nb, T) tensor")
    return out


_start = torch.tensor([2])
_g = _beam(_Table(), _start, 1, 2)
check_equal(_ids(_g), [[2, 0, 2]], "beam_search with beam_size 1 on the hand-made model (greedy)",
            hint="with one beam, keep the single best extension at each step; return the prompt followed by the "
                 "new ids")
_b = _beam(_Table(), _start, 2, 2)
check_equal(_ids(_b)[0], [2, 1, 1], "the best hypothesis of beam_search with beam_size 2, 2 steps",
            hint="keep the 2 best candidates over all beams and all words — expand every beam, not only the best")
check_close(_b[0][1], math.log(0.36) / 2, "the score of b b (probability 0.36, 2 new words, length_penalty 1)",
            rel=1e-9, abs_=1e-12, hint="a beam's score is the SUM of the log-probabilities of all its words (its "
                                       "parent's score plus the new word's), divided by n ** length_penalty; "
                                       "in float64 (.double()) whatever the model's dtype")
check_equal(len(_b), 2, "the number of hypotheses returned by beam_search with beam_size 2")
check(_b[0][1] >= _b[1][1], "beam_search should return its hypotheses best first")
_m = _Table()
_beam(_m, _start, 3, 4)
_cropped = _beam(_Table(block_size=4), _start, 2, 7)
check_equal(_ids(_cropped)[0], [2] + [1] * 7, "the best hypothesis of 7 steps with block_size 4",
            hint="the model sees the last block_size ids of each beam; the scores still add up over every word")
check_equal([c[0] for c in _m.calls], [1, 3, 3, 3], "the batch sizes of the model calls of beam_search(beam_size=3, "
            "4 steps)", hint="one call per step, with every live beam in one (nb, T) batch; the first step has one "
                             "beam, the prompt")
# the end token: a finished hypothesis is never extended; the length penalty decides between lengths
_e0 = _beam(_Table(), _start, 3, 12, length_penalty=0.0, eos_id=2)
for _h in _ids(_e0):
    check(2 not in _h[1:-1], f"the hypothesis {_h} goes on after the end token: a candidate ending in eos_id is "
          "finished, set aside and never extended")
check_equal(_ids(_e0)[0], [2, 0, 2], "the best hypothesis with eos_id=2, length_penalty=0, 12 steps",
            hint="with length_penalty 0 the plain sums compare: a, end (0.3) beats b b ... b (0.4 * 0.9^11)")
check_close(_e0[0][1], math.log(0.3), "the score of a, end with length_penalty 0", rel=1e-9, abs_=1e-12)
check_equal(_ids(_e0), [[2, 0, 2], [2] + [1] * 12, [2, 2]], "the 3 hypotheses of beam_search(beam_size=3, 12 steps, "
            "eos_id=2, length_penalty=0), best first",
            hint="a finished hypothesis keeps its place among the beam_size: once one finishes, every later step "
                 "keeps only beam_size minus the finished ones (the beam narrows); [2, 2] is the end token at step 1 "
                 "(probability ~0), one of the 3 best of the 3 first candidates")


# a product of probabilities underflows: 50 equally likely words, 200 steps
class _Uniform(nn.Module):
    """Every one of 50 words equally likely after any prefix, in float32."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(block_size=256)

    def forward(self, idx, targets=None):
        return torch.zeros(idx.size(0), idx.size(1), 50), None


_u = _beam(_Uniform(), _start, 2, 200)
check_close(_u[0][1], math.log(1 / 50), "the score of a 200-word hypothesis of a model where 50 words are equally "
            "likely (length_penalty 1: the mean log-probability, log(1/50))", rel=1e-9, abs_=1e-12,
            hint="add log-probabilities; a product of 200 probabilities of 1/50 (1e-340) underflows to 0 even in "
                 "float64")
_e1 = _beam(_Table(), _start, 3, 12, length_penalty=1.0, eos_id=2)
check_equal(_ids(_e1)[0], [2] + [1] * 12, "the best hypothesis with eos_id=2, length_penalty=1, 12 steps",
            hint="divide each finished score by n ** length_penalty (n new words, the end token included); "
                 "not multiply")
check_close(_e1[0][1], math.log(0.4 * 0.9 ** 11) / 12, "the score of b x 12 with length_penalty 1", rel=1e-9,
            abs_=1e-12)
check_equal(_ids(_e1)[1], [2, 0, 2], "the second hypothesis with eos_id=2, length_penalty=1, 12 steps")
check_close(_e1[1][1], math.log(0.3) / 2, "the score of a, end with length_penalty 1 (2 new words: a and the end "
            "token)", rel=1e-9, abs_=1e-12, hint="n, the number of new words, counts the end token: a, end has n = 2 "
                                                   "(score log 0.3 / 2)")
_z = _beam(_Table(), _start, 2, 0)
check_equal(_ids(_z), [[2]], "beam_search with max_new_tokens = 0",
            hint="no step is taken: return [(prompt, 0.0)], the prompt alone (n = 0 would divide by zero)")
check_close(_z[0][1], 0.0, "the score of the prompt alone (max_new_tokens = 0)",
            hint="nothing was scored: the score is 0.0")
visible_checks_pass("beam_search")
### BEGIN HIDDEN TESTS


class _Bigram(nn.Module):
    """A random bigram table in float32: 60 words, each next word's probability small."""

    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(block_size=400)
        self.table = torch.randn(60, 60, generator=torch.Generator().manual_seed(4)) * 0.5

    def forward(self, ids, targets=None):
        return self.table[ids], None  # (B, T, 60)


_bm = _Bigram()
_got = _beam(_bm, torch.tensor([3]), 3, 250)
_want = lmcourse.decoding.beam_search(_bm, torch.tensor([3]), 3, 250)
check_equal(_ids(_got)[0], _want[0][0].tolist(), "the best of 250 steps of beam search (a float32 model, "
            "probabilities ~1/60: their product underflows)")
check_close(_got[0][1], _want[0][1], "its score", rel=1e-9, abs_=1e-9)
_got1 = _beam(_bm, torch.tensor([3, 5]), 1, 20)
_want1 = lmcourse.decoding.beam_search(_bm, torch.tensor([3, 5]), 1, 20)
check_equal(_ids(_got1), [_want1[0][0].tolist()], "beam_size 1 on the bigram model")
_e2 = _beam(_Table(), _start, 2, 12, length_penalty=2.0, eos_id=2)
check_equal(_ids(_e2)[0], [2] + [1] * 12, "length_penalty 2")
### END HIDDEN TESTS

# %% [markdown]
# On the trained model: greedy ($b = 1$) against wider beams, and the summed log-probability of
# what each finds. Wider beams usually find sequences the model thinks more likely (on the `cpu`
# profile: −56.5, −48.2 and −36.7 for beam sizes 1, 4 and 8), and they can be just as repetitive:

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
for name, (d, lp) in points.items():
    ax.scatter(d, lp, color="tab:red" if name in ("greedy", "beam 4") else "tab:blue")
    ax.annotate(name, (d, lp), textcoords="offset points", xytext=(4, 3), fontsize=8)
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
# ### Exercise 8 — `cached_forward` (4 points)
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
import contextlib

import torch

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn
import lmcourse.nn.attention
import lmcourse.nn.block
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_equal, check_shape, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"


_rules = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                              packages=lmcourse.reference.decoding.PACKAGES, reason=_rule)


@contextlib.contextmanager
def _no_full_forward():
    with _rules(), lmcourse.checks.forbid_calls(
            lmcourse.nn.gpt.GPT.forward, lmcourse.nn.block.Block.forward, lmcourse.nn.attention.CausalSelfAttention,
            reason="compute the new positions' queries, keys and values yourself: the model's, a block's or the "
                   "attention's own forward recomputes every position"):
        yield


# a small float64 GPT: sharp logits, biases and LayerNorms away from 0 and 1, so that every term matters
_m = lmcourse.reference.decoding.small_gpt(0, perturb=True)
_ids = torch.randint(0, 11, (2, 8), generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    _full = _m(_ids)[0]  # (2, 8, 11): every position at once
    _ref_logits, _ref_cache = lmcourse.decoding.gpt_forward_cached(_m, _ids[:, :3])
with _no_full_forward():
    _lg, _cache = call_checked(cached_forward, _m, _ids[:, :3], None, name="cached_forward(model, ids[:, :3], None)")
check_shape(_lg, (2, 3, 11), "the logits of cached_forward(model, 3 ids, None)")
check_equal(str(_lg.dtype), "torch.float64", "the dtype of cached_forward's logits for a float64 model")
check_tensor_close(_lg, _full[:, :3], "cached_forward with no cache: the logits of the first 3 positions", atol=1e-10,
                   rtol=1e-10, hint="with no cache this is the ordinary forward pass (causal mask, positions 0..T-1)")
check_equal(len(_cache), 2, "the length of the cache for a 2-block model", hint="one (K, V) pair per block")
for _l in range(2):
    check_shape(_cache[_l][0], (2, 2, 3, 8), f"the cached K of block {_l} after 3 positions",
                hint="(B, n_head, T, C // n_head)")
    check_tensor_close(_cache[_l][0], _ref_cache[_l][0], f"the cached K of block {_l}", atol=1e-10, rtol=1e-10,
                       hint="the keys of c_attn(ln1(x)) split into heads, before attention")
    check_tensor_close(_cache[_l][1], _ref_cache[_l][1], f"the cached V of block {_l}", atol=1e-10, rtol=1e-10)
# a new id attends to every cached position: shown on a model whose position vectors are all zero (positions
# cannot matter there, only which keys and values the new id sees)
_m0 = lmcourse.reference.decoding.small_gpt(0, perturb=True)
with torch.no_grad():
    _m0.wpe.weight.zero_()
    _full0 = _m0(_ids[:, :4])[0]
with _no_full_forward():
    _, _c0 = cached_forward(_m0, _ids[:, :3], None)
    _lg0, _ = call_checked(cached_forward, _m0, _ids[:, 3:4], _c0,
                           name="cached_forward(model with zero position vectors, 1 new id, cache of 3)")
check_tensor_close(_lg0, _full0[:, 3:4], "cached_forward's logits for one new id after 3 cached, on a model whose "
                   "position vectors are all zero", atol=1e-10, rtol=1e-10,
                   hint="positions cannot matter here: the new id must attend to all 3 cached keys and its own (its "
                        "row of the mask allows columns 0..T_past, tril(diagonal=T_past)), with the new key and value "
                        "appended to the cached ones")
# one new position at a time, up to block_size
_c = _cache
for _t in range(3, 8):
    with _no_full_forward():
        _lg, _c = call_checked(cached_forward, _m, _ids[:, _t:_t + 1], _c,
                               name=f"cached_forward(model, the id at position {_t}, cache of {_t})")
    check_tensor_close(_lg, _full[:, _t:_t + 1], f"cached_forward's logits for position {_t} (one new id, {_t} cached)",
                       atol=1e-10, rtol=1e-10, hint="the new id's position is T_past (wpe(arange(T_past, T_past + "
                                                      "T_new))), not 0; append the new keys and values to the cache")
check_shape(_c[1][1], (2, 2, 8, 8), "the cached V of block 1 after 8 positions")
# several new positions after a cache; the given cache unchanged and reusable
_k_before = _cache[0][0].clone()
_unchanged = ("the cache returned for the first 3 positions must still hold 3 after the calls that extended it: "
              "return a new list, do not change the one you were given")
with _no_full_forward():
    _lg2, _ = call_checked(cached_forward, _m, _ids[:, 3:6], _cache, hint=_unchanged,
                           name="cached_forward(model, 3 new ids, the cache of the first 3 positions)")
    _lg3, _ = call_checked(cached_forward, _m, _ids[:, 3:4], _cache, hint=_unchanged,
                           name="cached_forward(model, 1 new id, the cache of the first 3 positions)")
check_tensor_close(_cache[0][0], _k_before, "the cache passed to cached_forward, after the call", atol=0, rtol=0,
                   hint="return a new list of new tensors (torch.cat); do not change the cache given")
check_tensor_close(_lg2, _full[:, 3:6], "cached_forward(3 new ids after 3 cached): the logits", atol=1e-10, rtol=1e-10,
                   hint="each new position attends to every cached position and to the new ones up to itself: a "
                        "causal mask shifted by T_past (tril(diagonal=T_past))")
check_tensor_close(_lg3, _full[:, 3:4], "cached_forward on a cache used a second time", atol=1e-10, rtol=1e-10,
                   hint="a list appended to in place has grown: build a new list")
_raised = "returned"
try:
    with _no_full_forward():
        cached_forward(_m, _ids[:, :1], _c)
except ValueError:
    _raised = "ValueError"
except Exception as _exc:  # any other error is named in the message
    _raised = f"raised {type(_exc).__name__}: {_exc}"
check(_raised == "ValueError", f"cached_forward with 8 cached positions and block_size 8 should raise ValueError (no "
      f"position left); it {_raised} — test T_past + T_new > block_size first, before the positions are embedded")
visible_checks_pass("cached_forward")
### BEGIN HIDDEN TESTS
_m2 = lmcourse.reference.decoding.small_gpt(5, perturb=True, n_layer=3, n_head=4, n_embd=16, block_size=12,
                                            fast=False)
_ids2 = torch.randint(0, 11, (3, 12), generator=torch.Generator().manual_seed(2))
_c2 = None
_parts = []
for _a, _b in ((0, 1), (1, 5), (5, 6), (6, 12)):
    with _no_full_forward():
        _lg, _c2 = cached_forward(_m2, _ids2[:, _a:_b], _c2)
    _parts.append(_lg)
with torch.no_grad():
    _full2 = _m2(_ids2)[0]
check_tensor_close(torch.cat(_parts, 1), _full2, "cached_forward in chunks 1, 4, 1, 6 on a 3-block model", atol=1e-10,
                   rtol=1e-10)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 9 — `generate_cached` (2 points)
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
import contextlib

import torch

import lmcourse.checks
import lmcourse.decoding
import lmcourse.nn
import lmcourse.nn.gpt
from lmcourse.checks import call_checked, check, check_equal, check_shape, check_tensor_close

_rule = "write the decoding yourself, not with lmcourse.decoding, lmcourse.nn.gpt's sampler or transformers"
_ref = lmcourse.decoding


_rules = lmcourse.rules.rules(*lmcourse.reference.decoding.REFERENCE, modules=lmcourse.reference.decoding.MODULES,
                              packages=lmcourse.reference.decoding.PACKAGES, reason=_rule)


_fed = []


def _counting_forward(model, idx, cache=None):
    """The reference cached forward (standing in for yours), recording how many positions it is fed; more than
    block_size fails the test with what went wrong."""
    past, block_size = 0 if not cache else cache[0][0].size(2), model.config.block_size
    _fed.append((idx.size(1), past))
    if past + idx.size(1) > block_size:
        if len(_fed) == 1:
            why = ("on the first call, run it on the window, the last block_size ids of the prompt "
                   "(prompt[:, -block_size:])")
        elif past == 0:
            why = "a rebuild starts from the last block_size // 2 ids"
        else:
            why = ("when the cache holds block_size positions, rebuild it with cached_forward(model, "
                   "ids[:, -(block_size // 2):], None)")
        check(False, f"generate_cached fed cached_forward {idx.size(1)} new ids with {past} cached, more than "
              f"block_size {block_size}: {why}")
    return _ref.gpt_forward_cached(model, idx, cache)


@contextlib.contextmanager
def _stand_ins():
    _fed.clear()
    with lmcourse.checks.substitute(globals(), cached_forward=_counting_forward, sample_next=_ref.sample_next), \
            _rules(_ref.gpt_forward_cached, _ref._gpt_forward_cached, _ref.sample_next, _ref.top_k_filter), \
            lmcourse.checks.forbid_calls(lmcourse.nn.gpt.GPT.forward,
                                         reason="use cached_forward, not the model's own forward"):
        yield


_m = lmcourse.reference.decoding.small_gpt(0)
_prompt = torch.tensor([[4, 5, 6], [7, 8, 9]])
_before = _prompt.clone()
_want = _ref.generate_recompute(_m, _prompt, 4, generator=torch.Generator().manual_seed(0))
with _stand_ins():
    _out = call_checked(generate_cached, _m, _prompt, 4, generator=torch.Generator().manual_seed(0),
                        name="generate_cached(model, prompt of shape (2, 3), 4)")
check_shape(_out, (2, 7), "generate_cached(model, prompt of shape (2, 3), 4)")
check_tensor_close(_prompt, _before, "prompt after generate_cached", atol=0, rtol=0)
check_tensor_close(_out, _want, "generate_cached's ids (4 new ids, the cache never full)", atol=0, rtol=0,
                   hint="each step: the last position's logits, the filters, sample_next with the generator, append")
check_equal(_fed, [(3, 0), (1, 3), (1, 4), (1, 5)], "what cached_forward was fed, (new ids, cached positions), "
            "for 4 new ids after 3", hint="the prompt once, then only the new id with the cache; no call after the "
                                          "last id")
# past block_size: 20 new ids with block_size 8, the cache rebuilt from the last 4 ids when full
_seen_want, _seen = [], []  # the logits each step hands the filters
_want = _ref.generate_recompute(_m, _prompt, 20,
                                filters=[lambda s: _seen_want.append(s.clone()) or _ref.top_k_filter(s, 3)],
                                generator=torch.Generator().manual_seed(1))
with _stand_ins():
    _out = call_checked(generate_cached, _m, _prompt, 20,
                        filters=[lambda s: _seen.append(s.clone()) or _ref.top_k_filter(s, 3)],
                        generator=torch.Generator().manual_seed(1),
                        name="generate_cached(model with block_size 8, prompt of 3, 20 new ids)",
                        hint="the cache may not grow past block_size: when it holds block_size positions and a "
                             "new id comes, rebuild it from the last block_size // 2 ids")
check_equal(len(_seen), 20, "the number of steps whose logits went through the filters (20 new ids)")
check_tensor_close(torch.stack(_seen), torch.stack(_seen_want), "the logits generate_cached handed the filters at each "
                   "of 20 steps (block_size 8, float64 model)", atol=1e-10, rtol=1e-10,
                   hint="each step's logits must equal a full forward pass over the ids the cache holds: when the "
                        "cache is full, rebuild it with cached_forward(model, ids[:, -(block_size // 2):], None) — "
                        "dropping the oldest cached keys keeps keys computed at their old positions")
check_tensor_close(_out, _want, "generate_cached's ids for 20 new ids with block_size 8", atol=0, rtol=0,
                   hint="when the cache holds block_size positions, rebuild it with cached_forward(model, "
                        "ids[:, -(block_size // 2):], None)")
check(max(n + c for n, c in _fed) <= 8, "the cache grew past block_size")
check(sum(n for n, _ in _fed) <= 3 + 19 + 3 * 3, f"generate_cached fed {sum(n for n, _ in _fed)} positions to "
      "cached_forward for 20 new ids: feed only the new id, and rebuild only when the cache is full")
# a prompt longer than block_size: the first call sees its last block_size ids
_long = torch.randint(0, 11, (2, 10), generator=torch.Generator().manual_seed(4))
_want = _ref.generate_recompute(_m, _long, 2, generator=torch.Generator().manual_seed(2))
with _stand_ins():
    _out = call_checked(generate_cached, _m, _long, 2, generator=torch.Generator().manual_seed(2),
                        name="generate_cached(model with block_size 8, a prompt of 10 ids, 2)")
check_equal(_fed[0], (8, 0), "what the first call of cached_forward was fed, (new ids, cached positions), for a "
            "prompt of 10 ids and block_size 8", hint="the last block_size ids of the prompt, prompt[:, -block_size:]")
check_tensor_close(_out, _want, "generate_cached's ids after a prompt of 10 ids (block_size 8)", atol=0, rtol=0)
visible_checks_pass("generate_cached")
### BEGIN HIDDEN TESTS
_m2 = lmcourse.reference.decoding.small_gpt(3, block_size=6)
_p2 = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(4))
with _stand_ins():
    _out2 = generate_cached(_m2, _p2, 13, generator=torch.Generator().manual_seed(6))
check_equal(_fed[0], (6, 0), "the first call: the last block_size ids of the prompt")
_want2 = _ref.generate_recompute(_m2, _p2, 13, generator=torch.Generator().manual_seed(6))
check_tensor_close(_out2, _want2, "a prompt longer than block_size, 13 new ids", atol=0, rtol=0)
with _stand_ins():
    _out3 = generate_cached(_m2, _p2[:, :2], 1, generator=torch.Generator().manual_seed(6))
check_shape(_out3, (3, 3), "one new id")
check_equal(len(_fed), 1, "one new id needs one call")
### END HIDDEN TESTS

# %% [markdown]
# The cache against `generate`, which runs the model on the last `block_size` ids at every step
# (on the trained model, one torch thread, the better of two runs). Without the cache the time per
# new id grows with the window until the window is full; with it, the work per id stays about the
# same (timings on a busy machine are noisy: read the printed figures):

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
print(f"{n_long} new ids: {_full_ms:.2f} ms per id without the cache, {_cache_ms:.2f} ms with it "
      f"({_full_ms / _cache_ms:.1f}x)")

# %% [markdown]
# The gain depends on the sizes. With the `cpu` profile's small model (64 positions, 128 wide) a
# step costs little more than the fixed overhead of running a few dozen small operations from
# Python, and the window never holds more than 64 ids, so the cache saves little: 1.3× and 2.0× at
# 256 ids in two runs of this cell on a busy 2-core machine, 2.5× and 2.8× in
# `bench/bench_decode.py`, which compares the same windows. The longer the context and the wider
# the model, the larger the share of the work the cache removes: with the `gpu` profile's sizes
# (256 positions, 384 wide, 6 layers) the same benchmark on the same CPU measured 6.6× at 256 ids.
#
# ## 8. Questions
#
# Answer each multiple-choice question by setting the variable to one letter, e.g.
# `answer_q1 = "A"`.
#
# **Q1.** Which filter keeps the same **number** of words whatever the shape of the distribution?
#
# * A. top-p (nucleus) filtering.
# * B. top-k filtering.
# * C. epsilon filtering.
# * D. a temperature below 1.

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
from lmcourse.checks import check_choice

check_choice(answer_q2, "ABCD", "answer_q2")
visible_checks_pass("answer_q2")
### BEGIN HIDDEN TESTS
check_choice(answer_q2, "ABCD", "answer_q2", correct="A")
### END HIDDEN TESTS

# %% [markdown]
# **Q3 (free text, graded by hand).** In three to five sentences: look at your scatter plot of
# section 6. Where do greedy decoding and beam search sit, and where does sampling at $\tau = 1$?
# Why is the text the model finds most likely not the text you would most like to read, and which
# setting would you pick for a chatbot that should be both coherent and varied?

# %% [markdown] answer="q3_free_text" points=2
# ### BEGIN SOLUTION
# Greedy decoding and beam search sit at the top left: the highest mean log-probability per
# character and the lowest distinct-2 (on the cpu profile greedy 0.37 and −0.93, beam 4 0.25 and
# −0.78), because they repeat the same few high-probability phrases ("will not the will not ...").
# Sampling at τ = 1 sits near the other end (0.89 and −1.69; only τ = 1.3 is further out): diverse
# text of low likelihood, since every so often it draws a character from the long tail and the
# following ones have to make sense of it. The filters and lower temperatures lie in between.
# The most likely text is generic and repetitive because a locally safe choice is always available and each one makes
# the next repetition more likely still; what people find natural is typical text, not the single most
# probable one. For a chatbot I would pick a filter between the two ends, e.g. top-p 0.9 (or a
# temperature a little below 1 combined with it): it cuts the tail where the model is sure and
# keeps many options where it is not.
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
