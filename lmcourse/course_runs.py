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
    command: str       # what trained it (the notebook's recipe, more steps)
    steps: int
    val_loss: float    # the command's last validation loss, nats


RUNS = {
    "05_gpt_cpu": CourseRun(
        file="05_gpt_cpu_5000.pt",
        sha256="1dc6ed497dd47b8a357477d9188959cae8e5614a53098fa2a8714ef5331300fe",
        command="lmcourse train gpt --profile cpu --steps 5000 --seed 0 --threads 1",
        steps=5000, val_loss=1.4818),
}


def _path(run: CourseRun) -> Path:
    return Path(str(resources.files("lmcourse") / "data_files" / run.file))


def load_course_run(name: str, device: torch.device | str = "cpu"):
    """(model, run, extra): the shipped model ``name`` of :data:`RUNS` in float32, eval mode, on ``device``, its
    :class:`CourseRun` and the rest of what was saved (the vocabulary)."""
    from .nn import load_gpt

    run = RUNS.get(name)
    if run is None:
        raise CourseRunError(f"no course run named {name!r}; the course ships {', '.join(sorted(RUNS))}")
    path = _path(run)
    if not path.is_file():
        raise CourseRunError(f"{path} is missing: reinstall the course (`pip install -e .` in its folder), or "
                             f"make it yourself with `{run.command} --checkpoint_path {path}`")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != run.sha256:
        raise CourseRunError(f"{path} is not the file the course made (sha256 {digest[:12]}…, expected "
                             f"{run.sha256[:12]}…): reinstall the course")
    model, extra = load_gpt(path, device)
    return model.float(), run, extra
