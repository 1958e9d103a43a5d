"""The first code cell of every notebook (lmcourse/authoring/bootstrap_cell.py): on a fresh Colab or
Kaggle runtime it installs the course, pinned, keeping the runtime's torch; after `make lab` it does
nothing. The simulated runtimes run the cell's real code in a fresh virtual environment without the
course (this environment's torch and numpy reused through a path entry, so nothing is downloaded),
with the platform's marker variables set and the repository URL pointing at a local clone."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import tomllib

from lmcourse.authoring import bootstrap
from lmcourse.authoring.build import master_to_source, masters
from lmcourse.commands import links
from tests.conftest import ROOT

MARKERS = {  # what each platform's runtime sets (the cell itself does not depend on them)
    "colab": {"COLAB_RELEASE_TAG": "release-colab_20261101-060000_RC00", "COLAB_GPU": "1"},
    "kaggle": {"KAGGLE_KERNEL_RUN_TYPE": "Interactive", "KAGGLE_URL_BASE": "https://www.kaggle.com",
               "KAGGLE_DATA_PROXY_TOKEN": "simulated"},
}


def test_the_cell_is_the_template_with_the_repository_and_ref_written_in():
    src = bootstrap.cell_source()
    assert f'REPOSITORY, REF = "{links.REPOSITORY}", "{links.REF}"' in src.splitlines()
    assert src.startswith("# @title ")            # Colab folds the code under this title
    compile(src, "bootstrap", "exec")
    other = bootstrap.cell_source("https://github.com/someone/fork", "abc1234")
    assert 'REPOSITORY, REF = "https://github.com/someone/fork", "abc1234"' in other


def test_the_cell_installs_what_pyproject_requires_of_a_notebook_but_never_torch():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    src = bootstrap.cell_source()
    needs = dict(re.findall(r'"(\w+)": "(\w+[<>=!~][^"]*)"', src))
    assert needs and all(req in deps for req in needs.values()), (needs, deps)
    assert "torch" not in needs and '"--no-deps"' in src


@pytest.mark.parametrize("master", masters(), ids=lambda p: p.stem)
def test_every_notebook_gets_the_buttons_and_the_cell_before_its_first_code_cell(master):
    nb = bootstrap.add_course_cells(master_to_source(master), f"notebooks/{master.stem}.ipynb")
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.source == bootstrap.cell_source() and first.id == "bootstrap"
    assert first.metadata["nbgrader"] == {"grade": False, "grade_id": "bootstrap", "locked": True,
                                          "schema_version": 3, "solution": False, "task": False}
    assert links.colab_url(f"notebooks/{master.stem}.ipynb") in nb.cells[0].source
    assert links.kaggle_url(f"notebooks/{master.stem}.ipynb") in nb.cells[0].source
    nbformat.validate(nb)


def test_after_make_lab_the_cell_prints_nothing():
    done = subprocess.run([sys.executable, "-c", bootstrap.cell_source()], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done


def _cells(clone: Path, name: str, ids: tuple[str, ...]) -> list[str]:
    """Cells of the clone's notebook as the build makes it, by id, in the notebook's order."""
    nb = bootstrap.add_course_cells(master_to_source(clone / "autograder" / "masters" / f"{name}.py"),
                                    f"notebooks/{name}.ipynb")
    found = [c for c in nb.cells if c.id in ids]
    assert [c.id for c in found] == list(ids)
    return [c.source for c in found]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A local clone of the course with the release tag the cell pins (pushed by the lead for real)."""
    path = tmp_path_factory.mktemp("remote") / "lmcourse"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(path)], check=True)
    tags = subprocess.run(["git", "-C", str(path), "tag", "--list", links.REF], capture_output=True, text=True)
    if not tags.stdout.strip():
        subprocess.run(["git", "-C", str(path), "tag", links.REF], check=True)
    return path


def _fresh_runtime(where: Path) -> Path:
    """A virtual environment without lmcourse that sees this one's packages (torch, numpy, pip, ...)
    through a path entry: the editable lmcourse of this environment is not on it (its .pth is not read)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    import torch

    (Path(purelib) / "zz_runtime_packages.pth").write_text(str(Path(torch.__file__).parents[1]) + "\n")
    return python


@pytest.mark.slow
@pytest.mark.parametrize("platform", sorted(MARKERS))
def test_a_fresh_runtime_installs_the_course_and_runs_the_notebook(platform, clone, tmp_path):
    python = _fresh_runtime(tmp_path / "venv")
    work = tmp_path / "content"          # Colab's /content, Kaggle's /kaggle/working: not in a clone
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(MARKERS[platform], HOME=str(tmp_path / "home"), MPLBACKEND="Agg", LMCOURSE_PROFILE="tiny",
               LMCOURSE_REPOSITORY=f"file://{clone}",   # instead of the GitHub URL: no network here
               PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0")  # build with this environment's setuptools, offline
    probe = subprocess.run([str(python), "-c", "import torch, numpy; import lmcourse"], cwd=work, env=env,
                           capture_output=True, text=True)
    assert "No module named 'lmcourse'" in probe.stderr, probe   # the runtime has torch, not the course
    cells = _cells(clone, "01_ngram", ("bootstrap", "setup", "corpus"))
    # the set-up cell, then the notebook's setup cell and its corpus cell (tiny profile), in one process
    # as in a kernel; then the set-up cell once more, which now has nothing to do. The whole notebook is
    # left out: its graded cells are the solution runs' and grading proofs' business, and take minutes.
    program = "\n".join([
        "import json, sys", "print('<<CELL>>', flush=True)", cells[0], "print('<<CELL>>', flush=True)", cells[1],
        "print('<<CELL>>', flush=True)", cells[2], "print('<<CELL>>', flush=True)", cells[0],
        "print('<<LMCOURSE>>', json.dumps(lmcourse.__file__))",
        # 01 counts (its setup loads no torch): a neural notebook's setup line, on the runtime's torch
        "print('<<CELL>>', flush=True)", "lmcourse.setup(seed=0)"])
    done = subprocess.run([str(python), "-c", program], cwd=work, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    _, first, setup, corpus, again, neural = done.stdout.split("<<CELL>>\n")
    import torch

    assert re.fullmatch(rf"lmcourse set-up: installed lmcourse 0\.1\.0 from git\+file://{re.escape(str(clone))}"
                        rf"@{re.escape(links.REF)}, kept this runtime's torch {re.escape(torch.__version__)}; "
                        r"corpus in \S+\n", first), first
    assert setup == "lmcourse: profile=tiny seed=0 (counting only: torch not loaded)\n", setup
    assert "device=cpu profile=tiny" in neural and "precision=fp32" in neural, neural
    assert "training sentences" in corpus, corpus     # the corpus cell read the fetched corpus
    assert again.split("<<LMCOURSE>>")[0] == "", again          # installed: the cell is silent
    installed = Path(json.loads(again.split("<<LMCOURSE>>")[1]))
    assert tmp_path / "venv" in installed.parents              # the course came from the clone, into the runtime
    assert not list((installed.parents[1]).glob("torch*")), "the runtime's torch must not be reinstalled"
