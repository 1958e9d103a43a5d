"""`lmcourse grade gradescope ASSIGNMENT --try NOTEBOOK`: the zip tried here on one notebook, as
Gradescope would run it, before it is uploaded.

In a scratch folder standing in for ``/autograder``: the zip unpacked as Gradescope unpacks it,
``setup.sh`` run with its apt and pip steps only printed (``LMCOURSE_GS_DRY_RUN``; the Python
running this command stands in for the venv they would install, so nothing is installed and the
course's own venv is never changed), the notebook put in ``submission/``, ``run_autograder`` run,
and its ``results.json`` printed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# the variable run_autograder reads for its root (lmcourse.grading.gradescope writes the scripts that
# read it and imports this module: the name is repeated here rather than imported back)
ROOT_ENV = "LMCOURSE_AUTOGRADER_ROOT"


def unpack(zip_path: Path, root: Path) -> None:
    """As Gradescope does: the zip into ROOT/source, run_autograder copied to ROOT (modes kept)."""
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            target = root / "source" / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod((info.external_attr >> 16) & 0o777 or 0o644)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")


def env_for(root: Path) -> dict[str, str]:
    """The scripts' environment here: the scratch root, this Python's environment as the venv,
    setup.sh's installs printed, not run."""
    return {**os.environ, ROOT_ENV: str(root), "LMCOURSE_GS_VENV": sys.prefix, "LMCOURSE_GS_DRY_RUN": "1"}


def try_zip(zip_path: Path, notebook: Path, scratch: Path, timeout: float = 3600,
            as_name: str | None = None) -> tuple[int, Path]:
    """Run ``zip_path`` on ``notebook`` under ``scratch/autograder``; the exit status (0 when
    results.json was written) and the path of results.json. Prints both scripts' output.
    ``as_name``: the name the notebook is uploaded under (default its own)."""
    root = scratch / "autograder"
    unpack(zip_path, root)
    (root / "submission").mkdir(parents=True)
    shutil.copyfile(notebook, root / "submission" / (as_name or notebook.name))
    env = env_for(root)
    for name, cmd in (("setup.sh (dry run: apt and pip only printed)", ["bash", str(root / "source" / "setup.sh")]),
                      ("run_autograder", [str(root / "run_autograder")])):
        print(f"--- {name}", flush=True)
        done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
        print((done.stdout + done.stderr).rstrip(), flush=True)
        if done.returncode != 0:
            print(f"{name} failed (exit {done.returncode}): the zip would fail on Gradescope too", file=sys.stderr)
            return 1, root / "results" / "results.json"
    return (0 if (root / "results" / "results.json").is_file() else 1), root / "results" / "results.json"
