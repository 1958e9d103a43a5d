"""Models the course trained longer with its own commands, shipped beside the notebooks.

A notebook's run is what a laptop trains in minutes; a lecture's claim can need longer. Each run here is
the notebook's own model and recipe trained for more steps by a command anyone can repeat, saved in half
precision (a few MB) in ``lmcourse/data_files/``. A notebook shows it *beside* the student's own run,
when the student leaves its switch on, never in its place and never while a notebook is graded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch

__all__ = ["RUNS", "CourseRun", "CourseRunError", "load_course_run"]


class CourseRunError(RuntimeError):
    """A shipped run that is missing or not the file the course made."""


@dataclass(frozen=True)
class CourseRun:
    file: str          # in lmcourse/data_files/
    sha256: str        # of that file, as the course wrote it
    command: str       # what trained it (the notebook's recipe, more steps), then `python -m lmcourse.course_runs`
    steps: int
    val_loss: float    # the command's validation loss of the weights shipped, nats
    model: str = "gpt"  # "gpt": lmcourse.nn.GPT; "mlm": the notebook's MaskedLM, built by the caller


RUNS = {
    "05_gpt_cpu": CourseRun(
        file="05_gpt_cpu_5000.pt",
        sha256="1dc6ed497dd47b8a357477d9188959cae8e5614a53098fa2a8714ef5331300fe",
        command="lmcourse train gpt --profile cpu --steps 5000 --seed 0 --threads 1",
        steps=5000, val_loss=1.4818),
    # notebook 06's two networks at its cpu sizes, 12.5 times the windows of its own run (a batch of 128, not 32)
    "06_mlm_cpu": CourseRun(
        file="06_mlm_cpu_2500x128.pt",
        sha256="0c5b5744c5387e0e8cd49b3564e570e6a1bb83b9456018df8e0aab439accf8ed",
        command="lmcourse train mlm --profile cpu --batch_size 128 --steps 2500 --seed 0 --threads 1",
        steps=2500, val_loss=3.9814, model="mlm"),
    "06_mlm_causal_cpu": CourseRun(
        file="06_mlm_causal_cpu_2500x128.pt",
        sha256="d669ff7e5b6f0f62f657df1618f12c0f7612e93a2a48508b46ea04e79ecd42f8",
        command="lmcourse train mlm --causal --profile cpu --batch_size 128 --steps 2500 --seed 0 --threads 1",
        steps=2500, val_loss=3.9562, model="mlm"),
}


def _path(run: CourseRun) -> Path:
    return Path(str(resources.files("lmcourse") / "data_files" / run.file))


def _checked(name: str) -> tuple[CourseRun, Path]:
    run = RUNS.get(name)
    if run is None:
        raise CourseRunError(f"no course run named {name!r}; the course ships {', '.join(sorted(RUNS))}")
    path = _path(run)
    if not path.is_file():
        raise CourseRunError(f"{path} is missing: reinstall the course (`pip install -e .` in its folder), or "
                             f"make it yourself with `{run.command}` and `python -m lmcourse.course_runs "
                             f"CHECKPOINT {path}`")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != run.sha256:
        raise CourseRunError(f"{path} is not the file the course made (sha256 {digest[:12]}…, expected "
                             f"{run.sha256[:12]}…): reinstall the course")
    return run, path


def load_course_run(name: str, device: torch.device | str = "cpu", model_class: type | None = None,
                    config_class: type | None = None):
    """(model, run, extra): the shipped model ``name`` of :data:`RUNS` in float32, eval mode, on ``device``, its
    :class:`CourseRun` and the rest of what was saved (the vocabulary). A GPT is the course's
    :class:`lmcourse.nn.GPT`; any other model is built as ``model_class(config_class(**saved config))``
    (a notebook passes the student's class: its attribute names are the exercise's), and a class whose
    weights do not fit raises :class:`lmcourse.nn.checkpoint.ModelCheckpointError` naming them."""
    from .nn import load_gpt
    from .nn.checkpoint import load_model

    run, path = _checked(name)
    if run.model == "gpt" and model_class is None:
        model, extra = load_gpt(path, device)
    elif model_class is None or config_class is None:
        raise CourseRunError(f"the course run {name!r} is a {run.model}: pass the notebook's model and config "
                             "classes (model_class=, config_class=)")
    else:
        model, extra = load_model(path, model_class, config_class, device)
    return model.float().eval(), run, extra


def export(checkpoint: str | Path, out: str | Path, command: str) -> dict:
    """Write the weights of a training checkpoint (``lmcourse train``'s; the kept best ones when the run kept
    them) to ``out`` in half precision, with its config, vocabulary, steps, validation loss and ``command``:
    the file a :class:`CourseRun` ships. Returns what :class:`CourseRun` needs (sha256, steps, val_loss)."""
    from .nn.checkpoint import read_saved

    state = read_saved(checkpoint, "cpu", CourseRunError)
    if not isinstance(state, dict) or "model" not in state or not isinstance(state.get("config"), dict):
        raise CourseRunError(f"{checkpoint} is not a training checkpoint of `lmcourse train` (no config and weights)")
    best = state.get("best")
    last = (state.get("history") or {}).get("val_loss") or [None]
    weights, steps, val_loss = ((best["model"], best["step"], best["val_loss"]) if best else
                                (state["model"], state.get("step"), last[-1]))
    half = {k: v.half() if v.is_floating_point() else v for k, v in weights.items()}
    shipped = {"config": state["config"], "model": half, "vocabulary": state.get("vocabulary"), "steps": steps,
               "val_loss": None if val_loss is None else round(float(val_loss), 4), "command": command}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    torch.save(shipped, out)
    return {"sha256": hashlib.sha256(Path(out).read_bytes()).hexdigest(), "steps": steps,
            "val_loss": shipped["val_loss"]}


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(prog="python -m lmcourse.course_runs",
                                 description="Write a training checkpoint as a shipped course run (half precision).")
    ap.add_argument("checkpoint", help="the checkpoint `lmcourse train ... --checkpoint_path` wrote")
    ap.add_argument("out", help="the file to write, e.g. lmcourse/data_files/06_mlm_cpu_2500.pt")
    ap.add_argument("--command", required=True, help="the training command, recorded in the file")
    print(export(**vars(ap.parse_args())))
