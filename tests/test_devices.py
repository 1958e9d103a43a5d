"""Device comparisons by what matters: the type, and the index where one is given.

``lmcourse train gpt`` crashed on CUDA after training: the sampler compared a generator made on
``cuda`` with probabilities on ``cuda:0`` as ``torch.device`` objects, found them different and sent
the probabilities to the CPU with a CUDA generator. These tests need no GPU."""

import ast
from pathlib import Path

import torch

import lmcourse
from lmcourse.runtime import same_device


def test_torch_devices_differ_where_the_device_is_the_same():
    assert torch.device("cuda") != torch.device("cuda:0")         # the comparison that crashed


def test_same_device_compares_type_and_index():
    assert same_device(torch.device("cuda"), torch.device("cuda:0"))
    assert same_device("cuda:0", torch.device("cuda"))
    assert not same_device("cuda:0", "cuda:1")
    assert same_device("cpu", torch.device("cpu"))
    assert not same_device("cpu", "meta")
    assert not same_device("cuda", "cpu")


def test_a_cpu_generator_draws_for_cpu_probabilities():
    from lmcourse.decoding import sample_next

    logits = torch.tensor([[0.0, 5.0, -5.0]])
    a = sample_next(logits, torch.Generator(device="cpu").manual_seed(1))
    b = sample_next(logits, torch.Generator().manual_seed(1))
    assert a.tolist() == b.tolist() and a.device.type == "cpu"


def test_the_package_compares_no_devices_as_objects():
    """`x.device != y.device` (or ==) anywhere in the package: use runtime.same_device."""
    bad = []
    for path in Path(lmcourse.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
                sides = [node.left, *node.comparators]
                if sum(isinstance(s, ast.Attribute) and s.attr == "device" for s in sides) >= 2:
                    bad.append(f"{path.name}:{node.lineno}")
    assert not bad, f"devices compared as objects: {bad}"


def test_a_forced_precision_is_read_and_a_wrong_one_refused(monkeypatch):
    import pytest

    from lmcourse.runtime import choose_precision, forced_precision

    monkeypatch.setenv("LMCOURSE_PRECISION", "FP16")
    assert forced_precision() == "fp16"
    assert choose_precision("cpu").name == "fp32"          # the CPU computes in float32 whatever is asked
    monkeypatch.setenv("LMCOURSE_PRECISION", "half")
    with pytest.raises(ValueError, match="bf16, fp16, fp32"):
        forced_precision()
