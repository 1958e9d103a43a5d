"""Notebook 08's tests (byte-level BPE): the visible cases, with the hints that teach.

Each case builds its own inputs, calls the student's function through ``names`` and returns what
the judge compares; the hidden cases are in :mod:`.bpe_hidden`. Inside every graded call the
tokenizer libraries (tiktoken, Hugging Face ``tokenizers``, sentencepiece) are refused, and at home
the course's tokenizer (:mod:`lmcourse.bpe`, absent while 08 is graded) too (:func:`RULES`). So no input here is
made with them: the merges learned on Shakespeare are a table (:data:`SHAKESPEARE_MERGES`), and
the ids a decode test reads are cut from the text by :func:`segment`.
"""

from __future__ import annotations

import functools
import random

from lmcourse.checks import check
from lmcourse.marking.refusals import substitute

from .rules import exercise_rules
from .show import show
from .spec import Case, Exercise, Notebook, exact, question, when

__all__ = ["EOT", "MODULES", "NOTEBOOK", "PACKAGES", "Q1_LETTER", "Q2_LETTER",
           "RULES", "SHAKESPEARE_MERGES", "decode_vocab", "incremental_call",
           "merge_case", "random_text", "segment", "shakespeare", "train_bpe_refused", "train_call", "vocab_of",
           "vocab_then_merges"]

EOT = "<|endoftext|>"

# the Python code of tokenizer libraries (refused where imported), and the libraries themselves
# (their compiled code is refused inside a graded call; importing one there fails the test)
MODULES = ("tiktoken.core", "tiktoken.load", "tiktoken.registry", "tiktoken_ext.openai_public", "tiktoken._educational",
           "tokenizers.implementations.base_tokenizer", "tokenizers.implementations.byte_level_bpe",
           "tokenizers.implementations.char_level_bpe", "tokenizers.implementations.sentencepiece_bpe",
           "sentencepiece")
PACKAGES = ("tiktoken", "tokenizers", "sentencepiece")
_RULE = ("write the tokenizer yourself: not with lmcourse.bpe (the course's tokenizer), tiktoken, tokenizers or "
         "sentencepiece")
# a tokenizer library's compiled core reached only from other C code (map(core.encode, ...)) raises
# no event these rules see: the static scan of the submission flags an answer that imports one. The course's
# tokenizer is refused where the kernel has it (a graded kernel withholds it)
RULES = exercise_rules(_RULE, "lmcourse.bpe", modules=MODULES, packages=PACKAGES)


def train_bpe_refused(*args, **kwargs):
    """Stands in for ``train_bpe`` while ``train_bpe_incremental`` is tested: calling it fails."""
    check(False, "train_bpe_incremental called train_bpe — the incremental trainer must not recount every pair "
                 "after each merge: update the counts of the pre-tokens a merge changed")


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


@functools.cache
def _plays(split: str) -> str:
    from lmcourse.data import load_shakespeare

    return load_shakespeare(quiet=True).text(split)


def shakespeare(split: str, start: int, stop: int) -> str:
    return _plays(split)[start:stop]


# the merges the course's trainer learns from the first 20,000 characters of the training plays
# with 400 ids (tests/marking/test_bpe_cases.py checks them against lmcourse.bpe)
SHAKESPEARE_MERGES = (
    (116, 104), (32, 97), (32, 256), (101, 114), (111, 117), (105, 110), (32, 104), (32, 119), (32, 115), (32, 109),
    (110, 100), (105, 115), (101, 115), (32, 98), (258, 101), (32, 102), (111, 114), (111, 110), (105, 116),
    (97, 114), (32, 116), (97, 116), (108, 108), (32, 108), (97, 110), (32, 99), (32, 111), (101, 110), (257, 266),
    (32, 121), (114, 101), (32, 110), (32, 112), (32, 100), (285, 260), (118, 101), (32, 73), (105, 114),
    (282, 102), (276, 111), (32, 261), (32, 103), (111, 119), (111, 109), (269, 101), (261, 103), (101, 100),
    (69, 83), (265, 97), (115, 101), (99, 104), (263, 105), (115, 116), (108, 100), (114, 105), (260, 114),
    (111, 100), (259, 101), (99, 101), (262, 101), (262, 97), (287, 111), (32, 274), (105, 109), (103, 104),
    (97, 109), (263, 104), (84, 104), (265, 121), (264, 104), (32, 117), (32, 267), (268, 115), (258, 277),
    (256, 259), (108, 101), (79, 85), (78, 84), (45, 45), (97, 115), (39, 115), (32, 118), (32, 101), (332, 333),
    (339, 303), (340, 83), (67, 341), (262, 267), (262, 259), (297, 111), (107, 101), (97, 108), (274, 121),
    (101, 266), (263, 101), (271, 272), (101, 116), (69, 78), (279, 105), (273, 101), (290, 114), (65, 82),
    (117, 116), (268, 116), (99, 107), (76, 76), (337, 293), (271, 97), (260, 309), (320, 116), (103, 261),
    (283, 116), (87, 104), (39, 100), (317, 116), (279, 111), (262, 319), (32, 107), (32, 32), (72, 69),
    (307, 256), (264, 111), (114, 97), (105, 100), (76, 353), (380, 65), (375, 381), (316, 291), (118, 259),
    (108, 121), (105, 273), (101, 97), (345, 312), (117, 114), (101, 275), (100, 321), (97, 121), (80, 357),
    (393, 79), (394, 361), (395, 303), (76, 79), (265, 101), (116, 259))


def merges_list() -> list[tuple[int, int]]:
    return [tuple(p) for p in SHAKESPEARE_MERGES]


def vocab_of(merges, special_tokens=()) -> dict[int, bytes]:
    """The vocabulary the merges and special tokens make (the layout every exercise states)."""
    vocab = {i: bytes([i]) for i in range(256)}
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = vocab[a] + vocab[b]
    for j, s in enumerate(special_tokens):
        vocab[256 + len(merges) + j] = s.encode("utf-8")
    return vocab


def segment(text: str, vocab: dict[int, bytes]) -> list[int]:
    """Ids whose bytes joined are ``text``'s UTF-8 bytes, the longest token first at each place
    (not BPE's rule, and no need: a decode test only needs ids that spell the text)."""
    by_bytes = {b: i for i, b in sorted(vocab.items(), reverse=True)}
    longest = max(map(len, by_bytes))
    data, ids, i = text.encode("utf-8"), [], 0
    while i < len(data):
        n = next(n for n in range(min(longest, len(data) - i), 0, -1) if data[i:i + n] in by_bytes)
        ids.append(by_bytes[data[i:i + n]])
        i += n
    return ids


def _after(call, project):
    """``call``'s value seen through ``project`` (a part of a (vocab, merges) result)."""
    return lambda names: project(call(names))


def _merges(out):
    return out[1]


def _part(label: str, hint: str, get):
    """A diagnosis: where the parts ``get`` picks differ, say which part and what it should be."""
    def diagnose(got, want):
        g, w = get(got), get(want)
        return None if g == w else f"{label}: got {show(g)}, expected {show(w)} — {hint}"
    return diagnose


# ------------------------------------------------------------------ 1. pair_counts

def _keys_not_tuples(got, want):
    bad = next((k for k in got if type(k) is not tuple), None)
    return None if bad is None else (f"the key {bad!r} is not a tuple: key each count by the pair itself, "
                                     "(ids[i], ids[i + 1])")


def _input_after(fn, ids, *args):
    def call(names):
        mine = list(ids)
        getattr(names, fn)(mine, *args)
        return mine
    return call


PAIR_COUNTS = Exercise("pair_counts", (
    Case("pair_counts([1, 2, 3])", lambda names: names.pair_counts([1, 2, 3]),
         diagnoses=(when(lambda got, want: not isinstance(got, dict),
                         "return a dict (or a Counter) mapping (a, b) to a count"),
                    _keys_not_tuples,
                    when(lambda got, want: dict(got) == {(1, 2): 1},
                         "the last pair (2, 3) is missing — an off-by-one: the pairs run from (ids[0], ids[1]) to "
                         "(ids[-2], ids[-1]), zip(ids, ids[1:])"),
                    when(lambda got, want: dict(got) == {(2, 3): 1},
                         "the first pair (1, 2) is missing — an off-by-one: the pairs start at (ids[0], ids[1])")),
         hint="the keys are tuples (a, b) of neighbours ids[i], ids[i + 1], for every i up to the last pair"),
    Case("pair_counts([1, 2, 3, 1, 2])", lambda names: names.pair_counts([1, 2, 3, 1, 2]),
         diagnoses=(when(lambda got, want: dict(got).get((1, 2)) == 1,
                         "(1, 2) occurs twice but is counted once: count every occurrence, not each distinct pair "
                         "(a set of the pairs keeps one of each)"),),
         hint="the keys are tuples (a, b) of neighbours ids[i], ids[i + 1], for every i up to the last pair"),
    Case("the list after pair_counts([1, 2, 3, 1, 2])", _input_after("pair_counts", [1, 2, 3, 1, 2]),
         hint="do not change the list you are given"),
    Case("pair_counts([7, 7, 7])", lambda names: names.pair_counts([7, 7, 7]),
         hint="overlapping pairs all count: positions 0-1 and 1-2 are both (7, 7) — do not skip ahead after a "
              "pair (that is merge's rule, not counting's) and do not use a set"),
    Case("pair_counts([5])", lambda names: names.pair_counts([5]), hint="one id has no neighbour: return {}"),
    Case("pair_counts([])", lambda names: names.pair_counts([])),
), rules=RULES)


# ------------------------------------------------------------------ 2. merge

_NEIGHBOUR = "look at ids[i + 1] only when i + 1 < len(ids)"
_DROPS_LAST = when(lambda got, want: type(got) is list and want and got == want[:-1],
                   "the last id is missing: keep the last id when it starts no pair — scan while i < len(ids), "
                   "not len(ids) - 1")


def merge_case(label, ids, pair, new_id, hint=None, diagnoses=()):
    return Case(label, lambda names: names.merge(list(ids), pair, new_id), hint=hint,
                diagnoses=(_DROPS_LAST, *diagnoses), errors=(("index", _NEIGHBOUR),))


MERGE = Exercise("merge", (
    merge_case("merge([1, 2, 3, 1, 2], (1, 2), 256)", [1, 2, 3, 1, 2], (1, 2), 256, diagnoses=(
        when(lambda got, want: type(got) is not list, "return a new list"),
        when(lambda got, want: got.count(256) == want.count(256) and len(got) > len(want),
             "after merging ids[i] and ids[i + 1] the scan goes on at i + 2: the second id of a merged pair was "
             "kept too"),
        when(lambda got, want: got.count(256) < want.count(256),
             "replace every occurrence of the pair, not only the first")),
        hint="replace every occurrence of the pair, not only the first, by the one id new_id (a list slice never "
             "equals a tuple: compare ids[i] with pair[0] and ids[i + 1] with pair[1])"),
    Case("the list after merge([1, 2, 3, 1, 2], (1, 2), 256)", _input_after("merge", [1, 2, 3, 1, 2], (1, 2), 256),
         hint="build a new list; do not change ids in place"),
    merge_case("merge([7, 7, 7], (7, 7), 256)", [7, 7, 7], (7, 7), 256,
                hint="occurrences do not overlap: after merging positions 0-1, the scan goes on at position 2"),
    merge_case("merge([7, 7, 7, 7], (7, 7), 256)", [7, 7, 7, 7], (7, 7), 256),
    merge_case("merge([1, 2, 1], (1, 2), 300)", [1, 2, 1], (1, 2), 300,
                hint="keep the last id when it starts no pair"),
    merge_case("merge([1, 2], (2, 1), 300)", [1, 2], (2, 1), 300, hint="the pair is ordered: (2, 1) is not (1, 2)"),
    merge_case("merge([], (1, 2), 256)", [], (1, 2), 256),
), rules=RULES)


# ------------------------------------------------------------------ 3. train_bpe

def _shape(name: str):
    """A (vocab, merges) result's shape only (its values are other cases' business)."""
    def compare(got, want):
        if not (type(got) is tuple and len(got) == 2):
            return f"{name} should return a tuple (vocab, merges), got {show(got)}"
        if not isinstance(got[0], dict):
            return (f"vocab should be a dict, got {show(got[0])} — vocab maps every id to its bytes: "
                    "{0: b'\\x00', ..., 256: b'aa', ...}")
        if type(got[1]) is not list:
            return f"merges should be a list, got {show(got[1])} — merges is a list of pairs, in the order learned"
        return None
    return compare


def vocab_then_merges(got, want):
    """A (vocab, merges) result: the merges first, then the vocab, each named where it differs."""
    shape = _shape("the trainer")(got, want)
    if shape:
        return shape
    for i, part in ((1, "merges"), (0, "vocab")):
        diff = exact()(got[i], want[i])
        if diff:
            return f"{part}: {diff}"
    return None


def train_call(text, size, specials=None):
    if specials is None:
        return lambda names: names.train_bpe(text, size)
    return lambda names: names.train_bpe(text, size, list(specials))


_EX = "aaabdaaabac"
_a, _b, _c, _d, _sp = b"abcd "
_TIE_WRONG = when(lambda got, want: got == [(_a, _b)],
                  "(a, b) was chosen, but the tie between (256, a) and (a, b) (both occur twice) goes to the greatest "
                  "(vocab[a], vocab[b]): compare the first tokens' bytes first, b'aa' > b'a' — not the smallest bytes, "
                  "not the joined bytes vocab[a] + vocab[b], not the first pair seen")
_IDS_FROM_257 = when(lambda got, want: got and got[0][0] == 257,
                     "merge i makes id 256 + i: the first merge is id 256, so the second merge joins (256, 97)")


def _joins_o_and_lt(got, want):
    vocab, merges = got
    if any(vocab[a].endswith(b"o") and vocab[b].startswith(b"<") for a, b in merges if a in vocab and b in vocab):
        return ("a merge joins 'o' and '<': the special token was merged with its neighbour — cut special tokens "
                "out before pre-tokenizing")
    return None


def _longest_first(got, want):
    g, w = got[0], want[0]
    ids = sorted(i for i in w if i >= 256 + len(want[1]))
    if [g.get(i) for i in ids] == [w[i] for i in sorted(ids, key=lambda i: -len(w[i]))] != [w[i] for i in ids]:
        return ("the special tokens are numbered longest first: they take the ids after the merges in the order of "
                "special_tokens (sorting by length is only for finding them in the text)")
    return None


TRAIN_BPE = Exercise("train_bpe", (
    Case(f'train_bpe("{_EX}", 261)', train_call(_EX, 261), compare=_shape(f'train_bpe("{_EX}", 261)')),
    Case(f"the first merge of '{_EX}'", _after(train_call(_EX, 261), lambda out: out[1][:1]),
         hint="(97, 97), b'a' b'a': 'aa' occurs 4 times, overlapping pairs count — start from the UTF-8 bytes of "
              "each pre-token, count pairs with pair_counts, and store each merge as a tuple (a, b)"),
    Case(f"the second merge of '{_EX}'", _after(train_call(_EX, 261), lambda out: out[1][1:2]),
         diagnoses=(_IDS_FROM_257, _TIE_WRONG),
         hint="(256, 97), 'aa' then 'a': after merge 0, (256, 97) and (97, 98) both occur twice — a tie, broken by "
              "the greater bytes, b'aa' > b'a' (the greatest (count, vocab[a], vocab[b]))"),
    Case(f'merges of train_bpe("{_EX}", 261)', _after(train_call(_EX, 261), _merges),
         diagnoses=(when(lambda got, want: len(got) < len(want),
                         "training stopped early: it goes on while any pair is left, also when every pair occurs "
                         "once (then the greatest first token wins)"),),
         hint="when every pair occurs once the greatest first token wins by its bytes, (b'd', b'aaab'): compare "
              "vocab[a], then vocab[b], not the ids (258 > 100, but b'd' > b'aaab'); merge i is id 256 + i"),
    Case(f'len(vocab) of train_bpe("{_EX}", 261)', _after(train_call(_EX, 261), lambda out: len(out[0])),
         hint="256 bytes + one id per merge"),
    Case("vocab[254..260]", _after(train_call(_EX, 261), lambda out: [out[0].get(i) for i in range(254, 261)]),
         hint="vocab[b] = bytes([b]) for the bytes; vocab[256 + i] = vocab[a] + vocab[b]"),
    Case('merges of train_bpe("abcd", 259)', _after(train_call("abcd", 259), _merges),
         hint="ab, bc, cd all occur once: the tie goes to the greatest first token, b'c' (then b'b' + b'cd', ...)"),
    Case('merges of train_bpe("ab ac", 257)', _after(train_call("ab ac", 257), _merges),
         diagnoses=(when(lambda got, want: (_b, _sp) in got,
                         "(b, ' ') was merged: it spans the pre-tokens 'ab' and ' ac' — count and merge pairs "
                         "inside each pre-token only (pretokenize each piece)"),),
         hint="(a, b), (' ', a) and (a, c) occur once each; b'a' > b' ', and with equal first tokens the greater "
              "second one wins: b'c' > b'b'"),
    Case('merges of train_bpe("cd ab ab ab", 257)', _after(train_call("cd ab ab ab", 257), _merges),
         hint="the pre-token ' ab' occurs 3 times: count each distinct pre-token's pairs times its frequency, so "
              "(a, b) and (' ', a) have 3 and beat (c, d) with 1"),
    Case('merges of train_bpe("東京東京", 257)', _after(train_call("東京東京", 257), _merges),
         hint="start from the UTF-8 bytes of each pre-token (list(s.encode('utf-8'))), not from code points: "
              "'東' is the three bytes 0xE6 0x9D 0xB1"),
    Case('merges of train_bpe("ab ab ab", 300)', _after(train_call("ab ab ab", 300), _merges),
         errors=(("empty", "when no pair is left, stop (max() of an empty dict raises): the vocabulary is then "
                           "smaller than vocab_size"),),
         hint="the pre-tokens are 'ab', ' ab', ' ab': (b, ' ') spans two of them and is never counted; and when "
              "no pair is left, stop"),
    Case('len(vocab) of train_bpe("ab ab ab", 300)', _after(train_call("ab ab ab", 300), lambda out: len(out[0])),
         hint="training stops early when every pre-token is one token: 256 + 2 ids, not 300"),
    Case('merges of train_bpe("<|endoftext|>" * 50 + "xy", 258, ["<|endoftext|>"])',
         _after(train_call(EOT * 50 + "xy", 258, [EOT]), _merges),
         diagnoses=(when(lambda got, want: got[:1] == want and len(got) == 2,
                         "two merges where one fits: vocab_size counts the special token too, so 258 ids are 256 "
                         "bytes, 1 merge and 1 special token"),),
         hint="cut the special tokens out first (split_specials): their text is never counted; "
              "vocab_size counts the special token, so one merge is left"),
    Case("vocab[257] (the special token)", _after(train_call(EOT * 50 + "xy", 258, [EOT]), lambda out: out[0].get(257)),
         hint="special tokens come after the merges, as their UTF-8 bytes"),
    Case('train_bpe(("x" + "<|endoftext|>") * 10, 258, ["<|endoftext|>"])', train_call(("x" + EOT) * 10, 258, [EOT]),
         diagnoses=(when(lambda got, want: got[1] == want[1] and got[0].get(256) != want[0].get(256),
                         "the special token belongs right after the last merge, id 256 here, not at the end of "
                         "vocab_size: training stopped early, so the vocabulary is smaller than vocab_size"),
                    when(lambda got, want: got[1] and not want[1],
                         "a pair was merged, but every ordinary piece is the one byte 'x': pairs were counted across "
                         "the special token — cut the text at special tokens with split_specials and pre-tokenize each "
                         "piece on its own (text.replace(special, '') joins its neighbours into one pre-token)"),),
         hint="no pair at all, so no merge: the special token takes id 256, right after the last merge"),
    Case('train_bpe(("hello" + EOT) * 20 + "hello!", 260, [EOT, "<pad>"])',
         train_call(("hello" + EOT) * 20 + "hello!", 260, [EOT, "<pad>"]),
         diagnoses=(_joins_o_and_lt,
                    _part("len(vocab) of a vocabulary of 260 with 2 special tokens",
                          "vocab_size counts the 256 bytes, the merges and the special tokens: 260 - 256 - 2 = 2 "
                          "merges",
                          lambda out: len(out[0])),
                    _part("the last two ids of a vocabulary of 260 with special tokens ['<|endoftext|>', '<pad>']",
                          "the special tokens take the last ids, in their order",
                          lambda out: [out[0].get(258), out[0].get(259)])),
         errors=(("", "cut the special tokens out first (split_specials); they take the last ids"),),
         hint="cut the special tokens out first (split_specials); they take the last ids"),
    Case('train_bpe("ab<pad>ab<|endoftext|>", 259, ["<pad>", "<|endoftext|>"])',
         train_call("ab<pad>ab" + EOT, 259, ["<pad>", EOT]),
         diagnoses=(_longest_first,),
         hint="the special tokens take the ids after the merges in the order of special_tokens: '<pad>' then "
              "'<|endoftext|>'"),
), standins=("pair_counts", "merge"), rules=RULES)


# ------------------------------------------------------------------ 4. encode

_BC_AB = ((_b, _c), (_a, _b))       # (b, c) -> 256 learned first, then (a, b) -> 257
LINE = "To be, or not to be, that is the question: naïve café, 東京 🙂 in 1599"


def _enc(text, merges, specials=None):
    if specials is None:
        return lambda names: names.encode(text, [tuple(p) for p in merges])
    return lambda names: names.encode(text, [tuple(p) for p in merges], list(specials))


def _merges_after_encode(names):
    merges = merges_list()
    names.encode(LINE, merges)
    return merges


def _outside_vocab(n_ids: int):
    return when(lambda got, want: any(type(i) is not int or not 0 <= i < n_ids for i in got),
                "an id outside the vocabulary: start each pre-token from its UTF-8 bytes "
                "(list(pretoken.encode('utf-8'))), not from code points")


ENCODE = Exercise("encode", (
    Case('encode("abc", [(b, c), (a, b)])', _enc("abc", _BC_AB),
         diagnoses=(when(lambda got, want: type(got) is not list, "return a list of ids"),),
         hint="merge by rank: of the pairs (a, b) and (b, c), (b, c) was learned first (id 256), so it is merged "
              "first, although (a, b) comes first in the text"),
    Case('encode("abcbc", [(b, c), (a, b)])', _enc("abcbc", _BC_AB),
         hint="a merge replaces every occurrence of the pair in the pre-token; then (a, b) is gone"),
    Case('encode("abc", [(a, b), (256, c)])', _enc("abc", ((_a, _b), (256, _c))),
         hint="after a merge, look again: a merged token can be part of a later merge — repeat until no adjacent "
              "pair has a merge"),
    Case('encode("ab bc", [(b, c), (a, b)])', _enc("ab bc", _BC_AB),
         hint="pre-tokens 'ab' and ' bc' are encoded one by one and the ids joined"),
    Case('encode("ab ab", [(b, " ")])', _enc("ab ab", ((_b, _sp),)),
         hint="merges apply inside one pre-token only: 'b' ends 'ab' and ' ' starts ' ab', so (b, ' ') never "
              "merges — pre-tokenize each piece and encode each pre-token on its own"),
    Case('encode("naïve don\'t", [(a, 0xC3), ("\'", t)])', _enc("naïve don't", ((_a, 0xC3), (ord("'"), ord("t")))),
         hint="pre-tokenize with the notebook's pretokenize: GPT-2's pattern takes letters of every script "
              "(\\p{L}: 'naïve' is one pre-token, its 'a' next to the first byte of 'ï') and keeps contractions "
              "such as 't whole"),
    Case('encode("", merges)', _enc("", _BC_AB)),
    Case('encode("ab<|endoftext|>ab<|endoftext|>", [(b, c), (a, b)], ["<|endoftext|>"])',
         _enc("ab" + EOT + "ab" + EOT, _BC_AB, [EOT]),
         hint="a special token is one id, 256 + len(merges) + its index: cut it out with split_specials before "
              "pre-tokenizing, never encode its characters"),
    Case('encode("x<pad><|endoftext|>", merges, ["<|endoftext|>", "<pad>"])',
         _enc("x<pad>" + EOT, _BC_AB, [EOT, "<pad>"]),
         errors=(("", "special token j has the id 256 + len(merges) + j"),),
         hint="the special tokens' ids follow the order of special_tokens"),
    Case('encode("x<|endoftext|><pad>", merges, ["<pad>", "<|endoftext|>"])',
         _enc("x" + EOT + "<pad>", _BC_AB, ["<pad>", EOT]),
         diagnoses=(when(lambda got, want: got == [ord("x"), 258, 259],
                         "the special tokens are numbered longest first: special token j of special_tokens has the "
                         "id 256 + len(merges) + j, in the order given (sorting by length is only for finding them "
                         "in the text)"),),
         hint="the special tokens' ids follow the order of special_tokens: '<pad>' is 258, '<|endoftext|>' 259"),
    Case("merges after encode(line, merges)", _merges_after_encode, hint="do not change merges: encode only reads it"),
    Case(f"encode({LINE!r}) with 144 merges learned on Shakespeare", _enc(LINE, SHAKESPEARE_MERGES),
         diagnoses=(_outside_vocab(256 + len(SHAKESPEARE_MERGES)),),
         hint="use the notebook's pretokenize (GPT-2's pattern: \\p{L} is a letter of any script, so 'naïve' is one "
              "pre-token) and start each pre-token from its UTF-8 bytes, then merge by rank as in the worked "
              "examples above"),
), standins=("merge",), rules=RULES)


# ------------------------------------------------------------------ 5. decode

@functools.cache
def decode_vocab() -> dict[int, bytes]:
    return vocab_of(SHAKESPEARE_MERGES, [EOT])


def _dec(ids):
    return lambda names: names.decode(list(ids), dict(decode_vocab()))


def _round_trip(text):
    return lambda names: names.decode(segment(text, decode_vocab()), dict(decode_vocab()))


@functools.cache
def round_trip_texts() -> tuple[str, ...]:
    rng = random.Random(0)
    return tuple(random_text(rng, 40) for _ in range(20))


_TOKYO = tuple("東京".encode())     # six byte ids: two characters of three bytes each

DECODE = Exercise("decode", (
    Case("decode([104, 105], vocab)", _dec([104, 105]),
         diagnoses=(when(lambda got, want: type(got) is not str,
                         "return a str: join the bytes, then .decode('utf-8', ...)"),)),
    Case("decode of a sentence and a special token", _round_trip("To be, or not" + EOT),
         hint="a special token's vocab entry is its UTF-8 text"),
    Case("decode(the six byte ids of '東京', vocab)", _dec(_TOKYO),
         diagnoses=(when(lambda got, want: got == want.encode().decode("latin-1"),
                         "the bytes were decoded as Latin-1: decode them as UTF-8, "
                         ".decode('utf-8', errors='replace')"),),
         errors=(("", "join all the bytes first, then decode once: one character's bytes span several ids"),),
         hint="join the bytes of all the ids first (b''.join), then decode once"),
    Case("decode([0xE4, 0xB8], vocab) (the first two bytes of '世')", _dec([0xE4, 0xB8]),
         errors=(("", 'a character cut short must not raise: decode with errors="replace"'),),
         hint='errors="replace" turns the incomplete character into one U+FFFD; "ignore" would drop it silently'),
    *(Case(f"decode(encode(s)) for random Unicode s = {t!r}", _round_trip(t),
           hint="the round trip must give the text back, whatever its script") for t in round_trip_texts()),
), rules=RULES)


# ------------------------------------------------------------------ 6. train_bpe_incremental

def incremental_call(text, size, specials=None):
    args = () if specials is None else (list(specials),)

    def call(names):
        # the trainer runs with a train_bpe that fails when called: the exercise is not to recount
        with substitute(names._mapping, train_bpe=train_bpe_refused):
            return names.train_bpe_incremental(text, size, *args)
    return call


_CALLED_TRAIN_BPE = ("train_bpe_incremental called train_bpe", "")
_ZERO = "a pair's count can fall to 0: remove it (and never subtract from a pair you did not count)"

TRAIN_BPE_INCREMENTAL = Exercise("train_bpe_incremental", (
    Case(f'train_bpe_incremental("{_EX}", 261)', incremental_call(_EX, 261), compare=_shape("train_bpe_incremental"),
         errors=(_CALLED_TRAIN_BPE,
                 ("", "a pair a merge created is missing from your counts or your index: add every pair of each "
                      "merged pre-token to the counts and to the index pair -> pre-tokens that hold it")),),
    Case(f'merges of train_bpe_incremental("{_EX}", 261)', _after(incremental_call(_EX, 261), _merges),
         diagnoses=(_TIE_WRONG,
                    when(lambda got, want: got[:3] == want[:3] and got != want,
                         "the merges part where every pair occurs once: then the tie-break decides, as in train_bpe — "
                         "the greatest (count, vocab[a], vocab[b]), so (b'd', b'aaab') wins")),
         hint="the same rule as train_bpe: after merge 0 the count of (a, a) must fall to 0 and its neighbours' "
              "pairs change — subtract all the pairs of the old pre-token and add all the pairs of the merged one, "
              "each times its frequency"),
    Case("len(vocab)", _after(incremental_call(_EX, 261), lambda out: len(out[0]))),
    Case('merges of train_bpe_incremental("cd ab ab ab", 258)', _after(incremental_call("cd ab ab ab", 258), _merges),
         errors=(_CALLED_TRAIN_BPE, ("", _ZERO)),
         hint="the pairs of a merged pre-token count times its frequency, as the old ones did: ' ab' occurs 3 times, "
              "so after merging (a, b) the pair (' ', 256) has 3 and wins"),
    Case('train_bpe_incremental("ab ab ab", 300)', incremental_call("ab ab ab", 300),
         errors=(_CALLED_TRAIN_BPE, ("empty", "when no pair is left, stop (max() of an empty dict raises): the "
                                              "vocabulary is then smaller than vocab_size"),
                 ("", "a pair whose count fell to 0 was chosen again (its pre-tokens had lost it): remove a pair from "
                      "the counts once its count falls to 0")),
         hint="pairs never span two pre-tokens, and training stops when no pair has a count above 0 — remove "
              "pairs whose count fell to 0"),
    Case('merges of train_bpe_incremental on "aaaaaaa aaaa aaa"',
         _after(incremental_call("aaaaaaa aaaa aaa", 270), _merges),
         errors=(_CALLED_TRAIN_BPE, ("", _ZERO)),
         hint="overlapping pairs: subtract all the pairs of the old pre-token and add all the pairs of the merged "
              "one (pair_counts on both)"),
    Case("train_bpe_incremental with a special token", incremental_call(EOT * 50 + "xy", 258, [EOT]),
         errors=(_CALLED_TRAIN_BPE, ("", "cut the special tokens out first (split_specials), as in train_bpe")),
         hint="special tokens: as in train_bpe"),
    Case("train_bpe_incremental(6,000 characters of Shakespeare, 330)",
         lambda names: incremental_call(shakespeare("train", 0, 6_000), 330)(names), compare=vocab_then_merges,
         errors=(_CALLED_TRAIN_BPE, ("", _ZERO))),
), standins=("pair_counts", "merge"), rules=RULES)


# ------------------------------------------------------------------ 9. questions

_LETTERS = '"A", "B", "C" or "D"'


(Q1, Q1_LETTER), (Q2, Q2_LETTER) = (question(f"q{n}", f"answer_q{n}", "ABCD") for n in (1, 2))


NOTEBOOK = Notebook(
    "08_bpe", reference="lmcourse.reference.bpe", hidden="lmcourse.marking.bpe_hidden",
    exercises=(PAIR_COUNTS, MERGE, TRAIN_BPE, ENCODE, DECODE, TRAIN_BPE_INCREMENTAL, Q1, Q2),
    # lmcourse.bpe, the course's tokenizer the later sections use, does 08's work: absent here too
    withheld=("lmcourse.reference.bpe", "lmcourse.bpe"))
