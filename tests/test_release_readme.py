"""The student release lists only commands that work there: its README names no `make` target and no
`lmcourse` subcommand its own `lmcourse --help` lacks, that command lists no clone-only or TA-only
subcommand, and neither the grader nor the TAs' dependencies ship."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lmcourse.commands.main import main

CLONE_ONLY = {"build", "release", "solutions", "lab", "grade"}


@pytest.fixture(scope="module")
def rel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release") / "course"
    assert main(["release", str(out), "--all"]) == 0
    return out


def run_release_command(rel: Path, *args: str) -> subprocess.CompletedProcess:
    """``lmcourse ARGS`` run from the release's own package, not this clone's."""
    code = "import sys; from lmcourse.commands.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=rel, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(rel)})


def subcommands(help_text: str) -> set[str]:
    listed = re.search(r"\{([a-z,]+)\}", help_text)
    assert listed, help_text
    return set(listed.group(1).split(","))


def readme_commands(readme: str) -> list[str]:
    """The command lines of the README's shell blocks (comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    return [line.split("#")[0].strip() for block in blocks for line in block.splitlines() if line.split("#")[0].strip()]


def test_the_release_command_lists_what_works_there(rel):
    done = run_release_command(rel, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    listed = subcommands(done.stdout)
    assert {"doctor", "train", "links"} <= listed, listed
    assert not listed & CLONE_ONLY, f"the release's `lmcourse` lists {sorted(listed & CLONE_ONLY)}"


def test_grade_in_a_release_says_why_it_is_not_there(rel):
    done = run_release_command(rel, "grade", "01_ngram")
    assert done.returncode == 2 and "no grader" in done.stderr, done.stderr[-2000:]


def test_the_readme_names_only_those_commands(rel):
    listed = subcommands(run_release_command(rel, "--help").stdout)
    readme = (rel / "README.md").read_text(encoding="utf-8")
    commands = readme_commands(readme)
    assert any(c.startswith("lmcourse ") for c in commands), commands   # the README has a command list
    for command in commands:
        assert not command.startswith("make "), f"the release has no Makefile: {command}"
        if command.startswith("lmcourse "):
            assert command.split()[1] in listed, f"README: {command} (the release's lmcourse has {sorted(listed)})"
    assert not re.search(r"`(?:make \w|lmcourse (?:build|grade|solutions|lab|release))", readme)


def test_no_grader_and_no_ta_dependency_ships(rel):
    assert not (rel / "lmcourse" / "grading").exists() and not (rel / "lmcourse" / "authoring").exists()
    pyproject = (rel / "pyproject.toml").read_text(encoding="utf-8")
    assert "copydetect" not in pyproject and "similarity" not in pyproject
    assert '"nbgrader==' in pyproject            # Validate in the student's lab needs it
    assert "dependencies = [" in pyproject and '"torch==' in pyproject


def test_the_release_doctor_runs_without_a_grader(rel):
    done = run_release_command(rel, "doctor")
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "sandbox" not in done.stdout, done.stdout[-2000:]
