"""lmcourse.train: schedule, clipping, checkpoints, reproducibility, and a golden run."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from lmcourse.runtime import get_profile
from lmcourse.train import History, TrainConfig, estimate_loss, lm_cross_entropy, lr_at, train


class Bigram(nn.Module):
    """logits for the next token from the current token only: the smallest model that learns."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx):
        return self.table(idx)  # (B, T, V)


class LSTMLM(nn.Module):
    def __init__(self, vocab_size: int, n_embd: int, n_hidden: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.lstm = nn.LSTM(n_embd, n_hidden, batch_first=True)
        self.lm_head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx):
        out, _ = self.lstm(self.wte(idx))  # (B, T, H)
        return self.lm_head(out)  # (B, T, V)


def cfg(**kw) -> TrainConfig:
    base = dict(steps=20, batch_size=4, block_size=8, lr=1e-2, warmup_steps=3, eval_interval=10,
                eval_batches=2, device="cpu", progress=False, quiet=True)
    base.update(kw)
    return TrainConfig(**base)


def tokens(n=2000, vocab=11, seed=0):
    return torch.randint(vocab, (n,), generator=torch.Generator().manual_seed(seed))


def fresh(seed=0, vocab=11):
    torch.manual_seed(seed)
    return Bigram(vocab)


# --- the schedule ------------------------------------------------------------------------------

def test_schedule_warms_up_linearly_then_decays_by_cosine_to_the_floor():
    c = TrainConfig(steps=100, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    lrs = [lr_at(s, c) for s in range(c.steps)]
    assert lrs[:10] == pytest.approx([(s + 1) / 10 for s in range(10)])
    assert max(lrs) == pytest.approx(1.0) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b - 1e-12 for a, b in zip(lrs[9:], lrs[10:])), "non-increasing after warm-up"
    assert lrs[-1] == pytest.approx(0.1)
    mid = 10 + (99 - 10) / 2  # half way through the decay the cosine is at the mean of peak and floor
    assert lr_at(int(mid), c) == pytest.approx(0.55, abs=0.02)


def test_schedule_without_warmup_starts_at_the_peak():
    c = TrainConfig(steps=50, lr=3e-3, warmup_steps=0, min_lr_ratio=0.0)
    assert lr_at(0, c) == pytest.approx(3e-3)
    assert lr_at(49, c) == pytest.approx(0.0, abs=1e-12)


def test_history_records_the_schedule_used():
    h = train(fresh(), tokens(), tokens(seed=1), cfg())
    assert h.steps == list(range(1, 21))
    assert h.lr == pytest.approx([lr_at(s, cfg()) for s in range(20)])


# --- clipping ----------------------------------------------------------------------------------

class Scaled(nn.Module):
    """A model whose gradient is huge: logits = 1000 * w[token]."""

    def __init__(self, vocab):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(vocab, vocab))

    def forward(self, idx):
        return 1000.0 * self.w[idx]


@pytest.mark.parametrize("clip", [0.5, None])
def test_clipping_caps_the_update_of_plain_sgd(clip):
    model = Scaled(5)
    c = cfg(steps=1, warmup_steps=0, optimizer="sgd", lr=1.0, grad_clip=clip, eval_batches=0)
    h = train(model, tokens(vocab=5), None, c)
    step_norm = float(model.w.detach().norm())  # SGD, lr=1: the update is minus the (clipped) gradient
    assert h.grad_norm[0] > 10, "the test needs a gradient larger than the clip value"
    expected = h.grad_norm[0] if clip is None else clip
    assert step_norm == pytest.approx(expected, rel=1e-4)
    assert h.clipped_fraction(0.5) == 1.0


# --- reproducibility and resume -----------------------------------------------------------------

def test_same_seed_same_run_different_seed_different_batches():
    a = train(fresh(), tokens(), tokens(seed=1), cfg())
    b = train(fresh(), tokens(), tokens(seed=1), cfg())
    c = train(fresh(), tokens(), tokens(seed=1), cfg(seed=5))
    assert a.train_loss == b.train_loss and a.val_loss == b.val_loss
    assert a.train_loss != c.train_loss


def test_resume_from_a_checkpoint_equals_an_uninterrupted_run(tmp_path):
    data, val = tokens(), tokens(seed=1)
    full_model = fresh()
    full = train(full_model, data, val, cfg())

    path = tmp_path / "ckpt.pt"
    part_model = fresh()
    first = train(part_model, data, val, cfg(checkpoint_path=str(path)), stop_after=7)
    assert first.interrupted and first.steps[-1] == 7 and path.exists()

    resumed_model = fresh(seed=123)  # different init: everything must come from the checkpoint
    rest = train(resumed_model, data, val, cfg(checkpoint_path=str(path), resume=True))
    assert not rest.interrupted
    assert rest.steps == full.steps
    assert rest.train_loss == full.train_loss
    assert rest.val_steps == full.val_steps and rest.val_loss == full.val_loss
    for p, q in zip(resumed_model.parameters(), full_model.parameters()):
        assert torch.equal(p, q)


def test_resume_without_a_checkpoint_starts_fresh(tmp_path):
    h = train(fresh(), tokens(), None, cfg(checkpoint_path=str(tmp_path / "none.pt"), resume=True))
    assert h.steps[0] == 1 and len(h.steps) == 20


# --- the loss and validation ----------------------------------------------------------------------

def test_loss_is_cross_entropy_on_the_shifted_targets():
    torch.manual_seed(0)
    logits, y = torch.randn(2, 5, 7), torch.randint(7, (2, 5))
    manual = -torch.log_softmax(logits, -1).gather(-1, y[..., None]).mean()
    assert lm_cross_entropy(logits, y).item() == pytest.approx(manual.item(), rel=1e-6)
    with pytest.raises(ValueError, match=r"\(B, T, V\)"):
        lm_cross_entropy(logits[:, :, 0], y)


def test_untrained_validation_is_near_log_vocab_and_training_lowers_it():
    # A deterministic cycle 0,1,...,10,0,1,...: a bigram model can learn it perfectly.
    data = torch.arange(3000) % 11
    model = fresh()
    nn.init.zeros_(model.table.weight)  # uniform predictions: loss exactly log(11) at step 0
    h = train(model, data, data, cfg(steps=60, lr=0.3, eval_interval=30))
    assert h.val_steps == [0, 30, 60]
    assert h.val_loss[0] == pytest.approx(math.log(11), rel=1e-6)
    assert h.val_loss[-1] < 0.5 * h.val_loss[0]
    assert h.tokens_per_sec > 0 and h.elapsed > 0 and isinstance(h, History)


def test_estimate_loss_leaves_the_training_mode_and_sampler_alone():
    model = fresh()
    model.train()
    a = estimate_loss(model, tokens(), 4, 8, batches=3, seed=2)
    assert model.training
    assert a == estimate_loss(model, tokens(), 4, 8, batches=3, seed=2)


def test_from_profile_reads_sizes():
    p = get_profile("tiny")
    c = TrainConfig.from_profile(p, lr=1e-3)
    assert (c.steps, c.batch_size, c.block_size, c.eval_interval, c.eval_batches) == (
        p.train_steps, p.batch_size, p.block_size, p.eval_interval, p.eval_batches)
    assert c.lr == 1e-3 and c.warmup_steps < c.steps


def test_bad_inputs_are_refused_with_a_message():
    with pytest.raises(ValueError, match="1-D LongTensor"):
        train(fresh(), torch.zeros(100), None, cfg())
    with pytest.raises(ValueError, match="block_size"):
        train(fresh(), torch.arange(5), None, cfg())
    with pytest.raises(ValueError, match="optimizer"):
        cfg(optimizer="adam")


# --- golden run ---------------------------------------------------------------------------------

def markov2_text(n: int, vocab: int, seed: int):
    """A second-order Markov source with sparse random transitions, and its entropy rate (nats)."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(vocab, 0.2), size=(vocab, vocab))  # p(c | a, b)
    seq = np.empty(n, dtype=np.int64)
    seq[:2] = rng.integers(vocab, size=2)
    u = rng.random(n)
    cdf = probs.cumsum(-1)
    for t in range(2, n):
        seq[t] = min(int(np.searchsorted(cdf[seq[t - 2], seq[t - 1]], u[t])), vocab - 1)
    # stationary distribution over pairs (a, b), by counting, then the conditional entropy
    pair = np.zeros((vocab, vocab))
    np.add.at(pair, (seq[:-1], seq[1:]), 1)
    pair /= pair.sum()
    ent = -(probs * np.log(np.clip(probs, 1e-300, None))).sum(-1)
    return torch.from_numpy(seq), float((pair * ent).sum())


@pytest.mark.slow
def test_golden_run_lstm_reaches_the_entropy_of_a_known_source():
    """400 seeded steps of a small LSTM on a 2nd-order Markov source (vocab 12): the validation
    loss must land within [H - 0.05, H + 0.15] nats, H = 1.367 being the source's entropy rate
    (measured: 1.478 with torch 2.13 on CPU; longer runs creep down to about 1.44).

    A bigram model cannot get there (it lacks the second character of context: it stalls near
    2.28 nats), and a loss
    below H - 0.05 would mean the evaluation is wrong, since no model beats the source on
    unseen text by more than sampling noise.
    """
    data, H = markov2_text(120_000, 12, seed=0)
    train_tokens, val_tokens = data[:100_000], data[100_000:]
    torch.manual_seed(0)
    model = LSTMLM(12, 16, 64)
    c = TrainConfig(steps=400, batch_size=32, block_size=32, lr=1e-2, warmup_steps=20,
                    eval_interval=200, eval_batches=20, device="cpu", progress=False, quiet=True)
    h = train(model, train_tokens, val_tokens, c)
    print(f"entropy rate {H:.4f} nats, val loss {h.final_val_loss:.4f}")
    assert H - 0.05 <= h.final_val_loss <= H + 0.15, (H, h.val_loss)
