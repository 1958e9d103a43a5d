"""lmcourse.course_runs: the models the course trained longer, shipped to be shown beside a student's run."""

from __future__ import annotations

import math
import shutil

import pytest
import torch
import torch.nn.functional as F

from lmcourse import course_runs
from lmcourse.recipes import gpt as gpt_recipe


@pytest.mark.parametrize("name", sorted(n for n, r in course_runs.RUNS.items() if r.model == "gpt"))
def test_a_shipped_run_is_the_notebooks_model_and_loads(name):
    """The run is the notebook's own GPT at its profile (sizes and vocabulary), trained by the command it
    names: the ladder compares it with the student's model on the same footing."""
    from lmcourse.data import load_shakespeare
    from lmcourse.tokenizers import CharTokenizer

    model, run, extra = course_runs.load_course_run(name)
    profile = name.rsplit("_", 1)[-1]
    sizes = gpt_recipe.recipe(profile).model_sizes()
    assert {k: getattr(model.config, k) for k in sizes} == sizes
    assert f"--profile {profile}" in run.command and f"--steps {run.steps}" in run.command
    assert all(p.dtype == torch.float32 for p in model.parameters())
    corpus = load_shakespeare(quiet=True)
    tok = CharTokenizer.from_text(corpus.text("train"))
    assert extra["vocabulary"] == list(tok.itos)
    # its validation loss, on a slice, is the one the course recorded (half precision costs nothing here)
    T = model.config.block_size
    ids = torch.tensor(tok.encode(corpus.text("val")[:64 * T + 1]))
    with torch.no_grad():
        logits, _ = model(ids[:-1].view(-1, T))
    loss = F.cross_entropy(logits.flatten(0, 1), ids[1:].view(-1, T).flatten()).item()
    assert abs(loss - run.val_loss) < 0.15, (loss, run.val_loss)
    assert loss < math.log(len(tok.itos)) / 2


def test_the_shipped_masked_lm_fills_blanks_better_than_left_to_right_on_the_notebooks_blanks():
    """06's course runs are its MaskedLM at the cpu sizes (the causal one left to right), on the notebook's
    vocabulary, and show the lecture's claim on the notebook's blanks: both sides beat one side, and both beat
    guessing the most frequent words."""
    from lmcourse.commands.tasks.mlm import _blank_scores, _blanks
    from lmcourse.data import encode_text, load_shakespeare
    from lmcourse.nn.mlm import MLMConfig
    from lmcourse.recipes import mlm
    from lmcourse.reference.mlm import MaskedLM
    from lmcourse.tokenizers import SPECIALS, WordTokenizer

    r = mlm.recipe("cpu")
    corpus = load_shakespeare(quiet=True)
    tok = WordTokenizer.from_text(corpus.text("train"), max_size=r.vocab, specials=list(SPECIALS) + [mlm.MASK_TOKEN])
    val_ids, train_ids = encode_text(corpus.text("val"), tok), encode_text(corpus.text("train"), tok)
    special = [tok.stoi[s] for s in SPECIALS] + [tok.stoi[mlm.MASK_TOKEN]]
    x, pos = _blanks(val_ids, 1000, r.block, special, seed=6)
    top1 = {}
    for name, causal in (("06_mlm_cpu", False), ("06_mlm_causal_cpu", True)):
        model, run, extra = course_runs.load_course_run(name, model_class=MaskedLM, config_class=MLMConfig)
        sizes = r.model_sizes(causal=causal)
        assert {k: getattr(model.config, k) for k in sizes} == sizes and extra["vocabulary"] == list(tok.itos)
        assert f"--steps {run.steps}" in run.command and ("--causal" in run.command) == causal
        top1[name] = _blank_scores(model, x, pos, tok.stoi[mlm.MASK_TOKEN], causal, "cpu")[1]
    freq = torch.bincount(train_ids, minlength=tok.vocab_size).double()
    freq[special] = 0
    true = x[torch.arange(len(x)), pos]
    frequent = float(torch.isin(true, freq.topk(1).indices).double().mean())
    assert top1["06_mlm_cpu"] > top1["06_mlm_causal_cpu"] + 0.02 > frequent + 0.05, (top1, frequent)


def test_a_changed_or_missing_file_is_refused_with_what_to_do(tmp_path, monkeypatch):
    name = next(iter(course_runs.RUNS))
    run = course_runs.RUNS[name]
    copy = tmp_path / run.file
    shutil.copy(course_runs._path(run), copy)
    monkeypatch.setattr(course_runs, "_path", lambda r: copy)
    with copy.open("ab") as f:
        f.write(b"\0")
    with pytest.raises(course_runs.CourseRunError, match="not the file the course made"):
        course_runs.load_course_run(name)
    copy.unlink()
    with pytest.raises(course_runs.CourseRunError, match="missing.*reinstall"):
        course_runs.load_course_run(name)
    with pytest.raises(course_runs.CourseRunError, match="no course run named"):
        course_runs.load_course_run("nothing")


def test_export_writes_the_kept_weights_in_half_precision_and_they_load_into_the_notebooks_class(tmp_path):
    """What `python -m lmcourse.course_runs` ships: the weights the run kept (its lowest validation loss), half
    precision, with the command; they load into a model class given by the caller (06's MaskedLM)."""
    from lmcourse.nn.mlm import MLMConfig
    from lmcourse.reference.mlm import MaskedLM

    torch.manual_seed(0)
    model = MaskedLM(MLMConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=8))
    kept = {k: v + 1 for k, v in model.state_dict().items()}
    ckpt = tmp_path / "run.pt"
    torch.save({"config": vars(model.config).copy(), "model": model.state_dict(), "vocabulary": list("abcdefghijk"),
                "step": 30, "history": {"val_loss": [3.0, 2.0]}, "best": {"step": 20, "val_loss": 1.5, "model": kept},
                "optimizer": {}}, ckpt)
    out = tmp_path / "shipped.pt"
    info = course_runs.export(ckpt, out, command="lmcourse train mlm --steps 30")
    assert (info["steps"], info["val_loss"]) == (20, 1.5) and len(info["sha256"]) == 64
    saved = torch.load(out, weights_only=False)
    assert "optimizer" not in saved and saved["command"] == "lmcourse train mlm --steps 30"
    assert all(v.dtype == torch.float16 for v in saved["model"].values() if v.is_floating_point())
    run = course_runs.CourseRun(file=out.name, sha256=info["sha256"], command="c", steps=20, val_loss=1.5, model="mlm")
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(course_runs.RUNS, "t_mlm", run)
        mp.setattr(course_runs, "_path", lambda r: out)
        with pytest.raises(course_runs.CourseRunError, match="pass the notebook's model and config"):
            course_runs.load_course_run("t_mlm")
        loaded, got_run, extra = course_runs.load_course_run("t_mlm", model_class=MaskedLM, config_class=MLMConfig)
    assert got_run is run and extra["vocabulary"] == list("abcdefghijk")
    for k, v in loaded.state_dict().items():
        assert torch.allclose(v, kept[k].half().float()), k
    assert not loaded.training


def test_export_refuses_what_is_not_a_training_checkpoint(tmp_path):
    torch.save({"weights": {}}, tmp_path / "x.pt")
    with pytest.raises(course_runs.CourseRunError, match="not a training checkpoint"):
        course_runs.export(tmp_path / "x.pt", tmp_path / "y.pt", command="c")
