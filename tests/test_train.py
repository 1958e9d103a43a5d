"""lmcourse.train: schedule, clipping, checkpoints, reproducibility, and a golden run."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lmcourse.distributed import DistEnv
from lmcourse.nn import GPT, GPTConfig, load_gpt
from lmcourse.runtime import get_profile
from lmcourse.train import (
    CHECKPOINT_FORMAT,
    CheckpointError,
    History,
    TrainConfig,
    estimate_loss,
    lm_cross_entropy,
    load_checkpoint,
    lr_at,
    train,
)


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


# --- a loss other than next-token cross-entropy: loss_fn and batch_fn, not another loop ----------

MASK, PAD = 0, 0


def mlm_batch(tokens, batch_size, block_size, generator, device):
    """Windows with ~25% of positions replaced by MASK; labels only there (-1 elsewhere)."""
    ix = torch.randint(len(tokens) - block_size, (batch_size,), generator=generator)
    x = torch.stack([tokens[i:i + block_size] for i in ix])
    chosen = torch.rand(x.shape, generator=generator) < 0.25
    return x.masked_fill(chosen, MASK).to(device), x.masked_fill(~chosen, -1).to(device)


def masked_ce(logits, labels):
    """An MLM-style loss: mean over the chosen positions only (label -1 is skipped)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-1)


class Bidirectional(nn.Module):
    """Each position sees its two neighbours: enough to fill a blank of a cycle."""

    def __init__(self, vocab):
        super().__init__()
        self.emb = nn.Embedding(vocab, 16)
        self.out = nn.Linear(32, vocab)

    def forward(self, x):
        e = self.emb(x)  # (B, T, 16)
        left = torch.cat([torch.zeros_like(e[:, :1]), e[:, :-1]], 1)
        right = torch.cat([e[:, 1:], torch.zeros_like(e[:, :1])], 1)
        return self.out(torch.cat([left, right], -1))  # (B, T, V)


def test_loss_fn_trains_a_masked_lm():
    data = 1 + torch.arange(4000) % 10  # ids 1..10 in a cycle; 0 is MASK
    torch.manual_seed(0)
    model = Bidirectional(11)
    first = Bidirectional(11)
    first.load_state_dict(model.state_dict())
    c = cfg(steps=60, lr=0.05, eval_interval=60, warmup_steps=0)
    h = train(model, data, data, c, batch_fn=mlm_batch, loss_fn=masked_ce)
    # the loop's first loss is masked_ce on the first batch (and not the default loss, which counts -1s)
    x, y = mlm_batch(data, c.batch_size, c.block_size, torch.Generator().manual_seed(c.seed), "cpu")
    assert h.train_loss[0] == pytest.approx(masked_ce(first(x), y).item(), rel=1e-6)
    with pytest.raises(IndexError):
        lm_cross_entropy(first(x), y)  # -1 is not its ignored label: the default could not train this
    assert h.val_loss[0] > 2.0 and h.final_val_loss < 0.2, h.val_loss


def seq2seq_batch(pairs, batch_size, block_size, generator, device):
    """((source, target_in), target_out) from (source, target) pairs of different lengths, padded with PAD."""
    ix = torch.randint(len(pairs), (batch_size,), generator=generator).tolist()
    src = torch.full((batch_size, block_size), PAD)
    tgt = torch.full((batch_size, block_size + 1), PAD)
    for row, i in enumerate(ix):
        s, t = pairs[i]
        src[row, :len(s)] = torch.tensor(s)
        tgt[row, :len(t)] = torch.tensor(t)
    return (src.to(device), tgt[:, :-1].to(device)), tgt[:, 1:].to(device)


def padded_ce(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1), ignore_index=PAD)


class TinySeq2Seq(nn.Module):
    """Decoder logits from its own previous token and the mean of the source: model(source, target_in)."""

    def __init__(self, vocab):
        super().__init__()
        self.src = nn.Embedding(vocab, 16, padding_idx=PAD)
        self.tgt = nn.Embedding(vocab, 16)
        self.out = nn.Linear(32, vocab)

    def forward(self, src, tgt_in):
        ctx = self.src(src).sum(1, keepdim=True) / (src != PAD).sum(1, keepdim=True).clamp(min=1)[..., None]
        h = torch.cat([self.tgt(tgt_in), ctx.expand(-1, tgt_in.shape[1], -1)], -1)
        return self.out(h)  # (B, T, V)


def test_loss_fn_trains_a_padded_encoder_decoder_and_padding_costs_nothing():
    rng = torch.Generator().manual_seed(1)
    pairs = []  # target = BOS then the source reversed; lengths 2..6, so most rows are padded
    for _ in range(300):
        s = (2 + torch.randint(8, (int(torch.randint(2, 7, (1,), generator=rng)),), generator=rng)).tolist()
        pairs.append((s, [1] + s[::-1]))
    torch.manual_seed(0)
    model = TinySeq2Seq(10)
    c = cfg(steps=150, batch_size=16, lr=0.03, eval_interval=150, warmup_steps=0)
    h = train(model, pairs, pairs, c, batch_fn=seq2seq_batch, loss_fn=padded_ce)
    assert h.final_val_loss < 0.75 * h.val_loss[0], h.val_loss
    (src, tgt_in), y = seq2seq_batch(pairs, 16, 8, torch.Generator().manual_seed(3), "cpu")
    with torch.no_grad():
        logits = model(src, tgt_in)
        noisy = logits + 100 * torch.randn_like(logits) * (y == PAD)[..., None]  # change only padded positions
    assert padded_ce(noisy, y).item() == pytest.approx(padded_ce(logits, y).item(), rel=1e-6)
    assert (y == PAD).float().mean() > 0.2, "the test needs padding"
    # two micro-batches in one process: the data-parallel branch takes the same loss_fn and tuple inputs
    torch.manual_seed(0)
    h2 = train(TinySeq2Seq(10), pairs, pairs, cfg(steps=5, batch_size=16, eval_batches=1), batch_fn=seq2seq_batch,
               loss_fn=padded_ce, env=DistEnv(), micro_batch_size=8)
    assert len(h2.train_loss) == 5 and all(math.isfinite(v) for v in h2.train_loss + h2.val_loss)


# --- one checkpoint format --------------------------------------------------------------------------

def test_the_checkpoint_holds_the_model_as_load_gpt_reads_it(tmp_path):
    path = tmp_path / "gpt.pt"
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16)
    torch.manual_seed(0)
    model = GPT(config)
    train(model, tokens(), tokens(seed=1), cfg(steps=3, checkpoint_path=str(path)))
    state = load_checkpoint(path)
    assert state["format"] == CHECKPOINT_FORMAT and state["dropout_seeds"] == "once"
    assert state["config"] == load_gpt(path)[0].config.__dict__ and state["train_config"]["steps"] == 3
    assert len(state["samplers"]) == 1 and state["micro_batch_size"] == 4 and state["world_size"] == 1
    back, rest = load_gpt(path)
    idx = torch.randint(11, (2, 8))
    assert torch.equal(back(idx)[0], model.eval()(idx)[0]) and rest["step"] == 3
    state_plain = tmp_path / "bigram.pt"
    train(fresh(), tokens(), None, cfg(steps=2, checkpoint_path=str(state_plain)))
    assert load_checkpoint(state_plain)["config"] is None  # a model without a config


def test_a_checkpoint_of_the_old_one_process_layout_resumes(tmp_path):
    data, val = tokens(), tokens(seed=1)
    full = train(fresh(), data, val, cfg())
    path = tmp_path / "old.pt"
    train(fresh(), data, val, cfg(checkpoint_path=str(path)), stop_after=7)
    state = torch.load(path, weights_only=False)  # rewrite it as format 1 of train() wrote it
    old = {k: state[k] for k in ("model", "optimizer", "step", "torch_rng", "cuda_rng", "history")}
    old.update(sampler=state["samplers"][0], config=state["train_config"])
    torch.save(old, path)
    rest = train(fresh(seed=5), data, val, cfg(checkpoint_path=str(path), resume=True))
    assert rest.train_loss == full.train_loss and rest.val_loss == full.val_loss


def test_a_checkpoint_resumes_only_with_the_dropout_seeding_that_wrote_it(tmp_path):
    path = tmp_path / "c.pt"
    train(fresh(), tokens(), None, cfg(checkpoint_path=str(path)), stop_after=3)
    with pytest.raises(CheckpointError, match="seeds dropout differently"):
        train(fresh(), tokens(), None, cfg(checkpoint_path=str(path), resume=True), env=DistEnv())


def test_no_cycles_and_no_private_imports_among_the_training_modules():
    """train -> distributed, commands.train -> train and distributed; nothing back; no `_name` imported
    from the course's modules."""
    import ast
    import pathlib

    import lmcourse

    root = pathlib.Path(lmcourse.__file__).parent
    imports = {}
    for name in ("train", "commands.train", "distributed"):
        package = ["lmcourse", *name.split(".")[:-1]]
        tree = ast.parse((root / f"{name.replace('.', '/')}.py").read_text())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - node.level + 1]
                # `from .. import distributed` names a module; `from ..train import x` names its module
                modules = [node.module] if node.module else [a.name for a in node.names]
                found.update(".".join([*base, m])[len("lmcourse."):] for m in modules)
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"lmcourse.{name} imports private {private} from {node.module}"
        imports[name] = found
    assert {"train", "distributed"} <= imports["commands.train"]   # the test sees the command's imports
    assert "commands.train" not in imports["train"] and "train" not in imports["distributed"]
    assert "commands.train" not in imports["distributed"]


def test_the_summary_line_says_when_the_validation_loss_is_older_than_the_last_step(capsys):
    h = train(fresh(), tokens(), tokens(seed=1), cfg(quiet=False), stop_after=13)
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert h.val_steps == [0, 10] and f"val loss {h.val_loss[-1]:.3f} (from step 10)" in line
    assert "trained 13/20 steps" in line and "resume=True continues" in line
    train(fresh(), tokens(), tokens(seed=1), cfg(quiet=False))
    assert "(from step" not in capsys.readouterr().out


def test_a_headless_run_shows_no_bar_but_a_notebook_does(monkeypatch):
    """A saved bar is a widget whose text fallback is its first frame ("0%"): the headless runner turns
    bars off in its kernels, while a student's notebook keeps them."""
    import sys

    from lmcourse.train import TrainConfig, want_progress

    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setitem(sys.modules, "ipykernel", sys.modules.get("ipykernel") or object())
    cfg = TrainConfig(steps=1)
    monkeypatch.delenv("LMCOURSE_PROGRESS", raising=False)
    assert want_progress(cfg)
    monkeypatch.setenv("LMCOURSE_PROGRESS", "0")
    assert not want_progress(cfg)
    assert want_progress(TrainConfig(steps=1, progress=True))

