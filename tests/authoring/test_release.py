"""The student release (`lmcourse release`): nothing secret in it, and it installs."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from lmcourse.authoring.release import ReleaseError, count_words, grader_torch, release, secrets_in
from lmcourse.commands.main import main
from lmcourse.commands.paths import repo_root
from lmcourse.grading.template import hidden_test_lines

ROOT = repo_root()


def _solution_lines() -> list[str]:
    """Non-trivial lines between the masters' solution markers that appear nowhere outside them:
    the answers themselves."""
    inside_lines, outside = [], set()
    for master in sorted((ROOT / "autograder" / "masters").glob("*.py")):
        inside = False
        for line in master.read_text(encoding="utf-8").splitlines():
            s = line.strip()
            if s.startswith("### BEGIN SOLUTION"):
                inside = True
            elif s.startswith("### END SOLUTION"):
                inside = False
            elif inside and len(s) >= 24 and not s.startswith("#"):
                inside_lines.append(s)
            else:
                outside.add(s)
    return [s for s in inside_lines if s not in outside]


def _hidden_lines() -> list[str]:
    """Hidden-test lines of the source notebooks that no visible part of them also has."""
    hidden, visible = [], set()
    for path in sorted((ROOT / "autograder" / "source").glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        hidden += hidden_test_lines(nb)
        inside = False
        for cell in nb.cells:
            for line in cell.source.splitlines():
                s = line.strip()
                inside = (inside or s.startswith("### BEGIN HIDDEN TESTS")) and not s.startswith("### END HIDDEN")
                if not inside:
                    visible.add(s)
    return [s for s in hidden if s not in visible]


@pytest.fixture(scope="module")
def rel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release") / "course"
    assert main(["release", str(out), "--all"]) == 0
    return out


def _lines(folder: Path) -> dict[Path, set[str]]:
    """Each text file's stripped lines (a notebook's: its cells' sources and outputs' text)."""
    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and p.suffix == ".ipynb":
            nb = nbformat.read(p, as_version=4)
            text = "\n".join([c.source for c in nb.cells] + [str(o.get("text", "")) for c in nb.cells
                                                             for o in c.get("outputs", [])])
        elif p.is_file() and p.suffix in (".py", ".md", ".toml", ".txt", ".json", ".cfg"):
            text = p.read_text(encoding="utf-8", errors="replace")
        else:
            continue
        out[p] = {line.strip() for line in text.splitlines()}
    return out


def test_release_holds_the_student_course_and_no_grader_folders(rel):
    names = sorted(p.name for p in (rel / "notebooks").glob("*.ipynb"))
    from tests.conftest import NOTEBOOKS
    assert names == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")) == [f"{n}.ipynb" for n in NOTEBOOKS]
    assert (rel / "lmcourse" / "checks.py").is_file() and (rel / "lmcourse" / "marking" / "rules.py").is_file()
    assert (rel / "README.md").is_file() and (rel / "pyproject.toml").is_file()
    for secret in ("solutions", "autograder", "lmcourse/authoring", "tests"):
        assert not (rel / secret).exists(), secret
    assert not list(rel.rglob("__pycache__"))
    readme = (rel / "README.md").read_text()
    assert "hidden tests" in readme and "solutions/" not in readme and "autograder" not in readme


def test_no_hidden_test_or_solution_in_the_release(rel):
    lines = _lines(rel)
    hidden, solutions = _hidden_lines(), _solution_lines()
    assert len(hidden) > 50 and len(solutions) > 50     # the scan has something to find
    for path, have in lines.items():
        leaked = [h for h in hidden if h in have]
        assert not leaked, f"{path.relative_to(rel)} holds hidden-test lines: {leaked[:3]}"
    for path, have in lines.items():
        if path.suffix == ".ipynb":
            leaked = [s for s in solutions if s in have]
            assert not leaked, f"{path.relative_to(rel)} holds solution lines: {leaked[:3]}"
            # multiple choice: the hidden check that names the right letter
            assert not re.search(r"check_choice\([^)]*correct=", "\n".join(have)), path.name
    assert secrets_in(rel) == []


def test_the_scan_finds_a_marker_and_refuses(tmp_path):
    """A stale notebooks/ holding a hidden-test block is not published (and the scan can fail)."""
    fake = tmp_path / "course"
    (fake / "notebooks").mkdir(parents=True)
    (fake / "lmcourse").mkdir()
    (fake / "pyproject.toml").write_text('[project]\nname = "x"\nreadme = "README.md"\n')
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "x = 1\n### BEGIN HIDDEN TESTS\ncheck_choice(answer_q1, 'ABCD', 'q1', correct='B')\n### END HIDDEN TESTS")])
    nbformat.write(nb, fake / "notebooks" / "01_x.ipynb")
    with pytest.raises(ReleaseError, match="01_x.ipynb"):
        release(fake, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_release_imports_from_its_folder(rel):
    """The notebooks' imports work from the release alone (not from this clone), without authoring."""
    code = ("import lmcourse, lmcourse.checks, lmcourse.marking.rules, lmcourse.reference.decoding, lmcourse.nn, "
            "importlib.util as u; from pathlib import Path; "
            "assert Path(lmcourse.__file__).resolve().parent == Path('lmcourse').resolve(), lmcourse.__file__; "
            "s = u.find_spec('lmcourse.authoring'); "
            # this dev venv's editable install finds the clone's copy; the release has none of its own
            "assert s is None or not s.origin.startswith(str(Path('.').resolve())), s; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], cwd=rel, capture_output=True, text=True, timeout=300,
                       env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(rel)})
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


@pytest.mark.slow
def test_release_builds_a_wheel_offline(rel, tmp_path):
    """pip builds the release into a wheel with no network and no build isolation; the wheel holds
    the package, the lab config and no authoring tools."""
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "-w", str(tmp_path), str(rel)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (wheel,) = tmp_path.glob("lmcourse-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "lmcourse/checks.py" in names and any(n.startswith("lmcourse/labconfig/") for n in names)
    assert not any(n.startswith("lmcourse/authoring") for n in names)


def test_the_readme_counts_the_notebooks_it_ships(tmp_path):
    """The release README's count is that of the notebooks released, not a number written by hand."""
    fake = tmp_path / "course"
    (fake / "notebooks").mkdir(parents=True)
    (fake / "lmcourse").mkdir()
    (fake / "pyproject.toml").write_text('[project]\nname = "x"\nreadme = "README.md"\n')
    for name in ("01_a", "02_b", "03_c"):
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]),
                       fake / "notebooks" / f"{name}.ipynb")
    release(fake, tmp_path / "out")
    assert (tmp_path / "out" / "README.md").read_text().splitlines()[2].startswith("Three Jupyter notebooks")


def test_the_package_description_states_no_count():
    """pyproject.toml's description cannot be generated, so it names no count that goes stale."""
    description = re.search(r'(?m)^description = "(.*)"$', (ROOT / "pyproject.toml").read_text()).group(1)
    words = {w.lower() for w in re.findall(r"[A-Za-z]+|\d+", description)}
    assert not words & ({count_words(n).lower() for n in range(1, 30)} | {str(n) for n in range(1, 30)}), description


def _fake_course(tmp_path: Path) -> Path:
    fake = tmp_path / "course"
    (fake / "notebooks").mkdir(parents=True)
    shutil.copytree(ROOT / "lmcourse", fake / "lmcourse", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", fake / "pyproject.toml")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]),
                   fake / "notebooks" / "01_a.ipynb")
    return fake


def test_the_release_installs_the_graders_torch_cpu_build_without_a_gpu(tmp_path, monkeypatch, capsys):
    """The README's install lines, run as a dry run on Linux x86_64 without an NVIDIA GPU, ask pip
    for the grader's torch version from PyTorch's CPU index; the release's pyproject pins it too."""
    from lmcourse.commands import setup_torch

    out = tmp_path / "out"
    release(_fake_course(tmp_path), out)
    version = grader_torch()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), version
    readme = (out / "README.md").read_text()
    block = readme.split("```bash\n")[1].split("```")[0].splitlines()
    torch_line = next(line for line in block if "setup_torch.py" in line)
    assert block.index(torch_line) < next(i for i, line in enumerate(block) if line.startswith("pip install -e ."))
    argv = shlex.split(torch_line.split("#")[0])
    assert argv[:2] == ["python", "lmcourse/commands/setup_torch.py"] and (out / argv[1]).is_file()
    assert f"torch=={version}" in argv
    # the script the release ships, on a machine with no NVIDIA GPU and the CPU index reachable
    monkeypatch.setattr(setup_torch, "torch_importable", lambda python: None)
    monkeypatch.setattr(setup_torch.platform, "system", lambda: "Linux")
    monkeypatch.setattr(setup_torch.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(setup_torch, "has_nvidia_gpu", lambda: False)
    monkeypatch.setattr(setup_torch, "index_reachable", lambda: True)
    monkeypatch.setattr(setup_torch.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    assert setup_torch.main([*argv[2:], "--dry-run"]) == 0
    said = capsys.readouterr().out
    assert f"--extra-index-url {setup_torch.CPU_INDEX}" in said and f"torch=={version}+cpu" in said, said
    assert "no NVIDIA GPU" in said
    pins = re.findall(r'"torch[^"]*"', (out / "pyproject.toml").read_text())
    assert pins == [f'"torch=={version}"'], pins


def test_a_release_says_which_notebooks_or_writes_nothing(tmp_path, capsys):
    """Without --through or --all nothing is written: a release for a graded class must not carry the
    reference code (the answers) of notebooks not yet due."""
    out = tmp_path / "course"
    assert main(["release", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--through NN_name for a graded class" in err and "--all" in err and not out.exists()
    assert main(["release", str(out), "--all", "--through", "01_ngram"]) == 2 and not out.exists()
