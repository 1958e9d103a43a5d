"""train()'s fast path on a GPU, held to the plain path's losses on the CPU:
TrainConfig.tokens_on_device (on by default: the ids kept on the training device and each batch
gathered there, so a GPU step copies no windows from the host) and the fused AdamW kernel that
make_optimizer picks on CUDA; and the options each off by default until a GPU run proves them:
the step compiled whole (compile_mode), validation read once (eval_sync_free), SDPA's kernel named
(attention)."""

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

    def fused_optimizer(model, cfg, device, adamw_step=None):     # CUDA's choice, made on the CPU
        groups = [{**g, "fused": True} for g in plain_optimizer(model, cfg, device, adamw_step).param_groups]
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


def _tiny_run(**options):
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, n_embd=16))
    data = torch.randint(20, (400,), generator=torch.Generator().manual_seed(1))
    cfg = TrainConfig(steps=4, batch_size=4, block_size=8, eval_interval=2, eval_batches=3, device="cpu",
                      progress=False, quiet=True, **options)
    return train(model, data[:300], data[300:], cfg)


def test_sync_free_validation_gives_the_plain_losses_exactly(monkeypatch):
    plain = _tiny_run()
    draws = []
    monkeypatch.setattr(train_mod, "batch_on_device", lambda *a: draws.append(1) or batch_on_device(*a))
    fast = _tiny_run(eval_sync_free=True)
    assert fast.val_loss == plain.val_loss and fast.train_loss == plain.train_loss
    assert len(draws) == 4                     # the training batches only: validation drew its windows at once


def test_prefetched_windows_are_the_batches_drawn_one_by_one():
    tokens = torch.randint(50, (300,), generator=torch.Generator().manual_seed(2))
    ga, gb = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    draw = train_mod._prefetched_windows(tokens, 3, 7, 4, gb)
    for _ in range(4):
        (xa, ya), (xb, yb) = batch_on_device(tokens, 3, 7, ga, "cpu"), draw(tokens, 3, 7, gb, "cpu")
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
    assert torch.equal(torch.randint(9, (3,), generator=ga), torch.randint(9, (3,), generator=gb))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["max-autotune-no-cudagraphs", "reduce-overhead"])
def test_the_step_compiled_whole_gives_the_plain_losses(monkeypatch, mode):
    """On the CPU inductor writes C++ (no Triton, no CUDA graphs: reduce-overhead is the plain compile there);
    float32 sums in another order, so the losses agree to 1e-4, not bit for bit. Slow: compiling the C++
    takes most of a minute per mode on a busy 2-core machine."""
    from lmcourse.runtime import compile_support

    if not compile_support()[0]:
        pytest.skip(compile_support()[1])
    compiled_fns = []
    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: compiled_fns.append((fn, kw)) or real_compile(fn, **kw))
    plain = _tiny_run()
    assert compiled_fns == []
    fast = _tiny_run(compile_mode=mode)
    assert [kw for _, kw in compiled_fns] == [{"mode": mode}]
    assert compiled_fns[0][0].__name__ == "step_loss"       # the step's loss function, not the model alone
    assert fast.train_loss == pytest.approx(plain.train_loss, abs=1e-4)
    assert fast.val_loss == pytest.approx(plain.val_loss, abs=1e-4)


def test_an_unknown_compile_mode_or_kernel_is_refused_by_name():
    with pytest.raises(ValueError, match="compile_mode must be one of .*reduce-overhead"):
        TrainConfig(compile_mode="fast")
    with pytest.raises(ValueError, match="attention must be one of .*flash"):
        TrainConfig(attention="flash2")


def test_a_cuda_only_attention_kernel_says_so_on_the_cpu():
    with pytest.raises(ValueError, match="runs only on a CUDA GPU; this run is on cpu"):
        _tiny_run(attention="flash")


def test_the_kernel_named_is_the_one_sdpa_runs(monkeypatch):
    """math runs anywhere: SDPA runs inside its context, and the losses are the CPU's fused kernel's to float32's
    rounding (the two sum in another order)."""
    seen = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def watched(*args, **kwargs):
        seen.append(torch.backends.cuda.flash_sdp_enabled() or torch.backends.cuda.mem_efficient_sdp_enabled())
        return sdpa(*args, **kwargs)

    plain = _tiny_run()
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", watched)
    named = _tiny_run(attention="math")
    assert seen and not any(seen)            # only the math kernel was allowed while the model attended
    assert named.train_loss == pytest.approx(plain.train_loss, abs=1e-5)
    assert named.val_loss == pytest.approx(plain.val_loss, abs=1e-5)
    assert torch.backends.cuda.flash_sdp_enabled()          # and the choice ends with the run
