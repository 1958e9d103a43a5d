"""lmcourse.reference.bpe: the stand-ins equal lmcourse.bpe, REFERENCE names what does 08's work, and
the rules built from it refuse the reference and tiktoken while letting the stand-ins through."""

import random

import pytest

import lmcourse.rules
from lmcourse import bpe
from lmcourse.checks import CheckFailed
from lmcourse.reference import bpe as ref


def _rules(*allowed):
    return lmcourse.rules.rules(*ref.REFERENCE, modules=ref.MODULES, packages=ref.PACKAGES)(*allowed)


def test_stand_ins_equal_the_course_bpe_on_random_lists():
    rng = random.Random(0)
    for n in (0, 1, 2, 3, 10, 50):
        ids = [rng.randrange(3) for _ in range(n)]
        assert ref.pair_counts(ids) == bpe.pair_counts(ids)
        for pair in ((0, 0), (0, 1), (2, 1)):
            before = list(ids)
            assert ref.merge(ids, pair, 300) == bpe.merge(ids, pair, 300)
            assert ids == before
    assert ref.pair_counts([7, 7, 7]) == {(7, 7): 2} and ref.merge([7, 7, 7], (7, 7), 256) == [256, 7]


def test_reference_names_the_course_bpe_the_helpers_and_the_libraries():
    assert bpe in ref.REFERENCE
    assert {ref.pair_counts, ref.merge, ref.train_bpe_refused, ref.random_text} <= set(ref.REFERENCE)
    assert set(ref.PACKAGES) == {"tiktoken", "tokenizers", "sentencepiece"}
    assert "tiktoken.core" in ref.MODULES


def test_train_bpe_refused_fails_with_a_message():
    with pytest.raises(CheckFailed, match="must not recount"):
        ref.train_bpe_refused("abc", 300)


def test_random_text_is_valid_unicode_beyond_ascii():
    text = ref.random_text(random.Random(1), 2000)
    assert text.encode("utf-8").decode("utf-8") == text  # no surrogates
    assert any(ord(c) > 0xFFFF for c in text) and any(0x4E00 <= ord(c) <= 0x9FFF for c in text)
    tok = bpe.BPETokenizer(bpe.train_bpe_incremental(text, 300)[1])
    assert tok.decode(tok.encode(text)) == text


def test_rules_refuse_the_course_bpe_and_let_the_stand_ins_through():
    with pytest.raises(CheckFailed, match="lmcourse.bpe"):
        with _rules(ref.merge)():
            bpe.merge([1, 2], (1, 2), 256)
    with pytest.raises(CheckFailed):
        with _rules(ref.merge)():
            bpe.BPETokenizer([]).decode([104])
    with _rules(ref.merge)():
        assert ref.merge([1, 2], (1, 2), 256) == [256]
    with pytest.raises(CheckFailed):
        with _rules()():
            ref.pair_counts([1, 2])


def test_rules_refuse_tiktoken_code():
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(CheckFailed, match="tiktoken"):
        with _rules()():
            tiktoken.Encoding("x", pat_str=bpe.GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
