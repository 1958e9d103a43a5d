"""Notebook 01 (n-grams): the reference answers, and ``REFERENCE``, the names that do its exercises.

The grader computes expected values from these in its own process; the grading kernel of 01
cannot import this module (:mod:`lmcourse.marking`), and the stand-ins a later exercise's tests
use ("one mistake costs once") are built from its source. Written for clarity, not speed.
"""

from __future__ import annotations

import math
from collections import Counter

from lmcourse.ngram import ContextTable
from lmcourse.tokenizers import BOS, EOS

__all__ = ["REFERENCE", "add_k_prob", "answer_q1", "build_kn_tables", "continuation_counts", "count_ngrams", "generate",
           "kneser_ney_prob", "mle_prob", "next_word_distribution", "pad_sentence", "perplexity", "sample_next",
           "sentence_logprob"]

def pad_sentence(words: list[str], n: int) -> list[str]:
    """``n - 1`` start tokens, the words, one end token: a new list."""
    return [BOS] * (n - 1) + list(words) + [EOS]


def count_ngrams(sentences, n: int) -> Counter:
    """Counter of the n-gram tuples of every padded sentence."""
    counts: Counter = Counter()
    for words in sentences:
        padded = pad_sentence(words, n)
        counts.update(tuple(padded[i:i + n]) for i in range(len(padded) - n + 1))
    return counts


def mle_prob(table: ContextTable, context, word: str) -> float:
    """c(h, w) / c(h); 0.0 for a context never seen."""
    context = tuple(context)
    total = table.total.get(context, 0)
    return table.next[context].get(word, 0) / total if total else 0.0


def next_word_distribution(table: ContextTable, context) -> dict[str, float]:
    """``{w: c(h, w) / c(h)}`` over the words seen after h; ``{}`` for an unseen context."""
    context = tuple(context)
    total = table.total.get(context, 0)
    return {w: c / total for w, c in table.next[context].items()} if total else {}


def sentence_logprob(prob, sentence, n: int) -> float:
    """Sum of natural-log conditional probabilities, the final </s> included; -inf if one is 0."""
    padded = pad_sentence(sentence, n)
    total = 0.0
    for i in range(n - 1, len(padded)):
        p = prob(tuple(padded[i - n + 1:i]), padded[i])
        if p <= 0.0:
            return -math.inf
        total += math.log(p)
    return total


def perplexity(prob, sentences, n: int) -> float:
    """exp(-(sum of sentence log-probabilities) / (number of predictions: words + one </s> each))."""
    logprob = math.fsum(sentence_logprob(prob, s, n) for s in sentences)
    return math.exp(-logprob / sum(len(s) + 1 for s in sentences))


def add_k_prob(table: ContextTable, vocab_size: int, context, word: str, k: float = 1.0) -> float:
    """(c(h, w) + k) / (c(h) + k |V|)."""
    context = tuple(context)
    count = table.next.get(context, {}).get(word, 0)
    return (count + k) / (table.total.get(context, 0) + k * vocab_size)


def continuation_counts(ngram_counts) -> Counter:
    """``{g[1:]: number of distinct m-grams g with a positive count that end with it}``."""
    return Counter(tuple(g[1:]) for g, c in ngram_counts.items() if c > 0)


def build_kn_tables(raw) -> list[ContextTable]:
    """``tables[k]`` = the table for contexts of length k: raw counts at the top, continuation
    counts below (the same bookkeeping as the notebook's locked ``build_kn_tables``)."""
    n = len(next(iter(raw)))
    tables: list = [None] * n
    tables[n - 1] = ContextTable.from_counts(raw)
    for m in range(n - 1, 0, -1):
        suffixes = {tuple(g[-(m + 1):]): 1 for g in raw}
        tables[m - 1] = ContextTable.from_counts(continuation_counts(suffixes))
    return tables


def kneser_ney_prob(tables, vocab_size: int, context, word: str, d: float = 0.75) -> float:
    """Interpolated Kneser-Ney, recursing on the context without its oldest word; the empty
    context interpolates with the uniform 1/|V|; an unseen context gives the lower order."""
    context = tuple(context)
    lower = kneser_ney_prob(tables, vocab_size, context[1:], word, d) if context else 1.0 / vocab_size
    table = tables[len(context)]
    total = table.total.get(context, 0)
    if not total:
        return lower
    seen = table.next[context].get(word, 0)
    return (max(seen - d, 0.0) + d * table.distinct[context] * lower) / total


def sample_next(dist, rng) -> str:
    """Inverse-CDF draw from ``{word: probability}`` with ``rng.random()``; words of probability
    0 never come out."""
    u = rng.random()
    running, last = 0.0, None
    for word, p in dist.items():
        if p > 0:
            running += p
            last = word
            if u < running:
                return word
    return last


def generate(next_dist, n: int, rng, max_words: int = 30) -> list[str]:
    """Words drawn one at a time from ``next_dist(context)`` until </s> or ``max_words``."""
    context = (BOS,) * (n - 1)
    words: list[str] = []
    while len(words) < max_words:
        word = sample_next(next_dist(context), rng)
        if word == EOS:
            break
        words.append(word)
        context = (context + (word,))[1:] if n > 1 else ()
    return words


# Q1: an unseen validation bigram has MLE probability 0, so its sentence has log-probability -inf
answer_q1 = "B"


REFERENCE = (pad_sentence, count_ngrams, mle_prob, next_word_distribution, sentence_logprob, perplexity,
             add_k_prob, continuation_counts, build_kn_tables, kneser_ney_prob, sample_next, generate)
