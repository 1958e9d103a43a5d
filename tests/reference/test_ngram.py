"""lmcourse.reference.ngram names every answer of notebook 01."""

import inspect

from lmcourse.reference import ngram
from lmcourse.reference.ngram import REFERENCE


def test_reference_names_every_function_of_the_ngram_answers():
    functions = {f for n, f in vars(ngram).items() if inspect.isfunction(f) and f.__module__ == ngram.__name__}
    assert functions == set(REFERENCE)


def test_the_answers_agree_on_a_worked_example():
    counts = ngram.count_ngrams([["cows", "eat"], ["cows", "eat", "grass"]], 2)
    table = ngram.ContextTable.from_counts(counts)
    assert ngram.mle_prob(table, ("cows",), "eat") == 1.0
    assert ngram.next_word_distribution(table, ("eat",)) == {"</s>": 0.5, "grass": 0.5}
