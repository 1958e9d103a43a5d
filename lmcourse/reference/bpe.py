"""Notebook 08 (byte-level BPE): the stand-ins its test cells run in place of a student's earlier
answers, the test cells' helpers, and ``REFERENCE``, the course code that does one of its
exercises' work.

One mistake costs once: the tests of ``train_bpe``, ``encode`` and ``train_bpe_incremental`` run
with :func:`pair_counts` and :func:`merge` below in place of the student's (and the incremental
trainer's with :func:`train_bpe_refused` in place of ``train_bpe``: the point of that exercise is
not to recount). Expected values come from :mod:`lmcourse.bpe`, computed before the student's
function is called. ``MODULES`` and ``PACKAGES`` name the libraries that tokenize for you
(tiktoken, Hugging Face ``tokenizers``, sentencepiece): their Python code is refused inside a
graded call, and so is their compiled code (a method of tiktoken's Rust ``CoreBPE``, however the
object was made: the rules' ``packages``, :func:`lmcourse.checks.forbid_calls`); importing them
there fails the test. (A compiled core reached only from other C code, ``map(core.encode, ...)``,
raises no event the rules see: the TA's similarity report flags an answer cell that imports one
of the libraries, "a tokenizer library imported".)
"""

from __future__ import annotations

import random

from lmcourse import bpe, checks

__all__ = ["MODULES", "PACKAGES", "REFERENCE", "merge", "pair_counts", "random_text", "train_bpe_refused"]


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


def train_bpe_refused(*args, **kwargs):
    """Stands in for ``train_bpe`` while ``train_bpe_incremental`` is tested: calling it fails."""
    checks.check(False, "train_bpe_incremental called train_bpe — the incremental trainer must not recount "
                        "every pair after each merge: update the counts of the pre-tokens a merge changed")


# Ranges of code points a random text draws from (surrogates D800-DFFF, which UTF-8 cannot hold,
# never): ASCII, whitespace of many kinds, accents, combining marks, Greek, Devanagari, CJK,
# Hangul, emoji, a plane-2 ideograph, and GPT-2's contractions.
_RANGES = [(0x20, 0x7E), "\t\n\r\x0b\x0c\x85\xa0 \u2003\u3000", (0xA1, 0x17F), (0x300, 0x36F),
           (0x391, 0x3C9), (0x900, 0x97F), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1FAFF),
           (0x20000, 0x2A6DF), ["'s", "'t", "'re", "'ll", "'d", "’"]]


def random_text(rng: random.Random, n_chars: int) -> str:
    """About ``n_chars`` characters of random Unicode, in short words (the round-trip tests' input)."""
    out = []
    for _ in range(n_chars):
        kind = rng.choice(_RANGES)
        out.append(chr(rng.randint(*kind)) if isinstance(kind, tuple) else rng.choice(kind))
        if rng.random() < 0.2:
            out.append(" ")
    return "".join(out)


# the course's BPE (every function and class of lmcourse.bpe), and this module's stand-ins and
# helpers (a test cell lets its own stand-ins through with _rules(pair_counts, merge))
REFERENCE = (bpe, pair_counts, merge, train_bpe_refused, random_text)
# the Python code of tokenizer libraries (refused when imported), and the libraries themselves
# (their compiled code is refused inside a graded call; importing one there fails the test)
MODULES = ("tiktoken.core", "tiktoken.load", "tiktoken.registry", "tiktoken_ext.openai_public",
           "tokenizers.implementations.base_tokenizer", "tokenizers.implementations.byte_level_bpe",
           "tokenizers.implementations.char_level_bpe", "tokenizers.implementations.sentencepiece_bpe",
           "sentencepiece")
PACKAGES = ("tiktoken", "tokenizers", "sentencepiece")
