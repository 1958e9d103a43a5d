"""lmcourse.reference.bpe (08's answers) agrees with the library lmcourse.bpe; REFERENCE names what does
08's work; 08's rules (lmcourse.marking.bpe.RULES) refuse the course's tokenizer and tiktoken while the
stand-ins and the test's own helpers run; the tests' inputs are what they say."""

import random

import pytest

from lmcourse import bpe, data
from lmcourse.checks import CheckFailed
from lmcourse.marking import bpe as cases
from lmcourse.reference import bpe as ref


def test_the_answers_equal_the_library_on_random_texts():
    rng = random.Random(0)
    for n in (0, 1, 2, 3, 10, 50):
        ids = [rng.randrange(3) for _ in range(n)]
        for pair in ((0, 0), (0, 1), (2, 1)):
            before = list(ids)
            assert ref.merge(ids, pair, 300) == bpe._merge(ids, pair, 300)
            assert ids == before
    assert ref.pair_counts([7, 7, 7]) == {(7, 7): 2} and ref.merge([7, 7, 7], (7, 7), 256) == [256, 7]
    for k in range(3):
        text = cases.random_text(random.Random(k), 300)
        specials = ["<s>", "<|endoftext|>"]
        vocab, merges = ref.train_bpe(text, 300, specials)
        assert (vocab, merges) == bpe.train_bpe_incremental(text, 300, specials)
        tok = bpe.BPETokenizer(merges, specials)
        assert ref.encode(text + "<s>", merges, specials) == tok.encode(text + "<s>")
        assert ref.decode(tok.encode(text), vocab) == text


def test_special_tokens_are_numbered_in_the_order_given():
    vocab, merges = ref.train_bpe("ab<pad>ab<|endoftext|>", 259, ["<pad>", "<|endoftext|>"])
    assert [vocab[257], vocab[258]] == [b"<pad>", b"<|endoftext|>"] and merges == [(97, 98)]
    assert ref.encode("x<|endoftext|><pad>", [(98, 99), (97, 98)], ["<pad>", "<|endoftext|>"]) == [120, 259, 258]


def test_reference_names_the_answers_and_the_library():
    assert bpe in ref.REFERENCE
    assert {ref.pair_counts, ref.merge, ref.train_bpe, ref.train_bpe_incremental, ref.encode,
            ref.decode} <= set(ref.REFERENCE)
    assert ref.answer_q1 in "ABCD" and ref.answer_q2 in "ABCD"
    assert set(cases.PACKAGES) == {"tiktoken", "tokenizers", "sentencepiece"}
    assert "tiktoken.core" in cases.MODULES


def test_train_bpe_refused_fails_with_a_message():
    with pytest.raises(CheckFailed, match="must not recount"):
        cases.train_bpe_refused("abc", 300)


def test_random_text_is_valid_unicode_beyond_ascii():
    text = cases.random_text(random.Random(1), 2000)
    assert text.encode("utf-8").decode("utf-8") == text  # no surrogates
    assert any(ord(c) > 0xFFFF for c in text) and any(0x4E00 <= ord(c) <= 0x9FFF for c in text)


def test_the_merges_table_is_what_the_library_learns():
    text = data.load_shakespeare(quiet=True).text("train")[:20_000]
    assert cases.merges_list() == bpe.train_bpe_incremental(text, 400)[1]
    assert cases.vocab_of(cases.SHAKESPEARE_MERGES, [cases.EOT]) == bpe.BPETokenizer(cases.SHAKESPEARE_MERGES,
                                                                                    [cases.EOT]).vocab


def test_segment_spells_the_text_with_long_tokens():
    vocab = cases.decode_vocab()
    for text in (*cases.round_trip_texts(), "To be, or not" + cases.EOT, ""):
        ids = cases.segment(text, vocab)
        assert b"".join(vocab[i] for i in ids) == text.encode()
    assert len(cases.segment("To be, or not" + cases.EOT, vocab)) < len("To be, or not")


def test_rules_refuse_the_course_tokenizer_and_let_the_stand_ins_through():
    with pytest.raises(CheckFailed, match="lmcourse.bpe"):
        with cases.RULES():
            bpe.train_bpe_incremental("ab ab", 300)
    with pytest.raises(CheckFailed):
        with cases.RULES():
            bpe.BPETokenizer([]).decode([104])
    with cases.RULES():
        assert ref.merge([1, 2], (1, 2), 256) == [256]
        assert cases.segment("ab", cases.decode_vocab())


def test_rules_refuse_tiktoken_code():
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(CheckFailed, match="tiktoken"):
        with cases.RULES():
            tiktoken.Encoding("x", pat_str=bpe.GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
