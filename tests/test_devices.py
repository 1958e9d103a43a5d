"""Device comparisons by what matters: the type, and the index where one is given.

``lmcourse train gpt`` crashed on CUDA after training: the sampler compared a generator made on
``cuda`` with probabilities on ``cuda:0`` as ``torch.device`` objects, found them different and sent
the probabilities to the CPU with a CUDA generator. These tests need no GPU."""

import ast
from pathlib import Path

import pytest
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
    from lmcourse.reference.decoding import sample_next

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
    from lmcourse.runtime import choose_precision, forced_precision

    monkeypatch.setenv("LMCOURSE_PRECISION", "FP16")
    assert forced_precision() == "fp16"
    assert choose_precision("cpu").name == "fp32"          # the CPU computes in float32 whatever is asked
    monkeypatch.setenv("LMCOURSE_PRECISION", "half")
    with pytest.raises(ValueError, match="bf16, fp16, fp32"):
        forced_precision()


class _IndexedGenerator(torch.Generator):
    """A CPU generator that reports ``device`` as given: on a machine without a GPU, the CUDA
    generator that says ``cuda`` while the model's tensors say ``cuda:0``."""

    def __new__(cls, device: str):
        return super().__new__(cls)             # torch.Generator's own constructor would take `device`

    def __init__(self, device: str):
        super().__init__()
        self._claimed = torch.device(device)

    @property
    def device(self):
        return self._claimed


def _meta_gpt():
    from lmcourse.nn import GPT, GPTConfig

    with torch.device("meta"):
        return GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)).eval()


def test_same_device_on_the_meta_device():
    assert same_device("meta", torch.device("meta"))
    assert same_device("meta", "meta:0")               # no index: the current one, 0 without a GPU
    assert not same_device("meta:0", "meta:1")
    assert not same_device("cuda", "cuda:1")           # no GPU here: the current CUDA device would be 0


def test_generate_samples_where_the_generator_differs_only_by_its_index():
    """The crash of `lmcourse train gpt` on CUDA, on the CPU: the generator says `meta:0`, the
    model's tensors `meta`; compared as objects they differ and the probabilities went to the CPU
    (here: "Cannot copy out of meta tensor", there: a CUDA generator given CPU probabilities)."""
    from lmcourse.nn.sampling import generate

    idx = torch.zeros(2, 3, dtype=torch.long, device="meta")
    out = generate(_meta_gpt(), idx, 4, generator=_IndexedGenerator("meta:0"))
    assert out.shape == (2, 7) and out.device.type == "meta"


def test_sample_next_samples_where_the_generator_differs_only_by_its_index():
    from lmcourse.reference import decoding

    logits = torch.zeros(3, 5, device="meta")
    assert decoding.sample_next(logits, _IndexedGenerator("meta:0")).shape == (3,)


def test_a_generator_on_another_device_draws_there(monkeypatch):
    """A generator draws only on its own device: the probabilities go to it (not to the CPU), and
    the ids come back to the logits' device."""
    from lmcourse.reference import decoding

    seen = []

    def multinomial(probs, n, generator=None):
        seen.append(probs.device)
        return torch.zeros(probs.shape[0], n, dtype=torch.long)

    monkeypatch.setattr(torch, "multinomial", multinomial)
    ids = decoding.sample_next(torch.zeros(2, 5), _IndexedGenerator("meta"))
    assert seen == [torch.device("meta")] and ids.device.type == "cpu"

    from lmcourse.nn import GPT, GPTConfig
    from lmcourse.nn.sampling import generate

    model = GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8)).eval()
    out = generate(model, torch.zeros(1, 2, dtype=torch.long), 3, generator=_IndexedGenerator("meta"))
    assert seen[1:] == [torch.device("meta")] * 3 and out.device.type == "cpu"
