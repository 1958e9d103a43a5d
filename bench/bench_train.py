"""Throughput of lmcourse.train for the character models of notebook 02, at a profile's sizes.

    python bench/bench_train.py                  # cpu profile sizes, Shakespeare corpus
    python bench/bench_train.py --steps 50       # shorter
    python bench/bench_train.py --text FILE      # any UTF-8 text (split 90 % / 10 % by position)
    python bench/bench_train.py --profile gpu    # the gpu profile's sizes (on whatever device)
    python bench/bench_train.py --threads 2      # two torch threads instead of the default one (see below)

Models (embedding and hidden size ``n_embd``, context ``block_size``, batch ``batch_size``):

* ``rnn (loop)`` — the notebook's own ``RNNLM`` (its solution cells are executed): a Python loop
  over time steps, one matrix product per step for W_hh (what students write and train);
* ``rnn (nn.RNN)`` — the same network through PyTorch's fused recurrent kernel, for comparison;
* ``lstm (nn.LSTM)`` — the notebook's LSTM.

Each model trains ``--warmup`` steps first (not timed), then ``--steps`` steps through
``lmcourse.train.train``; tokens/s is the loop's own figure (validation excluded). The
tokens/s are training tokens (B x T per step) per second of forward + backward + optimizer
step. Nothing is asserted: timings depend on the machine and on what else runs on it. Like the
notebook (its setup cell runs here), the bench uses one torch thread on a CPU by default: on a
machine whose cores are busy with other work, torch's OpenMP threads spin-wait for each other
and 2 threads can be several times *slower* than 1; ``--threads N`` compares.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch
from torch import nn

from lmcourse.data import encode_split, load_corpus, load_shakespeare
from lmcourse.notebook_runner import solution_namespace
from lmcourse.runtime import get_profile, pick_device
from lmcourse.tokenizers import CharTokenizer
from lmcourse.train import TrainConfig, train


class TorchRecurrentLM(nn.Module):
    """Embedding -> nn.RNN or nn.LSTM -> output layer."""

    def __init__(self, kind: str, vocab_size: int, n_embd: int, n_hidden: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.rnn = {"rnn": nn.RNN, "lstm": nn.LSTM}[kind](n_embd, n_hidden, batch_first=True)
        self.lm_head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx):
        out, _ = self.rnn(self.wte(idx))  # (B, T, H)
        return self.lm_head(out)  # (B, T, V)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu", choices=["tiny", "cpu", "gpu"])
    ap.add_argument("--steps", type=int, default=100, help="timed steps per model")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps per model first")
    ap.add_argument("--text", default=None, help="a text file instead of the Shakespeare corpus")
    ap.add_argument("--device", default=None, help="cpu / cuda / mps (default: the best available)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (default: the notebook's, one on a CPU)")
    args = ap.parse_args()

    prof = get_profile(args.profile)
    device = torch.device(args.device) if args.device else pick_device()
    corpus = load_corpus(args.text, val_fraction=0.1) if args.text else load_shakespeare(quiet=True)
    tok = CharTokenizer.from_text(corpus.text("train"))
    train_ids = encode_split(corpus, "train", tok)
    V, E = tok.vocab_size, prof.n_embd
    notebook = solution_namespace("02_rnn", ("setup", "elman_step", "rnn_forward", "RNNLM"))  # sets threads
    if args.threads:
        torch.set_num_threads(args.threads)
    builders = {
        "rnn (loop)": lambda: notebook["RNNLM"](V, E, E),
        "rnn (nn.RNN)": lambda: TorchRecurrentLM("rnn", V, E, E),
        "lstm (nn.LSTM)": lambda: TorchRecurrentLM("lstm", V, E, E),
    }
    print(f"lmcourse.train throughput: profile {prof.name} (batch {prof.batch_size} x block "
          f"{prof.block_size}, n_embd = hidden = {E}, vocab {V}) on {device}, "
          f"{torch.get_num_threads()} torch threads, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{platform.machine()}")
    budget = f"min for {prof.train_steps} steps"
    print(f"{'model':<16} {'params':>9} {'tokens/s':>10} {'ms/step':>8} {budget:>18}")
    for name, build in builders.items():
        torch.manual_seed(0)
        model = build()
        n_params = sum(p.numel() for p in model.parameters())
        common = dict(batch_size=prof.batch_size, block_size=prof.block_size, lr=3e-3, eval_batches=0,
                      device=str(device), progress=False, quiet=True)
        train(model, train_ids, None, TrainConfig(steps=args.warmup, warmup_steps=0, **common))
        t0 = time.perf_counter()
        hist = train(model, train_ids, None, TrainConfig(steps=args.steps, **common))
        wall = time.perf_counter() - t0
        ms = 1000 * wall / args.steps
        print(f"{name:<16} {n_params:>9,} {hist.tokens_per_sec:>10,.0f} {ms:>8.1f} "
              f"{prof.train_steps * ms / 60000:>18.1f}")


if __name__ == "__main__":
    main()
