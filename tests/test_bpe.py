"""lmcourse.bpe and 08's answers in lmcourse.reference.bpe: hand-worked merges, the stated rules, and
agreement with tiktoken and Hugging Face ``tokenizers`` given the same merges (both are test-only
dependencies; nothing is downloaded)."""

from __future__ import annotations

import random

import pytest

from lmcourse import bpe, data
from lmcourse.bpe import BPETokenizer, train_bpe_incremental
from lmcourse.reference.bpe import merge, pair_counts, train_bpe

EOT = "<|endoftext|>"

# --- random Unicode text, no hypothesis needed ---------------------------------------------------
# Ranges of code points across the planes; each character is drawn from a range chosen at random.
# Surrogates (D800-DFFF) cannot be encoded as UTF-8 and are never drawn.
RANGES = {
    "ascii": (0x20, 0x7E),
    "ascii control and whitespace": "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0 ",
    "latin-1 and accents": (0xA1, 0x17F),
    "combining marks": (0x300, 0x36F),
    "greek and cyrillic": (0x391, 0x44F),
    "arabic-indic digits": (0x660, 0x669),
    "devanagari": (0x900, 0x97F),
    "other spaces": "\u2000\u2003\u2009\u200b\u2028\u3000",
    "cjk": (0x4E00, 0x9FFF),
    "hangul": (0xAC00, 0xD7A3),
    "emoji": (0x1F300, 0x1FAFF),
    "cjk extension b (plane 2)": (0x20000, 0x2A6DF),
    "apostrophes and contractions": ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'", "’"],
}


def random_text(rng: random.Random, n_chars: int, any_code_point: bool = False) -> str:
    """``n_chars`` characters from the ranges above (or from the whole code space, surrogates excluded)."""
    out = []
    kinds = list(RANGES.values())
    for _ in range(n_chars):
        if any_code_point:
            c = rng.randrange(0x110000 - 0x800)
            out.append(chr(c if c < 0xD800 else c + 0x800))  # skip the surrogates
            continue
        kind = rng.choice(kinds)
        if isinstance(kind, tuple):
            out.append(chr(rng.randint(*kind)))
        else:
            out.append(rng.choice(kind))
        if rng.random() < 0.15:
            out.append(" ")  # words of a few characters, as in text
    return "".join(out)


@pytest.fixture(scope="module")
def corpus():
    c = data.load_shakespeare(quiet=True)
    return c.text("train"), c.text("val")


@pytest.fixture(scope="module")
def shakespeare_tok(corpus):
    """Trained on the first 300k characters of the training plays, 1024 ids, one special token."""
    train, _ = corpus
    return BPETokenizer.train(train[:300_000] + EOT + train[300_000:320_000], 1024, [EOT])


# --- the two operations --------------------------------------------------------------------------


def test_pair_counts_counts_overlapping_pairs_and_the_library_accumulates():
    assert pair_counts([1, 2, 3, 1, 2]) == {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    assert pair_counts([7, 7, 7]) == {(7, 7): 2}  # "aaa" holds "aa" twice
    assert pair_counts([5]) == {} and pair_counts([]) == {}
    counts = {}
    bpe._count_pairs([1, 2], counts, 1)  # the library's own counting accumulates, weighted
    bpe._count_pairs([1, 2, 1, 2], counts, 3)
    assert counts == {(1, 2): 7, (2, 1): 3}


def test_merge_left_to_right_without_overlap():
    ids = [1, 2, 3, 1, 2]
    assert merge(ids, (1, 2), 256) == [256, 3, 256]
    assert ids == [1, 2, 3, 1, 2]  # the input is not changed
    assert merge([7, 7, 7], (7, 7), 256) == [256, 7]
    assert merge([7, 7, 7, 7], (7, 7), 256) == [256, 256]
    assert merge([1, 2], (2, 1), 256) == [1, 2]
    assert merge([], (1, 2), 256) == []


# --- training, worked by hand ---------------------------------------------------------------------


def test_train_worked_example_aaabdaaabac():
    # One pre-token (letters only). Counts: aa 4 (each "aaa" holds two), ab 2, the rest 1.
    # 1. (a, a) -> 256 "aa":          aa a b d aa a b a c
    #    counts: (aa, a) 2, (a, b) 2 -- a tie: b"aa" > b"a", so (aa, a) wins, not (a, b)
    # 2. (256, a) -> 257 "aaa":       aaa b d aaa b a c
    # 3. (257, b) -> 258 "aaab":      aaab d aaab a c   (count 2, the rest 1)
    # 4. all four pairs count 1; the greatest first token is b"d": (d, aaab) -> 259 "daaab"
    # 5. aaab daaab a c: (daaab, a) -> 260 "daaaba" (b"daaab" is the greatest first token)
    a, b, c, d = b"abcd"
    vocab, merges = train_bpe("aaabdaaabac", 261)
    assert merges == [(a, a), (256, a), (257, b), (d, 258), (259, a)]
    assert [vocab[i] for i in range(256, 261)] == [b"aa", b"aaa", b"aaab", b"daaab", b"daaaba"]
    assert train_bpe_incremental("aaabdaaabac", 261) == (vocab, merges)
    # 6. aaab daaaba c: (daaaba, c) vs (aaab, daaaba): b"daaaba" > b"aaab" -> 261 "daaabac", then the last
    vocab, merges = train_bpe("aaabdaaabac", 1000)
    assert merges[5:] == [(260, c), (258, 261)] and len(vocab) == 263  # stopped early: one token left


def test_tie_break_greater_first_token_then_greater_second():
    a, b, c, d = b"abcd"
    # "abcd": ab, bc, cd all once -> (c, d) (b"c" is the greatest first token), then (b, cd), then (a, bcd)
    assert train_bpe("abcd", 259)[1] == [(c, d), (b, 256), (a, 257)]
    # "ab ac": pre-tokens "ab", " ac"; (a, b), (" ", a), (a, c) once each; (a, c) beats (a, b) on the second token
    assert train_bpe("ab ac", 257)[1] == [(a, c)]


def test_pretokens_are_counted_once_and_never_crossed():
    # "ab ab ab" -> pre-tokens "ab", " ab", " ab": (a, b) 3, (" ", a) 2; (b, " ") is never counted
    a, b, space = ord("a"), ord("b"), ord(" ")
    vocab, merges = train_bpe("ab ab ab", 300)
    assert merges == [(a, b), (space, 256)] and vocab[257] == b" ab" and len(vocab) == 258
    assert bpe.pretoken_counts("ab ab ab") == {b"ab": 1, b" ab": 2}
    assert bpe.pretokenize("I'll see 42 dogs,  ok?!\n") == ["I", "'ll", " see", " 42", " dogs", ",", " ", " ok", "?!",
                                                           "\n"]


def test_special_tokens_are_never_merged_or_split():
    text = ("hello" + EOT) * 20 + "<|end" * 5
    vocab, merges = train_bpe(text, 300, [EOT])
    eot_id = max(vocab)
    assert vocab[eot_id] == EOT.encode() and eot_id == 256 + len(merges)
    assert all(eot_id not in m for m in merges)
    # "o<" would be counted 20 times if the special token were ordinary text
    assert all(not (vocab[m[0]].endswith(b"o") and vocab[m[1]].startswith(b"<")) for m in merges)
    assert not any(EOT.encode() in t for i, t in vocab.items() if i != eot_id)
    # the special token's own text is never counted: with 50 of them and one "xy", the first merge is (x, y)
    assert bpe.pretoken_counts("a" + EOT + "b" + EOT, [EOT]) == {b"a": 1, b"b": 1}
    assert train_bpe(EOT * 50 + "xy", 258, [EOT])[1] == [(ord("x"), ord("y"))]
    tok = BPETokenizer(merges, [EOT])
    assert tok.vocab == vocab
    ids = tok.encode("hello" + EOT + "hello")
    assert ids.count(eot_id) == 1 and tok.decode(ids) == "hello" + EOT + "hello"
    ordinary = tok.encode("hello" + EOT, allowed_special=())
    assert eot_id not in ordinary and tok.decode(ordinary) == "hello" + EOT
    assert ordinary == tok.encode_ordinary("hello" + EOT)


def test_longer_special_token_wins_where_two_match():
    tok = BPETokenizer([], ["<s>", "<s>x"])
    assert tok.encode("a<s>x<s>") == [ord("a"), 257, 256]
    assert tok.encode("a<s>x<s>", allowed_special={"<s>"}) == [ord("a"), 256, ord("x"), 256]


# --- the incremental trainer gives the plain trainer's merges --------------------------------------


@pytest.mark.parametrize("name", ["shakespeare", "random unicode", "ties", "overlaps", "specials", "tiny"])
def test_incremental_trainer_equals_plain_trainer(name, corpus):
    rng = random.Random(7)
    text, vocab_size, specials = {
        "shakespeare": (corpus[0][100_000:140_000], 400, ()),
        "random unicode": (random_text(rng, 3000), 400, ()),
        "ties": ("".join(rng.choice("abcd ") for _ in range(2000)), 330, ()),
        "overlaps": ("aaaaaaa aaaa aaa " * 5 + "abababab bababa", 280, ()),
        "specials": (("to be<|s|> or not <|s|>" * 30), 300, ("<|s|>", "<pad>")),
        "tiny": ("", 260, ()),
    }[name]
    assert train_bpe_incremental(text, vocab_size, specials) == train_bpe(text, vocab_size, specials)


@pytest.mark.slow
def test_incremental_trainer_equals_plain_trainer_on_a_larger_shakespeare_slice(corpus):
    text = corpus[0][:200_000]  # the size bench/bench_bpe.py times; about 20 s for the plain trainer
    assert train_bpe_incremental(text, 512, [EOT]) == train_bpe(text, 512, [EOT])


# --- encoding and decoding ------------------------------------------------------------------------


def test_vocab_from_merges_matches_training(shakespeare_tok, corpus):
    vocab, merges = train_bpe_incremental(corpus[0][:20_000], 300, [EOT])
    tok = BPETokenizer(merges, [EOT])
    assert tok.vocab == vocab and tok.vocab_size == len(tok) == 300
    assert shakespeare_tok.vocab_size == 1024 and shakespeare_tok.special_tokens == {EOT: 1023}


def test_fits_the_course_tokenizer_interface(shakespeare_tok):
    # encode(text) -> ids, decode(ids) -> text, vocab_size: what lmcourse.data's batching reads
    torch = pytest.importorskip("torch")
    ids = data.encode_text("To be, or not to be", shakespeare_tok)
    assert ids.dtype == torch.long and ids.tolist() == shakespeare_tok.encode("To be, or not to be")
    assert int(ids.max()) < shakespeare_tok.vocab_size


def test_encode_applies_merges_by_rank_not_left_to_right():
    a, b, c = b"abc"
    # merges: (b, c) first, then (a, b). "abc": (a, b) comes first in the text but (b, c) is learned earlier
    tok = BPETokenizer([(b, c), (a, b)])
    assert tok.encode("abc") == [a, 256]
    assert tok.encode("ab bc") == [257, ord(" "), 256]  # pre-tokens "ab" and " bc"
    assert tok.encode("abcbc") == [a, 256, 256]  # every occurrence of the earliest pair, then nothing left
    assert tok.encode_pretoken(b"bc") == [256]


def test_round_trip_on_random_unicode(shakespeare_tok):
    rng = random.Random(2024)
    for trial in range(200):
        s = random_text(rng, rng.randint(0, 60), any_code_point=trial % 4 == 0)
        assert shakespeare_tok.decode(shakespeare_tok.encode(s)) == s, ascii(s)
    s = random_text(rng, 20_000)
    assert shakespeare_tok.decode(shakespeare_tok.encode(s)) == s


def test_decode_replaces_invalid_utf8_as_libraries_do(shakespeare_tok):
    tok = shakespeare_tok
    ids = tok.encode("世")
    assert tok.decode_bytes(ids) == "世".encode()
    assert tok.decode([0xE4]) == "\ufffd"  # a lone lead byte
    assert tok.decode([0xE4, 0xB8]) == "\ufffd"  # a character cut short: one replacement
    assert tok.decode([ord("a"), 0xFF, ord("b")]) == "a\ufffdb"
    assert tok.decode([]) == "" and tok.decode_bytes([]) == b""


def test_bad_input_gives_clear_errors(shakespeare_tok):
    with pytest.raises(ValueError, match="at least 256"):
        train_bpe("abc", 255)
    with pytest.raises(ValueError, match=r"256 \(the bytes\) \+ 2"):
        train_bpe("abc", 257, ["<a>", "<b>"])
    with pytest.raises(ValueError, match="distinct"):
        train_bpe("abc", 300, ["<a>", "<a>"])
    with pytest.raises(ValueError, match="non-empty"):
        train_bpe("abc", 300, [""])
    with pytest.raises(TypeError, match="list of strings"):
        train_bpe("abc", 300, EOT)
    with pytest.raises(TypeError, match="must be a str"):
        train_bpe(b"abc", 300)
    with pytest.raises(IndexError, match="token id 1024 is outside the vocabulary"):
        shakespeare_tok.decode([5, 1024])
    with pytest.raises(IndexError, match="outside the vocabulary"):
        shakespeare_tok.decode([-1])
    with pytest.raises(TypeError, match="token ids are ints"):
        shakespeare_tok.decode([1.0])
    with pytest.raises(TypeError, match="encode takes a str"):
        shakespeare_tok.encode(b"abc")
    with pytest.raises(ValueError, match="not special tokens"):
        shakespeare_tok.encode("abc", allowed_special={"<pad>"})
    with pytest.raises(ValueError, match="only ids below 257"):
        BPETokenizer([(1, 2), (1, 300)])


def test_decode_accepts_numpy_and_torch_ids(shakespeare_tok):
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    ids = shakespeare_tok.encode("To be, or not to be")
    assert shakespeare_tok.decode(np.array(ids)) == "To be, or not to be"
    assert shakespeare_tok.decode(torch.tensor(ids)) == "To be, or not to be"


# --- against tiktoken, given the same ranks and pattern --------------------------------------------


def test_encode_equals_tiktoken_on_shakespeare_and_random_text(shakespeare_tok, corpus):
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.Encoding("lmcourse-test", pat_str=bpe.GPT2_PATTERN,
                            mergeable_ranks=shakespeare_tok.mergeable_ranks(),
                            special_tokens=dict(shakespeare_tok.special_tokens))
    val = corpus[1]
    assert shakespeare_tok.encode(val) == enc.encode(val)
    with_specials = val[:5000] + EOT + val[5000:10000] + EOT
    assert shakespeare_tok.encode(with_specials) == enc.encode(with_specials, allowed_special="all")
    assert shakespeare_tok.encode(with_specials, allowed_special=()) == enc.encode_ordinary(with_specials)
    rng = random.Random(11)
    for trial in range(100):
        s = random_text(rng, rng.randint(0, 200), any_code_point=trial % 5 == 0)
        assert shakespeare_tok.encode(s) == enc.encode(s), ascii(s)
    ids = [rng.randrange(shakespeare_tok.vocab_size) for _ in range(5000)]
    assert shakespeare_tok.decode(ids) == enc.decode(ids)  # invalid UTF-8 replaced the same way


def test_tiktoken_rank_file_loads_in_tiktoken(shakespeare_tok, tmp_path, monkeypatch, corpus):
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # read the file itself, cache nothing
    path = shakespeare_tok.save_tiktoken(tmp_path / "shakespeare.tiktoken")
    ranks = load_tiktoken_bpe(str(path))
    assert ranks == shakespeare_tok.mergeable_ranks() and len(ranks) == 1023
    enc = tiktoken.Encoding("from-file", pat_str=bpe.GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={EOT: 1023})
    text = corpus[1][:20_000] + EOT
    assert enc.encode(text, allowed_special="all") == shakespeare_tok.encode(text)


# --- against Hugging Face tokenizers, from our tokenizer.json ----------------------------------------


def test_tokenizer_json_loads_in_hf_tokenizers_and_encodes_identically(shakespeare_tok, tmp_path, corpus):
    tokenizers = pytest.importorskip("tokenizers")
    path = shakespeare_tok.save(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(path))
    assert hf.get_vocab_size() == shakespeare_tok.vocab_size and hf.token_to_id(EOT) == 1023
    assert hf.token_to_id("Ġthe") == shakespeare_tok.encode(" the")[0]  # GPT-2's byte map: space is 'Ġ'
    text = corpus[1][:50_000] + EOT + "tail"
    assert hf.encode(text).ids == shakespeare_tok.encode(text)
    rng = random.Random(5)
    for trial in range(100):
        s = random_text(rng, rng.randint(0, 200), any_code_point=trial % 5 == 0)
        ids = shakespeare_tok.encode(s)
        assert hf.encode(s).ids == ids, ascii(s)
        assert hf.decode(ids, skip_special_tokens=False) == s
    ids = [rng.randrange(shakespeare_tok.vocab_size - 1) for _ in range(5000)]
    assert hf.decode(ids) == shakespeare_tok.decode(ids)  # invalid UTF-8 replaced the same way
    again = BPETokenizer.load(path)
    assert again.merges == shakespeare_tok.merges and again.special_tokens == shakespeare_tok.special_tokens


def test_bytes_to_unicode_is_gpt2s_map():
    b2u = bpe.bytes_to_unicode()
    assert sorted(b2u) == list(range(256)) and len(set(b2u.values())) == 256
    assert b2u[ord("a")] == "a" and b2u[ord(" ")] == "Ġ" and b2u[ord("\n")] == "Ċ" and b2u[0] == "Ā"
    assert all(c.isprintable() and not c.isspace() for c in b2u.values())


# --- against Hugging Face tokenizers' own trainer: the same rule up to the tie-break ---------------


def test_hf_bpe_trainer_agrees_up_to_its_first_tie(corpus):
    """HF's BpeTrainer picks the most frequent pair too, but breaks ties another way; its merges equal
    ours up to the first merge where two pairs have the same count (the notebook's wrap-up says so)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    text = corpus[0][:60_000]
    vocab, merges = train_bpe_incremental(text, 400)
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=400, min_frequency=0, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator([text], trainer)
    u2b = {u: b for b, u in bpe.bytes_to_unicode().items()}
    raw = __import__("json").loads(hf.to_str())["model"]["merges"]
    theirs = [tuple(bytes(u2b[c] for c in half) for half in (m.split(" ") if isinstance(m, str) else m)) for m in raw]
    ours = [(vocab[a], vocab[b]) for a, b in merges]
    first = next((i for i, (x, y) in enumerate(zip(ours, theirs)) if x != y), None)
    assert first is None or first >= 10, f"only {first} merges agree"
    if first is not None:
        # the two choices had the same count after the merges both made: a tie, broken differently
        tok = BPETokenizer(merges[:first])
        words = bpe.pretoken_counts(text)

        def count(pair_bytes):
            total = 0
            for word, freq in words.items():
                ids = tok.encode_pretoken(word)
                total += freq * sum((tok.vocab[a], tok.vocab[b]) == pair_bytes for a, b in zip(ids, ids[1:]))
            return total

        assert count(ours[first]) == count(theirs[first]), (first, ours[first], theirs[first])
    print(f"HF BpeTrainer: the first {first if first is not None else len(ours)} of {len(ours)} merges agree; "
          f"{len(set(ours) & set(theirs))} are in both lists")
