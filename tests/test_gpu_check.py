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
    assert gpu_check._tail("\n\x1b[31mValueError\x1b[39m: x\n") == "ValueError: x"   # IPython's colours left out


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


def test_the_wheels_it_lacks_are_named_with_what_goes_without_them(monkeypatch):
    monkeypatch.setattr(gpu_check, "_have", lambda m: m not in ("nbclient", "transformers"))
    line = gpu_check.missing_wheels()
    assert "nbclient" in line and "transformers" in line and "ipykernel" not in line.split("(")[0]
    assert "plain scripts" in line and "decoding check is skipped" in line
    monkeypatch.setattr(gpu_check, "_have", lambda m: True)
    assert gpu_check.missing_wheels() == ""


def test_a_missing_transformers_is_a_visible_skip(monkeypatch):
    monkeypatch.setattr(gpu_check, "_have", lambda m: m != "transformers")
    [row] = gpu_check.decode_rows("cpu", gpt2_small=False, new_tokens=4)
    assert row.status == "skipped" and "needs transformers" in row.figures


GOOD = ("  10 steps of 8 x 32, lr 0.005, 1 process(es) on cuda, 1 thread(s) each, compile on, amp fp16+GradScaler\n"
        "--- sample ---\nabc\n--------------\n"
        "done: 10/10 steps, val loss 3.7059 (5.346 bits/char), 93,604 tokens/s, wall 0.0 s, 1 x cuda, MFU 7.0% (6 N)")


@pytest.mark.parametrize("case, returncode, stdout, forced, sample, why", [
    ("crash after training", 1, GOOD.split("--- sample")[0], None, True, "exit 1"),
    ("no summary line", 0, GOOD.rsplit("\n", 1)[0], None, True, "no summary line"),
    ("no sample", 0, GOOD.replace("--- sample ---", ""), None, True, "no sample"),
    ("fp16 forced, bf16 used", 0, GOOD.replace("fp16+GradScaler", "bf16"), "fp16", True, "was not used: amp bf16"),
])
def test_a_training_run_fails_its_row(case, returncode, stdout, forced, sample, why):
    row = gpu_check.train_row("train gpt", returncode, stdout, "RuntimeError: boom", 1.0, forced, sample)
    assert row.status == "FAIL" and why in row.figures, case


def test_a_good_training_run_shows_its_precision_and_figures():
    row = gpu_check.train_row("train gpt", 0, GOOD, "", 1.0, "fp16", sample=True)
    assert row.status == "ok"
    assert "amp fp16+GradScaler" in row.figures and "93,604 tokens/s" in row.figures and "MFU 7.0%" in row.figures
    no_sample = gpu_check.train_row("train mlm", 0, GOOD.replace("--- sample ---", ""), "", 1.0, None, sample=False)
    assert no_sample.status == "ok"


def test_over_the_budget_is_shown_and_is_no_failure():
    over = gpu_check.total_row(400.0, 360.0)
    assert over.status == "over" and "budget 360 s" in over.figures
    assert gpu_check.total_row(100.0, 360.0).status == "ok"
    assert gpu_check.exit_code([gpu_check.Row("a"), over]) == 0


def test_notebooks_run_at_once_keep_their_order(monkeypatch):
    import time

    def fake(name, env, timeout):
        time.sleep(0.2 if name == "a" else 0.0)            # the first finishes last
        return gpu_check.Row(f"notebook {name}")

    monkeypatch.setattr(gpu_check, "run_notebook", fake)
    t0 = time.perf_counter()
    rows = gpu_check.run_notebooks(["a", "b", "c"], {}, 10, jobs=3)
    assert [r.check for r in rows] == ["notebook a", "notebook b", "notebook c"]
    assert time.perf_counter() - t0 < 0.4


def test_a_failing_notebook_script_fails_its_row(monkeypatch, tmp_path):
    """Without nbclient a notebook runs as a script; an error in it is a FAIL with its last line."""
    nb = {"cells": [{"cell_type": "code", "source": "raise ValueError('the GPU path broke')"}]}
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "99_x.ipynb").write_text(json.dumps(nb))
    monkeypatch.setattr(gpu_check, "ROOT", tmp_path)
    monkeypatch.setattr(gpu_check, "_have", lambda m: False)
    row = gpu_check.run_notebook("99_x", {}, 60)
    assert row.status == "FAIL" and "as a script" in row.figures and "the GPU path broke" in row.figures


@pytest.mark.slow
def test_the_quick_cpu_side_runs_end_to_end(monkeypatch, capsys):
    """--allow-cpu --quick: the gpt run, the GPU-only rows skipped with their reasons, a decoding row per way
    with its ids equal to transformers', and the training ratio skipped without a nanoGPT checkout."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("LMCOURSE_NANOGPT", raising=False)
    code = gpu_check.main(["--allow-cpu", "--quick"])
    out = capsys.readouterr().out.split("check  ")[-1]          # the final table
    assert code == 0, out
    assert "train gpt (tiny, card default)" in out and "train mlm" not in out and "notebook" not in out
    assert "sync-free validation" in out and "needs a CUDA GPU" in out
    assert out.count("decode: ") >= 4 or "needs transformers" in out
    assert "ids DIFFER" not in out and "no nanoGPT checkout" in out and "budget 300 s" in out


def test_the_training_ratio_row(monkeypatch, tmp_path):
    bench = gpu_check._bench("bench_nanogpt")
    calls = []

    def fake(nanogpt, sizes, device, target, fast, timeout, log):
        calls.append((sizes, fast, target))
        return bench.SideResult("course", 30.0, 2000, 1.46), bench.SideResult("nanoGPT", 60.0, 2250, 1.47)

    monkeypatch.setattr(bench, "compare", fake)
    rows = gpu_check.training_ratio_rows(tmp_path, "cuda", 1.47, quick=False, timeout=10)
    assert [c[1] for c in calls] == [True, False] and calls[0][0] == bench.FULL
    assert rows[0].status == "ok" and "0.50x" in rows[0].figures and "fast paths" in rows[0].check
    calls.clear()
    assert len(gpu_check.training_ratio_rows(tmp_path, "cpu", 2.5, quick=True, timeout=10)) == 1
    assert calls == [(bench.BABY, False, 2.5)]                  # the CPU: baby sizes, the plain loop
    monkeypatch.setattr(bench, "compare", lambda *a, **k: (bench.SideResult("course", 30.0, 2000, 1.46),
                                                           bench.SideResult("nanoGPT", note="ended (exit 1)")))
    [missed] = gpu_check.training_ratio_rows(tmp_path, "cuda", 1.47, quick=True, timeout=10)
    assert missed.status == "FAIL" and "nanoGPT: ended (exit 1)" in missed.figures
    [skipped] = gpu_check.training_ratio_rows(None, "cuda", 1.47, quick=True, timeout=10)
    assert skipped.status == "skipped" and "--nanogpt PATH" in skipped.figures


def test_a_decoding_way_whose_ids_differ_fails_its_row(monkeypatch):
    bench = gpu_check._bench("bench_decode")
    monkeypatch.setattr(gpu_check, "_have", lambda m: True)
    monkeypatch.setattr(bench, "versus_transformers", lambda *a: [
        bench.DecodeRow("transformers generate", 1.0, True), bench.DecodeRow("course static cache", 0.25, False),
        bench.DecodeRow("course static cache + CUDA graph", None, None, "not run: no CUDA")])
    rows = gpu_check.decode_rows("cpu", gpt2_small=True, new_tokens=100)
    assert [r.status for r in rows] == ["ok", "FAIL", "skipped"]
    assert "4.00x generate, ids DIFFER" in rows[1].figures and "GPT-2 small size" in rows[0].check
