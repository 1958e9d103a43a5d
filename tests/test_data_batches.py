"""Batches for the neural notebooks: contiguous windows, targets shifted by one, seeded."""

import pytest
import torch

from lmcourse.data import Corpus, encode_split, encode_text, get_batch
from lmcourse.tokenizers import CharTokenizer


def test_encode_text_round_trips():
    tok = CharTokenizer.from_text("to be or not to be")
    ids = encode_text("not to be", tok)
    assert ids.dtype == torch.long and ids.dim() == 1
    assert tok.decode(ids.tolist()) == "not to be"


def test_encode_split_uses_the_split_and_max_chars():
    corpus = Corpus({"a": "hello", "b": "world"}, {"train": ["a"], "val": ["b"]})
    tok = CharTokenizer.from_text("helloworld")
    assert tok.decode(encode_split(corpus, "val", tok).tolist()) == "world"
    assert tok.decode(encode_split(corpus, "train", tok, max_chars=3).tolist()) == "hel"


def test_batches_are_contiguous_windows_and_targets_are_shifted():
    tokens = torch.arange(1000)  # token id == position, so a window is a run of consecutive ints
    g = torch.Generator().manual_seed(0)
    x, y = get_batch(tokens, batch_size=16, block_size=12, generator=g)
    assert x.shape == y.shape == (16, 12)
    assert x.dtype == y.dtype == torch.long
    steps = x[:, 1:] - x[:, :-1]
    assert torch.all(steps == 1), "each row of x must be consecutive tokens"
    assert torch.equal(y, x + 1), "y must be x shifted by one position"
    assert torch.equal(y[:, :-1], x[:, 1:])


def test_windows_stay_inside_and_reach_both_ends():
    tokens = torch.arange(10)
    g = torch.Generator().manual_seed(1)
    x, y = get_batch(tokens, batch_size=2000, block_size=4, generator=g)
    assert int(x.min()) == 0, "the first window (offset 0) must be possible"
    assert int(y.max()) == 9, "the last token must be reachable as a target"
    assert set(x[:, 0].tolist()) == set(range(6))  # every start offset 0 .. n - T - 1


def test_same_seed_same_batches_different_seed_different():
    tokens = torch.randint(50, (5000,), generator=torch.Generator().manual_seed(3))
    a = get_batch(tokens, 8, 16, torch.Generator().manual_seed(7))
    b = get_batch(tokens, 8, 16, torch.Generator().manual_seed(7))
    c = get_batch(tokens, 8, 16, torch.Generator().manual_seed(8))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_too_short_or_not_1d_is_refused_with_a_message():
    with pytest.raises(ValueError, match="block_size"):
        get_batch(torch.arange(5), 2, 5)
    with pytest.raises(ValueError, match="1-D"):
        get_batch(torch.zeros(3, 10, dtype=torch.long), 2, 4)
