"""The reference answers of notebook 01 (lmcourse.reference.ngram), which its tests substitute for earlier
exercises and compare with, and refusals.substitute, which puts them in place."""

import math
import random
from collections import Counter

import pytest

from lmcourse.marking.refusals import substitute
from lmcourse.ngram import ContextTable
from lmcourse.reference import ngram

SENTS = [["san", "francisco", "is", "foggy"], ["the", "cat", "is", "grey"], ["my", "cat", "is", "foggy"],
         ["the", "cat", "is", "foggy"]]


def test_counts_and_mle_follow_the_lecture():
    cows = Counter({("cows", "eat", "corn"): 4, ("cows", "eat", "grass"): 3, ("cows", "eat", "hay"): 2,
                    ("cows", "eat", "if"): 1, ("cows", "eat", "which"): 1})
    table = ContextTable.from_counts(cows)
    assert ngram.mle_prob(table, ("cows", "eat"), "corn") == 4 / 11
    assert ngram.mle_prob(table, ("pigs", "eat"), "corn") == 0.0
    assert ngram.next_word_distribution(table, ("pigs",)) == {}
    assert math.isclose(math.fsum(ngram.next_word_distribution(table, ("cows", "eat")).values()), 1.0)
    assert ngram.pad_sentence(["a"], 3) == ["<s>", "<s>", "a", "</s>"]
    c3 = ngram.count_ngrams([["a", "b"], []], 3)
    assert c3 == Counter({("<s>", "<s>", "a"): 1, ("<s>", "a", "b"): 1, ("a", "b", "</s>"): 1,
                          ("<s>", "<s>", "</s>"): 1})


def test_perplexity_counts_tokens_not_sentences():
    assert math.isclose(ngram.perplexity(lambda h, w: 0.1, [["a", "b", "c"], ["d"]], 2), 10.0)
    probs = {"a": 0.5, "b": 0.2, "</s>": 0.4}
    sents = [["a"], ["b", "b", "a", "b"]]
    lp = sum(math.log(probs[w]) for s in sents for w in s + ["</s>"])
    assert math.isclose(ngram.perplexity(lambda h, w: probs[w], sents, 1), math.exp(-lp / 7))
    assert ngram.sentence_logprob(lambda h, w: 0.0, ["a"], 2) == -math.inf


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("d", [0.1, 0.75, 1.0])
def test_kneser_ney_is_a_distribution(n, d):
    tables = ngram.build_kn_tables(ngram.count_ngrams(SENTS, n))
    vocab = sorted({w for s in SENTS for w in s} | {"</s>", "dog"})
    for h in [("cat", "is", "foggy"), ("<s>", "the", "cat"), ("zebra", "is", "is"), ("my", "cat", "is")]:
        h = h[len(h) - (n - 1):] if n > 1 else ()
        total = math.fsum(ngram.kneser_ney_prob(tables, len(vocab), h, w, d) for w in vocab)
        assert math.isclose(total, 1.0, rel_tol=1e-12), (h, total)


def test_kneser_ney_backs_off_to_the_shorter_context():
    tables = ngram.build_kn_tables(ngram.count_ngrams(SENTS, 3))
    # an unseen context hands everything to the context without its oldest word
    assert ngram.kneser_ney_prob(tables, 9, ("zebra", "cat"), "is") == ngram.kneser_ney_prob(tables, 9, ("cat",), "is")
    # 'cat is' was followed by grey (1) and foggy (2): (2 - d + d * 2 * p(foggy | is)) / 3
    d = 0.5
    lower = ngram.kneser_ney_prob(tables, 9, ("is",), "foggy", d)
    assert math.isclose(ngram.kneser_ney_prob(tables, 9, ("cat", "is"), "foggy", d), (2 - d + d * 2 * lower) / 3)


def test_sampling_and_generation():
    rng = random.Random(0)
    draws = Counter(ngram.sample_next({"a": 0.25, "b": 0.0, "c": 0.75}, rng) for _ in range(20_000))
    assert draws["b"] == 0 and abs(draws["c"] / 20_000 - 0.75) < 0.02
    chain = {("<s>", "<s>"): {"x": 1.0}, ("<s>", "x"): {"y": 1.0}, ("x", "y"): {"</s>": 1.0}}
    assert ngram.generate(chain.__getitem__, 3, random.Random(0)) == ["x", "y"]
    assert ngram.generate(lambda h: {"la": 1.0} if h == () else {}, 1, random.Random(0), max_words=4) == ["la"] * 4


def test_substitute_restores_and_unbinds():
    ns = {"f": 1}
    with substitute(ns, f=2, g=3):
        assert ns["f"] == 2 and ns["g"] == 3
    assert ns == {"f": 1}
    with pytest.raises(KeyError), substitute(ns, f=5):
        assert ns["f"] == 5
        ns.pop("missing")
    assert ns == {"f": 1}


def test_validation_sweep_marks_the_best_value():
    import matplotlib

    matplotlib.use("Agg")
    from lmcourse import plot

    ax = plot.validation_sweep([0.5, 0.75, 0.9], {"n=2": [120.0, 110.0, 115.0], "n=3": [130.0, 105.0, 101.0]}, "d")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-1] == "best: n=3, d = 0.9 (101.0)", labels
