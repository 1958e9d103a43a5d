"""Notebook 01's tests (n-grams): the visible cases, with the hints that teach.

Each case builds its own inputs (nothing of the notebook's state), calls the student's function
through ``names`` and returns what the judge compares; the hidden cases are in
:mod:`.ngram_hidden`. The lecture's worked example is the "cows eat" table: corn 4/11, grass 3/11,
hay 2/11, if 1/11, which 1/11.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

from lmcourse.ngram import ContextTable

from .results import fields
from .show import show
from .spec import Case, Compare, Exercise, Notebook, close, dist_close, question, when

__all__ = ["NOTEBOOK", "Q1_LETTER", "cows_table", "toy"]


def toy() -> list[list[str]]:
    return [["cows", "eat", "grass"], ["cows", "eat", "corn"]]


def cows_table() -> ContextTable:
    """The lecture's counts after "cows eat", with two other contexts beside them."""
    return ContextTable.from_counts(Counter({
        ("cows", "eat", "corn"): 4, ("cows", "eat", "grass"): 3, ("cows", "eat", "hay"): 2,
        ("cows", "eat", "if"): 1, ("cows", "eat", "which"): 1,
        ("cows", "drink", "water"): 6, ("goats", "eat", "grass"): 5}))


def constant(p: float):
    """A model that gives every word probability ``p``."""
    def prob(context, word):
        return p
    return prob


def _near(value: float, rel: float = 1e-9):
    """A predicate for :func:`when`: the student's number is ``value`` (a known slip's result)."""
    return lambda got, want: type(got) in (int, float) and math.isclose(got, value, rel_tol=rel)


def sums_to_one(rel: float = 1e-9) -> Compare:
    """A list of probabilities over a whole vocabulary: their sum, compared with the reference's (1)."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not list or not all(type(p) in (int, float) for p in got):
            return f"got {show(got)}, expected a list of numbers"
        total = math.fsum(got)
        if math.isclose(total, math.fsum(want), rel_tol=rel):
            return None
        return f"the probabilities sum to {total:.6g}, not {math.fsum(want):.6g}"
    return compare


def part(key: Any, compare: Compare) -> Compare:
    """Compare only ``got[key]`` with ``want[key]``: a case that returns, beside the value under
    test, values the diagnoses read (the student's own lower-order probabilities, say)."""
    def compare_part(got: Any, want: Any) -> str | None:
        if type(got) is not type(want) or len(got) != len(want):
            return f"got {show(got)}, expected {show(want)}"
        return compare(got[key], want[key])
    return compare_part


# ------------------------------------------------------------------ 1. pad_sentence

def _pad_keeps_input(names):
    words = ["a", "b"]
    names.pad_sentence(words, 2)
    return words


PAD_SENTENCE = Exercise("pad_sentence", (
    Case("pad_sentence(['cows', 'eat', 'grass'], 3)", lambda names: names.pad_sentence(["cows", "eat", "grass"], 3),
         diagnoses=(when(lambda got, want: type(got) is not list, "return a new list"),),
         hint="a trigram model needs n-1 = 2 start tokens <s> and one end token </s>"),
    Case("pad_sentence(['hi'], 1)", lambda names: names.pad_sentence(["hi"], 1),
         hint="a unigram model has no context, so no <s>; it still predicts </s>"),
    Case("your input list after calling pad_sentence", _pad_keeps_input,
         hint="build a new list instead of inserting into the caller's list"),
))


# ------------------------------------------------------------------ 2. count_ngrams

def _keys_not_tuples(got, want) -> str | None:
    bad = next((g for g in got if type(g) is not tuple or len(g) != len(next(iter(want)))), None)
    if bad is None:
        return None
    return (f"every key should be a tuple of {len(next(iter(want)))} words; found {bad!r} — use "
            "tuple(padded[i:i + n]) as the key (lists cannot be dict keys)")


def _lacks(gram: tuple, message: str):
    return when(lambda got, want: gram not in got and gram in want, message)


COUNT_NGRAMS = Exercise("count_ngrams", (
    Case("count_ngrams(toy, 2)", lambda names: names.count_ngrams(toy(), 2),
         diagnoses=(when(lambda got, want: not isinstance(got, dict),
                         "return a Counter mapping n-gram tuples to counts"),
                    _keys_not_tuples,
                    _lacks(("<s>", "cows"), "no ('<s>', 'cows') — did you pad each sentence with pad_sentence "
                                            "before counting?"),
                    _lacks(("grass", "</s>"), "no ('grass', '</s>') — the last window ends at </s>: does your loop "
                                              "stop one window early? (range(len(padded) - n + 1))"),
                    when(lambda got, want: sum(got.values()) != sum(want.values()),
                         "the total count of bigrams in two 3-word sentences should be 8 — each sentence of L "
                         "words has L + 1 windows once padded")),
         hint="windows of n tokens over each padded sentence"),
    Case("count_ngrams(toy, 3)", lambda names: names.count_ngrams(toy(), 3),
         diagnoses=(_lacks(("<s>", "<s>", "cows"), "no ('<s>', '<s>', 'cows') — a trigram model pads with n - 1 = 2 "
                           "start tokens (pad_sentence(words, n)), not one, so that the first word has a 2-word "
                           "context too"),),
         hint="windows of n = 3 tokens over each padded sentence"),
    Case("count_ngrams(toy, 1)", lambda names: names.count_ngrams(toy(), 1),
         hint="unigrams are 1-tuples such as ('cows',), and </s> is counted too"),
    Case("count_ngrams([['la', 'la', 'la']], 2)", lambda names: names.count_ngrams([["la", "la", "la"]], 2),
         hint="count every occurrence, also an n-gram repeated within one sentence"),
), standins=("pad_sentence",))


# ------------------------------------------------------------------ 3. mle_prob

def _mle(context, word):
    return lambda names: names.mle_prob(cows_table(), context, word)


MLE_PROB = Exercise("mle_prob", (
    Case("p(corn | cows eat)", _mle(("cows", "eat"), "corn"), compare=close(),
         diagnoses=(when(_near(4 / 22), "you divided by 22, the total count of all the n-grams in the table: divide "
                                        "by c(cows eat) = table.total[h] = 11, the count of this context only"),
                    when(_near(4 / 5), "you divided by 5, the number of different words seen after 'cows eat' "
                                       "(table.distinct[h]): divide by c(cows eat) = table.total[h] = 11"),
                    when(lambda got, want: got == 0, "c(cows eat corn) // c(cows eat) rounds down to 0: divide "
                                                     "with /")),
         hint="divide c(cows eat corn) by c(cows eat) = 11, the count of the context only "
              "(not all n-grams, not the count of the last word alone), with / rather than //"),
    Case("p(water | cows eat)", _mle(("cows", "eat"), "water"), compare=close(),
         hint="a word never seen after this context has count 0"),
    Case("mle_prob(cows_table, ('pigs', 'eat'), 'corn')", _mle(("pigs", "eat"), "corn"), compare=close(),
         errors=(("", "the context ('pigs', 'eat') was never seen, so it is not a key of table.next or table.total: "
                      "check `context in table.total` before looking it up, and return 0.0"),),
         hint="return 0.0 for a context that is not in table.total"),
))


# ------------------------------------------------------------------ 4. next_word_distribution

def unigram_table() -> ContextTable:
    """The unigrams of [["a", "b", "a"]]: a table whose only context is ()."""
    return ContextTable.from_counts(Counter({("a",): 2, ("b",): 1, ("</s>",): 1}))


def _counts_kept(names):
    table = cows_table()
    names.next_word_distribution(table, ("cows", "eat"))
    return table.next[("cows", "eat")]


def _scaled(factor: float):
    """The student's distribution is the right one times ``factor`` (every word)."""
    return lambda got, want: bool(want) and set(got) == set(want) and all(
        type(got[w]) in (int, float) and math.isclose(got[w], p * factor, rel_tol=1e-9) for w, p in want.items())


def _not_summing_to_one(got, want) -> bool:
    return not all(type(p) in (int, float) and p >= 0 for p in got.values()) or not math.isclose(
        math.fsum(got.values()), 1.0, rel_tol=1e-9)


NEXT_WORD_DISTRIBUTION = Exercise("next_word_distribution", (
    Case("p(. | cows eat)", lambda names: names.next_word_distribution(cows_table(), ("cows", "eat")),
         compare=dist_close(1e-9),
         diagnoses=(when(lambda got, want: not isinstance(got, dict), "return a dict {word: probability}"),
                    when(_scaled(11), "these are the counts c(cows eat, w): divide each by c(cows eat) = 11 to make "
                                      "probabilities"),
                    when(_scaled(11 / 5), "you divided each count by 5, the number of different words seen after "
                                          "'cows eat': divide by c(cows eat) = table.total[h] = 11"),
                    when(_not_summing_to_one, "the probabilities do not sum to 1 — did you divide every count by "
                                              "c(cows eat)?")),
         hint="only words seen after 'cows eat' belong in it, each c(h, w) / c(h)"),
    Case("next_word_distribution(cows_table, ('pigs', 'fly'))",
         lambda names: names.next_word_distribution(cows_table(), ("pigs", "fly")),
         errors=(("", "('pigs', 'fly') was never seen, so it is not a key of table.next: return {} for it"),),
         hint="return {} for a context never seen"),
    Case("the unigram distribution next_word_distribution(t1, ())",
         lambda names: names.next_word_distribution(unigram_table(), ()), compare=dist_close(1e-9),
         hint="a unigram table has a single context, the empty tuple (); treat it like any other"),
    Case("the counts in cows_table after calling next_word_distribution", _counts_kept,
         hint="build a new dict of probabilities; dividing table.next[h] in place destroys the counts "
              "every later cell relies on"),
), standins=("mle_prob", "count_ngrams"))


# ------------------------------------------------------------------ 5. sentence_logprob

_BIGRAM = {("<s>",): {"to": 0.5}, ("to",): {"be": 0.25}, ("be",): {"</s>": 0.8}}


def logged(prob):
    """``prob`` wrapped so that every (context, word) it is asked for is logged: a case returns
    the log beside the value, and the judge compares both with the reference's."""
    calls: list = []

    def model(context, word):
        calls.append((context, word))
        return prob(context, word)
    return model, calls


def logprob_with_calls(sentence, n, prob):
    def call(names):
        model, calls = logged(prob)
        return {"logprob": names.sentence_logprob(model, list(sentence), n), "calls": calls}
    return call


def toy_prob(context, word):
    return _BIGRAM.get(context, {}).get(word, 0.0) if type(context) is tuple else 0.0


def _contexts(got) -> list:
    return [c for c, _ in got["calls"]]


# the contexts of a trigram model (n = 3): two tokens, the first two of them <s>
_TRIGRAM_CONTEXTS = (
    when(lambda got, want: _contexts(got) and all(len(c) == 1 for c in _contexts(got)),
         "with n = 3, prob was called with one-token contexts, a bigram context whatever n — the context is the "
         "n - 1 previous tokens, tuple(padded[i - n + 1:i])"),
    when(lambda got, want: _contexts(got)[:1] != [("<s>", "<s>")],
         "with n = 3 the first context should be ('<s>', '<s>') — a trigram model pads with n - 1 = 2 start tokens "
         "(pad_sentence(sentence, n)), not one"))


SENTENCE_LOGPROB = Exercise("sentence_logprob", (
    Case("log p(to be) under the toy bigram model", logprob_with_calls(["to", "be"], 2, toy_prob),
         compare=close(rel=1e-9),
         diagnoses=(when(lambda got, want: any(type(c) is not tuple for c in _contexts(got)),
                         "prob was called with a context that is not a tuple; pass tuple(padded[i - n + 1:i]) "
                         "(a list cannot be a dictionary key)"),
                    when(lambda got, want: any(len(c) != 1 for c in _contexts(got)),
                         "for n = 2 the context must be a tuple of the 1 previous token"),
                    when(lambda got, want: all(c and c[-1] == w for c, w in got["calls"]),
                         "each context ends with the word it predicts: the context is the n - 1 tokens before "
                         "it, tuple(padded[i - n + 1:i])")),
         hint="sum the natural logs of p(to|<s>), p(be|to) and p(</s>|be) — the </s> step counts too"),
    # only the value: an answer may go on calling prob after a probability of 0
    Case("log p(to go): p(go | to) = 0", logprob_with_calls(["to", "go"], 2, toy_prob),
         compare=part("logprob", close(rel=1e-9)),
         errors=(("math domain error", "p(go | to) = 0: return -math.inf as soon as a probability is 0 "
                                       "(math.log(0.0) raises)"),),
         hint="a word with probability 0 makes the sentence impossible: return -math.inf"),
    Case("log p of 'a b c' under a constant model (p = 0.1)", logprob_with_calls(["a", "b", "c"], 3, constant(0.1)),
         compare=close(rel=1e-9), diagnoses=_TRIGRAM_CONTEXTS,
         hint="3 words + </s> = 4 predictions; use math.log (natural log), not log2 or log10"),
    Case("log p of a 400-word sentence (p = 0.1 each)", logprob_with_calls(["a"] * 400, 2, constant(0.1)),
         compare=close(rel=1e-9),
         hint="a product of 401 probabilities of 0.1 underflows to 0.0 in floating point: add the logs of the "
              "probabilities instead of taking the log of their product"),
    Case("the (context, word) pairs sentence_logprob(prob, ['x', 'y'], 3) passed to prob",
         logprob_with_calls(["x", "y"], 3, constant(0.5)),
         diagnoses=_TRIGRAM_CONTEXTS,
         hint="one call per predicted token (the words and </s>), each with the n - 1 tokens before it"),
    Case("the (context, word) pairs for ['x'] with n = 1", logprob_with_calls(["x"], 1, constant(0.25)),
         hint="a unigram model has the empty context () at every position"),
), standins=("pad_sentence",))


# ------------------------------------------------------------------ 6. perplexity

# two sentences of unequal length under a unigram model: every prediction must weigh the same
_UNIGRAM = {"a": 0.5, "b": 0.1, "</s>": 0.4}
_SHORT, _LONG = ["a"], ["b", "b", "b", "a"]


def _unigram_prob(context, word):
    return _UNIGRAM.get(word, 0.0)


def _perplexity(prob, sentences, n):
    return lambda names: names.perplexity(prob, [list(s) for s in sentences], n)


def _per_sentence_slips() -> dict[str, float]:
    """What the two ways of averaging per sentence give on the short and the long sentence."""
    lps = [math.fsum(math.log(_UNIGRAM[w]) for w in s + ["</s>"]) for s in (_SHORT, _LONG)]
    ns = [len(_SHORT) + 1, len(_LONG) + 1]
    return {"the mean of the per-sentence perplexities": (math.exp(-lps[0] / ns[0]) + math.exp(-lps[1] / ns[1])) / 2,
            "exp of the mean of the per-sentence averages": math.exp(-(lps[0] / ns[0] + lps[1] / ns[1]) / 2)}


def _per_sentence(got, want) -> str | None:
    slip = next((s for s, v in _per_sentence_slips().items()
                 if type(got) in (int, float) and math.isclose(got, v, rel_tol=1e-9)), None)
    if slip is None:
        return None
    return (f"you computed {slip}, which weighs the 2 predictions of the short sentence as much as the 5 of the "
            "long one. Pool the predictions: add the log-probabilities of all sentences, divide by the total "
            "number of predictions (2 + 5 = 7 here), then take exp")


PERPLEXITY = Exercise("perplexity", (
    Case("perplexity of a uniform model over 10 words", _perplexity(constant(0.1), [["a", "b", "c"], ["d"]], 2),
         compare=close(rel=1e-9),
         diagnoses=(when(_near(math.log(10)), "you returned the cross-entropy, the mean negative log-probability "
                                              "(ln 10 here): the perplexity is its exp"),
                    when(_near(2 ** math.log(10)), "you took 2 ** of a mean of natural logs: the base of the power "
                                                   "must be the base of the log, so use math.exp with math.log"),
                    when(_near(10 ** 1.5), "you divided by the number of words (4): N counts one </s> prediction "
                                           "per sentence too (4 + 2 = 6)"),
                    when(_near(10 ** 3), "you divided by the number of sentences (2): divide by the number of "
                                         "predictions, words plus one </s> per sentence (6)")),
         hint="for a uniform model it must equal the number of choices; check that you divide by the number of "
              "predictions (words + one </s> per sentence) and use exp, not 2**"),
    Case("perplexity of 'to be'", _perplexity(toy_prob, [["to", "be"]], 2), compare=close(rel=1e-9),
         hint="N counts the </s> prediction: 2 words + 1 = 3"),
    Case("perplexity of a 1-word and a 4-word sentence under a unigram model",
         _perplexity(_unigram_prob, [_SHORT, _LONG], 1), compare=close(rel=1e-9), diagnoses=(_per_sentence,),
         hint="Pool the predictions: add the log-probabilities of all sentences, divide by the total number of "
              "predictions (2 + 5 = 7 here), then take exp"),
    Case("perplexity with an impossible sentence", _perplexity(toy_prob, [["to", "be"], ["to", "go"]], 2),
         compare=close(rel=1e-9), hint="one sentence of probability 0 makes the perplexity infinite"),
), standins=("pad_sentence", "sentence_logprob"))


# ------------------------------------------------------------------ 7. add_k_prob

VOCAB6 = ["corn", "grass", "hay", "if", "which", "water"]


def _add_k(vocab_size, context, word, k):
    return lambda names: names.add_k_prob(cows_table(), vocab_size, context, word, k=k)


def _add_k_sum(names):
    table = cows_table()
    return [names.add_k_prob(table, 6, ("cows", "eat"), w, k=0.5) for w in VOCAB6]


ADD_K_PROB = Exercise("add_k_prob", (
    Case("add-1 p(corn | cows eat), |V| = 6", _add_k(6, ("cows", "eat"), "corn", 1.0), compare=close(),
         diagnoses=(when(_near(5 / 16), "you added k only for the 5 words seen after 'cows eat': every word of the "
                                        "vocabulary gets k pseudo-counts, so the denominator is c(h) + k * vocab_size"),
                    when(_near(5 / 11), "you added k to the count but nothing to the denominator: every word of the "
                                        "vocabulary gets k pseudo-counts, so it is c(h) + k * vocab_size"),
                    when(_near(5 / 18), "you added k + vocab_size to the denominator: it is c(h) + k * vocab_size")),
         hint="(4 + 1) / (11 + 1 * 6)"),
    Case("add-1 p(water | cows eat)", _add_k(6, ("cows", "eat"), "water", 1.0), compare=close(),
         hint="an unseen word gets k / (c(h) + k|V|), never 0"),
    Case("add-0.5 p(corn | cows eat)", _add_k(6, ("cows", "eat"), "corn", 0.5), compare=close(),
         diagnoses=(when(_near(5 / 17), "you computed add-1 whatever k: use the k you are given"),),
         hint="use the k you are given: (4 + 0.5) / (11 + 0.5 * 6)"),
    Case("sum over the vocabulary of add-0.5 p(w | cows eat)", _add_k_sum, compare=sums_to_one(),
         hint="the denominator must add k for every word of the vocabulary (k * vocab_size), "
              "not only for the words seen after the context"),
    Case("add_k_prob(cows_table, 6, ('pigs', 'fly'), 'hay', k=2.0)", _add_k(6, ("pigs", "fly"), "hay", 2.0),
         compare=close(),
         errors=(("", "an unseen context is not a key of table.next or table.total: its counts are 0 "
                      "(use .get(context, 0))"),),
         hint="for an unseen context c(h) = 0 and the estimate is uniform, 1/|V|"),
))


# ------------------------------------------------------------------ 8. continuation_counts

def bigram_counts() -> Counter:
    return Counter({("san", "francisco"): 5, ("the", "cat"): 1, ("a", "cat"): 1, ("my", "cat"): 2})


def _keys_not_word_tuples(got, want) -> str | None:
    bad = next((g for g in got if type(g) is not tuple), None)
    if bad is None:
        return None
    return (f"the keys of continuation_counts should be tuples such as ('cat',), found {bad!r} — keep gram[1:], "
            "which is a tuple")


CONTINUATION_COUNTS = Exercise("continuation_counts", (
    Case("continuation_counts(bigrams)", lambda names: names.continuation_counts(bigram_counts()),
         diagnoses=(_keys_not_word_tuples,
                    when(lambda got, want: set(got) == {g[:-1] for g in bigram_counts()},
                         "the keys are the n-grams with their FIRST word dropped, gram[1:] (('francisco',), "
                         "('cat',)); you kept gram[:-1], the last word dropped"),
                    when(lambda got, want: got.get(("francisco",), 0) > 1,
                         "count distinct left neighbours, not occurrences: 'francisco' only ever follows 'san', so "
                         "its continuation count is 1 whatever c(san francisco)"),
                    when(lambda got, want: got.get(("cat",), 0) != 3, "'cat' follows 3 different words")),
         hint="keys are the n-grams with their first word dropped, as tuples"),
    Case("continuation_counts of trigrams, one with count 0",
         lambda names: names.continuation_counts(Counter({("a", "b", "c"): 3, ("x", "b", "c"): 1, ("a", "b", "d"): 1,
                                                          ("q", "r", "s"): 0})),
         diagnoses=(when(lambda got, want: ("r", "s") in got, "('q', 'r', 's') has count 0, so it was never seen: "
                                                             "skip m-grams whose count is 0"),),
         hint="the keys keep the last m - 1 = 2 words; an m-gram whose count is 0 was never seen: skip it"),
))


# ------------------------------------------------------------------ 9. kneser_ney_prob

KN_SENTS = [["san", "francisco", "is", "foggy"], ["the", "cat", "is", "grey"], ["my", "cat", "is", "foggy"]]
KN_VOCAB = sorted({w for s in KN_SENTS for w in s} | {"</s>", "dog"})


def kn_tables(names, order: int, extra: tuple = ()):
    """The KN tables of KN_SENTS (and ``extra`` sentences) for ``order``, built with ``names``'
    count_ngrams and build_kn_tables (the reference's, as stand-ins)."""
    return names.build_kn_tables(names.count_ngrams([list(s) for s in KN_SENTS + list(extra)], order))


KN3_EXTRA = (["the", "cat", "is", "foggy"],)
# the bigram tables: 12 distinct bigrams; 'cat' follows 2 different words; 9 words have a continuation count
_P_UNI_CAT = (2 - 0.75 + 0.75 * 9 * (1 / 10)) / 12


def _kn(order, vocab_size, context, word, d=0.75, extra=()):
    return lambda names: names.kneser_ney_prob(kn_tables(names, order, extra), vocab_size, context, word, d)


def _kn_sum(order, context, d=0.75, extra=()):
    def call(names):
        tables = kn_tables(names, order, extra)
        return [names.kneser_ney_prob(tables, len(KN_VOCAB), context, w, d) for w in KN_VOCAB]
    return call


def _kn_with_lowers(names):
    """p_KN(foggy | cat is), d = 0.5, with the student's own p_KN(foggy | cat) and p_KN(foggy | is): the
    diagnoses tell which lower order the top one was interpolated with."""
    tables = kn_tables(names, 3, KN3_EXTRA)
    return tuple(names.kneser_ney_prob(tables, 9, h, "foggy", 0.5) for h in (("cat", "is"), ("cat",), ("is",)))


def _cat_is(lower: float) -> float:
    """p_KN(foggy | cat is) at d = 0.5 with ``lower`` as its lower order: 'cat is' was followed by
    'grey' once and 'foggy' twice."""
    return (max(2 - 0.5, 0) + 0.5 * 2 * lower) / 3


def _same(a, b) -> bool:
    return type(a) in (int, float) and type(b) in (int, float) and math.isclose(a, b, rel_tol=1e-9)


KNESER_NEY_PROB = Exercise("kneser_ney_prob", (
    Case("p_KN(cat) at the lowest order, |V| = 10", _kn(2, 10, (), "cat"), compare=close(rel=1e-9),
         diagnoses=(when(_near(2 / 12), "at the empty context you returned N1+(. cat) / N1+(. .) = 2/12 alone: it "
                                        "interpolates with the uniform 1/|V| too, adding d * distinct / total * "
                                        "(1 / |V|) after discounting"),
                    when(_near((2 - 0.75 + 0.75 * 12 * (1 / 10)) / 12),
                         "the lower order's weight is d * N1+(h .) / c(h), with N1+(h .) = table.distinct[h] (9 "
                         "here), not c(h)"),
                    when(_near((2 - 0.75) / 12),
                         "interpolated Kneser-Ney adds d * N1+(h .) / c(h) times the lower-order probability for "
                         "every word, seen or not: you used the lower order only for unseen words")),
         hint="max(N1+(. cat) - d, 0) / total + d * distinct / total * (1 / |V|), with the continuation "
              "table tables[0] and its entry for the empty context ()"),
    # c(the cat) = 1 = c(the), and one distinct word followed 'the'
    Case("p_KN(cat | the)", _kn(2, 10, ("the",), "cat"), compare=close(rel=1e-9),
         hint="discount the count, then add d * N1+(the .) / c(the) times the lower-order probability"),
    *(Case(f"sum over the vocabulary of p_KN(w | {h})", _kn_sum(2, h), compare=sums_to_one(),
           hint="each level must give back exactly the discounted mass: d * distinct / total "
                "times the lower-order probability; an unseen context uses the lower order alone")
      for h in [("the",), ("cat",), ("dog",), ()]),
    Case("p_KN(dog | the)", _kn(2, len(KN_VOCAB), ("the",), "dog"), compare=close(rel=1e-9),
         diagnoses=(when(lambda got, want: got == 0, "p_KN(dog | the) should be > 0 — an unseen word must still get "
                                                     "mass from the uniform distribution"),)),
    # trigram contexts: the lower order drops the OLDEST word
    Case("trigram p_KN(foggy | cat is), d = 0.5", _kn_with_lowers, compare=part(0, close(rel=1e-9)),
         diagnoses=(when(lambda got, want: _same(got[0], got[2]) and not _same(got[0], want[0]),
                         "you returned p_KN(foggy | is), the lower order alone: ('cat', 'is') was seen, and its "
                         "counts are in tables[len(context)] = tables[2] (the table of a context of length k is "
                         "tables[k])"),
                    when(lambda got, want: _same(got[0], _cat_is(got[1])) and not _same(got[0], want[0]),
                         "the lower order of 'cat is' is 'is' (context[1:], the oldest word dropped), not 'cat' "
                         "(context[:-1]): you interpolated with p_KN(foggy | cat)")),
         hint="(max(c(cat is foggy) - d, 0) + d * N1+(cat is .) * p_KN(foggy | is)) / c(cat is)"),
    Case("p_KN(is | zebra cat), a context never seen", _kn(3, 9, ("zebra", "cat"), "is", 0.5, KN3_EXTRA),
         compare=close(rel=1e-9),
         diagnoses=(when(_near(1 / 9), "1/|V| is the uniform guess, which ignores what 'cat' tells us: an unseen "
                                       "context gives all its weight to the lower order, p_KN(is | cat)"),),
         hint="an unseen context (c(h) = 0) gives all its weight to the lower order p_KN(w | h'), h' = context[1:]"),
    Case("sum over the vocabulary of the trigram p_KN(w | cat is), d = 0.5", _kn_sum(3, ("cat", "is"), 0.5, KN3_EXTRA),
         compare=sums_to_one(), hint="recurse on context[1:] with tables[len(context)] at each level"),
), standins=("count_ngrams", "continuation_counts", "build_kn_tables"))


# ------------------------------------------------------------------ 10. sample_next

COWS = {"corn": 4 / 11, "grass": 3 / 11, "hay": 2 / 11, "if": 1 / 11, "which": 1 / 11}


def _seeded_twice(names):
    return ([names.sample_next(dict(COWS), random.Random(s)) for s in range(5)],
            [names.sample_next(dict(COWS), random.Random(s)) for s in range(5)])


def _global_state_ignored(names):
    random.seed(123)
    first = names.sample_next(dict(COWS), random.Random(7))
    random.seed(456)
    return first, names.sample_next(dict(COWS), random.Random(7))


def _twice_the_same(hint: str) -> Compare:
    """Two runs with the same seed (whatever the reference draws: a valid sampler may walk the words
    another way) must give the same draws."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is tuple and len(got) == 2 and got[0] == got[1]:
            return None
        return f"got {show(got[0])}, then {show(got[1])} — {hint}"
    return compare


def draws(dist: dict, seed: int, count: int):
    """``count`` draws from ``dist`` with one generator seeded ``seed``, recorded as drawn (the judge
    counts them)."""
    def call(names):
        rng = random.Random(seed)
        return [names.sample_next(dict(dist), rng) for _ in range(count)]
    return call


def frequencies(tol: float) -> Compare:
    """Draws (a list) against the distribution they were drawn from (``want``): each word's frequency
    within ``tol``, no word outside the distribution or of probability 0."""
    def compare(got: Any, want: Any) -> str | None:
        if type(got) is not list:
            return f"got {show(got)}, expected a list of draws"
        n = len(got)
        stray = next((x for x in got if type(x) is not str or want.get(x, 0) <= 0), None)
        if stray is not None:
            if type(stray) is str and stray in want:
                return f"sample_next returned {stray!r}, a word of probability 0"
            return (f"sample_next returned {show(stray)}, which is not a word of the distribution — return the word "
                    "at which the running total of probabilities first exceeds u")
        counts = Counter(got)
        live = [w for w, p in want.items() if p > 0]
        if len(counts) == 1 and len(live) > 1:
            return (f"{n:,} draws all gave {got[0]!r} — a sample must sometimes give the other words; always taking "
                    "the most likely one is greedy decoding (and comparing u with each probability alone, not with "
                    "the running total, ends there too). Draw u = rng.random() and return the first word at which "
                    "the running total of probabilities exceeds u")
        if len(live) > 2 and all(abs(counts[w] / n - 1 / len(live)) < tol for w in live):
            return (f"every word came out about 1/{len(live)} of the time: your draw ignores the probabilities — walk "
                    "the running total of the probabilities until it exceeds u")
        for w in live:
            if abs(counts[w] / n - want[w]) >= tol:
                return (f"'{w}' came out {counts[w] / n:.3f} of the time, but its probability is {want[w]:.3f} — "
                        "does your sampler use the weights (walk the running total until it exceeds u)?")
        return None
    return compare


SAMPLE_NEXT = Exercise("sample_next", (
    Case("draws with the same seeds", _seeded_twice,
         compare=_twice_the_same("use only the rng you are given (rng.random()), not the global random module or "
                                 "numpy")),
    Case("a draw with seed 7 after re-seeding the global generator", _global_state_ignored,
         compare=_twice_the_same("your function depends on the global random state: draw from rng")),
    # 5,000 draws: a frequency is off by more than 0.03 about once in 100,000 runs (4.4 standard deviations)
    Case("5,000 draws from p(. | cows eat)", draws(COWS, 0, 5_000), compare=frequencies(0.03),
         expect=lambda names: dict(COWS)),
    Case("50 draws from {'never': 0.0, 'always': 1.0}",
         lambda names: [names.sample_next({"never": 0.0, "always": 1.0}, random.Random(s))
                        for s in range(50)],
         diagnoses=(when(lambda got, want: "never" in got, "sample_next returned a word of probability 0"),)),
))


# ------------------------------------------------------------------ 11. generate

def logged_dist(table: dict, otherwise: dict | None = None):
    """``next_dist`` from ``table`` ({context: distribution}) whose calls are logged (a list context
    is logged as a copy, as it was passed, and looked up as a tuple); a context not in the table
    gets ``otherwise`` (by default the end of the sentence)."""
    calls: list = []

    def next_dist(context):
        calls.append(list(context) if type(context) is list else context)
        key = tuple(context) if type(context) is list else context
        return dict(table.get(key, otherwise if otherwise is not None else {"</s>": 1.0})) if type(
            key) is tuple else {"</s>": 1.0}
    return next_dist, calls


def generated(table: dict, n: int, seed: int = 0, max_words: int = 30, otherwise: dict | None = None):
    def call(names):
        next_dist, calls = logged_dist(table, otherwise)
        return {"words": names.generate(next_dist, n, random.Random(seed), max_words=max_words), "contexts": calls}
    return call


_CHAIN = {("<s>",): {"to": 1.0}, ("to",): {"be": 1.0}, ("be",): {"</s>": 1.0}}
_TRI_CHAIN = {("<s>", "<s>"): {"x": 1.0}, ("<s>", "x"): {"y": 1.0}, ("x", "y"): {"</s>": 1.0}}


def _contexts_not_tuples(got, want) -> str | None:
    bad = next((h for h in got["contexts"] if type(h) is not tuple), None)
    if bad is None:
        return None
    return (f"generate called next_dist with {bad!r}; the context must be a tuple (dictionary keys cannot be lists): "
            "use tuple(...)")


def _only_empty_contexts(got, want) -> str | None:
    if all(h == () for h in got["contexts"]):
        return None
    return f"a unigram model (n=1) must get the empty context (), got {got['contexts'][:3]}"


def _trigram_contexts(got, want) -> str | None:
    bad = next((h for h in got["contexts"] if h not in _TRI_CHAIN), None)
    if bad is None:
        return None
    return f"with n = 3, generate called next_dist with {bad!r} — " + (
        "the context of a trigram model is the last n - 1 = 2 tokens, and generation starts from ('<s>', '<s>'): "
        "n - 1 start tokens, not one" if type(bad) is tuple and len(bad) == 1 else
        "the context is a tuple of the last n - 1 = 2 tokens, <s> padding included")


GENERATE = Exercise("generate", (
    Case("generate on a deterministic bigram chain", generated(_CHAIN, 2),
         compare=fields(("words", "start from ('<s>',), feed each new word back as context, stop at </s> and leave "
                                  "it out"),
                        ("contexts", "the context is a tuple of the last n-1 tokens")),
         diagnoses=(_contexts_not_tuples,
                    when(lambda got, want: "</s>" in got["words"], "stop at </s> and leave it out of the words you "
                                                                   "return"),
                    when(lambda got, want: len(got["contexts"]) > 1 and set(got["contexts"]) == {("<s>",)},
                         "the context never moves: after each word, shift it (the last n - 1 tokens, the new word "
                         "included)"))),
    Case("the words of a sentence that never ends, with max_words=7",
         lambda names: names.generate(lambda h: {"la": 1.0}, 2, random.Random(0), max_words=7),
         hint="stop after max_words words"),
    Case("the contexts generate passed to a unigram model (n=1)",
         generated({}, 1, seed=3, otherwise={"a": 0.5, "</s>": 0.5}),
         compare=lambda got, want: _only_empty_contexts(got, want)),
    Case("generate on a deterministic trigram chain", generated(_TRI_CHAIN, 3),
         compare=fields(("words", "start from ('<s>', '<s>') and keep the last n - 1 = 2 tokens as the context"),
                        ("contexts", None)),
         diagnoses=(_trigram_contexts,)),
), standins=("sample_next",))


# ------------------------------------------------------------------ the multiple-choice question

Q1, Q1_LETTER = question("q1", "answer_q1", "ABCD")


NOTEBOOK = Notebook(
    "01_ngram", reference="lmcourse.reference.ngram", hidden="lmcourse.marking.ngram_hidden",
    exercises=(PAD_SENTENCE, COUNT_NGRAMS, MLE_PROB, NEXT_WORD_DISTRIBUTION, SENTENCE_LOGPROB, PERPLEXITY, ADD_K_PROB,
               CONTINUATION_COUNTS, KNESER_NEY_PROB, SAMPLE_NEXT, GENERATE, Q1),
    withheld=("lmcourse.reference.ngram",))
