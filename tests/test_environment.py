"""environment.yml (conda) and pyproject.toml (pip) describe the same environment."""

import re

import tomllib
import yaml

from tests.conftest import ROOT


def _name(req: str) -> str:
    return re.split(r"[<>=!~ ;\[]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r): r.replace(" ", "") for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted.update({_name(r): r.replace(" ", "") for r in extra})
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d for d in env["dependencies"] if isinstance(d, dict))["pip"]
    got = {_name(r): r.replace(" ", "") for r in pip if not r.startswith("-")}  # -e ., pip options
    assert set(got) == set(wanted), f"only in one file: {sorted(set(got) ^ set(wanted))}"
    for name, req in wanted.items():
        if name == "torch":  # conda pins the CPU build CI installs; pyproject allows any >= 2.4
            assert got[name] == "torch==2.13.0" and req == "torch>=2.4"
        else:
            assert got[name] == req, f"{name}: pyproject says {req!r}, environment.yml says {got[name]!r}"
    assert any(r.startswith("-e") for r in pip), "environment.yml must install the lmcourse package itself"
    # the CPU variant, as the Makefile's set-up chooses without a GPU (lmcourse/commands/setup_torch.py)
    from lmcourse.commands.setup_torch import CPU_INDEX

    assert f"--extra-index-url {CPU_INDEX}" in pip, "environment.yml must read PyTorch's CPU wheel index"
    assert str(env["dependencies"][0]).startswith("python=3.1")
