import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "autograder" / "masters").glob("[0-9][0-9]_*.py"))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(autouse=True, scope="session")
def _no_display():
    os.environ.setdefault("MPLBACKEND", "Agg")
