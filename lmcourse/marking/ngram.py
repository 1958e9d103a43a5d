"""Notebook 01's tests (n-grams): the visible cases, with the hints that teach.

Each case builds its own inputs (nothing of the notebook's state), calls the student's function
through ``names`` and returns what the judge compares; the hidden cases are in
:mod:`.ngram_hidden`. The lecture's worked example is the "cows eat" table: corn 4/11, grass 3/11,
hay 2/11, if 1/11, which 1/11.
"""

from __future__ import annotations

from collections import Counter

from lmcourse.ngram import ContextTable

from .spec import Case, Exercise, Notebook, close, when

__all__ = ["NOTEBOOK", "cows_table", "toy"]


def toy() -> list[list[str]]:
    return [["cows", "eat", "grass"], ["cows", "eat", "corn"]]


def cows_table() -> ContextTable:
    """The lecture's counts after "cows eat", with two other contexts beside them."""
    return ContextTable.from_counts(Counter({
        ("cows", "eat", "corn"): 4, ("cows", "eat", "grass"): 3, ("cows", "eat", "hay"): 2,
        ("cows", "eat", "if"): 1, ("cows", "eat", "which"): 1,
        ("cows", "drink", "water"): 6, ("goats", "eat", "grass"): 5}))


def _constant(p: float):
    """A model that gives every word probability ``p``."""
    def prob(context, word):
        return p
    return prob


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


def _logprob_with_calls(sentence, n, prob):
    def call(names):
        model, calls = logged(prob)
        return {"logprob": names.sentence_logprob(model, list(sentence), n), "calls": calls}
    return call


def _toy_prob(context, word):
    return _BIGRAM.get(context, {}).get(word, 0.0) if type(context) is tuple else 0.0


def _contexts(got) -> list:
    return [c for c, _ in got["calls"]]


SENTENCE_LOGPROB = Exercise("sentence_logprob", (
    Case("log p(to be) under the toy bigram model", _logprob_with_calls(["to", "be"], 2, _toy_prob),
         compare=close(rel=1e-9),
         diagnoses=(when(lambda got, want: any(type(c) is not tuple for c in _contexts(got)),
                         "prob was called with a context that is not a tuple; pass tuple(padded[i - n + 1:i]) "
                         "(a list cannot be a dictionary key)"),
                    when(lambda got, want: any(len(c) != 1 for c in _contexts(got)),
                         "for n = 2 the context must be a tuple of the 1 previous token"),),
         hint="sum the natural logs of p(to|<s>), p(be|to) and p(</s>|be) — the </s> step counts too"),
    Case("log p(to go): p(go | to) = 0", _logprob_with_calls(["to", "go"], 2, _toy_prob), compare=close(rel=1e-9),
         errors=(("math domain error", "p(go | to) = 0: return -math.inf as soon as a probability is 0 "
                                       "(math.log(0.0) raises)"),),
         hint="a word with probability 0 makes the sentence impossible: return -math.inf"),
    Case("log p of 'a b c' under a constant model (p = 0.1)", _logprob_with_calls(["a", "b", "c"], 3, _constant(0.1)),
         compare=close(rel=1e-9),
         hint="3 words + </s> = 4 predictions; use math.log (natural log), not log2 or log10"),
    Case("log p of a 400-word sentence (p = 0.1 each)", _logprob_with_calls(["a"] * 400, 2, _constant(0.1)),
         compare=close(rel=1e-9),
         hint="a product of 401 probabilities of 0.1 underflows to 0.0 in floating point: add the logs of the "
              "probabilities instead of taking the log of their product"),
    Case("the (context, word) pairs sentence_logprob(prob, ['x', 'y'], 3) passed to prob",
         _logprob_with_calls(["x", "y"], 3, _constant(0.5)),
         diagnoses=(when(lambda got, want: _contexts(got) and all(len(c) == 1 for c in _contexts(got)),
                         "with n = 3, prob was called with one-token contexts, a bigram context whatever n — the "
                         "context is the n - 1 previous tokens, tuple(padded[i - n + 1:i])"),
                    when(lambda got, want: _contexts(got)[:1] != [("<s>", "<s>")],
                         "with n = 3 the first context should be ('<s>', '<s>') — a trigram model pads with n - 1 = "
                         "2 start tokens (pad_sentence(sentence, n)), not one")),
         hint="one call per predicted token (the words and </s>), each with the n - 1 tokens before it"),
    Case("the (context, word) pairs for ['x'] with n = 1", _logprob_with_calls(["x"], 1, _constant(0.25)),
         hint="a unigram model has the empty context () at every position"),
), standins=("pad_sentence",))


NOTEBOOK = Notebook(
    "01_ngram", reference="lmcourse.reference.ngram", hidden="lmcourse.marking.ngram_hidden",
    exercises=(PAD_SENTENCE, COUNT_NGRAMS, SENTENCE_LOGPROB),
    withheld=("lmcourse.reference.ngram",))
