"""lmcourse.train's keep_best: the model ends with the weights of its lowest validation loss,
training itself is unchanged, and the checkpoint keeps both the last and the best weights."""

import torch
from torch import nn

from lmcourse.train import TrainConfig, estimate_loss, load_checkpoint, train


class Bigram(nn.Module):
    """A table of next-token logits per token, plus one bias shared by every token (which validation sees move)."""

    def __init__(self, vocab_size: int = 4):
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, idx):
        return self.table(idx) + self.bias  # (B, T, V)


def cfg(**kw) -> TrainConfig:
    base = dict(steps=12, batch_size=4, block_size=8, lr=0.1, warmup_steps=1, eval_interval=3, eval_batches=2,
                device="cpu", progress=False, quiet=True, seed=0)
    return TrainConfig(**{**base, **kw})


def fresh() -> Bigram:
    torch.manual_seed(0)
    return Bigram()


ALTERNATING = torch.tensor([0, 1] * 200)  # trains a bigram to say "0 after 1, 1 after 0"
CONSTANT = torch.tensor([2] * 400)        # where that is ever more wrong: validation rises from step 0
REPEATED = torch.tensor([0, 1, 2, 3] * 100)  # the same pattern in training and validation: it falls


def weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_a_validation_loss_that_rises_ends_with_the_first_weights():
    start = weights(fresh())
    plain_model, best_model = fresh(), fresh()
    plain = train(plain_model, ALTERNATING, CONSTANT, cfg())
    best = train(best_model, ALTERNATING, CONSTANT, cfg(keep_best=True))
    assert plain.val_loss[-1] > plain.val_loss[0]  # the set-up: validation only gets worse
    assert best.train_loss == plain.train_loss and best.val_loss == plain.val_loss  # training is unchanged
    assert plain.best_step is None and best.best_step == 0 and best.best_val_loss == best.val_loss[0]
    for k, v in best_model.state_dict().items():
        assert torch.equal(v, start[k]), k  # the untrained weights, the lowest validation loss
    assert not torch.equal(plain_model.table.weight, start["table.weight"])
    again = estimate_loss(best_model, CONSTANT, 4, 8, 2, seed=1)  # the loop validates with seed + 1
    assert abs(again - best.val_loss[0]) < 1e-6


def test_a_falling_validation_loss_changes_nothing():
    plain_model, best_model = fresh(), fresh()
    plain = train(plain_model, REPEATED, REPEATED, cfg())
    best = train(best_model, REPEATED, REPEATED, cfg(keep_best=True))
    assert best.val_loss == sorted(best.val_loss, reverse=True)  # the set-up: each validation lower
    assert best.best_step == 12 and best.val_loss == plain.val_loss
    assert torch.equal(best_model.table.weight, plain_model.table.weight)


def test_the_checkpoint_holds_the_last_weights_and_the_best_and_a_resumed_run_keeps_the_best(tmp_path):
    path = tmp_path / "run.pt"
    model = fresh()
    first = train(model, ALTERNATING, CONSTANT, cfg(keep_best=True, checkpoint_path=str(path)), stop_after=6)
    assert first.interrupted and first.best_step == 0
    state = load_checkpoint(path)
    assert state["best"]["step"] == 0 and state["history"]["best_step"] == 0
    assert not torch.equal(state["model"]["table.weight"], state["best"]["model"]["table.weight"])  # last != best
    resumed = fresh()
    rest = train(resumed, ALTERNATING, CONSTANT, cfg(keep_best=True, checkpoint_path=str(path), resume=True))
    assert rest.steps[-1] == 12 and rest.best_step == 0  # the best of the whole run, not of its second part
    assert torch.equal(resumed.table.weight, state["best"]["model"]["table.weight"])


def test_the_summary_line_names_the_step_whose_weights_are_kept(capsys):
    train(fresh(), ALTERNATING, CONSTANT, cfg(keep_best=True, quiet=False))
    out = capsys.readouterr().out
    assert "weights of step 0 kept (val loss " in out and "the lowest)" in out
