"""lmcourse.nn.gpt: the reference GPT, against transformers' GPT-2 and its defining properties."""

import math

import pytest
import torch
import torch.nn.functional as F

from lmcourse.nn import GPT, GPTConfig, gpt_param_count, init_gpt_weights, load_gpt, save_gpt
from lmcourse.nn.sampling import generate
from lmcourse.train import TrainConfig, train


def small(**kw) -> GPTConfig:
    base = dict(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)
    base.update(kw)
    return GPTConfig(**base)


def _gpt2_from(model: GPT, activation: str):
    """transformers' GPT2LMHeadModel with the same sizes and a copy of ``model``'s weights."""
    pytest.importorskip("transformers")
    from lmcourse.nn.hf_twin import gpt2_twin

    hf = gpt2_twin(model, activation)
    t = hf.transformer
    assert hf.lm_head.weight.data_ptr() == t.wte.weight.data_ptr(), "GPT-2's head should be tied too"
    return hf


@pytest.mark.parametrize("gelu, activation", [("tanh", "gelu_new"), ("none", "gelu")])
@pytest.mark.parametrize("fast", [True, False])
def test_logits_equal_transformers_gpt2_in_float64(gelu, activation, fast):
    torch.manual_seed(0)
    model = GPT(small(gelu=gelu, fast=fast)).double().eval()
    with torch.no_grad():  # non-trivial LayerNorm parameters and biases, so every copy matters
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln" in name or name.startswith("ln_f"):
                p.add_(0.1 * torch.randn_like(p))
    hf = _gpt2_from(model, activation)
    idx = torch.randint(11, (3, 8))
    with torch.no_grad():
        ours, loss = model(idx[:, :-1], idx[:, 1:])
        out = hf(input_ids=idx[:, :-1], labels=idx[:, :-1].clone())
    diff = (ours - out.logits).abs().max().item()
    assert diff < 1e-12, f"logits differ from GPT2LMHeadModel by {diff:.3g}"
    # transformers shifts its labels inside (and computes that loss in float32); ours come
    # shifted: the same loss over the first T - 2 positions
    ours_trim = F.cross_entropy(ours[:, :-1].reshape(-1, 11), idx[:, 1:-1].reshape(-1))
    assert abs(ours_trim.item() - out.loss.item()) < 1e-6
    assert abs(loss.item() - F.cross_entropy(ours.reshape(-1, 11), idx[:, 1:].reshape(-1)).item()) < 1e-12


def test_gelu_tanh_differs_from_exact():
    """The comparison above would not tell the two GELUs apart if the model ignored the option."""
    torch.manual_seed(1)
    a = GPT(small(gelu="none")).double().eval()
    b = GPT(small(gelu="tanh")).double().eval()
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        for m in (a, b):
            for blk in m.blocks:
                blk.mlp.c_fc.weight.mul_(50)  # pre-activations of order 1, where the two differ
    idx = torch.randint(11, (2, 8))
    assert (a(idx)[0] - b(idx)[0]).abs().max() > 1e-6


def test_head_is_tied_one_tensor():
    model = GPT(small())
    assert model.lm_head.weight is model.wte.weight
    assert len({id(p) for p in model.parameters()}) == len(list(model.parameters()))
    assert model.num_params() == gpt_param_count(11, 8, 2, 16)
    assert model.num_params() == sum(p.numel() for p in model.parameters())
    no_bias = GPT(small(bias=False))
    assert no_bias.num_params() == gpt_param_count(11, 8, 2, 16, bias=False)


def test_gpt2_small_count():
    assert gpt_param_count(50257, 1024, 12, 768) == 124_439_808


def test_loss_at_initialisation_is_log_vocab():
    torch.manual_seed(0)
    model = GPT(small(vocab_size=65, n_embd=32))
    idx = torch.randint(65, (8, 8))
    _, loss = model(idx, torch.randint(65, (8, 8)))
    assert abs(loss.item() - math.log(65)) < 0.05


def test_initialisation_statistics():
    torch.manual_seed(0)
    model = GPT(small(vocab_size=200, block_size=64, n_layer=4, n_embd=64))
    assert abs(model.wte.weight.std().item() - 0.02) < 0.001
    for blk in model.blocks:
        assert abs(blk.mlp.c_fc.weight.std().item() - 0.02) < 0.001
        for p in (blk.attn.c_proj.weight, blk.mlp.c_proj.weight):
            assert abs(p.std().item() - 0.02 / math.sqrt(8)) < 0.0005
        assert torch.all(blk.mlp.c_fc.bias == 0) and torch.all(blk.ln1.weight == 1)
    init_gpt_weights(model, std=0.1)
    assert abs(model.wpe.weight.std().item() - 0.1) < 0.005


def test_causal_by_gradients():
    torch.manual_seed(0)
    model = GPT(small(n_layer=2)).double()
    x = (model.wte(torch.randint(11, (1, 8))) + model.wpe.weight).detach().requires_grad_()
    h = x
    for blk in model.blocks:
        h = blk(h)
    logits = model.lm_head(model.ln_f(h))
    for t in range(8):
        (g,) = torch.autograd.grad(logits[0, t].sum(), x, retain_graph=True)
        assert torch.all(g[0, t + 1:] == 0), f"position {t} sees the future"
        assert g[0, : t + 1].abs().sum() > 0


def test_forward_shapes_and_block_size():
    model = GPT(small())
    logits, loss = model(torch.zeros(2, 5, dtype=torch.long))
    assert logits.shape == (2, 5, 11) and loss is None
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_generate_crops_seeds_and_follows_temperature():
    torch.manual_seed(0)
    model = GPT(small()).eval()
    out = generate(model, torch.zeros(2, 1, dtype=torch.long), 20, generator=torch.Generator().manual_seed(3))
    assert out.shape == (2, 21)  # 20 > block_size = 8: the context was cropped
    again = generate(model, torch.zeros(2, 1, dtype=torch.long), 20, generator=torch.Generator().manual_seed(3))
    assert torch.equal(out, again)
    # a very low temperature is the argmax
    idx = torch.randint(11, (4, 5))
    cold = generate(model, idx, 1, temperature=1e-4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(cold[:, -1], model(idx)[0][:, -1].argmax(-1))


def test_trains_through_lmcourse_train_and_overfits():
    torch.manual_seed(0)
    model = GPT(small(vocab_size=5, block_size=16, n_layer=1, n_embd=32))
    tokens = torch.tensor([0, 1, 2, 3, 4] * 40)
    cfg = TrainConfig(steps=60, batch_size=8, block_size=16, lr=1e-2, warmup_steps=5, eval_interval=60,
                      eval_batches=1, device="cpu", progress=False, quiet=True)
    hist = train(model, tokens, tokens, cfg)
    assert hist.final_val_loss < 0.1, hist.val_loss


def test_save_and_load(tmp_path):
    torch.manual_seed(0)
    model = GPT(small(dropout=0.1)).eval()
    path = save_gpt(model, tmp_path / "gpt.pt", vocabulary=list("abcdefghijk"), profile="tiny")
    again, extra = load_gpt(path)
    assert extra["vocabulary"] == list("abcdefghijk") and extra["profile"] == "tiny"
    assert again.lm_head.weight is again.wte.weight
    idx = torch.randint(11, (2, 8))
    assert torch.equal(model(idx)[0], again(idx)[0])


def test_reference_is_refused_however_reached(tmp_path):
    """What notebook 05's tests refuse of the given GPT (lmcourse.reference.nn_gpt_work): every route
    to it must be refused — by name, through a subclass, a loader, or a fresh copy of the
    module loaded with importlib (its code objects equal the original's)."""
    import importlib.util
    import sys

    from lmcourse.checks import CheckFailed
    from lmcourse.marking.refusals import forbid_calls
    from lmcourse.nn import gpt as ref
    from lmcourse.reference import nn_gpt_work

    cfg = small()
    torch.manual_seed(0)
    model = GPT(cfg).eval()
    path = save_gpt(model, tmp_path / "gpt.pt")
    spec = importlib.util.spec_from_file_location("lmcourse.nn._gpt_copy_for_test", ref.__file__)
    copy = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = copy
    try:
        spec.loader.exec_module(copy)
    finally:
        sys.modules.pop(spec.name, None)

    class Sub(GPT):
        pass

    idx = torch.zeros(1, 3, dtype=torch.long)
    routes = {
        "GPT": lambda: GPT(cfg),
        "subclass": lambda: Sub(cfg),
        "instance made before": lambda: model(idx),
        "load_gpt": lambda: load_gpt(path),
        "init_gpt_weights": lambda: init_gpt_weights(model),
        "gpt_param_count": lambda: gpt_param_count(11, 8, 2, 16),
        "generate": lambda: generate(model, idx, 2),
        "importlib copy": lambda: copy.GPT(copy.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16)),
    }
    for name, route in routes.items():
        try:
            with forbid_calls(*nn_gpt_work()):
                route()
        except CheckFailed:
            continue
        pytest.fail(f"the given GPT ran under forbid_calls(*nn_gpt_work()), reached through {name}")
