"""lmcourse.train's data-parallel branch (lmcourse.distributed): 2 CPU processes (gloo) compute what
1 process computes with the same global batch, and a checkpoint written by 2 processes resumes in 1
with the same next losses.

Tolerance: losses of the 2-process run equal the 1-process run's within rtol 1e-5, atol 1e-6
(float32 model; the only difference is the order in which gradients are summed: an all-reduce
across processes instead of accumulation in one).
"""

import os
import random
import shutil
import socket
import sys

import pytest
import torch
import torch.multiprocessing as mp

from lmcourse import distributed as D
from lmcourse.commands.train import main
from lmcourse.nn import GPT, GPTConfig
from lmcourse.train import TrainConfig, load_checkpoint, train

pytestmark = [pytest.mark.xdist_group("distributed"), pytest.mark.slow]

RTOL, ATOL = 1e-5, 1e-6
TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def make_text(path, n_lines=400, seed=0):
    rng = random.Random(seed)
    words = ["the", "king", "queen", "doth", "speak", "and", "we", "shall", "go", "to", "rome", "night", "love"]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 9))).capitalize() + "." for _ in range(n_lines)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def text(tmp_path):
    return make_text(tmp_path / "text.txt")


@pytest.fixture(autouse=True)
def _single_process(monkeypatch):
    """No torchrun variables leak in; one torch thread (tiny models: more threads only wait for each
    other on a loaded machine), put back after the test."""
    for name in TORCHRUN_VARS:
        monkeypatch.delenv(name, raising=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def args(text, ckpt, *more):
    # dropout on: the masks are seeded per (step, micro-batch), so they too do not depend on N
    return ["gpt", "--text", str(text), "--n_layer", "1", "--n_head", "2", "--n_embd", "16", "--block_size", "16",
            "--dropout", "0.1", "--batch_size", "8", "--micro_batch_size", "4", "--steps", "8", "--lr", "1e-2",
            "--warmup_steps", "2", "--eval_interval", "4", "--eval_batches", "3", "--sample_tokens", "0",
            "--no-progress", "--device", "cpu", "--threads", "1", "--checkpoint_path", str(ckpt), *more]


def _rank_main(rank, world, port, argv, out):
    # gloo over the loopback interface: no need for the host name to resolve (CI containers)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo0" if sys.platform == "darwin" else "lo")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
    code = main(argv)
    with open(os.path.join(out, f"rc{rank}"), "w") as f:
        f.write(str(code))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def history(path):
    return load_checkpoint(path)["history"]


@pytest.mark.timeout(300)  # a rank stuck in a collective would otherwise wait for gloo's 30-minute timeout
def test_two_processes_equal_one_and_resume_in_one(tmp_path, text, capsys):
    # 2 processes (gloo), as torchrun starts them: steps 1-4 of 8, then stop with a checkpoint
    ck2 = tmp_path / "two.pt"
    mp.spawn(_rank_main, args=(2, free_port(), args(text, ck2, "--stop_after", "4"), str(tmp_path)), nprocs=2)
    assert [(tmp_path / f"rc{r}").read_text() for r in range(2)] == ["0", "0"]
    state = load_checkpoint(ck2)
    assert state["world_size"] == 2 and state["step"] == 4 and len(state["samplers"]) == 2
    two = state["history"]

    # 1 process, same global batch (two micro-batches of 4, accumulated): all 8 steps
    ck1 = tmp_path / "one.pt"
    assert main(args(text, ck1)) == 0
    one = history(ck1)
    assert one["steps"] == list(range(1, 9))
    torch.testing.assert_close(two["train_loss"], one["train_loss"][:4], rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(two["grad_norm"], one["grad_norm"][:4], rtol=RTOL, atol=ATOL)
    assert two["val_steps"] == [0, 4]
    torch.testing.assert_close(two["val_loss"], one["val_loss"][:2], rtol=RTOL, atol=ATOL)

    # the 2-process checkpoint resumes in 1 process: steps 5-8 are the uninterrupted run's
    resumed = tmp_path / "resumed.pt"
    shutil.copy(ck2, resumed)
    capsys.readouterr()
    assert main(args(text, resumed, "--resume")) == 0
    assert "(resuming)" in capsys.readouterr().out
    after = history(resumed)
    assert after["steps"] == list(range(1, 9))
    torch.testing.assert_close(after["train_loss"][4:], one["train_loss"][4:], rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(after["val_loss"], one["val_loss"], rtol=RTOL, atol=ATOL)
    a, b = load_checkpoint(resumed)["model"], load_checkpoint(ck1)["model"]
    for name in b:
        torch.testing.assert_close(a[name], b[name], rtol=1e-4, atol=1e-5, msg=name)


def test_the_two_micro_batches_see_different_windows(tmp_path, text):
    """Were both processes drawing the same windows, the run above could not match: the 1-process run
    with one micro-batch of 8 (sampler of shard 0 only) differs from the one with two of 4."""
    assert main(args(text, tmp_path / "a.pt", "--steps", "3")) == 0
    assert main(args(text, tmp_path / "b.pt", "--steps", "3", "--micro_batch_size", "8")) == 0
    la, lb = history(tmp_path / "a.pt")["train_loss"], history(tmp_path / "b.pt")["train_loss"]
    assert max(abs(a - b) for a, b in zip(la, lb)) > 1e-3, (la, lb)
    assert D.shard_seed(0, 0) == 0 and len({D.shard_seed(3, k) for k in range(8)}) == 8
    assert D.shards_of(1, 2, 6) == [1, 3, 5] and D.shards_of(0, 1, 3) == [0, 1, 2]


def test_one_process_one_shard_is_the_course_loop():
    """With 1 process and 1 micro-batch a step is exactly a step of lmcourse.train.train."""
    tokens = torch.randint(0, 20, (3000,), generator=torch.Generator().manual_seed(0))
    cfg = TrainConfig(steps=6, batch_size=4, block_size=8, lr=1e-2, warmup_steps=2, eval_interval=3, eval_batches=2,
                      weight_decay=0.1, device="cpu", progress=False, quiet=True, seed=5)
    config = GPTConfig(vocab_size=20, block_size=8, n_layer=1, n_head=2, n_embd=16)
    torch.manual_seed(1)
    m1 = GPT(config)
    m2 = GPT(config)
    m2.load_state_dict(m1.state_dict())
    h1 = train(m1, tokens[:2500], tokens[2500:], cfg)
    h2 = train(m2, tokens[:2500], tokens[2500:], cfg, env=D.DistEnv())  # the data-parallel branch, one rank
    assert h2.train_loss == h1.train_loss and h2.grad_norm == h1.grad_norm and h2.lr == h1.lr
    assert h2.val_steps == h1.val_steps
    torch.testing.assert_close(h2.val_loss, h1.val_loss, rtol=1e-6, atol=1e-7)


def test_batch_split_and_checkpoint_messages(tmp_path, text, capsys):
    assert main(args(text, tmp_path / "x.pt", "--micro_batch_size", "3")) == 2
    assert "micro_batch_size=3 must divide batch_size=8" in capsys.readouterr().err
    ck = tmp_path / "c.pt"
    assert main(args(text, ck, "--steps", "2")) == 0
    capsys.readouterr()
    assert main(args(text, ck, "--steps", "4", "--resume", "--micro_batch_size", "8")) == 2
    err = capsys.readouterr().err
    assert "2 micro-batches of 4" in err and "--micro_batch_size 4" in err
    assert main(args(text, ck, "--steps", "4", "--resume", "--batch_size", "16")) == 2
    assert "batch_size=8" in capsys.readouterr().err
    with pytest.raises(D.BatchSplitError, match="run at most 2 processes"):
        D.shard_count(8, 64, 4, 3)
