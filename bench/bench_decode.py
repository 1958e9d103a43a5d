"""Decoding speed of the course's GPT: generation with and without the KV cache, and beam search.

    python bench/bench_decode.py                  # the cpu profile's GPT (05's checkpoint if present)
    python bench/bench_decode.py --profile gpu    # another profile's sizes
    python bench/bench_decode.py --repeats 5

1. **Tokens/s with and without the KV cache** for 16, 64 and 256 new tokens after a one-token
   prompt, and their ratio. Both runs decode the *same windows* (``lmcourse.decoding.generate_cached``
   and ``generate_recompute``: when the window reaches ``block_size`` it restarts from its last
   ``block_size // 2`` ids) with the same generator, so they produce the same ids; the script checks
   that. Without the cache every step runs the model on the whole window; with it, on one id.
2. **Beam search** (``lmcourse.decoding.beam_search``, every beam in one batched forward per step)
   for beam sizes 1, 4 and 16, 64 new ids, without a cache.

The model: notebook 05's trained GPT for the profile from the course cache when it exists,
otherwise a randomly initialised GPT of the profile's sizes (decoding time does not depend on the
weights). One torch thread unless ``--threads``; the best of ``--repeats`` runs is reported.
Figures depend on the machine and its load (printed); nothing is asserted.

Measured on a 2-core x86 machine shared with other jobs (load 5 to 6), one thread: the ``cpu``
profile's GPT (05's checkpoint) 122 tok/s without and 336 tok/s with the cache at 256 new ids (2.8x;
1.6x at 16, 1.8x at 64), beam search 0.18 s, 0.46 s, 1.50 s for beam sizes 1, 4, 16; with
``--profile gpu --repeats 1`` (random weights, 256 positions, 384 wide, 6 layers) 16 against 103
tok/s at 256 new ids (6.6x; 2.0x at 16, 3.0x at 64), beam search 1.8 s, 3.1 s, 17.5 s.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import time

import torch

from lmcourse import decoding
from lmcourse.data import data_dir
from lmcourse.nn import GPT, GPTConfig, load_gpt
from lmcourse.runtime import get_profile


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    P = get_profile(args.profile)
    path = data_dir() / "checkpoints" / f"05_gpt_{P.name}.pt"
    if path.exists():
        model, _ = load_gpt(path)
        source = f"05's checkpoint {path}"
    else:
        torch.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=65, block_size=P.block_size, n_layer=P.n_layer, n_head=P.n_head,
                              n_embd=P.n_embd)).eval()
        source = "a randomly initialised GPT (no checkpoint from 05)"
    c = model.config
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          f"{args.threads} thread(s), load {os.getloadavg()[0]:.2f}")
    print(f"model: {source}\n  {c}")
    prompt = torch.zeros(1, 1, dtype=torch.long)
    print(f"\n1. generation, prompt of 1 id, best of {args.repeats}")
    print(f"{'new ids':>8} {'no cache tok/s':>15} {'cache tok/s':>12} {'speed-up':>9}")
    for n in (16, 64, 256):
        out = {}

        def run(fn, key, n=n, out=out):
            out[key] = fn(model, prompt, n, generator=torch.Generator().manual_seed(0))

        t_full = _best(functools.partial(run, decoding.generate_recompute, "full"), args.repeats)
        t_cache = _best(functools.partial(run, decoding.generate_cached, "cache"), args.repeats)
        assert torch.equal(out["full"], out["cache"]), "the cached and recomputed runs should give the same ids"
        print(f"{n:>8} {n / t_full:>15,.0f} {n / t_cache:>12,.0f} {t_full / t_cache:>8.1f}x")
    print(f"\n2. beam search, 64 new ids, best of {args.repeats}")
    for beams in (1, 4, 16):
        t = _best(functools.partial(decoding.beam_search, model, prompt, beams, 64), args.repeats)
        print(f"  beam size {beams:>2}: {t:.3f} s ({64 / t:,.0f} steps/s)")
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
