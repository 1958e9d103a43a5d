"""lmcourse.course_runs: the models the course trained longer, shipped to be shown beside a student's run."""

from __future__ import annotations

import math
import shutil

import pytest
import torch
import torch.nn.functional as F

from lmcourse import course_runs
from lmcourse.recipes import gpt as gpt_recipe


@pytest.mark.parametrize("name", sorted(course_runs.RUNS))
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
