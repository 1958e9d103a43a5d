"""Explicit attention against the fused kernel on CPU: time and peak memory as T grows.

    python bench/bench_attention.py            # T in 64, 256, 1024, 2048
    python bench/bench_attention.py --quick    # T in 64, 256, 1024, fewer repeats

*explicit* is ``softmax(QK^T/sqrt(d_k) + M) V`` (``lmcourse.nn.scaled_dot_product_attention``),
which stores the ``(B, nh, T, T)`` scores and weights; *fused* is
``F.scaled_dot_product_attention(..., is_causal=True)``, which never stores them.

Peak memory is measured, not computed: each (method, T) runs in a fresh Python process that
builds its inputs, hands freed heap back to the OS (``malloc_trim``), resets its resident-set
high-water mark (``/proc/self/clear_refs``, Linux) and reads ``VmHWM`` after one call; the
difference is what the call needed on top of its inputs (elsewhere ``ru_maxrss`` stands in,
which can hide earlier peaks). Small allocations can land in memory the process already holds,
so figures under 0.1 MiB read as "~0". The table also lists the size of one ``(B, nh, T, T)``
float32 matrix for comparison. Timings are medians over repeated calls; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

B, N_HEAD, HEAD_SIZE = 1, 8, 64  # one sequence, GPT-2-small-like heads (d_model = 512)


def _proc_status_bytes(key: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024  # reported in kB
    except OSError:
        pass
    return None


def _start_peak_window() -> int:
    """Return freed heap to the OS, reset the high-water mark where Linux allows it, and
    return the resident size to measure from."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current resident size (Linux >= 4.0)
        return _proc_status_bytes("VmRSS") or 0
    except OSError:
        return _peak_bytes()


def _peak_bytes() -> int:
    hwm = _proc_status_bytes("VmHWM")
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports KiB


def run_one(method: str, T: int, repeats: int, threads: int) -> dict:
    """Runs in the child process: one method at one length."""
    import torch
    import torch.nn.functional as F

    from lmcourse.nn import scaled_dot_product_attention
    from lmcourse.reference.attention import causal_mask

    torch.set_num_threads(threads)
    torch.manual_seed(0)

    def inputs(n: int):
        q, k, v = (torch.randn(B, N_HEAD, n, HEAD_SIZE) for _ in range(3))  # (B, nh, n, hs)
        if method == "explicit":
            mask = causal_mask(n)  # (n, n), built once like a registered buffer
            return lambda: scaled_dot_product_attention(q, k, v, mask)[0]
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)

    inputs(8)()  # warm-up on a tiny input: thread pools and kernels start lazily
    call = inputs(T)
    before = _start_peak_window()
    out = call()
    peak = _peak_bytes() - before
    del out
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return {"method": method, "T": T, "seconds": statistics.median(times), "peak_bytes": peak}


def _child(method: str, T: int, repeats: int, threads: int) -> dict:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", method, str(T), str(repeats), str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _mib(n: float) -> str:
    return "~0" if n < 2**20 / 10 else f"{n / 2**20:.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="T up to 1024 and fewer repeats")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (default 1: steadier figures on a shared machine)")
    p.add_argument("--child", nargs=4, metavar=("METHOD", "T", "REPEATS", "THREADS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        method, T, repeats, threads = args.child
        print(json.dumps(run_one(method, int(T), int(repeats), int(threads))))
        return 0

    import torch

    lengths = [64, 256, 1024] if args.quick else [64, 256, 1024, 2048]
    print(f"causal self-attention on CPU: B={B}, n_head={N_HEAD}, head size={HEAD_SIZE}, float32, "
          f"torch {torch.__version__}, {args.threads} thread(s)")
    header = (f"{'T':>5} | {'explicit ms':>11} {'fused ms':>9} {'time x':>7} | "
              f"{'explicit MiB':>12} {'fused MiB':>9} {'mem x':>6} | {'one TxT MiB':>11}")
    print(header)
    print("-" * len(header))
    for T in lengths:
        repeats = max(3, min(50, int(4e6 // (T * T)))) if not args.quick else 3
        e, f = _child("explicit", T, repeats, args.threads), _child("fused", T, repeats, args.threads)
        t_ratio = e["seconds"] / f["seconds"] if f["seconds"] > 0 else math.nan
        m_ratio = (e["peak_bytes"] / f["peak_bytes"]) if f["peak_bytes"] > 2**20 / 10 else math.nan
        one = B * N_HEAD * T * T * 4
        print(f"{T:>5} | {e['seconds'] * 1e3:>11.2f} {f['seconds'] * 1e3:>9.2f} {t_ratio:>7.2f} | "
              f"{_mib(e['peak_bytes']):>12} {_mib(f['peak_bytes']):>9} "
              f"{'n/a' if math.isnan(m_ratio) else f'{m_ratio:.1f}':>6} | {one / 2**20:>11.1f}")
    print("time x = explicit / fused; mem x = explicit peak / fused peak (n/a when the fused call "
          "needed no measurable memory beyond its inputs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
