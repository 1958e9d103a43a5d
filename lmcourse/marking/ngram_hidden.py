"""Notebook 01's hidden cases: inputs and calls only (the expected values are the reference's,
computed where the verdict is made). Not part of a student's release."""

from __future__ import annotations

import random
from collections import Counter

from lmcourse.ngram import ContextTable

from .ngram import (
    COWS,
    KN3_EXTRA,
    KN_VOCAB,
    Q1_LETTER,
    constant,
    cows_table,
    draws,
    fields,
    frequencies,
    generated,
    kn_tables,
    logprob_with_calls,
    toy_prob,
)
from .spec import Case, close, dist_close

__all__ = ["HIDDEN"]

_SENTS = [["a", "b", "a", "b"], ["b"], [], ["a", "a", "a", "a", "a", "a"]]


def _bigram_table(names) -> ContextTable:
    return ContextTable.from_counts(names.count_ngrams([["a", "b", "a"], ["b", "b"]], 2))


_BI = {("<s>",): {"to": 0.5, "</s>": 0.5}, ("to",): {"be": 1.0}, ("be",): {"</s>": 0.5, "to": 0.5}}


def _bi_prob(context, word):
    return _BI.get(context, {}).get(word, 0.0) if type(context) is tuple else 0.0


def _kn_all(order, context, d, extra):
    """p_KN(w | context) for every word of the vocabulary."""
    def call(names):
        tables = kn_tables(names, order, extra)
        return {w: names.kneser_ney_prob(tables, len(KN_VOCAB), context, w, d) for w in KN_VOCAB}
    return call


_KN4_EXTRA = KN3_EXTRA + (["my", "cat", "is", "grey"],)
_KN_CONTEXTS = ((3, KN3_EXTRA, [("cat", "is"), ("<s>", "the"), ("is", "is"), ("zebra", "cat"), ("<s>", "<s>"),
                                ("is", "foggy")]),
                (4, _KN4_EXTRA, [("my", "cat", "is"), ("<s>", "<s>", "the"), ("a", "b", "c"), ("dog", "cat", "is"),
                                 ("<s>", "<s>", "<s>")]))
_FOUR_CHAIN = {("<s>", "<s>", "<s>"): {"x": 1.0}, ("<s>", "<s>", "x"): {"y": 1.0}, ("<s>", "x", "y"): {"z": 1.0},
               ("x", "y", "z"): {"</s>": 1.0}}
_SKEW = {"a": 0.05, "b": 0.0, "c": 0.7, "d": 0.25}


def _same_seed_twice(names):
    def never_ends(context):
        return COWS | {"</s>": 0.0}
    return tuple(names.generate(never_ends, 1, random.Random(5), max_words=12) for _ in range(2))


HIDDEN = {
    "pad_sentence": (
        Case("pad_sentence([], 5)", lambda names: names.pad_sentence([], 5)),
        Case("pad_sentence(['x', 'y'], 2)", lambda names: names.pad_sentence(["x", "y"], 2)),
        Case("pad_sentence(['x'], 4)", lambda names: names.pad_sentence(["x"], 4)),
    ),
    "count_ngrams": (
        *(Case(f"count_ngrams(hidden corpus, {n})",
               lambda names, n=n: names.count_ngrams([list(s) for s in _SENTS], n)) for n in (1, 2, 3, 5)),
        Case("count_ngrams([], 3)", lambda names: names.count_ngrams([], 3)),
    ),
    "mle_prob": tuple(
        Case(f"p({w} | {' '.join(h)})", lambda names, h=h, w=w: names.mle_prob(cows_table(), h, w), compare=close())
        for h, w in [(("cows", "drink"), "water"), (("goats", "eat"), "grass"), (("cows", "eat"), "which"),
                     (("goats", "drink"), "water")]),
    "next_word_distribution": (
        Case("p(. | goats eat)", lambda names: names.next_word_distribution(cows_table(), ("goats", "eat")),
             compare=dist_close(1e-9)),
        *(Case(f"bigram p(. | {h})", lambda names, h=h: names.next_word_distribution(_bigram_table(names), h),
               compare=dist_close(1e-9)) for h in [("a",), ("b",), ("<s>",)]),
    ),
    "sentence_logprob": (
        Case("4-gram log-probability and its calls to prob", logprob_with_calls(["x", "y", "z"], 4, constant(0.5)),
             compare=close(rel=1e-9)),
        Case("log p of the empty sentence under a certain model", logprob_with_calls([], 4, constant(1.0)),
             compare=close(rel=1e-9)),
        Case("log p(to be) again", logprob_with_calls(["to", "be"], 2, toy_prob), compare=close(rel=1e-9)),
    ),
    "perplexity": (
        Case("perplexity of a coin", lambda names: names.perplexity(constant(0.5), [["a"], ["b", "c", "d"]], 3),
             compare=close(rel=1e-9)),
        Case("perplexity of a repeated sentence",
             lambda names: names.perplexity(toy_prob, [["to", "be"], ["to", "be"]], 2), compare=close(rel=1e-9)),
        Case("perplexity of three sentences of lengths 2, 4 and 0",
             lambda names: names.perplexity(_bi_prob, [["to", "be"], ["to", "be", "to", "be"], []], 2),
             compare=close(rel=1e-9)),
    ),
    "add_k_prob": tuple(
        Case(label, lambda names, a=args: names.add_k_prob(cows_table(), a[0], a[1], a[2], k=a[3]), compare=close())
        for label, args in [("add-0.1 p(hay | cows eat), |V| = 10", (10, ("cows", "eat"), "hay", 0.1)),
                            ("add-0 equals the MLE", (6, ("cows", "eat"), "grass", 0.0)),
                            ("add-0.25 p(corn | goats eat), |V| = 7", (7, ("goats", "eat"), "corn", 0.25))]),
    "continuation_counts": (
        Case("continuation counts of 4-grams", lambda names: names.continuation_counts(Counter({
            ("a", "b", "c", "d"): 2, ("x", "b", "c", "d"): 7, ("a", "x", "c", "d"): 1, ("z", "z", "z", "z"): 0}))),
        Case("continuation counts of nothing", lambda names: names.continuation_counts(Counter())),
    ),
    "kneser_ney_prob": tuple(
        Case(f"p_KN(w | {h}), d = {d}, for every word w", _kn_all(order, h, d, extra), compare=close(rel=1e-9))
        for order, extra, contexts in _KN_CONTEXTS for h in contexts for d in (0.5, 0.9)),
    "sample_next": (
        # 8,000 draws: 0.023 is 4.5 standard deviations; the expected frequencies are the input's probabilities
        Case("8,000 draws from a skewed distribution with a zero", draws(_SKEW, 42, 8_000),
             compare=frequencies(0.023), expect=lambda names: dict(_SKEW)),
        Case("a one-word distribution", lambda names: names.sample_next({"only": 1.0}, random.Random(1))),
    ),
    "generate": (
        Case("4-gram chain and its contexts", generated(_FOUR_CHAIN, 4),
             compare=fields(("words", None), ("contexts", None))),
        Case("a sentence that never ends, twice with the same seed, max_words=12", _same_seed_twice),
        Case("an immediately ending sentence",
             lambda names: names.generate(lambda h: {"</s>": 1.0}, 4, random.Random(0))),
    ),
    "q1": (Q1_LETTER,),
}
