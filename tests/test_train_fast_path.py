"""train()'s fast path on a GPU, held to the plain path's losses on the CPU:
TrainConfig.tokens_on_device (on by default: the ids kept on the training device and each batch
gathered there, so a GPU step copies no windows from the host) and the fused AdamW kernel that
make_optimizer picks on CUDA."""

import pytest
import torch

from lmcourse import train as train_mod
from lmcourse.data import get_batch
from lmcourse.nn import GPT, GPTConfig
from lmcourse.train import TrainConfig, batch_on_device, train


def test_batches_on_the_device_are_get_batchs_windows():
    tokens = torch.randint(50, (500,), generator=torch.Generator().manual_seed(3))
    ga, gb = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    for _ in range(3):                       # the generators advance alike, draw after draw
        (xa, ya), (xb, yb) = get_batch(tokens, 5, 9, ga), batch_on_device(tokens, 5, 9, gb, "cpu")
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


def _run(monkeypatch, on_device: bool, fused: bool = False):
    calls = []
    plain_optimizer = train_mod.make_optimizer

    def fused_optimizer(model, cfg, device):             # CUDA's choice, made on the CPU
        groups = [{**g, "fused": True} for g in plain_optimizer(model, cfg, device).param_groups]
        return torch.optim.AdamW(groups)

    if fused:
        monkeypatch.setattr(train_mod, "make_optimizer", fused_optimizer)

    def counted(*args):
        calls.append(1)
        return batch_on_device(*args)

    monkeypatch.setattr(train_mod, "batch_on_device", counted)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, n_embd=16))
    data = torch.randint(20, (400,), generator=torch.Generator().manual_seed(1))
    cfg = TrainConfig(steps=6, batch_size=4, block_size=8, eval_interval=3, eval_batches=2, device="cpu",
                      progress=False, quiet=True, tokens_on_device=on_device)
    hist = train(model, data[:300], data[300:], cfg)
    return hist, model.state_dict(), len(calls)


def test_training_on_the_device_path_gives_the_plain_losses(monkeypatch):
    plain, w_plain, n_plain = _run(monkeypatch, False)
    fast, w_fast, n_fast = _run(monkeypatch, True)
    assert n_plain == 0 and n_fast > 0                     # each path ran what it names
    assert plain.train_loss == fast.train_loss and plain.val_loss == fast.val_loss
    assert all(torch.equal(w_plain[k], w_fast[k]) for k in w_plain)


def test_the_windows_are_gathered_where_the_ids_are():
    ids = torch.zeros(100, dtype=torch.long, device="meta")
    x, y = batch_on_device(ids, 4, 8, torch.Generator().manual_seed(0), "meta")
    assert x.shape == y.shape == (4, 8) and x.device.type == y.device.type == "meta"


def test_fused_adamw_gives_the_plain_losses(monkeypatch):
    if not hasattr(torch, "_fused_adamw_"):
        pytest.skip("this torch has no fused AdamW kernel for the CPU")
    plain, _, _ = _run(monkeypatch, True)
    kernel, calls = torch._fused_adamw_, []
    monkeypatch.setattr(torch, "_fused_adamw_", lambda *a, **k: calls.append(1) or kernel(*a, **k))
    fused, _, _ = _run(monkeypatch, True, fused=True)
    assert calls                                          # the fused kernel did the steps
    assert fused.train_loss == pytest.approx(plain.train_loss, rel=1e-5)
    assert fused.val_loss == pytest.approx(plain.val_loss, rel=1e-5)
