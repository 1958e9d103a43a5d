"""A notebook handed in from Colab (File > Download > Download .ipynb) grades like any other.

Colab writes nbformat 4.0 (no top-level cell ids: its ids are in each cell's metadata), adds
``outputId``, ``executionInfo`` and a ``colab`` key to cells, and ``colab`` / ``accelerator`` /
its own kernelspec to the notebook. The shape below is that of notebooks Colab saves."""

from __future__ import annotations

import csv
import json

import nbformat
import pytest

from lmcourse.commands.main import main
from tests.grading.test_grade import AUTO_MAX, SANDBOX, A, perfect

pytestmark = pytest.mark.slow


def colab_saved(nb: nbformat.NotebookNode) -> dict:
    """``nb`` as Colab downloads it after a run on a T4 runtime."""
    data = json.loads(nbformat.writes(nb))
    data["nbformat_minor"] = 0
    data["metadata"] = {"colab": {"provenance": [], "gpuType": "T4", "name": f"{A}.ipynb"},
                        "kernelspec": {"name": "python3", "display_name": "Python 3"},
                        "language_info": {"name": "python"}, "accelerator": "GPU"}
    for i, cell in enumerate(data["cells"]):
        cell.pop("id", None)
        cell["metadata"]["id"] = f"Xk3{i:05d}qZ"
        if cell["cell_type"] == "code":
            cell["metadata"].update(colab={"base_uri": "https://localhost:8080/"},
                                    outputId=f"6f1c2a{i:02d}-0d4e-4b7a-9c1e-5a8b7c6d{i:04d}",
                                    executionInfo={"status": "ok", "timestamp": 1764000000000 + i, "user_tz": 0,
                                                   "elapsed": 120, "user": {"displayName": "Ada", "userId": "1"}})
            cell["execution_count"] = i
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["ran on colab\n"]}]
    return data


def test_a_colab_download_grades_like_the_same_answers_from_jupyterlab(tmp_path):
    colab = colab_saved(perfect())
    assert "bootstrap" in json.dumps(colab), "rebuild the notebooks (lmcourse build): the set-up cell is missing"
    for student, text in {"lab": nbformat.writes(perfect()), "colab": json.dumps(colab, indent=1)}.items():
        folder = tmp_path / "class" / "submitted" / student / A
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text(text)
    out = tmp_path / "grades"
    assert main(["grade", A, str(tmp_path / "class"), "--out", str(out), "-j", "2", "--no-progress",
                 "--gradebook", "none", "--notebook-timeout", "300", *SANDBOX]) == 0
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").read_text().splitlines())}
    assert rows["colab"]["status"] == "graded" and rows["colab"]["flags"] == "", rows["colab"]
    assert float(rows["colab"]["score"]) == float(rows["lab"]["score"]) == AUTO_MAX, rows
    per_test = [k for k in rows["lab"] if k.endswith("_tests")]
    assert [rows["colab"][k] for k in per_test] == [rows["lab"][k] for k in per_test]
