# %% [markdown]
# # 01 · n-gram language models
#
# **What you will build.** A complete family of n-gram language models of Shakespeare, written
# from scratch in plain Python: counting, maximum-likelihood estimates, the chain rule, perplexity,
# add-k smoothing, interpolated Kneser–Ney smoothing, and a sampler that writes (bad) Shakespeare.
#
# **Prerequisites.** Python (lists, dicts, `collections.Counter`), logarithms, and conditional
# probability. No PyTorch yet: that starts in notebook 02.
#
# **Time.** About 2 hours to work through. The whole notebook runs in under a minute on one CPU
# core (measured: 43 s of CPU time in the `cpu` profile on a 2-core AMD EPYC virtual machine; the
# longest cell, the smoothing sweep, 20 s); a GPU brings nothing here.
#
# **How this notebook works.** Cells marked `# YOUR CODE HERE` are yours. The cell right after
# each one checks your answer: if a check fails, its message tells you what looks wrong. The
# autograder runs further hidden tests, so make your function correct, not just the examples.
#
# Two rules hold for every test cell. **Your answers are your own code:** `lmcourse.ngram` holds the
# course's reference answers, which the tests use; a graded function that calls one of them scores
# 0, and its visible check already tells you so. **A mistake costs once:** when an exercise builds
# on an earlier one (`count_ngrams` calls your `pad_sentence`, `perplexity` your `sentence_logprob`),
# its tests run it with our reference for the earlier function, so a slip loses the points of the
# exercise where it is, not those of every later exercise too.

# %% locked="setup"
import math
import random
from collections import Counter

import lmcourse
import lmcourse.marking
import lmcourse.rules
from lmcourse import data, plot
from lmcourse.checks import (call_checked, check, check_close, check_dist_close, check_distribution, check_equal,
                             check_type, visible_checks_pass)
from lmcourse.ngram import ContextTable
from lmcourse.tokenizers import BOS, EOS, UNK, split_sentences

rt = lmcourse.setup(seed=0, neural=False)  # counting only: nothing neural to load
tests = lmcourse.marking.Exam("01_ngram", globals())   # the test cells below: tests.check("count_ngrams")
_OWN = "a graded answer must be your own code, not the course's reference answer in lmcourse.ngram"

# %% [markdown]
# ## 1. What a language model is
#
# A language model (LM) assigns a probability to every sequence of words $w_1, \dots, w_T$.
# The **chain rule of probability** — true for *every* distribution, no assumption made — splits
# that into one next-word prediction per position:
#
# $$p(w_1, \dots, w_T) = \prod_{t=1}^{T} p(w_t \mid w_{t-1}, \dots, w_1).$$
#
# So a language model is a machine that, given the words so far, produces a **distribution over
# the next word**. Conditioning on the whole history is hopeless to estimate by counting, so an
# **n-gram model** makes the Markov assumption: only the last $n-1$ words matter,
#
# $$p(w_t \mid w_{t-1}, \dots, w_1) \approx p(w_t \mid w_{t-n+1}, \dots, w_{t-1}).$$
#
# That is a *model*: an assumption we chose, not a law. With $n=2$ (bigrams) each word depends
# on the previous one; with $n=3$ (trigrams) on the previous two.
#
# Two special tokens make the first and last predictions work like all the others. We put
# $n-1$ copies of `<s>` in front of a sentence, so the first word also has a context of
# $n-1$ words, and one `</s>` at the end, so the model also learns *when to stop*: `</s>` is
# predicted like any other word, while `<s>` is only ever context.
#
# ### Exercise 1 — padding
# Write `pad_sentence(words, n)`: a **new** list with $n-1$ `<s>` tokens, the words, and one
# `</s>`. (The names `BOS = "<s>"` and `EOS = "</s>"` are imported for you.)

# %% solution="pad_sentence"
def pad_sentence(words, n):
    """Return ["<s>"] * (n - 1) + words + ["</s>"] as a new list."""
    ### BEGIN SOLUTION
    return [BOS] * (n - 1) + list(words) + [EOS]
    ### END SOLUTION


# %% tests="pad_sentence_tests" points=1
tests.check("pad_sentence")
### BEGIN HIDDEN TESTS
tests.grade("pad_sentence")
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Learning by counting
#
# How do we learn $p(w_t \mid w_{t-2}, w_{t-1})$? From data: count. Take every sentence, pad it,
# and slide a window of $n$ words along it. Each window position is one **n-gram**: the first
# $n-1$ words are the context, the last is the word that followed.
#
# A padded sentence of $L$ words has $L + n$ tokens, hence $L + 1$ windows of length $n$: one
# prediction for each word plus one for `</s>`.
#
# ### Exercise 2 — counting n-grams
# Write `count_ngrams(sentences, n)`: given a list of sentences (each a list of words), return a
# `Counter` that maps each n-gram, **as a tuple** of $n$ words, to the number of times it occurs
# in the padded sentences.

# %% solution="count_ngrams"
def count_ngrams(sentences, n):
    """Counter mapping n-gram tuples (over padded sentences) to their counts."""
    ### BEGIN SOLUTION
    counts = Counter()
    for words in sentences:
        padded = pad_sentence(words, n)
        for i in range(len(padded) - n + 1):
            counts[tuple(padded[i:i + n])] += 1
    return counts
    ### END SOLUTION


# %% tests="count_ngrams_tests" points=2
# Your count_ngrams runs with the reference pad_sentence, so a slip there costs its own points only.
tests.check("count_ngrams")
### BEGIN HIDDEN TESTS
tests.grade("count_ngrams")
### END HIDDEN TESTS

# %% [markdown]
# Now the real corpus. `lmcourse.data` fetches Shakespeare's works once (see the README) and
# splits them **by play**: three plays are kept aside for validation, three for testing, so the
# validation text is genuinely unseen. We keep only the spoken words (no stage directions or
# speaker names), lower-case them, and cut them into sentences at `.`, `!` and `?`.
#
# Our vocabulary is **closed**: words seen at least twice in training, plus `</s>` and `<unk>`.
# Every other word, in training and in validation, becomes `<unk>`. Without this, any unseen word
# in the validation plays would get probability zero under *every* model we build.

# %% locked="corpus"
corpus = data.load_shakespeare(quiet=True)
train_sents = split_sentences(data.spoken_text(corpus.text("train")))
val_sents = split_sentences(data.spoken_text(corpus.text("val")))
if rt.profile.max_sentences:  # the tiny profile (autograding) uses an evenly spread sample
    train_sents = train_sents[:: max(1, len(train_sents) // rt.profile.max_sentences)]
    val_sents = val_sents[:: max(1, 5 * len(val_sents) // rt.profile.max_sentences)]

word_counts = Counter(w for s in train_sents for w in s)
known = {w for w, c in word_counts.items() if c >= 2}
train_sents = [[w if w in known else UNK for w in s] for s in train_sents]
val_sents = [[w if w in known else UNK for w in s] for s in val_sents]
vocab = sorted(known | {EOS, UNK})
V = len(vocab)
print(f"{len(train_sents):,} training sentences, {sum(map(len, train_sents)):,} words; "
      f"{len(val_sents):,} validation sentences; vocabulary |V| = {V:,}")
print("a training sentence:", " ".join(train_sents[len(train_sents) // 2]))

# %% [markdown]
# ### Zipf's law
# A handful of words are everywhere and most words are rare: word frequency falls roughly as
# $1/\text{rank}$. This long tail is why counting alone fails: however much text we read, most
# possible n-grams are never seen.

# %%
ax = plot.zipf(word_counts, label="Shakespeare (training plays)")
print("10 most common:", [w for w, _ in word_counts.most_common(10)])
print(f"{sum(1 for c in word_counts.values() if c == 1):,} of {len(word_counts):,} word types occur once")

# %% [markdown]
# ## 3. Maximum-likelihood estimates
#
# The maximum-likelihood estimate (MLE) of the next-word probability is a ratio of counts: of
# all the times the context $h = (w_{t-n+1}, \dots, w_{t-1})$ was followed by *something*, how
# often was it followed by $w$?
#
# $$p_{\text{MLE}}(w \mid h) = \frac{c(h, w)}{c(h)}, \qquad c(h) = \sum_{w'} c(h, w').$$
#
# The lecture's example: in 11 snippets containing *cows eat*, the next word was *corn* 4 times,
# *grass* 3, *hay* 2, *if* 1 and *which* 1, so $p(\text{corn} \mid \text{cows eat}) = 4/11$.
#
# Looking counts up in a `Counter` keyed by whole n-grams would mean scanning it for every
# question, so we group the counts by context once. `ContextTable.from_counts(counts)` gives you
# `table.next[h]` (a dict `{w: c(h, w)}`), `table.total[h]` $= c(h)$ and `table.distinct[h]`
# (how many different words followed $h$). Contexts are tuples; a context never seen is simply
# absent from these dicts.

# %%
cows_counts = Counter({("cows", "eat", "corn"): 4, ("cows", "eat", "grass"): 3, ("cows", "eat", "hay"): 2,
                       ("cows", "eat", "if"): 1, ("cows", "eat", "which"): 1,
                       ("cows", "drink", "water"): 6, ("goats", "eat", "grass"): 5})
cows_table = ContextTable.from_counts(cows_counts)
print(cows_table)
print("c(cows eat) =", cows_table.total[("cows", "eat")], "| next words:", cows_table.next[("cows", "eat")])

# %% [markdown]
# ### Exercise 3 — one MLE probability
# Write `mle_prob(table, context, word)` $= c(h, w) / c(h)$. Return `0.0` when the context was
# never seen (the MLE is undefined there; we will see below why that is a problem).

# %% solution="mle_prob"
def mle_prob(table, context, word):
    """p_MLE(word | context) from a ContextTable; 0.0 for a context never seen."""
    ### BEGIN SOLUTION
    context = tuple(context)
    total = table.total.get(context, 0)
    if total == 0:
        return 0.0
    return table.next[context].get(word, 0) / total
    ### END SOLUTION


# %% tests="mle_prob_tests" points=1
from lmcourse import ngram as _ref


# Your mle_prob must not call the reference one.
_rules = lmcourse.rules.rules(_ref.mle_prob, reason=_OWN)


with _rules():
    check_close(mle_prob(cows_table, ("cows", "eat"), "corn"), 4 / 11, "p(corn | cows eat)",
                hint="divide c(cows eat corn) by c(cows eat) = 11, the count of the context only "
                     "(not all n-grams, not the count of the last word alone), with / rather than //")
    check_close(mle_prob(cows_table, ("cows", "eat"), "water"), 0.0, "p(water | cows eat)",
                hint="a word never seen after this context has count 0")
    _p = call_checked(mle_prob, cows_table, ("pigs", "eat"), "corn",
                      name="mle_prob(cows_table, ('pigs', 'eat'), 'corn')",
                      hint="the context ('pigs', 'eat') was never seen, so it is not a key of table.next or "
                           "table.total: check `context in table.total` before looking it up, and return 0.0")
    check_close(_p, 0.0, "p(corn | pigs eat)", hint="return 0.0 for a context that is not in table.total")
visible_checks_pass("mle_prob")
### BEGIN HIDDEN TESTS
with _rules():
    check_close(mle_prob(cows_table, ("cows", "drink"), "water"), 1.0, "p(water | cows drink)")
    check_close(mle_prob(cows_table, ("goats", "eat"), "grass"), 1.0, "p(grass | goats eat)")
    check_close(mle_prob(cows_table, ("cows", "eat"), "which"), 1 / 11, "p(which | cows eat)")
    check_close(mle_prob(cows_table, ("goats", "drink"), "water"), 0.0, "p(water | goats drink), unseen context")
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4 — the whole next-word distribution
# Write `next_word_distribution(table, context)`: a dict `{w: p_MLE(w | context)}` over the words
# seen after the context — the lecture's table for *cows eat*. Return `{}` for an unseen context.

# %% solution="next_word_distribution"
def next_word_distribution(table, context):
    """{word: probability} for every word seen after context; {} if the context is unseen."""
    ### BEGIN SOLUTION
    context = tuple(context)
    if context not in table.next:
        return {}
    total = table.total[context]
    return {w: c / total for w, c in table.next[context].items()}
    ### END SOLUTION


# %% tests="next_word_distribution_tests" points=2
from lmcourse import ngram as _ref

_t1 = ContextTable.from_counts(Counter({("a",): 2, ("b",): 1, ("</s>",): 1}))  # unigrams of [["a", "b", "a"]]


# Your next_word_distribution runs with the reference mle_prob and must not call the reference one.
_rules = lmcourse.rules.rules(_ref.next_word_distribution,
                              substitute=dict(mle_prob=_ref.mle_prob), namespace=globals(), reason=_OWN)


with _rules():
    _dist = next_word_distribution(cows_table, ("cows", "eat"))
    check_distribution(_dist, "p(. | cows eat)", hint="did you divide every count by c(cows eat)?")
    check_dist_close(_dist, {"corn": 4 / 11, "grass": 3 / 11, "hay": 2 / 11, "if": 1 / 11, "which": 1 / 11},
                     "p(. | cows eat)", hint="only words seen after 'cows eat' belong in it, each c(h, w) / c(h)")
    _none = call_checked(next_word_distribution, cows_table, ("pigs", "fly"),
                         name="next_word_distribution(cows_table, ('pigs', 'fly'))",
                         hint="('pigs', 'fly') was never seen, so it is not a key of table.next: return {} for it")
    check_equal(_none, {}, "next_word_distribution for an unseen context")
    check_dist_close(next_word_distribution(_t1, ()), {"a": 0.5, "b": 0.25, "</s>": 0.25},
                     "the unigram distribution next_word_distribution(t1, ())",
                     hint="a unigram table has a single context, the empty tuple (); treat it like any other")
    check_equal(cows_table.next[("cows", "eat")], {"corn": 4, "grass": 3, "hay": 2, "if": 1, "which": 1},
                "the counts in cows_table after calling next_word_distribution",
                hint="build a new dict of probabilities; dividing table.next[h] in place destroys the counts "
                     "every later cell relies on")
visible_checks_pass("next_word_distribution")
### BEGIN HIDDEN TESTS
_t2 = ContextTable.from_counts(_ref.count_ngrams([["a", "b", "a"], ["b", "b"]], 2))
with _rules():   # the expected distributions are made after the graded calls, from a fresh table
    check_dist_close(next_word_distribution(cows_table, ("goats", "eat")), {"grass": 1.0}, "p(. | goats eat)")
    _got = {_h: next_word_distribution(_t2, _h) for _h in [("a",), ("b",), ("<s>",)]}
for _h, _d in _got.items():
    check_dist_close(_d, _ref.next_word_distribution(
        ContextTable.from_counts(_ref.count_ngrams([["a", "b", "a"], ["b", "b"]], 2)), _h), f"bigram p(. | {_h})")
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Scoring text: the chain rule and perplexity
#
# The probability of a sentence is the product of its next-word probabilities (chain rule plus
# the n-gram assumption), including the final $p(\texttt{</s>} \mid \dots)$. Products of many
# small numbers underflow to 0.0 in floating point, so we add **natural logarithms** instead:
#
# $$\log p(w_1, \dots, w_T) = \sum_{t=1}^{T+1} \log p(w_t \mid w_{t-n+1}, \dots, w_{t-1}),
# \qquad w_{T+1} = \texttt{</s>},$$
#
# where positions before the sentence start hold `<s>`. If any factor is 0 the sentence has
# probability 0 and log-probability $-\infty$ (`-math.inf`; note that `math.log(0.0)` raises).
#
# ### Exercise 5 — log-probability of a sentence
# Write `sentence_logprob(prob, sentence, n)`. `prob(context, word)` is any model's conditional
# probability, called with the context as a **tuple** of the $n-1$ previous (padded) tokens.

# %% solution="sentence_logprob"
def sentence_logprob(prob, sentence, n):
    """Natural-log probability of sentence (a list of words) under prob(context, word)."""
    ### BEGIN SOLUTION
    padded = pad_sentence(sentence, n)
    total = 0.0
    for i in range(n - 1, len(padded)):
        p = prob(tuple(padded[i - n + 1:i]), padded[i])
        if p <= 0.0:
            return -math.inf
        total += math.log(p)
    return total
    ### END SOLUTION


# %% tests="sentence_logprob_tests" points=2
# Your sentence_logprob runs with the reference pad_sentence. The tests call it with small models of
# their own and also check which (context, word) pairs it asked them for.
tests.check("sentence_logprob")
### BEGIN HIDDEN TESTS
tests.grade("sentence_logprob")
### END HIDDEN TESTS

# %% [markdown]
# **Perplexity** turns the average log-probability per predicted token into an "effective number
# of choices". Over a set of sentences with $N$ predictions in total (each sentence's words plus
# its `</s>`):
#
# $$\mathrm{PPL} = \exp\Big(-\frac{1}{N} \sum_{\text{sentences}} \log p(\text{sentence})\Big).$$
#
# A model that spreads probability evenly over $V$ words has perplexity exactly $V$; lower is
# better; a single impossible sentence makes it $\infty$.
#
# ### Exercise 6 — perplexity
# Write `perplexity(prob, sentences, n)` using `sentence_logprob`. Use base $e$ throughout.

# %% solution="perplexity"
def perplexity(prob, sentences, n):
    """exp of minus the mean log-probability per predicted token (words and </s>)."""
    ### BEGIN SOLUTION
    total_logprob = 0.0
    n_predictions = 0
    for sentence in sentences:
        total_logprob += sentence_logprob(prob, sentence, n)
        n_predictions += len(sentence) + 1
    return math.exp(-total_logprob / n_predictions)
    ### END SOLUTION


# %% tests="perplexity_tests" points=2
from lmcourse import ngram as _ref

_uniform10 = lambda context, word: 1 / 10  # noqa: E731
# two sentences of unequal length under a unigram model: every prediction must weigh the same
_probs = {"a": 0.5, "b": 0.1, "</s>": 0.4}
_short, _long = ["a"], ["b", "b", "b", "a"]
_lps = [math.fsum(math.log(_probs[w]) for w in s + ["</s>"]) for s in (_short, _long)]
_ns = [len(_short) + 1, len(_long) + 1]
_pooled = math.exp(-math.fsum(_lps) / sum(_ns))
_slips = {"the mean of the per-sentence perplexities": (math.exp(-_lps[0] / _ns[0]) + math.exp(-_lps[1] / _ns[1])) / 2,
          "exp of the mean of the per-sentence averages": math.exp(-(_lps[0] / _ns[0] + _lps[1] / _ns[1]) / 2)}


# Your perplexity runs with the reference sentence_logprob and must not call the reference one.
_rules = lmcourse.rules.rules(_ref.perplexity,
                              substitute=dict(pad_sentence=_ref.pad_sentence, sentence_logprob=_ref.sentence_logprob),
                              namespace=globals(), reason=_OWN)


with _rules():
    check_close(perplexity(_uniform10, [["a", "b", "c"], ["d"]], 2), 10.0,
                "perplexity of a uniform model over 10 words", rel=1e-9,
                hint="for a uniform model it must equal the number of choices; check that you divide by the "
                     "number of predictions (words + one </s> per sentence) and use exp, not 2**")
    check_close(perplexity(_toy_prob, [["to", "be"]], 2), (0.5 * 0.25 * 0.8) ** (-1 / 3), "perplexity of 'to be'",
                rel=1e-9, hint="N counts the </s> prediction: 2 words + 1 = 3")
    _ppl = perplexity(lambda h, w: _probs[w], [_short, _long], 1)
    _slip = next((s for s, v in _slips.items() if math.isclose(_ppl, v, rel_tol=1e-9)), None)
    check_close(_ppl, _pooled, "perplexity of a 1-word and a 4-word sentence under a unigram model", rel=1e-9,
                hint=(f"you computed {_slip}, which weighs the 2 predictions of the short sentence as much as the "
                      "5 of the long one. " if _slip else "")
                + "Pool the predictions: add the log-probabilities of all sentences, divide by the total number "
                  "of predictions (2 + 5 = 7 here), then take exp")
    check_close(perplexity(_toy_prob, [["to", "be"], ["to", "go"]], 2), math.inf,
                "perplexity with an impossible sentence",
                hint="one sentence of probability 0 makes the perplexity infinite")
visible_checks_pass("perplexity")
### BEGIN HIDDEN TESTS
_three = [["to", "be"], ["to", "be", "to", "be"], []]
_bi = {("<s>",): {"to": 0.5, "</s>": 0.5}, ("to",): {"be": 1.0}, ("be",): {"</s>": 0.5, "to": 0.5}}
_bi_prob = lambda h, w: _bi[h].get(w, 0.0)  # noqa: E731
with _rules():
    check_close(perplexity(lambda h, w: 0.5, [["a"], ["b", "c", "d"]], 3), 2.0, "perplexity of a coin")
    check_close(perplexity(_toy_prob, [["to", "be"], ["to", "be"]], 2), (0.5 * 0.25 * 0.8) ** (-1 / 3),
                "perplexity of a repeated sentence")
    _got = perplexity(_bi_prob, [list(_s) for _s in _three], 2)
check_close(_got, _ref.perplexity(_bi_prob, _three, 2), "perplexity of three sentences of lengths 2, 4 and 0")
### END HIDDEN TESTS

# %% [markdown]
# ### Unsmoothed n-grams on Shakespeare
# Let us train MLE models for $n = 1, \dots, 5$ and measure perplexity on (a sample of) the
# training sentences and on the unseen validation plays.

# %% locked="mle_sweep"
orders = list(range(1, rt.profile.max_order + 1))
train_sample = train_sents[:: max(1, len(train_sents) // max(1, len(val_sents)))]
train_counts = {n: count_ngrams(train_sents, n) for n in orders}
mle_tables = {n: ContextTable.from_counts(train_counts[n]) for n in orders}
results = {"MLE": {"train": [], "val": []}}
for n in orders:
    model = lambda h, w, t=mle_tables[n]: mle_prob(t, h, w)  # noqa: E731
    results["MLE"]["train"].append(perplexity(model, train_sample, n))
    results["MLE"]["val"].append(perplexity(model, val_sents, n))
    print(f"n={n}: train {results['MLE']['train'][-1]:8.1f}   validation {results['MLE']['val'][-1]:8.1f}")

# %% [markdown]
# Training perplexity falls as $n$ grows — longer contexts are more predictive *of text the model
# has already seen*. Validation perplexity is infinite from $n = 2$ on: a single validation bigram
# that never occurred in training gets probability 0. More context means sparser counts, so the
# problem only gets worse with $n$. We need to **smooth**: take a little probability from seen
# events and give it to unseen ones.
#
# ## 5. Add-k smoothing
#
# Pretend every word of the vocabulary was seen $k$ extra times after every context:
#
# $$p_{\text{add-}k}(w \mid h) = \frac{c(h, w) + k}{c(h) + k\,|V|}.$$
#
# The denominator grows by $k|V|$ because *every* word of the vocabulary — seen after $h$ or not —
# received $k$ pseudo-counts; that is what keeps the distribution summing to 1. For an unseen
# context this gives the uniform $1/|V|$.
#
# ### Exercise 7 — add-k
# Write `add_k_prob(table, vocab_size, context, word, k)`.

# %% solution="add_k_prob"
def add_k_prob(table, vocab_size, context, word, k=1.0):
    """(c(h, w) + k) / (c(h) + k |V|)."""
    ### BEGIN SOLUTION
    context = tuple(context)
    count = table.next.get(context, {}).get(word, 0)
    total = table.total.get(context, 0)
    return (count + k) / (total + k * vocab_size)
    ### END SOLUTION


# %% tests="add_k_prob_tests" points=2
from lmcourse import ngram as _ref

_vocab6 = ["corn", "grass", "hay", "if", "which", "water"]
_cows_table = ContextTable.from_counts(cows_counts)  # a fresh copy, whatever earlier cells did to it


# Your add_k_prob must not call the reference one.
_rules = lmcourse.rules.rules(_ref.add_k_prob, reason=_OWN)


with _rules():
    check_close(add_k_prob(_cows_table, 6, ("cows", "eat"), "corn", k=1.0), 5 / 17, "add-1 p(corn | cows eat), |V| = 6",
                hint="(4 + 1) / (11 + 1 * 6)")
    check_close(add_k_prob(_cows_table, 6, ("cows", "eat"), "water", k=1.0), 1 / 17, "add-1 p(water | cows eat)",
                hint="an unseen word gets k / (c(h) + k|V|), never 0")
    check_close(add_k_prob(_cows_table, 6, ("cows", "eat"), "corn", k=0.5), 4.5 / 14, "add-0.5 p(corn | cows eat)",
                hint="use the k you are given: (4 + 0.5) / (11 + 0.5 * 6)")
    check_close(math.fsum(add_k_prob(_cows_table, 6, ("cows", "eat"), w, k=0.5) for w in _vocab6), 1.0,
                "sum over the vocabulary of add-0.5 p(w | cows eat)",
                hint="the denominator must add k for every word of the vocabulary (k * vocab_size), "
                     "not only for the words seen after the context")
    _p = call_checked(add_k_prob, cows_table, 6, ("pigs", "fly"), "hay", k=2.0,
                      name="add_k_prob(_cows_table, 6, ('pigs', 'fly'), 'hay', k=2.0)",
                      hint="an unseen context is not a key of table.next or table.total: its counts are 0 "
                           "(use .get(context, 0))")
    check_close(_p, 1 / 6, "add-2 p(hay | unseen context)",
                hint="for an unseen context c(h) = 0 and the estimate is uniform, 1/|V|")
visible_checks_pass("add_k_prob")
### BEGIN HIDDEN TESTS
with _rules():
    check_close(add_k_prob(_cows_table, 10, ("cows", "eat"), "hay", k=0.1), 2.1 / 12.0,
                "add-0.1 p(hay | cows eat), |V|=10")
    check_close(add_k_prob(_cows_table, 6, ("cows", "eat"), "grass", k=0.0), 3 / 11, "add-0 equals the MLE")
    check_close(add_k_prob(_cows_table, 7, ("goats", "eat"), "corn", k=0.25), 0.25 / (5 + 0.25 * 7),
                "add-0.25 p(corn | goats eat), |V| = 7")
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Interpolated Kneser–Ney smoothing
#
# Add-k gives every unseen word the same share. Better: when the long context knows little, ask a
# shorter one. **Interpolated Kneser–Ney** subtracts a fixed discount $d$ (typically $0.75$) from
# every seen count and hands the freed mass to the lower-order model, with the context $h'$ that
# drops the oldest word:
#
# $$p_{\text{KN}}(w \mid h) = \frac{\max(c(h, w) - d,\ 0)}{c(h)}
#   + \frac{d \cdot N_{1+}(h\,\bullet)}{c(h)}\; p_{\text{KN}}(w \mid h'),$$
#
# where $N_{1+}(h\,\bullet)$ = `table.distinct[h]` is the number of different words seen after $h$:
# each of them gave up $d$. If $c(h) = 0$ the whole weight goes to the lower order. Below the
# shortest (empty) context sits the uniform distribution $1/|V|$.
#
# The Kneser–Ney twist is in the **lower-order counts**. *Francisco* is frequent, but only ever
# after *San*; as a guess for a new context it is a poor bet. So the lower orders count not how
# often a word occurred but in **how many different contexts** it occurred — its continuation
# count $N_{1+}(\bullet\, h' w)$, the number of distinct words $v$ such that $(v, h', w)$ was seen.
#
# ### Exercise 8 — continuation counts
# Write `continuation_counts(ngram_counts)`: from counts of m-grams, return a `Counter` mapping each
# (m-1)-gram `g[1:]` to the number of **distinct** m-grams that end with it (count each m-gram
# with a positive count once, whatever its count).

# %% solution="continuation_counts"
def continuation_counts(ngram_counts):
    """Counter {suffix (m-1)-gram: number of distinct words seen before it}."""
    ### BEGIN SOLUTION
    return Counter(gram[1:] for gram, count in ngram_counts.items() if count > 0)
    ### END SOLUTION


# %% tests="continuation_counts_tests" points=1
from lmcourse import ngram as _ref

_bi = Counter({("san", "francisco"): 5, ("the", "cat"): 1, ("a", "cat"): 1, ("my", "cat"): 2})


# Your continuation_counts must not call the reference one.
_rules = lmcourse.rules.rules(_ref.continuation_counts, reason=_OWN)


with _rules():
    _cc = continuation_counts(_bi)
    check(all(isinstance(g, tuple) for g in _cc), f"the keys of continuation_counts should be tuples such as "
          f"('cat',), found {next(iter(_cc), None)!r} — keep gram[1:], which is a tuple")
    check_close(_cc[("francisco",)], 1, "continuation count of 'francisco'",
                hint="count distinct left neighbours, not occurrences: 'francisco' only ever follows 'san'")
    check_close(_cc[("cat",)], 3, "continuation count of 'cat'", hint="'cat' follows 3 different words")
    check_equal(dict(_cc), {("francisco",): 1, ("cat",): 3}, "continuation_counts(bigrams)",
                hint="keys are the n-grams with their first word dropped, as tuples")
    _cc3 = continuation_counts(Counter({("a", "b", "c"): 3, ("x", "b", "c"): 1, ("a", "b", "d"): 1,
                                        ("q", "r", "s"): 0}))
    check_equal(dict(_cc3), {("b", "c"): 2, ("b", "d"): 1}, "continuation_counts of trigrams, one with count 0",
                hint="the keys keep the last m - 1 = 2 words; an m-gram whose count is 0 was never seen: skip it")
visible_checks_pass("continuation_counts")
### BEGIN HIDDEN TESTS
_four = Counter({("a", "b", "c", "d"): 2, ("x", "b", "c", "d"): 7, ("a", "x", "c", "d"): 1, ("z", "z", "z", "z"): 0})
with _rules():
    check_equal(dict(continuation_counts(_four)), {("b", "c", "d"): 2, ("x", "c", "d"): 1},
                "continuation counts of 4-grams")
    check_equal(dict(continuation_counts(Counter())), {}, "continuation counts of nothing")
### END HIDDEN TESTS

# %% [markdown]
# We provide the bookkeeping: given the output of `count_ngrams`, `build_kn_tables(ngram_counts)`
# returns a list `tables` where `tables[k]` is the `ContextTable` for contexts of length $k$. The
# top one, `tables[n-1]`, holds the raw n-gram counts; each lower one holds continuation counts
# computed with your function.

# %% locked="build_kn_tables"
def build_kn_tables(raw):
    """KN tables from raw n-gram counts: tables[k] holds the counts for contexts of length k."""
    n = len(next(iter(raw)))
    tables = [None] * n
    tables[n - 1] = ContextTable.from_counts(raw)
    for m in range(n - 1, 0, -1):
        # distinct (m+1)-grams that end at a predicted position: the last m+1 words of each n-gram
        suffixes = Counter({gram[-(m + 1):]: 1 for gram in raw})
        tables[m - 1] = ContextTable.from_counts(continuation_counts(suffixes))
    return tables


# %% [markdown]
# ### Exercise 9 — the Kneser–Ney probability
# Write `kneser_ney_prob(tables, vocab_size, context, word, d)` following the equation, recursively:
# the lower-order probability uses `context[1:]` and `tables[len(context) - 1]`; the empty context
# `()` interpolates with the uniform $1/|V|$.

# %% solution="kneser_ney_prob"
def kneser_ney_prob(tables, vocab_size, context, word, d=0.75):
    """Interpolated Kneser-Ney p(word | context) with discount d."""
    ### BEGIN SOLUTION
    context = tuple(context)
    if context:
        lower = kneser_ney_prob(tables, vocab_size, context[1:], word, d)
    else:
        lower = 1.0 / vocab_size
    table = tables[len(context)]
    total = table.total.get(context, 0)
    if total == 0:
        return lower
    count = table.next[context].get(word, 0)
    return (max(count - d, 0.0) + d * table.distinct[context] * lower) / total
    ### END SOLUTION


# %% tests="kneser_ney_prob_tests" points=3
from lmcourse import ngram as _ref

# the tables come from the reference count_ngrams and continuation_counts: a slip there costs its own points
_kn_sents = [["san", "francisco", "is", "foggy"], ["the", "cat", "is", "grey"], ["my", "cat", "is", "foggy"]]
_kn = _ref.build_kn_tables(_ref.count_ngrams(_kn_sents, 2))
_kn_vocab = sorted({w for s in _kn_sents for w in s} | {"</s>", "dog"})
# Lowest order: 12 distinct bigrams; 'cat' follows 2 different words; 9 words have a continuation count.
_p_uni_cat = (2 - 0.75 + 0.75 * 9 * (1 / 10)) / 12
# Trigrams: 'cat is' was followed by 'grey' once and 'foggy' twice. The lower orders are the reference's.
_kn3 = _ref.build_kn_tables(_ref.count_ngrams(_kn_sents + [["the", "cat", "is", "foggy"]], 3))
_ci = _kn3[2].next[("cat", "is")]
_tri_with = lambda lower: (max(_ci["foggy"] - 0.5, 0) + 0.5 * len(_ci) * lower) / sum(_ci.values())  # noqa: E731
_p_foggy_is = _ref.kneser_ney_prob(_kn3, 9, ("is",), "foggy", d=0.5)
_p_foggy_cat = _ref.kneser_ney_prob(_kn3, 9, ("cat",), "foggy", d=0.5)
_p_is_cat = _ref.kneser_ney_prob(_kn3, 9, ("cat",), "is", d=0.5)


# Your kneser_ney_prob must not call the reference one.
_rules = lmcourse.rules.rules(_ref.kneser_ney_prob, reason=_OWN)


with _rules():
    check_close(kneser_ney_prob(_kn, 10, (), "cat"), _p_uni_cat, "p_KN(cat) at the lowest order, |V| = 10",
                hint="max(N1+(. cat) - d, 0) / total + d * distinct / total * (1 / |V|), with the continuation "
                     "table tables[0] and its entry for the empty context ()")
    # c(the cat) = 1 = c(the), and one distinct word followed 'the'
    check_close(kneser_ney_prob(_kn, 10, ("the",), "cat"), (1 - 0.75 + 0.75 * 1 * _p_uni_cat) / 1, "p_KN(cat | the)",
                hint="discount the count, then add d * N1+(the .) / c(the) times the lower-order probability")
    for _h in [("the",), ("cat",), ("dog",), ()]:
        check_close(math.fsum(kneser_ney_prob(_kn, len(_kn_vocab), _h, w) for w in _kn_vocab), 1.0,
                    f"sum over the vocabulary of p_KN(w | {_h})", rel=1e-9,
                    hint="each level must give back exactly the discounted mass: d * distinct / total "
                         "times the lower-order probability; an unseen context uses the lower order alone")
    check(kneser_ney_prob(_kn, len(_kn_vocab), ("the",), "dog") > 0,
          "p_KN(dog | the) should be > 0 — an unseen word must still get mass from the uniform distribution")
    # trigram contexts: the lower order drops the OLDEST word
    _p = kneser_ney_prob(_kn3, 9, ("cat", "is"), "foggy", d=0.5)
    check_close(_p, _tri_with(_p_foggy_is), "trigram p_KN(foggy | cat is), d = 0.5", rel=1e-9,
                hint="the lower order of 'cat is' is 'is' (context[1:], the oldest word dropped), not 'cat' "
                     "(context[:-1]): you interpolated with p_KN(foggy | cat)"
                if math.isclose(_p, _tri_with(_p_foggy_cat), rel_tol=1e-9) else
                "(max(c(cat is foggy) - d, 0) + d * N1+(cat is .) * p_KN(foggy | is)) / c(cat is)")
    _p = kneser_ney_prob(_kn3, 9, ("zebra", "cat"), "is", d=0.5)
    check_close(_p, _p_is_cat, "p_KN(is | zebra cat), a context never seen", rel=1e-9,
                hint="1/|V| is the uniform guess, which ignores what 'cat' tells us: an unseen context gives all "
                     "its weight to the lower order, p_KN(is | cat)" if math.isclose(_p, 1 / 9, rel_tol=1e-9) else
                "an unseen context (c(h) = 0) gives all its weight to the lower order p_KN(w | h'), h' = context[1:]")
    check_close(math.fsum(kneser_ney_prob(_kn3, len(_kn_vocab), ("cat", "is"), w, d=0.5) for w in _kn_vocab), 1.0,
                "sum over the vocabulary of the trigram p_KN(w | cat is), d = 0.5", rel=1e-9,
                hint="recurse on context[1:] with tables[len(context)] at each level")
visible_checks_pass("kneser_ney_prob")
### BEGIN HIDDEN TESTS
_kn4 = _ref.build_kn_tables(_ref.count_ngrams(_kn_sents + [["the", "cat", "is", "foggy"], ["my", "cat", "is", "grey"]],
                                               4))
_cases = [(_t, _h, _w, _d) for _t, _hs in ((_kn3, [("cat", "is"), ("<s>", "the"), ("is", "is"), ("zebra", "cat"),
                                                    ("<s>", "<s>"), ("is", "foggy")]),
                                           (_kn4, [("my", "cat", "is"), ("<s>", "<s>", "the"), ("a", "b", "c"),
                                                   ("dog", "cat", "is"), ("<s>", "<s>", "<s>")]))
          for _h in _hs for _w in _kn_vocab for _d in (0.5, 0.9)]
with _rules():   # the expected probabilities are made after the graded calls: no global holds them during one
    _got = [kneser_ney_prob(_t, len(_kn_vocab), _h, _w, _d) for _t, _h, _w, _d in _cases]
for (_t, _h, _w, _d), _g in zip(_cases, _got):
    check_close(_g, _ref.kneser_ney_prob(_t, len(_kn_vocab), _h, _w, _d), f"p_KN({_w} | {_h}), d = {_d}", rel=1e-9)
### END HIDDEN TESTS

# %% [markdown]
# ### Why smoothing matters, in one picture
# The same sweep as before, now with add-k ($k = 0.01$) and Kneser–Ney ($d = 0.75$).

# %% locked="smoothing_sweep"
results["add-0.01"] = {"train": [], "val": []}
results["Kneser-Ney"] = {"train": [], "val": []}
kn_tables = {n: build_kn_tables(train_counts[n]) for n in orders}
for n in orders:
    for name, model in [("add-0.01", lambda h, w, t=mle_tables[n]: add_k_prob(t, V, h, w, k=0.01)),
                        ("Kneser-Ney", lambda h, w, ts=kn_tables[n]: kneser_ney_prob(ts, V, h, w, d=0.75))]:
        results[name]["train"].append(perplexity(model, train_sample, n))
        results[name]["val"].append(perplexity(model, val_sents, n))
for name, per in results.items():
    print(f"{name:>11}  val: " + "  ".join(f"n={n}: {p:7.1f}" for n, p in zip(orders, per["val"])))
ax = plot.perplexity_by_order(results, orders)

# %% [markdown]
# Read the picture: the unsmoothed model's validation perplexity is infinite beyond unigrams.
# Add-k makes everything finite, but beyond bigrams it gets *worse* with $n$: the $k|V|$
# pseudo-counts swamp the few real counts of long contexts. Kneser–Ney improves up to
# about $n = 3$ and then stays nearly flat, because a sparse long context hands most of its mass
# to a well-estimated shorter one. (These numbers are for the `cpu` profile. In the `tiny` profile,
# with 3,000 training sentences, the curves stop at $n = 3$ and the best order may be $n = 2$:
# less data makes long contexts sparse sooner.) The gap between the training and validation curves is
# overfitting, measured.

# %% [markdown]
# ## 7. Choosing $k$ and $d$ on the validation plays
#
# So far $k = 0.01$ and $d = 0.75$ were guesses. They are **hyperparameters**: numbers that
# counting does not learn, so we choose them by trying several values and keeping the one whose
# model predicts the **validation** plays best. Not on the training text: the counts came from it,
# so there the less we smooth, the better the model looks (the training curves above show how
# flattering seen text is). Not on the test plays either: we keep those for one final
# measurement, made once, of a model that no choice was tuned on — that number is an honest
# estimate of how the chosen model does on new text.
#
# We sweep $k$ for add-$k$ at orders $n \le 3$ and $d$ for Kneser–Ney at $n = 2$ and $3$ (the
# picture above shows that longer contexts bring little more), and choose the pair of order and
# value with the lowest validation perplexity. (In the `tiny` profile, the grader's, the grid is
# coarser: three values of $k$ and four of $d$.)

# %% locked="tuning_sweep"
ks = [1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001]
ds = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0]
if rt.profile.name == "tiny":  # the autograder's profile: a coarser grid, seconds saved on every graded run
    ks, ds = ks[::3], [0.5, 0.75, 0.9, 1.0]
add_k_val = {n: [perplexity(lambda h, w, t=mle_tables[n], k=k: add_k_prob(t, V, h, w, k=k), val_sents, n)
                 for k in ks] for n in orders[:3]}
kn_val = {n: [perplexity(lambda h, w, ts=kn_tables[n], d=d: kneser_ney_prob(ts, V, h, w, d=d), val_sents, n)
              for d in ds] for n in orders[1:3]}
best_add_k = min((ppl, n, k) for n, row in add_k_val.items() for k, ppl in zip(ks, row))
best_kn = min((ppl, n, d) for n, row in kn_val.items() for d, ppl in zip(ds, row))
for n, row in add_k_val.items():
    print(f"add-k, n={n}:  " + "  ".join(f"k={k:g}: {p:.1f}" for k, p in zip(ks, row)))
for n, row in kn_val.items():
    print(f"KN,    n={n}:  " + "  ".join(f"d={d:g}: {p:.1f}" for d, p in zip(ds, row)))
print(f"best add-k: n={best_add_k[1]}, k={best_add_k[2]:g} (validation perplexity {best_add_k[0]:.1f})")
print(f"best Kneser-Ney: n={best_kn[1]}, d={best_kn[2]:g} (validation perplexity {best_kn[0]:.1f}; "
      f"with d=0.75: {kn_val[best_kn[1]][ds.index(0.75)]:.1f})")
plot.validation_sweep(ks, {f"add-k, n={n}": row for n, row in add_k_val.items()}, "k", log_x=True,
                      title="Add-k: validation perplexity against k")
ax = plot.validation_sweep(ds, {f"Kneser-Ney, n={n}": row for n, row in kn_val.items()}, "d",
                           title="Kneser-Ney: validation perplexity against the discount d")

# %% [markdown]
# Read the sweeps. Add-one ($k = 1$) is far too much: the best $k$ is well below $0.1$, because
# every one of the $|V|$ words receives $k$ pseudo-counts after every context, and $k|V|$ is
# thousands of counts, more than most contexts have real ones. Too small a $k$ hurts again: unseen
# words get almost nothing. The best discount of Kneser–Ney is above the textbook $0.75$, and its
# best model beats the best add-$k$ model by a wide margin: tuning $k$ cannot fix that add-$k$
# shares the freed mass evenly instead of asking a shorter context.
#
# Now, once, the test plays.

# %% locked="test_perplexity"
test_sents = split_sentences(data.spoken_text(corpus.text("test")))
if rt.profile.max_sentences:  # the same sampling as the validation plays
    test_sents = test_sents[:: max(1, 5 * len(test_sents) // rt.profile.max_sentences)]
test_sents = [[w if w in known else UNK for w in s] for s in test_sents]
_, n_k, k_best = best_add_k
_, n_d, d_best = best_kn
chosen = {f"add-{k_best:g}, n={n_k}": (lambda h, w: add_k_prob(mle_tables[n_k], V, h, w, k=k_best), n_k),
          f"Kneser-Ney d={d_best:g}, n={n_d}": (lambda h, w: kneser_ney_prob(kn_tables[n_d], V, h, w, d=d_best), n_d)}
test_ppl = {}
for name, (model, n) in chosen.items():
    test_ppl[name] = perplexity(model, test_sents, n)
    print(f"{name:>24}: validation {perplexity(model, val_sents, n):7.1f}   test {test_ppl[name]:7.1f}")

# %% [markdown]
# ## 8. Perplexity, cross-entropy and bits
#
# Perplexity is one of three faces of the same number. The **cross-entropy** of a model on a
# text of $N$ predictions is its average surprise per prediction, in **nats** (natural logs):
#
# $$H = -\frac{1}{N} \sum_{t=1}^{N} \ln p(w_t \mid h_t), \qquad \mathrm{PPL} = e^{H}.$$
#
# Measure the surprise with $\log_2$ instead and it is in **bits**: $H_2 = H / \ln 2$, and
# $\mathrm{PPL} = 2^{H_2}$. Bits are the language of compression: a coder driven by the model
# (arithmetic coding) stores the text in about $H_2$ bits per word. Reading it the other way, a
# perplexity of $128$ is $7$ bits per word: the model is as unsure as a fair choice among $128$
# words at every step. A model that knows nothing, uniform over the vocabulary, needs
# $\log_2 |V|$ bits per word.
#
# Notebook 02 reports its character-level models in bits per character. Multiplied by the number
# of characters a word token spans on average (with the space after it), bits per character become
# bits per word, comparable with the numbers below; notebook 02 makes that comparison.

# %% locked="bits"
name = next(n for n in chosen if n.startswith("Kneser"))
model, n = chosen[name]
N = sum(len(s) + 1 for s in test_sents)
H = -math.fsum(sentence_logprob(model, s, n) for s in test_sents) / N
print(f"{name} on the test plays: N = {N:,} predictions")
print(f"  cross-entropy H = {H:.3f} nats per word = {H / math.log(2):.3f} bits per word")
print(f"  exp(H) = {math.exp(H):.1f}   2 ** (H / ln 2) = {2 ** (H / math.log(2)):.1f}   "
      f"perplexity = {test_ppl[name]:.1f}")
print(f"  uniform over |V| = {V:,} words: {math.log2(V):.2f} bits per word, perplexity {V:,}")

# %% [markdown]
# ## 9. Sampling: rolling the weighted die
#
# To generate text, treat the next-word distribution as a weighted die with one face per word,
# roll it, write down the word that lands face up, and repeat with the context shifted by one.
# Rolling the die with a uniform random number $u \in [0, 1)$: walk through the words adding up
# their probabilities, and return the first word at which the running total exceeds $u$.
#
# ### Exercise 10 — one roll
# Write `sample_next(dist, rng)`: `dist` is a dict `{word: probability}`; `rng` is a
# `random.Random` — draw **only** from it (`rng.random()`), so that the same seed gives the same
# text. Words of probability 0 must never come out.

# %% solution="sample_next"
def sample_next(dist, rng):
    """Draw one word from {word: probability} using rng (a random.Random)."""
    ### BEGIN SOLUTION
    u = rng.random()
    cumulative = 0.0
    last = None
    for word, p in dist.items():
        if p <= 0:
            continue
        cumulative += p
        last = word
        if u < cumulative:
            return word
    return last  # u fell beyond a total a hair below 1.0 (rounding)
    ### END SOLUTION


# %% tests="sample_next_tests" points=2
from lmcourse import ngram as _ref

_cows = {"corn": 4 / 11, "grass": 3 / 11, "hay": 2 / 11, "if": 1 / 11, "which": 1 / 11}


# Your sample_next must not call the reference one.
_rules = lmcourse.rules.rules(_ref.sample_next, reason=_OWN)


with _rules():
    _draws = [sample_next(_cows, random.Random(s)) for s in range(5)]
    check_equal(_draws, [sample_next(_cows, random.Random(s)) for s in range(5)], "draws with the same seeds",
                hint="use only the rng you are given (rng.random()), not the global random module or numpy")
    random.seed(123)
    _a = sample_next(_cows, random.Random(7))
    random.seed(456)
    check_equal(sample_next(_cows, random.Random(7)), _a, "a draw with seed 7 after re-seeding the global generator",
                hint="your function depends on the global random state: draw from rng")
    _rng = random.Random(0)
    # 5,000 draws: a frequency is off by more than 0.03 about once in 100,000 runs (4.4 standard deviations)
    _freq = Counter(sample_next(_cows, _rng) for _ in range(5_000))
    check(len(_freq) > 1, f"5,000 draws all gave {next(iter(_freq))!r} — a sample must sometimes give the other "
          "words; always taking the most likely one is greedy decoding. Draw u = rng.random() and return the first "
          "word at which the running total of probabilities exceeds u")
    for _w, _p in _cows.items():
        check(abs(_freq[_w] / 5_000 - _p) < 0.03,
              f"'{_w}' came out {_freq[_w] / 5_000:.3f} of the time, but its probability is {_p:.3f} — "
              "does your sampler use the weights (walk the running total until it exceeds u)?")
    check(all(sample_next({"never": 0.0, "always": 1.0}, random.Random(s)) == "always" for s in range(50)),
          "sample_next returned a word of probability 0")
visible_checks_pass("sample_next")
### BEGIN HIDDEN TESTS
_skew = {"a": 0.05, "b": 0.0, "c": 0.7, "d": 0.25}
with _rules():
    _rng = random.Random(42)
    _f = Counter(sample_next(_skew, _rng) for _ in range(8_000))
    check_equal(sample_next({"only": 1.0}, random.Random(1)), "only", "a one-word distribution")
check_equal(_f["b"], 0, "count of a zero-probability word")
for _w in ("a", "c", "d"):
    check(abs(_f[_w] / 8_000 - _skew[_w]) < 0.023, f"frequency of {_w}")   # 4.5 standard deviations
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 11 — generating a sentence
# Write `generate(next_dist, n, rng, max_words=30)`. Start from the context of $n-1$ `<s>` tokens;
# repeatedly call `next_dist(context)` (context as a tuple of the last $n-1$ tokens; `()` when
# $n=1$), draw a word with `sample_next`, stop at `</s>` (not included in the output) or after
# `max_words` words. Return the list of generated words.

# %% solution="generate"
def generate(next_dist, n, rng, max_words=30):
    """Sample one sentence (a list of words, without <s>/</s>) from an n-gram model."""
    ### BEGIN SOLUTION
    tokens = [BOS] * (n - 1)
    words = []
    while len(words) < max_words:
        context = tuple(tokens[len(tokens) - (n - 1):])
        word = sample_next(next_dist(context), rng)
        if word == EOS:
            break
        words.append(word)
        tokens.append(word)
    return words
    ### END SOLUTION


# %% tests="generate_tests" points=2
from lmcourse import ngram as _ref

_chain = {("<s>",): {"to": 1.0}, ("to",): {"be": 1.0}, ("be",): {"</s>": 1.0}}
_ctxs = []


def _chain_dist(h):
    check(isinstance(h, tuple), f"generate called next_dist with {h!r}; the context must be a tuple "
          "(dictionary keys cannot be lists): use tuple(...)")
    _ctxs.append(h)
    return _chain[h]


_tri_chain = {("<s>", "<s>"): {"x": 1.0}, ("<s>", "x"): {"y": 1.0}, ("x", "y"): {"</s>": 1.0}}
_ctx3 = []


def _tri_dist(h):
    _ctx3.append(h)
    check(isinstance(h, tuple) and h in _tri_chain, f"with n = 3, generate called next_dist with {h!r} — "
          + ("the context of a trigram model is the last n - 1 = 2 tokens, and generation starts from "
             "('<s>', '<s>'): n - 1 start tokens, not one" if isinstance(h, tuple) and len(h) == 1 else
             "the context is a tuple of the last n - 1 = 2 tokens, <s> padding included"))
    return _tri_chain[h]


# Your generate runs with the reference sample_next and must not call the reference one.
_rules = lmcourse.rules.rules(_ref.generate,
                              substitute=dict(sample_next=_ref.sample_next), namespace=globals(), reason=_OWN)


with _rules():
    _out = generate(_chain_dist, 2, random.Random(0))
    check_equal(_out, ["to", "be"], "generate on a deterministic bigram chain",
                hint="start from ('<s>',), feed each new word back as context, stop at </s> and leave it out")
    check_equal(_ctxs, [("<s>",), ("to",), ("be",)], "the contexts generate passed to next_dist",
                hint="the context is a tuple of the last n-1 tokens")
    check_equal(len(generate(lambda h: {"la": 1.0}, 2, random.Random(0), max_words=7)), 7,
                "length of a sentence that never ends, with max_words=7", hint="stop after max_words words")
    _ctx1 = []
    generate(lambda h: (_ctx1.append(h), {"a": 0.5, "</s>": 0.5})[1], 1, random.Random(3))
    check(all(h == () for h in _ctx1), f"a unigram model (n=1) must get the empty context (), got {_ctx1[:3]}")
    check_equal(generate(_tri_dist, 3, random.Random(0)), ["x", "y"], "generate on a deterministic trigram chain",
                hint="start from ('<s>', '<s>') and keep the last n - 1 = 2 tokens as the context")
    check_equal(_ctx3, [("<s>", "<s>"), ("<s>", "x"), ("x", "y")], "the contexts generate passed with n = 3")
visible_checks_pass("generate")
### BEGIN HIDDEN TESTS
_ctx4 = []
_four_chain = {("<s>", "<s>", "<s>"): {"x": 1.0}, ("<s>", "<s>", "x"): {"y": 1.0}, ("<s>", "x", "y"): {"z": 1.0},
               ("x", "y", "z"): {"</s>": 1.0}}
with _rules():
    check_equal(generate(lambda h: (_ctx4.append(h), _four_chain[h])[1], 4, random.Random(0)), ["x", "y", "z"],
                "4-gram chain")
    check_equal(_ctx4, list(_four_chain), "4-gram contexts")
    _g1 = generate(lambda h: _cows | {"</s>": 0.0}, 1, random.Random(5), max_words=12)
    check_equal(_g1, generate(lambda h: _cows | {"</s>": 0.0}, 1, random.Random(5), max_words=12),
                "same seed, same text")
    check_equal(len(_g1), 12, "a sentence that never ends, with max_words=12")
    check_equal(generate(lambda h: {"</s>": 1.0}, 4, random.Random(0)), [], "an immediately ending sentence")
### END HIDDEN TESTS

# %% [markdown]
# ### Samples from 1- to 5-gram models
# Same seed for every model. The unigram model strings frequent words together; by 4 and 5 grams
# the output reads like Shakespeare because it largely **is** Shakespeare: with so sparse counts,
# most long contexts were followed by one word only, and the model recites its training plays.

# %% locked="samples"
rng = random.Random(rt.seed)
for n in orders:
    next_dist = lambda h, t=mle_tables[n]: next_word_distribution(t, h)  # noqa: E731
    print(f"{n}-gram: " + " ".join(generate(next_dist, n, rng, max_words=25)))

# %% [markdown]
# ## 10. Questions
#
# **Q1 (auto-graded).** Why is the unsmoothed bigram model's *validation* perplexity infinite?
#
# - **A.** The validation plays contain words that are not in the vocabulary.
# - **B.** Some bigram in the validation plays never occurs in training, so its MLE probability is 0.
# - **C.** Perplexity is always infinite for models with $n > 1$.
# - **D.** The log of a probability is negative.
#
# Set `answer_q1` to `"A"`, `"B"`, `"C"` or `"D"`.

# %% solution="q1"
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
# **Q2 (graded by hand).** In the smoothing picture, the Kneser–Ney *training* perplexity keeps
# falling as $n$ grows. Does that mean the largest $n$ gives the best model? Explain in two or
# three sentences what the training and validation curves each measure, and how you would pick
# $n$. (Your figures depend on the profile you ran; the autograder re-runs the notebook with a
# smaller corpus, so argue from what the curves measure, not from exact numbers.)

# %% [markdown] answer="q2" points=2
# No. Training perplexity measures how well the model predicts text it has already counted; with
# longer contexts it can memorise more of the training plays, so it keeps falling. Validation
# perplexity measures prediction of unseen plays, which is what we care about; we pick the $n$
# with the lowest validation perplexity (for Kneser–Ney on the full corpus, $n = 3$), beyond which
# the extra context adds sparsity faster than it adds information.

# %% [markdown]
# ## Wrap-up
#
# You built a language model by counting: padding and n-gram counts, maximum-likelihood
# next-word distributions, the chain rule in log space, perplexity, and two ways to smooth —
# add-k, and interpolated Kneser–Ney with its continuation counts. You also saw the limits: a
# context of $n-1$ words is either too short to capture meaning or too sparse to estimate, and
# the number of possible contexts grows as $|V|^{n-1}$.
#
# **Next (notebook 02):** replace the table of counts by a neural network that compresses the
# *whole* history into a fixed-size vector — the recurrent neural network language model —
# trained by gradient descent instead of counting.
