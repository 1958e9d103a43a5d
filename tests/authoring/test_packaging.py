"""What a wheel of lmcourse ships: the package data `lmcourse lab` needs besides the code."""

import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT

LABCONFIG = ROOT / "lmcourse" / "labconfig"


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory):
    """The file names in a wheel built (offline, without build isolation) from a copy of the
    project: pyproject.toml, README.md and the lmcourse package."""
    src = tmp_path_factory.mktemp("project")
    shutil.copy(ROOT / "pyproject.toml", src)
    shutil.copy(ROOT / "README.md", src)
    shutil.copytree(ROOT / "lmcourse", src / "lmcourse", ignore=shutil.ignore_patterns("__pycache__"))
    out = src / "dist"
    code = f"import setuptools.build_meta as b; print(b.build_wheel({str(out)!r}))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheel = out / proc.stdout.strip().splitlines()[-1]
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_the_wheel_ships_the_student_lab_config(wheel_names):
    files = sorted(p.relative_to(ROOT).as_posix() for p in LABCONFIG.rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts)
    assert "lmcourse/labconfig/student/jupyter_server_config.json" in files
    assert "lmcourse/labconfig/student/labconfig/page_config.json" in files
    missing = [f for f in files if f not in wheel_names]
    assert not missing, f"not in the wheel (pyproject.toml [tool.setuptools.package-data]): {missing}"
    assert "lmcourse/commands/main.py" in wheel_names
