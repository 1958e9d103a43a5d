# %% [markdown]
# # 01 · n-gram language models: counting, MLE, perplexity, add-k and Kneser–Ney smoothing, sampling
#
# **What you will build.** A complete family of n-gram language models of Shakespeare, written
# from scratch in plain Python: counting, maximum-likelihood estimates, the chain rule, perplexity,
# add-k smoothing, interpolated Kneser–Ney smoothing, and a sampler that writes (bad) Shakespeare.
#
# **Prerequisites.** Python (lists, dicts, `collections.Counter`), logarithms, and conditional
# probability. No PyTorch yet: that starts in notebook 02.
#
# **Time.** About 2 hours to work through; under a minute of computing on one CPU core (the `cpu`
# profile), most of it the smoothing sweep; a GPU brings nothing here. Measured figures:
# [01_ngram](../docs/notebooks.md#01_ngram).
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
from lmcourse import data, plot
from lmcourse.ngram import ContextTable
from lmcourse.tokenizers import BOS, EOS, UNK, split_sentences

rt = lmcourse.setup(seed=0, neural=False)  # counting only: nothing neural to load
tests = lmcourse.marking.Exam("01_ngram", globals())   # the test cells below: tests.check("count_ngrams")

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
tests.check("mle_prob")
### BEGIN HIDDEN TESTS
tests.grade("mle_prob")
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
# Your next_word_distribution runs with the reference mle_prob; it must leave the table's counts unchanged.
tests.check("next_word_distribution")
### BEGIN HIDDEN TESTS
tests.grade("next_word_distribution")
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
# Your perplexity runs with the reference sentence_logprob, so a slip there costs its own points only.
tests.check("perplexity")
### BEGIN HIDDEN TESTS
tests.grade("perplexity")
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
tests.check("add_k_prob")
### BEGIN HIDDEN TESTS
tests.grade("add_k_prob")
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
tests.check("continuation_counts")
### BEGIN HIDDEN TESTS
tests.grade("continuation_counts")
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
# The tests' tables are built with the reference count_ngrams and continuation_counts: a slip there costs once.
tests.check("kneser_ney_prob")
### BEGIN HIDDEN TESTS
tests.grade("kneser_ney_prob")
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
# The tests draw thousands of words and compare their frequencies with the probabilities.
tests.check("sample_next")
### BEGIN HIDDEN TESTS
tests.grade("sample_next")
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
# Your generate runs with the reference sample_next; the tests also check which contexts it asked next_dist for.
tests.check("generate")
### BEGIN HIDDEN TESTS
tests.grade("generate")
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
tests.check("q1")
### BEGIN HIDDEN TESTS
tests.grade("q1")
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
