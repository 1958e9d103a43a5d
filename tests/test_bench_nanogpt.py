"""bench/bench_nanogpt.py's own parts on the CPU at baby sizes: the data both sides read, the course side to a
target, the peer's command and the table. The peer itself (a nanoGPT checkout) is not needed: without one its
row says why it did not run."""

import importlib.util
import pickle
import sys
from ast import literal_eval

import numpy as np

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("bench_nanogpt", ROOT / "bench" / "bench_nanogpt.py")
bench = importlib.util.module_from_spec(spec)
sys.modules["bench_nanogpt"] = bench          # its dataclasses look their module up there
spec.loader.exec_module(bench)

TEXT = "".join(f"To be, or not to be, that is the question {i % 7}.\n" for i in range(400))


def test_the_data_is_nanogpts_layout_cut_90_10_by_position(tmp_path):
    info = bench.prepare_data(*bench.split_90_10(TEXT), tmp_path)
    train = np.fromfile(tmp_path / "train.bin", dtype=np.uint16)
    val = np.fromfile(tmp_path / "val.bin", dtype=np.uint16)
    meta = pickle.loads((tmp_path / "meta.pkl").read_bytes())
    assert len(train) == int(len(TEXT) * 0.9) and len(train) + len(val) == len(TEXT)
    assert meta["vocab_size"] == len(set(TEXT)) == info["vocab_size"]
    assert "".join(meta["itos"][i] for i in np.concatenate([train, val])) == TEXT
    assert sorted(meta["itos"].values()) == list(meta["itos"].values())        # sorted characters, as prepare.py
    assert bench.read_split(tmp_path, "val").tolist() == val.tolist()


def test_the_peers_flags_are_its_configurators_types(tmp_path):
    """nanoGPT's configurator literal_evals each --key=value and asserts the type of its default."""
    defaults = {"eval_iters": 200, "dropout": 0.0, "bias": False, "learning_rate": 6e-4, "compile": True,
                "device": "cuda", "dataset": "openwebtext", "min_lr": 6e-5, "max_iters": 600000, "grad_clip": 1.0}
    cmd = bench.nanogpt_command(tmp_path / "nanoGPT", tmp_path / "data", tmp_path / "out", bench.BABY, "cpu")
    flags = dict(arg[2:].split("=", 1) for arg in cmd[3:])
    for key, default in defaults.items():
        try:
            value = literal_eval(flags[key])
        except (SyntaxError, ValueError):
            value = flags[key]
        assert type(value) is type(default), key
    assert flags["dataset"] == str(tmp_path / "data") and flags["dtype"] == "float32" and flags["compile"] == "False"
    assert flags["n_layer"] == "2" and flags["eval_interval"] == "50" and flags["lr_decay_iters"] == "600"


def test_a_run_is_stopped_at_its_first_evaluation_at_the_target(tmp_path):
    lines = "; ".join(f"print('step {s}: train loss 9.0, val loss {v}', flush=True)"
                      for s, v in ((0, 4.2), (50, 2.6), (100, 2.4), (150, 2.0)))
    script = f"import time; {lines}; time.sleep(60)"
    got = bench.time_to_target("x", [sys.executable, "-c", script], tmp_path, 2.5, timeout=30)
    assert got.step == 100 and got.val_loss == 2.4 and got.seconds is not None and got.seconds < 20
    missed = bench.time_to_target("x", [sys.executable, "-c", lines], tmp_path, 1.0, timeout=30)
    assert missed.seconds is None and "without reaching 1.0" in missed.note and missed.val_loss == 2.0


def test_the_course_side_reaches_a_target_and_the_peer_says_why_it_did_not_run(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(TEXT)
    sizes = bench.Sizes(n_layer=1, n_head=1, n_embd=16, block_size=16, batch_size=8, dropout=0.0, lr=1e-2,
                        min_lr=1e-3, warmup=5, max_steps=200, eval_interval=20, eval_batches=4)
    course, peer = bench.compare(None, sizes, "cpu", 2.0, False, 120, text_file=text, log=lambda *a: None)
    assert course.seconds is not None and course.val_loss <= 2.0 and course.step % 20 == 0, course
    assert peer.seconds is None and "no checkout given (--nanogpt PATH" in peer.note
    table = bench.result_table(course, peer, 2.0)
    assert "course" in table and "nanoGPT" in table and "a side did not reach the target" in table


def test_the_ratio_is_course_over_nanogpt():
    course, peer = bench.SideResult("course", 30.0, 2000, 1.46), bench.SideResult("nanoGPT", 60.0, 2250, 1.47)
    assert bench.ratio_text(course, peer) == "0.50x"
    assert "0.50x" in bench.result_table(course, peer, 1.47) and "30.0" in bench.result_table(course, peer, 1.47)


def test_a_checkouts_tiny_shakespeare_is_cut_90_10_and_the_plays_keep_the_courses_split(tmp_path):
    (tmp_path / "data" / "shakespeare_char").mkdir(parents=True)
    (tmp_path / "data" / "shakespeare_char" / "input.txt").write_text(TEXT)
    train, val, source = bench.choose_text(tmp_path, None)
    assert (train, val) == bench.split_90_10(TEXT) and "cut 90/10" in source
    from lmcourse.data import load_shakespeare

    train, val, source = bench.choose_text(None, None)
    assert val == load_shakespeare(quiet=True).text("val") and "course's split" in source
