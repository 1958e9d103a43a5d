"""bench/gpu_check.py (make gpu-check): its table, exit codes and CPU side; the GPU figures need a GPU."""

import importlib.util
import json
import sys

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "bench" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = gpu_check          # its dataclass looks its module up there
spec.loader.exec_module(gpu_check)


def test_a_failed_check_fails_the_run_and_a_skip_does_not():
    Row = gpu_check.Row
    assert gpu_check.exit_code([Row("a"), Row("b", "skipped")]) == 0
    assert gpu_check.exit_code([Row("a"), Row("b", "FAIL")]) == 1
    text = gpu_check.table([Row("notebook 02_rnn", "ok", 3.25, "nbclient"), Row("x", "skipped", 0, "needs y")])
    assert "notebook 02_rnn" in text and "skipped" in text and "3.2" in text


def test_without_a_gpu_it_says_so_and_exits_2(monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main([]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


def test_a_notebook_becomes_a_script_without_its_magics(tmp_path):
    nb = {"cells": [{"cell_type": "markdown", "source": "# title"},
                    {"cell_type": "code", "source": ["%matplotlib inline\n", "x = 1\n"]},
                    {"cell_type": "code", "source": "!pip install y\nprint(x)"}]}
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(nb))
    assert gpu_check.notebook_script(path) == "x = 1\nprint(x)\n"


@pytest.mark.slow
def test_the_cpu_side_runs_end_to_end(monkeypatch, capsys):
    """--allow-cpu: a training run to its summary line, the fp16 row skipped with its reason, and
    greedy decoding equal to transformers' on the same weights."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code = gpu_check.main(["--allow-cpu", "--notebooks", "--tasks", "gpt", "--steps", "10"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "train gpt (tiny, card default)  ok" in out and "tokens/s" in out
    assert "fp16 with a gradient scaler needs a CUDA GPU" in out
    assert "ids equal" in out or "needs transformers" in out
