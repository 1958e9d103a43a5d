"""Notebook 01 (n-grams): the course code that does one of its exercises' work.

The answers themselves live in :mod:`lmcourse.ngram` (the notebook imports its ``ContextTable``
and students may read it after the deadline); this module names them for the test cells."""

from lmcourse import ngram

__all__ = ["REFERENCE"]

REFERENCE = (ngram.pad_sentence, ngram.count_ngrams, ngram.mle_prob, ngram.next_word_distribution,
             ngram.sentence_logprob, ngram.perplexity, ngram.add_k_prob, ngram.continuation_counts,
             ngram.build_kn_tables, ngram.kneser_ney_prob, ngram.sample_next, ngram.generate)
