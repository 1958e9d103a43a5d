"""Byte-level Byte Pair Encoding (BPE): the course's reference trainer and tokenizer.

Text is UTF-8 bytes, so the first 256 token ids are the 256 byte values and nothing is ever
unknown. Training repeats one step: count the adjacent pairs of tokens, and give the most
frequent pair a new id. This module fixes the rules so that every run, and every student, gets
the same merges:

* **Layout of ids.** ids 0-255 are the bytes; merge ``i`` (0-based, in training order) creates id
  ``256 + i``; the special tokens come last, in the order given. ``vocab_size`` counts all three.
* **Pre-tokenization.** Text is first cut by :data:`GPT2_PATTERN` (GPT-2's pattern: contractions,
  an optional space followed by letters, or by digits, or by other symbols; whitespace). Pairs
  are counted, and merged, only *inside* one pre-token: no token ever spans " the" and ",".
  Each distinct pre-token is counted once with its frequency.
* **Tie-break.** Among pairs with the highest count, the pair whose byte strings are
  lexicographically greatest wins: compare the bytes of the first tokens, then of the second
  ones (``max`` over ``(count, vocab[a], vocab[b])``).
* **Special tokens** (e.g. ``"<|endoftext|>"``) are cut out of the text before pre-tokenization:
  they are never merged with anything and never split.
* **Stopping.** Training stops early when no pair is left (every pre-token is one token); the
  vocabulary is then smaller than asked.

Encoding applies the merges *by rank* inside each pre-token: while some adjacent pair has a
merge, merge the pair learned earliest (every occurrence, left to right). That is what tiktoken
and Hugging Face ``tokenizers`` do with the same merges, and ``tests/test_bpe.py`` checks it.

Notebook 08's answers (``pair_counts``, ``merge``, the plain ``train_bpe`` that recounts every
pair after each merge, ``encode``, ``decode``) live in :mod:`lmcourse.reference.bpe`. This module is
the library the notebooks use as given code: :func:`train_bpe_incremental` (the same merges, updating
the counts only in the pre-tokens where a merge happened, the best pair from a heap) and
:class:`BPETokenizer`.

Files: :meth:`BPETokenizer.save` writes Hugging Face ``tokenizers``' ``tokenizer.json`` (byte-level
BPE, which ``tokenizers.Tokenizer.from_file`` reads); :meth:`BPETokenizer.save_tiktoken` writes
tiktoken's rank file (``tiktoken.load.load_tiktoken_bpe`` reads it).
"""

from __future__ import annotations

import base64
import heapq
import json
import operator
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import regex

# GPT-2's pre-tokenization pattern (the `regex` package: \p{L} is any letter, \p{N} any digit).
# Alternatives, tried in order: English contractions; an optional space then letters; an optional
# space then digits; an optional space then other symbols; whitespace not followed by a
# non-space (so the last space before a word stays with the word); any other whitespace.
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_PRETOKEN_RE = regex.compile(GPT2_PATTERN)

N_BYTES = 256  # ids 0..255 are the byte values

Pair = tuple[int, int]


# --- The two operations BPE is made of (private: the exercises' own versions are 08's answers) ---------


def _count_pairs(ids: list[int], counts: dict[Pair, int], weight: int) -> None:
    """Add ``weight`` to ``counts`` for each adjacent pair of ``ids`` (overlapping pairs all count)."""
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + weight


def _merge(ids: list[int], pair: Pair, new_id: int) -> list[int]:
    """A new list where every occurrence of ``pair``, scanned left to right, becomes ``new_id``."""
    out = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


# --- Pre-tokenization and special tokens ----------------------------------------------------------


def pretokenize(text: str) -> list[str]:
    """``text`` cut by :data:`GPT2_PATTERN`; the pieces joined give ``text`` back."""
    return _PRETOKEN_RE.findall(text)


def split_specials(text: str, special_tokens: Iterable[str]) -> list[tuple[str, bool]]:
    """``text`` as ``(piece, is_special)`` in order: each special token is one piece of its own.

    Where two special tokens could match at one place, the longer one wins. Empty ordinary
    pieces are left out.
    """
    specials = sorted(set(special_tokens), key=len, reverse=True)
    if not specials:
        return [(text, False)] if text else []
    pieces = regex.split("(" + "|".join(regex.escape(s) for s in specials) + ")", text)
    # split with one capturing group alternates: ordinary, special, ordinary, special, ...
    return [(p, i % 2 == 1) for i, p in enumerate(pieces) if p]


def pretoken_counts(text: str, special_tokens: Iterable[str] = ()) -> Counter[bytes]:
    """Each distinct pre-token of ``text`` (as UTF-8 bytes) with how often it occurs.

    Special tokens are cut out first, so no pre-token contains or straddles one.
    """
    counts: Counter[bytes] = Counter()
    for piece, is_special in split_specials(text, special_tokens):
        if not is_special:
            counts.update(t.encode("utf-8") for t in pretokenize(piece))
    return counts


def check_training_args(text: str, vocab_size: int, special_tokens: Iterable[str]) -> tuple[str, ...]:
    """The special tokens as a tuple, once the arguments of a trainer are found valid (else a clear error)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    specials = tuple(special_tokens)
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a list of strings, e.g. ['<|endoftext|>'], not one string")
    for s in specials:
        if not isinstance(s, str) or not s:
            raise ValueError(f"each special token must be a non-empty str, got {s!r}")
    if len(set(specials)) != len(specials):
        raise ValueError(f"special tokens must be distinct, got {list(specials)}")
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size < N_BYTES + len(specials):
        raise ValueError(f"vocab_size must be at least 256 (the bytes) + {len(specials)} (the special tokens) "
                         f"= {N_BYTES + len(specials)}, got {vocab_size}")
    return specials


def _with_specials(vocab: dict[int, bytes], specials: tuple[str, ...]) -> dict[int, bytes]:
    """Append the special tokens after the merges (ids continue from the last merge)."""
    first = len(vocab)
    for j, s in enumerate(specials):
        vocab[first + j] = s.encode("utf-8")
    return vocab


# --- Training -------------------------------------------------------------------------------------


class _Greatest:
    """Wraps a key so that a min-heap pops the *greatest* key first."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __lt__(self, other: _Greatest) -> bool:
        return self.key > other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Greatest) and self.key == other.key


def train_bpe_incremental(text: str, vocab_size: int,
                          special_tokens: Iterable[str] = ()) -> tuple[dict[int, bytes], list[Pair]]:
    """The merges of notebook 08's rule (plain trainer: ``lmcourse.reference.bpe.train_bpe``),
    without recounting everything after each merge.

    Two indexes make a merge cheap: ``where[pair]`` lists the pre-tokens that contain ``pair``,
    so a merge visits only those; and a heap keyed by ``(count, bytes of the pair)`` gives the
    best pair without scanning all of them. A merge subtracts the old pairs of each pre-token it
    changes and adds the new ones (only the pairs next to a merged spot change in total); each
    pair whose count changed is pushed again with its new count, and a popped entry whose count
    is no longer current is skipped ("lazy deletion").
    """
    specials = check_training_args(text, vocab_size, special_tokens)
    words = pretoken_counts(text, specials)
    tokens = [list(w) for w in words]
    freqs = list(words.values())
    vocab = {i: bytes([i]) for i in range(N_BYTES)}
    merges: list[Pair] = []

    counts: dict[Pair, int] = {}
    where: dict[Pair, set[int]] = {}
    for w, ids in enumerate(tokens):
        _count_pairs(ids, counts, freqs[w])
        for pair in zip(ids, ids[1:]):
            where.setdefault(pair, set()).add(w)

    def entry(pair: Pair) -> tuple:
        return (-counts[pair], _Greatest((vocab[pair[0]], vocab[pair[1]])), pair)

    heap = [entry(p) for p in counts]
    heapq.heapify(heap)

    for new_id in range(N_BYTES, vocab_size - len(specials)):
        best = None
        while heap:
            neg_count, _, pair = heapq.heappop(heap)
            if counts.get(pair, 0) == -neg_count > 0:  # the entry is current
                best = pair
                break
        if best is None:
            break  # nothing left to merge
        vocab[new_id] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
        delta: dict[Pair, int] = {}  # how each pair's count changes with this merge
        for w in where.pop(best):
            old = tokens[w]
            new = _merge(old, best, new_id)
            if len(new) == len(old):
                continue  # where[] may still list a pre-token that lost the pair to an earlier merge
            freq = freqs[w]
            for pair in zip(old, old[1:]):
                delta[pair] = delta.get(pair, 0) - freq
            for pair in zip(new, new[1:]):
                delta[pair] = delta.get(pair, 0) + freq
                where.setdefault(pair, set()).add(w)
            tokens[w] = new
        for pair, d in delta.items():
            if d == 0:
                continue  # a pair away from the merged spots: its count is unchanged
            counts[pair] = counts.get(pair, 0) + d
            if counts[pair] > 0:
                heapq.heappush(heap, entry(pair))
            else:
                del counts[pair]
                where.pop(pair, None)
    return _with_specials(vocab, specials), merges


# --- The tokenizer --------------------------------------------------------------------------------


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte to a printable character, used by ``tokenizer.json`` files.

    Bytes that are printable Latin-1 characters ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for
    themselves; the other 68 (space, control characters, ...) get code points 256, 257, ... in
    byte order. So every token's bytes become a visible string (a leading space shows as 'Ġ').
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    out = {b: chr(b) for b in printable}
    extra = 0
    for b in range(N_BYTES):
        if b not in out:
            out[b] = chr(N_BYTES + extra)
            extra += 1
    return out


class BPETokenizer:
    """Byte-level BPE: ``encode(text) -> ids`` and ``decode(ids) -> text``.

    Built from the merges of a trainer and the special tokens (the vocabulary follows
    from them: bytes, then one id per merge, then the special tokens), or with
    :meth:`BPETokenizer.train`. Pre-tokens already encoded are remembered (a cache), which is
    what makes encoding a large text fast: most words repeat.
    """

    CACHE_SIZE = 100_000  # pre-tokens remembered before the cache starts over

    def __init__(self, merges: Iterable[Pair], special_tokens: Iterable[str] = (), pattern: str = GPT2_PATTERN):
        self.merges: list[Pair] = [(int(a), int(b)) for a, b in merges]
        self.vocab: dict[int, bytes] = {i: bytes([i]) for i in range(N_BYTES)}
        self.ranks: dict[Pair, int] = {}  # pair -> the id it merges into (lower = learned earlier)
        for i, (a, b) in enumerate(self.merges):
            new_id = N_BYTES + i
            if a not in self.vocab or b not in self.vocab:
                raise ValueError(f"merge {i} is {(a, b)}, but only ids below {new_id} exist before it")
            if (a, b) in self.ranks:
                raise ValueError(f"merge {i} repeats the pair {(a, b)} (merge {self.ranks[(a, b)] - N_BYTES})")
            self.vocab[new_id] = self.vocab[a] + self.vocab[b]
            self.ranks[(a, b)] = new_id
        specials = tuple(special_tokens) if not isinstance(special_tokens, str) else special_tokens
        specials = check_training_args("", N_BYTES + len(self.merges) + len(specials), specials)
        self.special_tokens: dict[str, int] = {s: len(self.vocab) + j for j, s in enumerate(specials)}
        for s, i in self.special_tokens.items():
            self.vocab[i] = s.encode("utf-8")
        self.pattern = pattern
        self._pretoken_re = regex.compile(pattern)
        self._cache: dict[bytes, list[int]] = {}

    @classmethod
    def train(cls, text: str, vocab_size: int, special_tokens: Iterable[str] = ()) -> BPETokenizer:
        """Train on ``text`` with :func:`train_bpe_incremental` and build the tokenizer."""
        specials = tuple(special_tokens)
        _, merges = train_bpe_incremental(text, vocab_size, specials)
        return cls(merges, specials)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return (f"BPETokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}, "
                f"special_tokens={list(self.special_tokens)})")

    # -- encoding --

    def encode_pretoken(self, chunk: bytes) -> list[int]:
        """The ids of one pre-token: start from its bytes; while some adjacent pair has a merge,
        merge the pair learned earliest (all its occurrences, left to right)."""
        ids = list(chunk)
        while len(ids) >= 2:
            pair = min(zip(ids, ids[1:]), key=lambda p: self.ranks.get(p, float("inf")))
            if pair not in self.ranks:
                break  # no pair left that has a merge
            ids = _merge(ids, pair, self.ranks[pair])
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Encode ``text`` ignoring special tokens: their text is encoded like any other text."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, got {type(text).__name__} (decode bytes to str first)")
        ids: list[int] = []
        for pretoken in self._pretoken_re.findall(text):
            chunk = pretoken.encode("utf-8")
            cached = self._cache.get(chunk)
            if cached is None:
                if len(self._cache) >= self.CACHE_SIZE:
                    self._cache.clear()
                cached = self._cache[chunk] = self.encode_pretoken(chunk)
            ids.extend(cached)
        return ids

    def encode(self, text: str, allowed_special: str | Iterable[str] = "all") -> list[int]:
        """The token ids of ``text``.

        ``allowed_special`` says which special tokens are recognised in ``text``: ``"all"`` (the
        default: each occurrence becomes its one id, never split) or a collection of them; the
        text of any other special token is encoded as ordinary text. ``allowed_special=()`` is
        :meth:`encode_ordinary`. (tiktoken's ``encode`` raises on a special token that is not
        allowed; here it is plain text, as tiktoken's ``encode_ordinary`` treats it.)
        """
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, got {type(text).__name__} (decode bytes to str first)")
        if allowed_special == "all":
            allowed = set(self.special_tokens)
        elif isinstance(allowed_special, str):
            raise TypeError("allowed_special is 'all' or a collection of special tokens, e.g. {'<|endoftext|>'}")
        else:
            allowed = set(allowed_special)
            unknown = allowed - set(self.special_tokens)
            if unknown:
                raise ValueError(f"{sorted(unknown)} are not special tokens of this tokenizer "
                                 f"(it has {list(self.special_tokens)})")
        if not allowed:
            return self.encode_ordinary(text)
        ids: list[int] = []
        for piece, is_special in split_specials(text, allowed):
            if is_special:
                ids.append(self.special_tokens[piece])
            else:
                ids.extend(self.encode_ordinary(piece))
        return ids

    # -- decoding --

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The bytes of the tokens, joined (special tokens as their UTF-8 text)."""
        out = []
        for i in ids:
            try:
                i = operator.index(i)
            except TypeError:
                raise TypeError(f"token ids are ints, got {i!r} ({type(i).__name__})") from None
            if i not in self.vocab:
                raise IndexError(f"token id {i} is outside the vocabulary (ids 0..{self.vocab_size - 1})")
            out.append(self.vocab[i])
        return b"".join(out)

    def decode(self, ids: Iterable[int]) -> str:
        """The text of the tokens. Bytes that are not valid UTF-8 (a token sequence can end in the
        middle of a character) become U+FFFD '�', as tiktoken and Hugging Face do."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # -- files --

    def mergeable_ranks(self) -> dict[bytes, int]:
        """tiktoken's view of the vocabulary: each ordinary token's bytes and its id (= its rank)."""
        self._check_unique_tokens()
        return {self.vocab[i]: i for i in range(N_BYTES + len(self.merges))}

    def tiktoken_encoding(self, name: str = "lmcourse-bpe"):
        """This tokenizer as a ``tiktoken.Encoding`` (needs tiktoken, a test-only dependency)."""
        import tiktoken

        return tiktoken.Encoding(name, pat_str=self.pattern, mergeable_ranks=self.mergeable_ranks(),
                                 special_tokens=dict(self.special_tokens))

    def _check_unique_tokens(self) -> None:
        seen: dict[bytes, int] = {}
        for i, b in self.vocab.items():
            if b in seen:
                raise ValueError(f"ids {seen[b]} and {i} are both {b!r}; file formats keyed by a token's text "
                                 "cannot hold two ids for it")
            seen[b] = i

    def to_json(self) -> dict:
        """The Hugging Face ``tokenizers`` ``tokenizer.json`` contents (byte-level BPE)."""
        if self.pattern != GPT2_PATTERN:
            raise ValueError("tokenizer.json's ByteLevel pre-tokenizer uses GPT-2's pattern only")
        self._check_unique_tokens()
        b2u = bytes_to_unicode()

        def show(b: bytes) -> str:
            return "".join(b2u[x] for x in b)

        ordinary = range(N_BYTES + len(self.merges))
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True} for s, i in self.special_tokens.items()],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {
                "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                "vocab": {show(self.vocab[i]): i for i in ordinary},
                "merges": [[show(self.vocab[a]), show(self.vocab[b])] for a, b in self.merges],
            },
        }

    def save(self, path: str | Path) -> Path:
        """Write ``tokenizer.json`` (Hugging Face format); :meth:`load` reads it back."""
        path = Path(path)
        path.write_text(json.dumps(self.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> BPETokenizer:
        """Read a ``tokenizer.json`` written by :meth:`save` (ids laid out as this module does)."""
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
        model = spec.get("model", {})
        if model.get("type") != "BPE" or (spec.get("pre_tokenizer") or {}).get("type") != "ByteLevel":
            raise ValueError(f"{path} is not a byte-level BPE tokenizer.json")
        u2b = {u: b for b, u in bytes_to_unicode().items()}
        vocab = {i: bytes(u2b[c] for c in s) for s, i in model["vocab"].items()}
        if any(vocab.get(b) != bytes([b]) for b in range(N_BYTES)):
            raise ValueError(f"{path}: ids 0-255 are not the bytes 0-255; only this module's layout is read")
        merges = []
        for i, m in enumerate(model["merges"]):
            left, right = m.split(" ") if isinstance(m, str) else m
            a, b = model["vocab"][left], model["vocab"][right]
            if vocab.get(N_BYTES + i) != vocab[a] + vocab[b]:
                raise ValueError(f"{path}: merge {i} does not make id {N_BYTES + i}; only this module's layout is read")
            merges.append((a, b))
        added = sorted(spec.get("added_tokens", []), key=lambda t: t["id"])
        tok = cls(merges, [t["content"] for t in added])
        if [tok.special_tokens[t["content"]] for t in added] != [t["id"] for t in added]:
            raise ValueError(f"{path}: special tokens must follow the merges, in id order")
        return tok

    def save_tiktoken(self, path: str | Path) -> Path:
        """Write tiktoken's rank file: one ``base64(token bytes) rank`` line per ordinary token.

        Special tokens are not in that format; give them to ``tiktoken.Encoding`` separately.
        """
        path = Path(path)
        lines = [f"{base64.b64encode(b).decode('ascii')} {i}" for b, i in self.mergeable_ranks().items()]
        path.write_text("\n".join(lines) + "\n", encoding="ascii")
        return path
