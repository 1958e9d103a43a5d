"""lmcourse.nn.checkpoint: one save/load for GPT and the masked LM: an unknown setting is refused by
name, a missing one takes its default; unknown or missing weights are refused by name."""

import pytest
import torch

from lmcourse.nn import GPT, GPTConfig, MLMConfig, ModelCheckpointError, load_gpt, save_gpt, save_mlm
from lmcourse.reference.mlm import MaskedLM, load_mlm

MODELS = {
    "gpt": (GPT, GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16), save_gpt, load_gpt),
    "mlm": (MaskedLM, MLMConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16), save_mlm, load_mlm),
}


@pytest.fixture(params=sorted(MODELS))
def saved(request, tmp_path):
    cls, config, save, load = MODELS[request.param]
    torch.manual_seed(0)
    model = cls(config).eval()
    path = save(model, tmp_path / f"{request.param}.pt", vocabulary=list("abc"), profile="tiny")
    return model, path, load


def test_roundtrip_gives_the_same_model_and_the_extras(saved):
    model, path, load = saved
    back, rest = load(path)
    assert rest == {"vocabulary": list("abc"), "profile": "tiny"}
    assert back.lm_head.weight is back.wte.weight and not back.training
    idx = torch.randint(11, (2, 8))
    with torch.no_grad():
        assert torch.equal(model(idx)[0], back(idx)[0])


def test_an_unknown_setting_is_refused_naming_it(saved):
    _, path, load = saved
    state = torch.load(path, weights_only=False)
    state["config"]["rotary"] = True
    torch.save(state, path)
    with pytest.raises(ModelCheckpointError, match=r"does not know: rotary\b.*save it again"):
        load(path)


def test_a_missing_setting_takes_its_default(saved):
    """Notebook 05 saves the student's own GPT, whose config lacks the reference's extra settings."""
    model, path, load = saved
    state = torch.load(path, weights_only=False)
    del state["config"]["fast"], state["config"]["ln_eps"]
    torch.save(state, path)
    back, _ = load(path)
    assert back.config == model.config  # the defaults are what was saved
    del state["config"]["n_embd"]  # a default that does not fit the weights: they are named
    torch.save(state, path)
    with pytest.raises(ModelCheckpointError, match=r"another shape than the config makes: .*wte\.weight"):
        load(path)


def test_unknown_and_missing_weights_are_named(saved):
    _, path, load = saved
    state = torch.load(path, weights_only=False)
    state["model"]["extra.weight"] = torch.zeros(1)
    del state["model"]["wpe.weight"]
    torch.save(state, path)
    with pytest.raises(ModelCheckpointError, match=r"no place for: extra\.weight; weights missing: wpe\.weight"):
        load(path)


def test_a_gpt_checkpoint_is_not_a_masked_lm(tmp_path):
    torch.manual_seed(0)
    path = save_gpt(GPT(MODELS["gpt"][1]), tmp_path / "gpt.pt")
    with pytest.raises(ModelCheckpointError, match=r"MaskedLM.*MLMConfig does not know: gelu"):
        load_mlm(path)


class _Runs:
    """A pickle that calls a function when read: what a file of someone else's could hold."""
    def __reduce__(self):
        import timeit
        return (timeit.timeit, ("import builtins; builtins.RAN = True", "pass", None, 1))


def test_a_file_whose_pickle_names_code_is_refused_unread(saved, tmp_path):
    import builtins

    from lmcourse.train import CheckpointError, load_checkpoint

    _, path, load = saved
    state = torch.load(path, weights_only=True)
    state["profile"] = _Runs()
    bad = tmp_path / "bad.pt"
    torch.save(state, bad)
    with pytest.raises(ModelCheckpointError, match="its pickle names timeit.timeit.*save the model again"):
        load(bad)
    with pytest.raises(CheckpointError, match="its pickle names timeit.timeit"):
        load_checkpoint(bad)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ModelCheckpointError, match="is not a file torch.save wrote"):
        load(tmp_path / "junk.pt")
    assert not hasattr(builtins, "RAN")
