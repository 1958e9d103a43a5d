"""Mixed precision chosen by what the card supports (lmcourse.runtime.choose_precision), tested on
the CPU by faking the GPU torch reports: bf16 from compute capability 8.0, fp16 with a gradient
scaler on a T4 / V100 / P100, float32 on older cards and the CPU; torch.compile only from 7.0.
No GPU runs here: the training loop's use of the scaler is checked with a scaler that really scales."""

import sys

import pytest
import torch

from lmcourse import runtime, train
from lmcourse.commands import main as cli
from tests.test_doctor import healthy  # noqa: F401  (the doctor's fixture: a sane machine)

CARDS = {  # name: (compute capability, native bf16)
    "NVIDIA H100 80GB HBM3": ((9, 0), True),
    "NVIDIA A100-SXM4-40GB": ((8, 0), True),
    "NVIDIA L4": ((8, 9), True),
    "Tesla T4": ((7, 5), False),
    "Tesla V100-SXM2-16GB": ((7, 0), False),
    "Tesla P100-PCIE-16GB": ((6, 0), False),
    "NVIDIA GeForce GTX 1080": ((6, 1), False),
    "Tesla K80": ((3, 7), False),
}


@pytest.fixture
def card(monkeypatch):
    """``card(name)`` makes torch report that CUDA GPU (is_available, capability, name, bf16)."""
    def fake(name: str) -> None:
        cap, bf16 = CARDS[name]
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: cap)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
        # torch >= 2.3 says True on a T4 unless emulation is left out (bf16 is emulated there, slowly)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported",
                            lambda including_emulation=True: bf16 or (including_emulation and cap >= (7, 0)))
        monkeypatch.delenv("LMCOURSE_DEVICE", raising=False)
    return fake


@pytest.mark.parametrize("name, expected, scaler, compiles", [
    ("NVIDIA H100 80GB HBM3", "bf16", False, True),
    ("NVIDIA A100-SXM4-40GB", "bf16", False, True),
    ("NVIDIA L4", "bf16", False, True),
    ("Tesla T4", "fp16", True, True),
    ("Tesla V100-SXM2-16GB", "fp16", True, True),
    ("Tesla P100-PCIE-16GB", "fp16", True, False),     # Triton needs 7.0
    ("NVIDIA GeForce GTX 1080", "fp32", False, False),  # 6.1: fp16 at 1/64 rate
    ("Tesla K80", "fp32", False, False),
])
def test_precision_follows_the_compute_capability(card, monkeypatch, name, expected, scaler, compiles):
    card(name)
    monkeypatch.setattr(runtime, "compile_support", lambda: (True, ""))
    p = runtime.choose_precision(torch.device("cuda"))
    assert (p.name, p.grad_scaler, p.compile) == (expected, scaler, compiles), p
    assert name in p.reason and "compute capability" in p.reason
    assert p.dtype == {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}[expected]
    assert str(p) == expected + ("+GradScaler" if scaler else "")


def test_cpu_and_mps_compute_in_float32():
    for device in ("cpu", "mps"):
        p = runtime.choose_precision(torch.device(device))
        assert p.name == "fp32" and not p.grad_scaler and p.dtype is None
    assert "no GPU" in runtime.choose_precision(torch.device("cpu")).reason


def test_autocast_and_the_scaler_follow_the_choice(card):
    assert not train.autocast("cpu")._enabled          # the CPU: nothing
    assert not train._grad_scaler(torch.device("cpu"), amp=True).is_enabled()
    card("Tesla T4")
    ctx = train.autocast("cuda")
    assert ctx._enabled and ctx.fast_dtype == torch.float16
    assert not train.autocast("cuda", amp=False)._enabled
    assert train._grad_scaler(torch.device("cuda"), amp=True).is_enabled()
    assert not train._grad_scaler(torch.device("cuda"), amp=False).is_enabled()
    card("NVIDIA A100-SXM4-40GB")
    ctx = train.autocast("cuda")
    assert ctx._enabled and ctx.fast_dtype == torch.bfloat16
    assert not train._grad_scaler(torch.device("cuda"), amp=True).is_enabled()   # bf16 needs none


def test_setup_prints_the_precision(card, monkeypatch, capsys):
    monkeypatch.setenv("LMCOURSE_PROFILE", "tiny")
    monkeypatch.setenv("LMCOURSE_THREADS", str(torch.get_num_threads()))
    monkeypatch.setenv("LMCOURSE_DEVICE", "cpu")
    assert runtime.setup(seed=0).precision.name == "fp32"
    assert "precision=fp32" in capsys.readouterr().out
    card("Tesla T4")
    rt = runtime.setup(seed=0)
    out = capsys.readouterr().out
    assert rt.device.type == "cuda" and str(rt.precision) == "fp16+GradScaler"
    assert "precision=fp16+GradScaler (Tesla T4, compute capability 7.5: no fast bf16" in out, out


def test_doctor_prints_the_precision_and_refuses_compile_on_a_p100(healthy, card, monkeypatch, capsys):  # noqa: F811
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "  precision   fp32 for training (no GPU" in out and "fp16 with a gradient scaler below (T4" in out
    card("Tesla P100-PCIE-16GB")
    cli.main(["doctor"])
    out = capsys.readouterr().out
    assert "  precision   fp16+GradScaler for training (Tesla P100-PCIE-16GB, compute capability 6.0" in out, out
    if sys.platform != "win32":
        assert "compile     torch.compile's GPU back end (Triton) needs compute capability 7.0" in out, out


def test_compile_is_skipped_with_a_reason_on_a_p100(card, monkeypatch, capsys):
    monkeypatch.setattr(runtime, "compile_support", lambda: (True, ""))
    card("Tesla P100-PCIE-16GB")
    cfg = train.TrainConfig(steps=1, compile=True)
    assert not train.compile_ok(cfg, torch.device("cuda"))
    assert "needs compute capability 7.0; this GPU has 6.0" in capsys.readouterr().out
    card("Tesla T4")
    assert train.compile_ok(cfg, torch.device("cuda"))


class ScalingScaler(torch.amp.GradScaler):
    """A gradient scaler that really scales, on the CPU: the loss by 2**10 (exact in float32), the
    gradients back in ``unscale_``; it counts its calls. A loop that skipped ``unscale_`` would clip
    gradients 1024 times too big; one that stepped the optimizer itself would step without it."""

    def __init__(self):
        super().__init__("cpu", enabled=False)
        self.calls = {"scale": 0, "unscale_": 0, "step": 0, "update": 0}

    def scale(self, outputs):
        self.calls["scale"] += 1
        return outputs * 1024.0

    def unscale_(self, optimizer):
        self.calls["unscale_"] += 1
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad.div_(1024.0)

    def step(self, optimizer, *args, **kwargs):
        self.calls["step"] += 1
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        self.calls["update"] += 1


def _run(monkeypatch, scaler=None):
    if scaler is not None:
        monkeypatch.setattr(train, "_grad_scaler", lambda device, amp: scaler)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(7, 16), torch.nn.Linear(16, 7))
    tokens = torch.randint(0, 7, (400,), generator=torch.Generator().manual_seed(1))
    cfg = train.TrainConfig(steps=6, batch_size=4, block_size=8, eval_batches=0, device="cpu", progress=False,
                            warmup_steps=0, grad_clip=0.5, quiet=True)
    return train.train(model, tokens, None, cfg)


def test_train_steps_through_the_scaler_and_unscales_before_clipping(monkeypatch):
    plain = _run(monkeypatch)
    scaler = ScalingScaler()
    scaled = _run(monkeypatch, scaler)
    assert scaler.calls == {"scale": 6, "unscale_": 6, "step": 6, "update": 6}
    assert scaled.train_loss == plain.train_loss          # the same run: the scale is undone exactly
    assert scaled.grad_norm == pytest.approx(plain.grad_norm, rel=1e-6)
    assert plain.clipped_fraction(0.5) > 0                 # clipping took part, after unscaling


def test_train_on_the_cpu_uses_a_disabled_scaler(monkeypatch):
    made = []
    real = train._grad_scaler
    monkeypatch.setattr(train, "_grad_scaler", lambda device, amp: made.append(real(device, amp)) or made[-1])
    _run(monkeypatch)
    assert len(made) == 1 and not made[0].is_enabled()
