"""A generated sequence-to-sequence task for notebook 09: a date written one of many ways -> ISO 8601.

::

    "the 23rd of November, 2026"   -> "2026-11-23"
    "Nov 23 '26"                   -> "2026-11-23"
    "23/11/2026"                   -> "2026-11-23"
    "MONDAY, NOVEMBER 23, 2026"    -> "2026-11-23"
    "2026 november 23rd"           -> "2026-11-23"

Nothing is downloaded: every example comes from a seeded generator, so nothing can rot. The
task is rich enough that attention has something to align: the output's year, month and day
digits sit at different places in the input depending on the format, the month is spelled,
abbreviated, numbered or written in Roman numerals, and a two-digit year needs its century.

Rules that make every input mean exactly one date (``tests/test_dates.py`` checks that no two
dates of the range render to the same string in any format, casing aside):

* dates run from 1950-01-01 to 2049-12-31, so a two-digit year is read with a pivot at 50:
  ``'26`` is 2026 and ``'73`` is 1973;
* numeric dates put the day first (``23/11/2026``, ``23.11.26``) unless the year comes first
  (``2026/11/23``, ``20261123``); the American ``11/23/2026`` is left out, because
  ``03/04/2026`` would then mean two dates;
* a weekday, when shown, is the real weekday of the date.

Splits are by content: the dates of the range are shuffled once (with the seed) and cut into
train / validation / test, so no target date of one split appears in another, whatever its
spelling.

Tokens are characters. The vocabulary is the same on both sides; ids 0, 1, 2 are the specials
``<pad>``, ``<bos>``, ``<eos>``, then :data:`ALPHABET` in order. A batch
(:func:`make_batch`) holds, for ``B`` pairs::

    src      (B, S)      source ids, right-padded with PAD_ID
    tgt_in   (B, T + 1)  BOS_ID + target ids           what the decoder reads (teacher forcing)
    tgt_out  (B, T + 1)  target ids + EOS_ID           what it must predict, position by position
                         both right-padded with PAD_ID; the loss ignores PAD_ID in tgt_out

Every ISO target has 10 characters, so ``T + 1 = 11`` in every batch of this task.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["FIRST_DATE", "LAST_DATE", "SPLITS", "FORMATS", "ALPHABET", "SPECIALS", "PAD_ID", "BOS_ID", "EOS_ID",
           "CharVocab", "DateBatch", "all_dates", "split_dates", "render", "iso", "parse_iso", "make_pairs",
           "make_splits", "make_batch", "batches", "sample_batch", "padded_cross_entropy", "one_sequence_batch",
           "decoder_only_greedy"]

FIRST_DATE = dt.date(1950, 1, 1)  # the range: a two-digit year yy means 19yy if yy >= 50, else 20yy
LAST_DATE = dt.date(2049, 12, 31)
SPLITS = {"train": 0.8, "val": 0.1, "test": 0.1}  # fractions of the range's dates (36,525 of them)

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")  # date.weekday() order
ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII")


def _ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st, 22nd, 23rd, ..., 31st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _mon(d: dt.date) -> str:
    return MONTHS[d.month - 1][:3]  # Jan, Feb, ..., Dec


def _month(d: dt.date) -> str:
    return MONTHS[d.month - 1]


def _wday(d: dt.date) -> str:
    return WEEKDAYS[d.weekday()]


def _yy(d: dt.date) -> str:
    return f"{d.year % 100:02d}"


# Every way of writing a date: (name, function of the date). Each is deterministic and, over the
# range FIRST_DATE..LAST_DATE, one-to-one (tests/test_dates.py checks every date of the range).
FORMATS: tuple[tuple[str, Callable[[dt.date], str]], ...] = (
    ("dd/mm/yyyy", lambda d: f"{d.day:02d}/{d.month:02d}/{d.year}"),
    ("d/m/yyyy", lambda d: f"{d.day}/{d.month}/{d.year}"),
    ("dd.mm.yyyy", lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}"),
    ("dd.mm.yy", lambda d: f"{d.day:02d}.{d.month:02d}.{_yy(d)}"),
    ("yyyy/mm/dd", lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}"),
    ("yyyymmdd", lambda d: f"{d.year}{d.month:02d}{d.day:02d}"),
    ("d.roman.yyyy", lambda d: f"{d.day}.{ROMAN[d.month - 1]}.{d.year}"),
    ("Month d, yyyy", lambda d: f"{_month(d)} {d.day}, {d.year}"),
    ("Month dth, yyyy", lambda d: f"{_month(d)} {_ordinal(d.day)}, {d.year}"),
    ("Mon d, yyyy", lambda d: f"{_mon(d)} {d.day}, {d.year}"),
    ("Mon. d, yyyy", lambda d: f"{_mon(d)}. {d.day}, {d.year}"),
    ("Mon d 'yy", lambda d: f"{_mon(d)} {d.day} '{_yy(d)}"),
    ("d Month yyyy", lambda d: f"{d.day} {_month(d)} {d.year}"),
    ("d Mon yyyy", lambda d: f"{d.day} {_mon(d)} {d.year}"),
    ("dd-Mon-yyyy", lambda d: f"{d.day:02d}-{_mon(d)}-{d.year}"),
    ("the dth of Month, yyyy", lambda d: f"the {_ordinal(d.day)} of {_month(d)}, {d.year}"),
    ("yyyy Month dth", lambda d: f"{d.year} {_month(d)} {_ordinal(d.day)}"),
    ("Weekday, Month d, yyyy", lambda d: f"{_wday(d)}, {_month(d)} {d.day}, {d.year}"),
    ("Wkd d Mon yyyy", lambda d: f"{_wday(d)[:3]} {d.day} {_mon(d)} {d.year}"),
    ("Weekday the dth of Month yyyy", lambda d: f"{_wday(d)} the {_ordinal(d.day)} of {_month(d)} {d.year}"),
    ("Wkd, dd Mon yy", lambda d: f"{_wday(d)[:3]}, {d.day:02d} {_mon(d)} {_yy(d)}"),
)
FORMAT_NAMES = tuple(name for name, _ in FORMATS)

# Every character a rendering can hold (all casings), in a fixed order, so token ids never move.
ALPHABET = " ',-./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
SPECIALS = ("<pad>", "<bos>", "<eos>")
PAD_ID, BOS_ID, EOS_ID = 0, 1, 2  # pad: fills short rows (attention and the loss ignore it)


def iso(d: dt.date) -> str:
    """The target: ``YYYY-MM-DD``."""
    return d.isoformat()


def parse_iso(s: str) -> dt.date:
    """The date a target (or a model's output) names; ``ValueError`` if it is not a real ``YYYY-MM-DD``."""
    if len(s) != 10 or s[4] != "-" or s[7] != "-":
        raise ValueError(f"{s!r} is not a YYYY-MM-DD date")
    return dt.date.fromisoformat(s)


def render(d: dt.date, fmt: str | int, casing: str = "as is") -> str:
    """``d`` written in format ``fmt`` (a name of :data:`FORMATS` or its index), then cased:
    ``"as is"``, ``"lower"`` or ``"upper"``."""
    i = FORMAT_NAMES.index(fmt) if isinstance(fmt, str) else fmt
    text = FORMATS[i][1](d)
    if casing == "lower":
        return text.lower()
    if casing == "upper":
        return text.upper()
    if casing != "as is":
        raise ValueError(f"casing={casing!r} must be 'as is', 'lower' or 'upper'")
    return text


CASINGS = ("as is", "as is", "lower", "upper")  # drawn uniformly: half as written, a quarter each other


def all_dates(first: dt.date = FIRST_DATE, last: dt.date = LAST_DATE) -> list[dt.date]:
    """Every date from ``first`` to ``last``, both included, in order."""
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]


def split_dates(seed: int = 0, fractions: dict[str, float] | None = None) -> dict[str, list[dt.date]]:
    """The range's dates shuffled with ``seed`` and cut by ``fractions`` (default :data:`SPLITS`):
    ``{"train": [...], "val": [...], "test": [...]}``, each list sorted; disjoint, and together the
    whole range."""
    fractions = fractions or SPLITS
    if abs(sum(fractions.values()) - 1.0) > 1e-9:
        raise ValueError(f"fractions {fractions} must sum to 1")
    dates = all_dates()
    random.Random(f"dates-split-{seed}").shuffle(dates)
    out, start = {}, 0
    names = list(fractions)
    for i, name in enumerate(names):
        stop = len(dates) if i == len(names) - 1 else start + round(fractions[name] * len(dates))
        out[name] = sorted(dates[start:stop])
        start = stop
    return out


def make_pairs(dates: Sequence[dt.date], n: int, seed: int | str = 0) -> list[tuple[str, str]]:
    """``n`` pairs ``(source, target)``: each a date drawn uniformly from ``dates`` (with
    replacement), a format drawn uniformly from :data:`FORMATS` and a casing from :data:`CASINGS`."""
    rng = random.Random(f"dates-pairs-{seed}")
    pairs = []
    for _ in range(n):
        d = dates[rng.randrange(len(dates))]
        pairs.append((render(d, rng.randrange(len(FORMATS)), rng.choice(CASINGS)), iso(d)))
    return pairs


def make_splits(n_train: int, n_val: int, n_test: int, seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """Pairs for each split, drawn from that split's dates only (:func:`split_dates`)."""
    dates = split_dates(seed)
    sizes = {"train": n_train, "val": n_val, "test": n_test}
    return {name: make_pairs(dates[name], sizes[name], seed=f"{seed}-{name}") for name in sizes}


class CharVocab:
    """Characters to ids and back: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, then ``alphabet`` in order."""

    def __init__(self, alphabet: str = ALPHABET) -> None:
        if len(set(alphabet)) != len(alphabet):
            raise ValueError("alphabet has repeated characters")
        self.itos = list(SPECIALS) + list(alphabet)  # id -> token
        self.stoi = {ch: i for i, ch in enumerate(self.itos) if i >= len(SPECIALS)}  # character -> id
        self.pad_id, self.bos_id, self.eos_id = PAD_ID, BOS_ID, EOS_ID

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        """One id per character (no specials added); ``KeyError`` names an unknown character."""
        try:
            return [self.stoi[ch] for ch in text]
        except KeyError as e:
            raise KeyError(f"character {e.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids: Sequence[int] | Tensor) -> str:
        """The characters of ``ids`` up to the first ``<eos>`` (excluded); ``<pad>`` and ``<bos>`` are skipped."""
        if isinstance(ids, Tensor):
            ids = ids.tolist()
        out = []
        for i in ids:
            if i == EOS_ID:
                break
            if i in (PAD_ID, BOS_ID):
                continue
            out.append(self.itos[i])
        return "".join(out)


@dataclass
class DateBatch:
    src: Tensor  # (B, S) source ids, PAD_ID after each source's end
    tgt_in: Tensor  # (B, T+1) BOS_ID + target ids, then PAD_ID
    tgt_out: Tensor  # (B, T+1) target ids + EOS_ID, then PAD_ID (ignored by the loss)
    src_lengths: Tensor  # (B,) real tokens in each source

    def to(self, device: torch.device | str) -> DateBatch:
        return DateBatch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device),
                         self.src_lengths.to(device))


def make_batch(pairs: Sequence[tuple[str, str]], vocab: CharVocab | None = None,
               device: torch.device | str | None = None) -> DateBatch:
    """Pad a list of ``(source, target)`` strings into one :class:`DateBatch` (see the module's docstring)."""
    vocab = vocab or CharVocab()
    src = [vocab.encode(s) for s, _ in pairs]
    tgt = [vocab.encode(t) for _, t in pairs]
    if any(len(s) == 0 for s in src):
        raise ValueError("an empty source has no key to attend to")
    B, S, T = len(pairs), max(map(len, src)), max(map(len, tgt)) + 1
    src_ids = torch.full((B, S), PAD_ID, dtype=torch.long)  # (B, S)
    tgt_in = torch.full((B, T), PAD_ID, dtype=torch.long)  # (B, T+1)
    tgt_out = torch.full((B, T), PAD_ID, dtype=torch.long)  # (B, T+1)
    for b, (s, t) in enumerate(zip(src, tgt)):
        src_ids[b, :len(s)] = torch.tensor(s)
        tgt_in[b, :len(t) + 1] = torch.tensor([BOS_ID] + t)
        tgt_out[b, :len(t) + 1] = torch.tensor(t + [EOS_ID])
    batch = DateBatch(src_ids, tgt_in, tgt_out, torch.tensor([len(s) for s in src]))
    return batch.to(device) if device is not None else batch


def batches(pairs: Sequence[tuple[str, str]], batch_size: int, vocab: CharVocab | None = None,
            shuffle_seed: int | None = None, device: torch.device | str | None = None):
    """One pass over ``pairs`` in batches of ``batch_size`` (the last may be smaller), shuffled
    with ``shuffle_seed`` (``None``: in order)."""
    order = list(range(len(pairs)))
    if shuffle_seed is not None:
        random.Random(f"dates-batches-{shuffle_seed}").shuffle(order)
    for i in range(0, len(order), batch_size):
        yield make_batch([pairs[j] for j in order[i:i + batch_size]], vocab, device)


def sample_batch(pairs: Sequence[tuple[str, str]], batch_size: int, block_size: int, generator: torch.Generator,
                 device: torch.device | str = "cpu", vocab: CharVocab | None = None):
    """A ``batch_fn`` for :func:`lmcourse.train.train`: ``batch_size`` pairs drawn with ``generator``
    (with replacement) as ``((src, tgt_in), tgt_out)``; ``block_size`` is unused (every source fits)."""
    ix = torch.randint(len(pairs), (batch_size,), generator=generator).tolist()
    b = make_batch([pairs[i] for i in ix], vocab, device)
    return (b.src, b.tgt_in), b.tgt_out


def padded_cross_entropy(logits: Tensor, tgt_out: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """A ``loss_fn`` for :func:`lmcourse.train.train`: the mean cross-entropy over the positions of
    ``tgt_out`` that are not padding (logits ``(B, T, V)``, at least float32)."""
    flat = logits.reshape(-1, logits.size(-1))
    flat = flat.to(torch.promote_types(flat.dtype, torch.float32))
    return torch.nn.functional.cross_entropy(flat, tgt_out.reshape(-1), ignore_index=pad_id)


def one_sequence_batch(pairs: Sequence[tuple[str, str]], batch_size: int, block_size: int,
                       generator: torch.Generator, device: torch.device | str = "cpu", vocab: CharVocab | None = None):
    """A ``batch_fn`` for a decoder-only model on the same task: each pair as one sequence
    ``source <bos> target <eos>``, right-padded; ``x`` is the sequence but its last token, ``y`` the
    next tokens with ``PAD_ID`` wherever the next token is part of the source (the loss is on the
    target and ``<eos>`` only). ``block_size`` is the length of ``x`` (longer rows are refused)."""
    vocab = vocab or CharVocab()
    ix = torch.randint(len(pairs), (batch_size,), generator=generator).tolist()
    x = torch.full((batch_size, block_size), PAD_ID, dtype=torch.long)
    y = torch.full((batch_size, block_size), PAD_ID, dtype=torch.long)
    for row, i in enumerate(ix):
        s, t = vocab.encode(pairs[i][0]), vocab.encode(pairs[i][1])
        seq = s + [BOS_ID] + t + [EOS_ID]
        if len(seq) - 1 > block_size:
            raise ValueError(f"{pairs[i][0]!r} makes a sequence of {len(seq) - 1} > block_size {block_size}")
        x[row, :len(seq) - 1] = torch.tensor(seq[:-1])
        y[row, len(s):len(seq) - 1] = torch.tensor(seq[len(s) + 1:])  # from <bos> on: predict the target
    return x.to(device), y.to(device)


def decoder_only_greedy(model, sources: Sequence[str], n: int = 11, vocab: CharVocab | None = None) -> list[str]:
    """Greedy outputs of a decoder-only model (``model(ids)`` gives ``(logits, ...)``) prompted with
    ``source <bos>``: ``n`` ids each (10 characters and ``<eos>``). All rows in one batch, each
    prompt right-padded: a causal model's logits at a row's last real position do not depend on
    what lies to its right, so each step reads every row at its own end and writes one id there."""
    vocab = vocab or CharVocab()
    device = next(model.parameters()).device
    prompts = [vocab.encode(s) + [BOS_ID] for s in sources]
    lengths = torch.tensor([len(p) for p in prompts], device=device)  # (B,)
    ids = torch.full((len(prompts), int(lengths.max()) + n), PAD_ID, dtype=torch.long, device=device)
    for b, p in enumerate(prompts):
        ids[b, :len(p)] = torch.tensor(p)
    rows = torch.arange(len(prompts), device=device)
    with torch.no_grad():
        for k in range(n):
            logits = model(ids[:, :int(lengths.max()) + k])
            logits = logits[0] if isinstance(logits, (tuple, list)) else logits  # (B, t, V)
            ids[rows, lengths + k] = logits[rows, lengths + k - 1].argmax(-1)
    return [vocab.decode(ids[b, lengths[b]:lengths[b] + n]) for b in range(len(prompts))]
