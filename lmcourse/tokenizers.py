"""Character and word tokenizers with the special tokens the course uses.

Byte-level BPE lives in ``lmcourse.bpe`` (``BPETokenizer``): the same ``encode`` / ``decode`` /
``vocab_size``, so ``lmcourse.data.encode_split`` takes it as it takes these.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

BOS, EOS, UNK, PAD = "<s>", "</s>", "<unk>", "<pad>"
SPECIALS = (PAD, BOS, EOS, UNK)
_MARKUP = {PAD, BOS, EOS}  # dropped by decode(skip_specials=True); <unk> stays visible

# A word is letters with inner apostrophes (o'er, 'tis keeps its leading quote off),
# or a single punctuation mark that matters for sentence structure.
_WORD_RE = re.compile(r"[A-Za-z]+(?:['\-][A-Za-z]+)*|[.,!?;:]")
_SENTENCE_END = {".", "!", "?"}
_NO_SPACE_BEFORE = set(".,!?;:")


def split_words(text: str, lower: bool = True) -> list[str]:
    """Words and punctuation marks, in order. Lower-cased by default."""
    words = _WORD_RE.findall(text)
    return [w.lower() for w in words] if lower else words


def split_sentences(text: str, lower: bool = True, min_words: int = 1) -> list[list[str]]:
    """Word lists, one per sentence; a sentence ends at '.', '!' or '?' (kept)."""
    out: list[list[str]] = []
    cur: list[str] = []
    for w in split_words(text, lower=lower):
        cur.append(w)
        if w in _SENTENCE_END:
            if len(cur) >= min_words:
                out.append(cur)
            cur = []
    if len(cur) >= min_words:
        out.append(cur)
    return out


def join_words(words: Iterable[str]) -> str:
    """Inverse of split_words up to spacing: no space before punctuation."""
    out = ""
    for w in words:
        if out and w not in _NO_SPACE_BEFORE:
            out += " "
        out += w
    return out


class _Vocab:
    """Shared encode/decode over an ordered list of tokens."""

    def __init__(self, tokens: Iterable[str], specials: Iterable[str] = ()):
        itos: list[str] = []
        for t in list(specials) + list(tokens):
            if t not in itos:
                itos.append(t)
        self.itos = itos
        self.stoi = {t: i for i, t in enumerate(itos)}

    def __len__(self) -> int:
        return len(self.itos)

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def token_id(self, token: str) -> int:
        if token in self.stoi:
            return self.stoi[token]
        if UNK in self.stoi:
            return self.stoi[UNK]
        raise KeyError(f"{token!r} is not in the vocabulary and this tokenizer has no {UNK} token; "
                       f"build it with specials that include {UNK!r}")

    def _decode_ids(self, ids: Iterable[int]) -> list[str]:
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise IndexError(f"token id {i} is outside the vocabulary (size {len(self.itos)})")
            out.append(self.itos[i])
        return out


class CharTokenizer(_Vocab):
    """One token per character. Unknown characters map to <unk> when it is in the vocabulary."""

    @classmethod
    def from_text(cls, text: str, specials: Iterable[str] = (UNK,)) -> "CharTokenizer":
        return cls(sorted(set(text)), specials)

    def encode(self, text: str) -> list[int]:
        return self.encode_array(text).tolist()

    def encode_array(self, text: str) -> "numpy.ndarray":  # noqa: F821
        """:meth:`encode` as a NumPy int64 array, looked up without a Python loop: a whole corpus
        (4.3 M characters) in tens of milliseconds instead of a second, on every run of a notebook."""
        import numpy as np

        # a table from code point to id (-1: not in the vocabulary; its last slot stands for every
        # code point past the largest the vocabulary holds)
        chars = [(ord(t), i) for t, i in self.stoi.items() if len(t) == 1]
        table = np.full(max((c for c, _ in chars), default=-1) + 2, -1, dtype=np.int64)
        for c, i in chars:
            table[c] = i
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        ids = table[np.minimum(codes, len(table) - 1)]
        hit = ids >= 0
        if not hit.all():
            ids[~hit] = self.token_id(text[int(np.argmin(hit))])   # <unk>, or the KeyError that says why
        return ids

    def decode(self, ids: Iterable[int], skip_specials: bool = False) -> str:
        toks = self._decode_ids(ids)
        if skip_specials:
            toks = [t for t in toks if t not in _MARKUP]
        return "".join(toks)


class WordTokenizer(_Vocab):
    """Lower-cased words and punctuation; words seen fewer than ``min_count`` times become <unk>."""

    def __init__(self, tokens: Iterable[str], specials: Iterable[str] = SPECIALS, lower: bool = True):
        super().__init__(tokens, specials)
        self.lower = lower

    @classmethod
    def from_text(cls, text: str, min_count: int = 1, max_size: int | None = None,
                  specials: Iterable[str] = SPECIALS, lower: bool = True) -> "WordTokenizer":
        counts = Counter(split_words(text, lower=lower))
        # most frequent first; ties broken alphabetically so the vocabulary is deterministic
        ranked = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        if max_size is not None:
            ranked = ranked[: max(0, max_size - len(tuple(specials)))]
        return cls(ranked, specials, lower=lower)

    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        ids = [self.token_id(w) for w in split_words(text, lower=self.lower)]
        if add_bos:
            ids.insert(0, self.token_id(BOS))
        if add_eos:
            ids.append(self.token_id(EOS))
        return ids

    def decode(self, ids: Iterable[int], skip_specials: bool = True) -> str:
        toks = self._decode_ids(ids)
        if skip_specials:
            toks = [t for t in toks if t not in _MARKUP]
        return join_words(toks)
