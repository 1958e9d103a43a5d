"""Notebook 08 (byte-level BPE): the reference answers, and ``REFERENCE``, the names that do its exercises.

The grader computes expected values from these in its own process; the grading kernel of 08
cannot import this module (:mod:`lmcourse.marking`), and the stand-ins a later exercise's tests
use ("one mistake costs once": ``pair_counts`` and ``merge`` in ``train_bpe``, ``encode`` and
``train_bpe_incremental``) are built from its source. The incremental trainer is the library's
(:func:`lmcourse.bpe.train_bpe_incremental`, which the notebook's later sections use as given
code); the rest is written for clarity, not speed.
"""

from __future__ import annotations

import math

from lmcourse import bpe
from lmcourse.bpe import check_training_args, pretokenize, split_specials, train_bpe_incremental

__all__ = ["REFERENCE", "answer_q1", "answer_q2", "decode", "encode", "merge", "pair_counts", "train_bpe",
           "train_bpe_incremental"]


def pair_counts(ids: list[int]) -> dict[tuple[int, int], int]:
    """How often each adjacent pair of ``ids`` occurs (overlapping pairs all count)."""
    counts: dict[tuple[int, int], int] = {}
    for i in range(len(ids) - 1):
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """A new list: every occurrence of ``pair``, scanned left to right, replaced by ``new_id``."""
    out: list[int] = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def train_bpe(text: str, vocab_size: int, special_tokens=()) -> tuple[dict[int, bytes], list[tuple[int, int]]]:
    """The plain trainer: every pair recounted after each merge; the rule is lmcourse.bpe's docstring."""
    specials = list(check_training_args(text, vocab_size, special_tokens))
    words: dict[str, int] = {}
    for piece, is_special in split_specials(text, specials):
        if not is_special:
            for w in pretokenize(piece):
                words[w] = words.get(w, 0) + 1
    tokens = [list(w.encode("utf-8")) for w in words]
    freqs = list(words.values())
    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    for new_id in range(256, vocab_size - len(specials)):
        counts: dict[tuple[int, int], int] = {}
        for ids, freq in zip(tokens, freqs):
            for pair, c in pair_counts(ids).items():
                counts[pair] = counts.get(pair, 0) + c * freq
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))
        tokens = [merge(ids, best, new_id) for ids in tokens]
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
    for s in specials:       # in the order given, right after the last merge
        vocab[len(vocab)] = s.encode("utf-8")
    return vocab, merges


def encode(text: str, merges, special_tokens=()) -> list[int]:
    """Token ids of ``text``: merges applied by rank inside each pre-token; special tokens whole,
    numbered in the order given after the merges."""
    ranks = {tuple(pair): 256 + i for i, pair in enumerate(merges)}
    special_ids = {s: 256 + len(merges) + j for j, s in enumerate(special_tokens)}
    out: list[int] = []
    for piece, is_special in split_specials(text, special_tokens):
        if is_special:
            out.append(special_ids[piece])
            continue
        for pretoken in pretokenize(piece):
            ids = list(pretoken.encode("utf-8"))
            while len(ids) >= 2:
                pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))
                if pair not in ranks:
                    break
                ids = merge(ids, pair, ranks[pair])
            out.extend(ids)
    return out


def decode(ids, vocab) -> str:
    """The text of the ids: their bytes joined, decoded once as UTF-8 (invalid bytes become U+FFFD)."""
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


answer_q1 = "B"
answer_q2 = "D"

# the course code that does 08's exercises: this module's answers and the library's tokenizer
REFERENCE = (pair_counts, merge, train_bpe, train_bpe_incremental, encode, decode, bpe)
