"""Notebook 01's hidden cases: inputs and calls only (the expected values are the reference's,
computed where the verdict is made). Not part of a student's release."""

from __future__ import annotations

from .ngram import _constant, _logprob_with_calls, _toy_prob
from .spec import Case, close

__all__ = ["HIDDEN"]

_SENTS = [["a", "b", "a", "b"], ["b"], [], ["a", "a", "a", "a", "a", "a"]]

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
    "sentence_logprob": (
        Case("4-gram log-probability and its calls to prob", _logprob_with_calls(["x", "y", "z"], 4, _constant(0.5)),
             compare=close(rel=1e-9)),
        Case("log p of the empty sentence under a certain model", _logprob_with_calls([], 4, _constant(1.0)),
             compare=close(rel=1e-9)),
        Case("log p(to be) again", _logprob_with_calls(["to", "be"], 2, _toy_prob), compare=close(rel=1e-9)),
    ),
}
