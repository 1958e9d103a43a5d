"""lmcourse.train's parts= hook and lmcourse.train_parts: a run on functions written elsewhere (02's students'
AdamW step, schedule and clipping) is the same run as the loop's own, and a broken one is left to the loop."""

import pytest
import torch
from torch import nn

from lmcourse.parts_trial import yours_where_they_work
from lmcourse.reference import rnn
from lmcourse.train import TrainConfig, train
from lmcourse.train_parts import StepOptimizer, TrainParts


class Bigram(nn.Module):
    def __init__(self, vocab_size: int = 11):
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)
        self.head = nn.Linear(vocab_size, vocab_size)

    def forward(self, idx):
        return self.head(self.table(idx))


def _run(parts=None, **kw):
    torch.manual_seed(0)
    model = Bigram()
    ids = torch.randint(11, (2000,), generator=torch.Generator().manual_seed(0))
    cfg = TrainConfig(steps=25, batch_size=4, block_size=8, lr=3e-2, warmup_steps=4, eval_interval=10,
                      eval_batches=2, device="cpu", progress=False, quiet=True, grad_clip=0.3, weight_decay=0.1, **kw)
    return train(model, ids, ids, cfg, parts=parts), model


def _counted(fn, calls):
    def wrapped(*args):
        calls.append(fn.__name__)
        return fn(*args)
    wrapped.__name__ = fn.__name__
    return wrapped


def test_the_reference_parts_give_the_loops_own_run():
    calls = []
    parts = TrainParts(*(_counted(f, calls) for f in (rnn.adamw_step, rnn.lr_schedule, rnn.clip_grad_norm)))
    mine, m1 = _run(parts)
    theirs, m2 = _run()
    assert calls.count("lr_schedule") == 25 and calls.count("clip_grad_norm") == 25
    assert calls.count("adamw_step") == 2 * 25          # two groups: matrices decayed, the bias not
    assert mine.lr == pytest.approx(theirs.lr, rel=1e-12)
    assert mine.grad_norm == pytest.approx(theirs.grad_norm, rel=1e-5)
    assert mine.train_loss == pytest.approx(theirs.train_loss, rel=1e-4)
    for p, q in zip(m1.parameters(), m2.parameters()):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4)


def test_a_part_left_out_is_the_loops_and_an_sgd_run_refuses_an_adamw_step():
    only_schedule, _ = _run(TrainParts(lr_schedule=lambda s, hi, lo, w, n: hi))
    assert set(only_schedule.lr) == {3e-2}
    with pytest.raises(ValueError, match="sgd"):
        _run(TrainParts(adamw_step=rnn.adamw_step), optimizer="sgd")


def test_the_step_optimizer_keeps_each_groups_state_where_state_dict_saves_it():
    p = nn.Parameter(torch.ones(3))
    opt = StepOptimizer([{"params": [p]}], rnn.adamw_step, lr=0.1, betas=(0.9, 0.99))
    p.grad = torch.full((3,), 0.5)
    opt.step()
    assert opt.state_dict()["state"][0][0]["step"] == 1
    torch.testing.assert_close(p.detach(), torch.full((3,), 0.9))


def test_yours_where_they_work_keeps_the_right_ones_and_says_why_it_drops_the_others(capsys):
    def unanswered(*args):
        raise NotImplementedError()

    def no_bias_correction(params, state, lr, betas, eps, weight_decay):
        for p in params:
            p.mul_(1 - lr * weight_decay)
            p.sub_(lr * (1 - betas[0]) * p.grad / ((1 - betas[1]) ** 0.5 * p.grad.abs() + eps))

    parts = yours_where_they_work(adamw_step=no_bias_correction, lr_schedule=rnn.lr_schedule,
                                  clip_grad_norm=unanswered)
    assert parts == TrainParts(lr_schedule=rnn.lr_schedule)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("adamw_step: the course's (it differs from torch.optim.AdamW by up to")
    assert out[1] == "lr_schedule: yours"
    assert out[2].startswith("clip_grad_norm: the course's (it raised NotImplementedError")
    assert yours_where_they_work(quiet=True, adamw_step=rnn.adamw_step, clip_grad_norm=rnn.clip_grad_norm) == \
        TrainParts(adamw_step=rnn.adamw_step, clip_grad_norm=rnn.clip_grad_norm)
    with pytest.raises(TypeError):
        yours_where_they_work(optimizer=rnn.adamw_step)
