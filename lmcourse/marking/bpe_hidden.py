"""Notebook 08's hidden cases: inputs and calls only (the expected values are the reference's,
computed where the verdict is made). Not part of a student's release."""

from __future__ import annotations

import functools
import random

from .bpe import (
    EOT,
    Q1_LETTER,
    Q2_LETTER,
    SHAKESPEARE_MERGES,
    decode_vocab,
    incremental_call,
    merge_case,
    random_text,
    shakespeare,
    train_call,
    vocab_then_merges,
)
from .spec import Case

__all__ = ["HIDDEN"]


@functools.cache
def _random_lists(seed: int, sizes: tuple[int, ...], k: int) -> tuple[tuple[int, ...], ...]:
    rng = random.Random(seed)
    return tuple(tuple(rng.randrange(k) for _ in range(n)) for n in sizes)


def _pair_counts_cases():
    return tuple(Case(f"pair_counts(a random list of {len(ids)} ids)",
                      lambda names, ids=ids: names.pair_counts(list(ids)))
                 for ids in _random_lists(8, (2, 3, 17, 60), 4))


def _merge_cases():
    return tuple(merge_case(f"merge(a random list of {len(ids)} ids, {pair}, 999)", ids, pair, 999)
                 for ids in _random_lists(9, (1, 2, 5, 40, 41), 3) for pair in ((0, 1), (2, 2), (1, 0)))


_STOP = "on a hidden text too, stop when no pair is left (max() of an empty dict raises)"


def _train_cases():
    texts = ((shakespeare("train", 50_000, 51_500), 290, ()), (random_text(random.Random(3), 250), 280, ()),
             ("aaaa aaa aa a " * 7 + "abababa baba", 270, ()), (("to be" + EOT + " or not <s>") * 9, 280, (EOT, "<s>")))
    return tuple(Case(f"train_bpe(a hidden text of {len(t)} characters, {size}, {list(sp)})",
                      train_call(t, size, sp), compare=vocab_then_merges, errors=(("empty", _STOP),))
                 for t, size, sp in texts)


def _enc_hidden(text):
    return lambda names: names.encode(text, [tuple(p) for p in SHAKESPEARE_MERGES], [EOT, "<s>"])


def _encode_cases():
    val = shakespeare("val", 1000, 4000)
    texts = (val, random_text(random.Random(4), 300), "<s>" + EOT + val[:200] + "<s>x<s>", "  \n\n   ab  ", EOT)
    return tuple(Case(f"encode(a hidden text of {len(t)} characters, merges, [EOT, '<s>'])", _enc_hidden(t),
                      errors=(("", "a text of special tokens only, or of whitespace only, must work too"),))
                 for t in texts)


def _decode_cases():
    rng = random.Random(5)
    n_ids = len(decode_vocab())
    cases = []
    for n in (0, 1, 50, 400):
        ids = tuple(rng.randrange(n_ids) for _ in range(n))
        cases.append(Case(f"decode({n} random ids, vocab)",
                          lambda names, ids=ids: names.decode(list(ids), dict(decode_vocab())),
                          errors=(("", 'random ids may cut a character short: decode once, with errors="replace"'),)))
    cases.append(Case("decode([0xFF, ord('a'), 0xE4], vocab)",
                      lambda names: names.decode([0xFF, ord("a"), 0xE4], dict(decode_vocab())),
                      errors=(("", 'bytes that are not UTF-8 must not raise: decode with errors="replace"'),)))
    return tuple(cases)


_EMPTY = ("an empty text, or one of special tokens only, has no pair at all: stop before max() when no pair is "
          "left")


def _incremental_cases():
    rng = random.Random(6)
    big = shakespeare("train", 200_000, 205_000)
    texts = ((big + EOT + big[:500], 360, (EOT,)), (random_text(rng, 800), 320, ()),
             ("".join(rng.choice("ab ") for _ in range(600)), 300, ()), (("ha" + EOT) * 40 + "<s>", 1000, (EOT, "<s>")),
             ("", 260, ()))
    return tuple(Case(f"train_bpe_incremental(a hidden text of {len(t)} characters, {size}, {list(sp)})",
                      incremental_call(t, size, sp), compare=vocab_then_merges,
                      errors=(("train_bpe_incremental called train_bpe", ""), ("", _EMPTY)))
                 for t, size, sp in texts)


HIDDEN = {
    "pair_counts": _pair_counts_cases(),
    "merge": _merge_cases(),
    "train_bpe": _train_cases(),
    "encode": _encode_cases(),
    "decode": _decode_cases(),
    "train_bpe_incremental": _incremental_cases(),
    "q1": (Q1_LETTER,),
    "q2": (Q2_LETTER,),
}
