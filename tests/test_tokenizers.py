import pytest

from lmcourse.tokenizers import BOS, EOS, UNK, CharTokenizer, WordTokenizer, join_words, split_sentences, split_words


def test_split_words_keeps_apostrophes_and_punctuation():
    assert split_words("O'er the hills, 'tis Hamlet!") == ["o'er", "the", "hills", ",", "tis", "hamlet", "!"]


def test_split_sentences():
    assert split_sentences("To be. Or not? Aye") == [["to", "be", "."], ["or", "not", "?"], ["aye"]]


def test_char_roundtrip_and_unknown():
    tok = CharTokenizer.from_text("hello")
    assert tok.decode(tok.encode("hell")) == "hell"
    assert tok.encode("z") == [tok.stoi[UNK]]
    strict = CharTokenizer.from_text("ab", specials=())
    with pytest.raises(KeyError, match="no <unk>"):
        strict.encode("c")
    with pytest.raises(IndexError, match="outside the vocabulary"):
        tok.decode([99])


def test_char_encode_is_the_per_character_lookup():
    """encode looks the characters up without a Python loop; the ids are those of token_id, one
    character at a time (unknown ones, characters outside the BMP and lone surrogates included)."""
    import random

    import torch

    from lmcourse.data import encode_text

    rng = random.Random(0)
    alphabet = "abc \n\u00e9\u4e16\U0001f600\ud800<"
    for specials in [(UNK,), ("<pad>", UNK), ()]:
        tok = CharTokenizer.from_text("".join(rng.choice(alphabet[:-3]) for _ in range(50)), specials=specials)
        for _ in range(20):
            pool = alphabet if UNK in specials else alphabet[:-3]
            text = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 40)))
            want = [tok.token_id(c) for c in text] if all(c in tok or UNK in specials for c in text) else None
            if want is None:
                with pytest.raises(KeyError, match="no <unk>"):
                    tok.encode(text)
                continue
            assert tok.encode(text) == want, text
            assert torch.equal(encode_text(text, tok), torch.tensor(want, dtype=torch.long))
    assert CharTokenizer([], specials=(UNK,)).encode("ab") == [0, 0]


def test_word_tokenizer_specials_and_min_count():
    tok = WordTokenizer.from_text("the cat and the dog and the end", min_count=2)
    assert tok.itos[:4] == ["<pad>", BOS, EOS, UNK]
    assert tok.itos[4] == "the"  # most frequent first
    ids = tok.encode("the cat", add_bos=True, add_eos=True)
    assert ids[0] == tok.stoi[BOS] and ids[-1] == tok.stoi[EOS] and tok.stoi[UNK] in ids
    assert tok.decode(ids) == "the <unk>"  # <unk> is kept: it is information, not markup
    assert tok.decode(ids, skip_specials=False) == "<s> the <unk> </s>"
    assert tok.decode(tok.encode("and the")) == "and the"


def test_join_words_spacing():
    assert join_words(["hello", ",", "world", "!"]) == "hello, world!"
