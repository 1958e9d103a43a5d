"""Decoding speed of the course's GPT: generation with and without the KV cache, and beam search.

    python bench/bench_decode.py                  # the cpu profile's GPT (05's checkpoint if present)
    python bench/bench_decode.py --profile gpu    # another profile's sizes
    python bench/bench_decode.py --repeats 5

1. **Tokens/s with and without the KV cache** for 16, 64 and 256 new tokens after a one-token
   prompt, and their ratio. Both runs decode the *same windows* (``lmcourse.reference.decoding.generate_cached``
   and ``generate_recompute``: when the window reaches ``block_size`` it restarts from its last
   ``block_size // 2`` ids) with the same generator, so they produce the same ids; the script checks
   that. Without the cache every step runs the model on the whole window; with it, on one id.
2. **Beam search** (``lmcourse.reference.decoding.beam_search``, every beam in one batched forward per step)
   for beam sizes 1, 4 and 16, 64 new ids, without a cache.
3. **Against transformers** (``--vs-transformers``; :func:`versus_transformers`, also a row of
   ``make gpu-check``): greedy decoding, batch 1, a one-id prompt, on one set of weights shared by the
   course's GPT and its transformers twin (``lmcourse.nn.hf_twin``): transformers'
   ``generate(use_cache=True)`` and, where it installs, its static cache; the course's growing cache
   (``generate_cached``), its static cache (``lmcourse.nn.static_cache``) and, on a CUDA GPU, that cache
   with the one-token step captured as a CUDA graph (``torch.compile(mode="reduce-overhead")``). Every
   row's ids are checked against transformers' ``generate``; the speed-ups are against it.
   ``--gpt2-small`` uses GPT-2 small's sizes (12 x 12 x 768, 1024 positions, 50257 ids).

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
from dataclasses import dataclass

import torch

from lmcourse.data import data_dir
from lmcourse.nn import GPT, GPTConfig, load_gpt
from lmcourse.reference import decoding
from lmcourse.runtime import get_profile


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


@dataclass
class DecodeRow:
    name: str
    seconds: float | None      # None: the row could not run here (``note`` says why)
    same_ids: bool | None = None
    note: str = ""


def _timed(fn, device: str, repeats: int = 1):
    """``fn()``'s result and its best wall time of ``repeats`` runs (the GPU's queue drained around each)."""
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    best, out = float("inf"), None
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return out, best


def versus_transformers(device: str, gpt2_small: bool, new_tokens: int, graphs: bool | None = None,
                        repeats: int = 1) -> list[DecodeRow]:
    """Greedy decoding of ``new_tokens`` ids after one id, batch 1, by transformers and by the course, on
    the same weights; each row's ids compared with transformers' ``generate(use_cache=True)`` (the first
    row). ``graphs``: also the static cache with its step compiled as a CUDA graph (default: on CUDA only;
    on the CPU the compile takes a minute and no graph is captured). Each way runs once untimed first."""
    from lmcourse.nn.hf_twin import gpt2_twin
    from lmcourse.nn.static_cache import StaticDecoder
    from lmcourse.reference.decoding import generate_cached, top_k_filter

    graphs = device.startswith("cuda") if graphs is None else graphs
    sizes = dict(n_layer=12, n_head=12, n_embd=768, block_size=1024, vocab_size=50257) if gpt2_small else \
        dict(n_layer=2, n_head=2, n_embd=32, block_size=64, vocab_size=97)
    if new_tokens >= sizes["block_size"]:
        raise ValueError(f"{new_tokens} new ids do not fit transformers' {sizes['block_size']} positions")
    torch.manual_seed(0)
    # GPT-2's tanh GELU on both sides (the course's default is the exact one; the twin's gelu_new is not)
    model = GPT(GPTConfig(gelu="tanh", **sizes)).to(device).eval()
    hf = gpt2_twin(model, activation="gelu_new")
    prompt = torch.zeros(1, 1, dtype=torch.long, device=device)
    greedy = [functools.partial(top_k_filter, k=1)]

    def hf_generate(n, **how):
        with torch.no_grad():
            return hf.generate(prompt, max_new_tokens=n, min_new_tokens=n, do_sample=False, use_cache=True,
                               attention_mask=torch.ones_like(prompt), pad_token_id=0, **how)

    ways = [("transformers generate (dynamic cache)", hf_generate),
            ("transformers generate (static cache)", functools.partial(hf_generate, cache_implementation="static")),
            ("course generate_cached (growing cache)", lambda n: generate_cached(model, prompt, n, greedy))]
    eager = StaticDecoder(model, 1)
    ways.append(("course static cache", lambda n: eager.generate(prompt, n, greedy)))
    if graphs:
        captured = StaticDecoder(model, 1, compile_mode="reduce-overhead")
        ways.append(("course static cache + CUDA graph", lambda n: captured.generate(prompt, n, greedy)))
    rows, reference = [], None
    for name, way in ways:
        try:
            way(min(new_tokens, 8))  # kernels loaded, caches set up, a step compiled: untimed
            ids, seconds = _timed(lambda way=way: way(new_tokens), device, repeats)
        except Exception as exc:  # noqa: BLE001 (a way this install lacks is a row saying so)
            if reference is None:
                raise
            rows.append(DecodeRow(name, None, None, f"not run: {type(exc).__name__}: {str(exc)[:120]}"))
            continue
        ids = ids.cpu()
        reference = ids if reference is None else reference
        rows.append(DecodeRow(name, seconds, torch.equal(ids, reference)))
    return rows


def decode_table(rows: list[DecodeRow], new_tokens: int) -> str:
    base = rows[0].seconds
    lines = [f"{'way':<40} {'tok/s':>9} {'vs transformers':>16}  ids"]
    for r in rows:
        if r.seconds is None:
            lines.append(f"{r.name:<40} {'-':>9} {'-':>16}  {r.note}")
            continue
        lines.append(f"{r.name:<40} {new_tokens / r.seconds:>9,.0f} {base / r.seconds:>15.2f}x  "
                     f"{'equal' if r.same_ids else 'DIFFER'}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--vs-transformers", action="store_true", help="only part 3: greedy decoding against "
                    "transformers' generate on the same weights")
    ap.add_argument("--gpt2-small", action="store_true", help="part 3 at GPT-2 small's sizes")
    ap.add_argument("--device", default=None, help="part 3's device (default: cuda when there is one)")
    ap.add_argument("--new-tokens", type=int, default=128, help="part 3's new ids")
    args = ap.parse_args()
    if args.vs_transformers:
        torch.set_num_threads(args.threads)
        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        rows = versus_transformers(device, args.gpt2_small, args.new_tokens, repeats=args.repeats)
        print(f"greedy decoding, batch 1, {args.new_tokens} new ids, on {device}, best of {args.repeats}")
        print(decode_table(rows, args.new_tokens))
        return
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
