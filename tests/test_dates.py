"""lmcourse.dates: the generated date task of notebook 09 (seeded, disjoint splits, one meaning per input)."""

from __future__ import annotations

import datetime as dt

import pytest
import torch

from lmcourse import dates as D
from lmcourse.dates import BOS_ID, EOS_ID, PAD_ID, CharVocab, make_batch, make_pairs, make_splits, render, split_dates


def _zeller_weekday(d: dt.date) -> int:
    """Monday = 0 .. Sunday = 6 by Zeller's congruence: a reference independent of ``datetime``."""
    q, m, y = d.day, d.month, d.year
    if m < 3:
        m, y = m + 12, y - 1
    h = (q + 13 * (m + 1) // 5 + y % 100 + (y % 100) // 4 + (y // 100) // 4 + 5 * (y // 100)) % 7  # 0 = Saturday
    return (h + 5) % 7


def test_worked_examples():
    d = dt.date(2026, 11, 23)  # a Monday
    assert render(d, "the dth of Month, yyyy") == "the 23rd of November, 2026"
    assert render(d, "Mon d 'yy") == "Nov 23 '26"
    assert render(d, "dd/mm/yyyy") == "23/11/2026"
    assert render(d, "Weekday, Month d, yyyy") == "Monday, November 23, 2026"
    assert render(d, "yyyy Month dth") == "2026 November 23rd"
    assert render(d, "d.roman.yyyy", "lower") == "23.xi.2026"
    assert render(d, "Wkd, dd Mon yy", "upper") == "MON, 23 NOV 26"
    assert D.iso(d) == "2026-11-23"
    with pytest.raises(ValueError, match="casing"):
        render(d, 0, "title")


@pytest.mark.parametrize("day,text", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
                                      (13, "13th"), (21, "21st"), (22, "22nd"), (23, "23rd"), (30, "30th"),
                                      (31, "31st")])
def test_ordinals(day, text):
    assert render(dt.date(2001, 1, day), "Month dth, yyyy") == f"January {text}, 2001"


def test_two_digit_years_follow_the_pivot():
    assert render(dt.date(1973, 5, 4), "Mon d 'yy") == "May 4 '73"
    assert render(dt.date(2026, 5, 4), "dd.mm.yy") == "04.05.26"
    assert (D.FIRST_DATE, D.LAST_DATE) == (dt.date(1950, 1, 1), dt.date(2049, 12, 31))  # yy -> one century


def test_weekdays_are_the_real_weekday_of_the_date():
    names = [w.lower() for w in D.WEEKDAYS]
    shown = [f for f in D.FORMAT_NAMES if f.startswith(("Weekday", "Wkd"))]
    assert len(shown) == 4
    for d in D.all_dates()[::37]:  # about a thousand dates, every weekday and month many times
        want = _zeller_weekday(d)
        for f in shown:
            word = render(d, f, "lower").split()[0].rstrip(",")
            assert names[want].startswith(word) and len(word) >= 3, (d, f, word)


def test_every_rendering_means_one_date():
    """No two dates render to the same string in any pair of formats, casing aside: full years at
    the range's ends and around the century, and the first of every month of every year."""
    years = {1950, 1951, 1969, 1999, 2000, 2001, 2012, 2026, 2049}
    chosen = [d for d in D.all_dates() if d.year in years or d.day in (1, 12)]
    seen: dict[str, dt.date] = {}
    vocab = CharVocab()
    for d in chosen:
        for i in range(len(D.FORMATS)):
            text = render(d, i, "upper")
            vocab.encode(text)  # every character is in the vocabulary (raises otherwise)
            vocab.encode(text.lower())
            other = seen.setdefault(text, d)
            assert other == d, f"{text!r} means both {other} and {d}"


def test_splits_are_disjoint_cover_the_range_and_are_seeded():
    s = split_dates(0)
    sets = {k: set(v) for k, v in s.items()}
    n = len(D.all_dates())
    assert n == 36525
    assert sum(map(len, sets.values())) == n and set().union(*sets.values()) == set(D.all_dates())
    assert not (sets["train"] & sets["val"] or sets["train"] & sets["test"] or sets["val"] & sets["test"])
    assert [len(s[k]) for k in ("train", "val", "test")] == [29220, 3652, 3653]
    assert split_dates(0) == s
    assert split_dates(1)["test"] != s["test"]


def test_pairs_share_no_target_across_splits_and_parse():
    p = make_splits(1500, 300, 300, seed=0)
    assert [len(p[k]) for k in ("train", "val", "test")] == [1500, 300, 300]
    targets = {k: {t for _, t in v} for k, v in p.items()}
    assert not (targets["train"] & targets["val"] or targets["train"] & targets["test"]
                or targets["val"] & targets["test"])
    split = split_dates(0)
    for name, pairs in p.items():
        allowed = set(split[name])
        for src, tgt in pairs:
            d = D.parse_iso(tgt)
            assert d in allowed
            spellings = {render(d, i, c) for i in range(len(D.FORMATS)) for c in ("as is", "lower", "upper")}
            assert src in spellings, (src, tgt)


def test_pairs_are_deterministic_for_a_seed_and_vary():
    a = make_splits(200, 50, 50, seed=7)
    assert make_splits(200, 50, 50, seed=7) == a
    assert make_splits(200, 50, 50, seed=8) != a
    pairs = make_pairs(split_dates(0)["train"], 600, seed=1)
    formats_seen = {next(i for i in range(len(D.FORMATS))
                         if src in {render(D.parse_iso(t), i, c) for c in ("as is", "lower", "upper")})
                    for src, t in pairs}
    assert len(formats_seen) == len(D.FORMATS)  # every format is drawn


def test_parse_iso_refuses_what_is_not_a_date():
    assert D.parse_iso("2026-11-23") == dt.date(2026, 11, 23)
    for bad in ("2026-11-31", "2026/11/23", "26-11-23", "2026-1-23", ""):
        with pytest.raises(ValueError):
            D.parse_iso(bad)


def test_vocabulary_ids_and_round_trip():
    v = CharVocab()
    assert (PAD_ID, BOS_ID, EOS_ID) == (0, 1, 2) and v.itos[:3] == ["<pad>", "<bos>", "<eos>"]
    assert len(v) == 3 + len(D.ALPHABET) == 71
    text = "the 23rd of November, 2026"
    ids = v.encode(text)
    assert min(ids) >= 3 and v.decode(ids) == text
    assert v.decode([BOS_ID] + ids + [EOS_ID] + v.encode("junk") + [PAD_ID]) == text
    assert v.decode(torch.tensor(v.encode("2026-11-23") + [EOS_ID, PAD_ID])) == "2026-11-23"
    with pytest.raises(KeyError, match="'é'"):
        v.encode("12 décembre")


def test_batch_layout():
    pairs = [("23/11/2026", "2026-11-23"), ("the 1st of May, 1999", "1999-05-01"), ("Nov 2 '26", "2026-11-02")]
    v = CharVocab()
    b = make_batch(pairs, v)
    assert b.src.shape == (3, 20) and b.tgt_in.shape == (3, 11) and b.tgt_out.shape == (3, 11)
    assert b.src.dtype == b.tgt_in.dtype == b.tgt_out.dtype == torch.long
    assert b.src_lengths.tolist() == [10, 20, 9]
    for row, (src, tgt) in enumerate(pairs):
        n = len(src)
        assert b.src[row, :n].tolist() == v.encode(src) and (b.src[row, n:] == PAD_ID).all()
        assert b.tgt_in[row].tolist() == [BOS_ID] + v.encode(tgt)  # shifted right: <bos> first
        assert b.tgt_out[row].tolist() == v.encode(tgt) + [EOS_ID]  # what each position must predict
        assert (b.tgt_in[row, 1:] == b.tgt_out[row, :-1]).all()
    with pytest.raises(ValueError, match="empty source"):
        make_batch([("", "2026-11-23")])


def test_batch_pads_targets_of_different_lengths():
    b = make_batch([("a", "12"), ("b", "1234")])
    assert b.tgt_in.tolist()[0][3:] == [PAD_ID, PAD_ID] and b.tgt_out.tolist()[0][2:] == [EOS_ID, PAD_ID, PAD_ID]


def test_batches_cover_every_pair_once_in_a_seeded_order():
    pairs = make_pairs(split_dates(0)["val"], 103, seed=0)
    v = CharVocab()

    def seen(seed):
        return [v.decode(row) for b in D.batches(pairs, 25, v, shuffle_seed=seed) for row in b.tgt_out]

    assert seen(None) == [t for _, t in pairs]
    assert sorted(seen(3)) == sorted(t for _, t in pairs) and seen(3) == seen(3) and seen(3) != seen(4)
    assert [b.src.size(0) for b in D.batches(pairs, 25)] == [25, 25, 25, 25, 3]


# --- the training loop's helpers: batch_fn / loss_fn for the encoder-decoder and a decoder-only GPT ----

def test_sample_batch_draws_pairs_with_the_generator():
    pairs = make_pairs(split_dates(0)["train"], 50, seed=1)
    (src, tgt_in), tgt_out = D.sample_batch(pairs, 8, 0, torch.Generator().manual_seed(5))
    again = D.sample_batch(pairs, 8, 0, torch.Generator().manual_seed(5))
    assert torch.equal(src, again[0][0]) and torch.equal(tgt_out, again[1])
    assert src.shape[0] == tgt_in.shape[0] == 8 and tgt_in.shape == tgt_out.shape == (8, 11)
    targets = {t for _, t in pairs}
    assert all(CharVocab().decode(row) in targets for row in tgt_out)


def test_padded_cross_entropy_ignores_padding_only():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 7)
    y = torch.tensor([[3, 4, PAD_ID, PAD_ID], [5, 6, 6, 2]])
    real = y != PAD_ID
    want = torch.nn.functional.cross_entropy(logits[real], y[real])
    assert D.padded_cross_entropy(logits, y).item() == pytest.approx(want.item(), rel=1e-6)
    noisy = logits + 50 * torch.randn_like(logits) * (~real)[..., None]
    assert D.padded_cross_entropy(noisy, y).item() == pytest.approx(want.item(), rel=1e-6)


def test_one_sequence_batch_scores_the_target_and_eos_only():
    pairs = [("23.11.26", "2026-11-23")]
    v = CharVocab()
    x, y = D.one_sequence_batch(pairs, 1, 24, torch.Generator().manual_seed(0))
    seq = v.encode("23.11.26") + [BOS_ID] + v.encode("2026-11-23") + [EOS_ID]
    assert x[0, :len(seq) - 1].tolist() == seq[:-1] and (x[0, len(seq) - 1:] == PAD_ID).all()
    assert (y[0, :8] == PAD_ID).all()  # no loss on the source: it is given
    assert y[0, 8:19].tolist() == v.encode("2026-11-23") + [EOS_ID]  # read at <bos>, predict the target
    with pytest.raises(ValueError, match="block_size"):
        D.one_sequence_batch(pairs, 1, 10, torch.Generator().manual_seed(0))


def test_decoder_only_greedy_batched_equals_one_row_at_a_time():
    from lmcourse.nn import GPT, GPTConfig

    torch.manual_seed(0)
    gpt = GPT(GPTConfig(vocab_size=len(CharVocab()), block_size=60, n_layer=1, n_head=2, n_embd=16)).eval()
    sources = [s for s, _ in make_pairs(split_dates(0)["val"], 6, seed=2)]
    v = CharVocab()
    want = []
    for s in sources:
        ids = torch.tensor([v.encode(s) + [BOS_ID]])
        for _ in range(11):
            ids = torch.cat([ids, gpt(ids)[0][:, -1].argmax(-1, keepdim=True)], dim=1)
        want.append(v.decode(ids[0, -11:]))
    assert D.decoder_only_greedy(gpt, sources) == want
