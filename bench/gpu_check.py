"""The GPU path in one command: ``make gpu-check`` (``python bench/gpu_check.py``).

On a machine with a CUDA GPU, in a few minutes:

1. every neural solution notebook (all but 01) at the ``tiny`` profile on the GPU: with nbclient when
   Jupyter is installed, else as a plain script made of the notebook's code cells (the table says
   which);
2. every ``lmcourse train`` model (gpt, mlm, seq2seq) at the ``gpu`` profile for ``--steps`` steps, with the
   card's own precision and again with fp16 and a gradient scaler forced (the T4's path,
   ``LMCOURSE_PRECISION=fp16``), each to its sample and summary line (tokens/s, MFU where printed);
3. greedy decoding against transformers' ``generate`` on the same weights, at GPT-2 small's size
   (batch 1): a row per way (``bench/bench_decode.py``'s part 3: transformers' dynamic and static
   caches, the course's growing cache, its static cache, and that cache with the one-token step as a
   CUDA graph), each with its speed-up over ``generate`` and its ids checked;
4. the training loop's fast paths on the card: ``lmcourse train gpt`` with ``--compile_mode
   max-autotune-no-cudagraphs --eval_sync_free --attention flash``, and one sync-free validation run
   under ``torch.cuda.set_sync_debug_mode("error")`` (any host sync inside it fails the row);
5. the training ratio (``bench/bench_nanogpt.py``): time to validation ``--train-target`` (1.47) of the
   course's loop against nanoGPT's own ``train.py`` from the checkout ``--nanogpt`` gives (or
   ``$LMCOURSE_NANOGPT``; without one the row is skipped, saying so), the course with its fast paths and,
   without ``--quick``, also without them.

``--quick`` (8 minutes of an H200, start-up included): no notebooks, ``lmcourse train gpt`` only
(card default, fp16 forced, fast paths) for 100 steps, the decoding rows, the sync-free row, and the
training ratio to validation 1.8 instead of 1.47 (a few hundred steps a side instead of thousands).

The notebooks run ``--jobs`` at a time (tiny models leave the card mostly idle); the training runs
and the decoding check run one at a time, so their figures are the card's alone. The last row is
the whole run's time against ``--budget`` (6 minutes): over it, the row says so without failing.

It prints one table and exits 1 when a check failed, 2 when there is no CUDA GPU (``--allow-cpu``
runs the same checks on the CPU at tiny sizes: how the CPU side of this script is tested). The
wheels it lacks (nbclient, ipykernel, transformers) are named when it starts; a check that needs
one is reported ``skipped`` with what to install, never silently left out. Run it after changing
device or training code, before a class uses GPUs, and on a card the course has not met.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# every solution notebook but 01's (counting, no torch): a notebook added later is checked too
NOTEBOOKS = tuple(sorted(p.stem for p in (ROOT / "solutions").glob("[0-9][0-9]_*.ipynb") if p.stem != "01_ngram"))


@dataclass
class Row:
    check: str
    status: str = "ok"            # ok | FAIL | skipped | over (the total past --budget: not a failure)
    seconds: float = 0.0
    figures: str = ""


def table(rows: list[Row]) -> str:
    w = max(len(r.check) for r in rows)
    lines = [f"{'check':<{w}}  {'status':<7}  {'seconds':>7}  figures", "-" * (w + 40)]
    lines += [f"{r.check:<{w}}  {r.status:<7}  {r.seconds:>7.1f}  {r.figures}" for r in rows]
    return "\n".join(lines)


def total_row(seconds: float, budget: float) -> Row:
    """The whole run's time against the budget: ``over`` is shown, and is no failure of the GPU path."""
    within = seconds <= budget
    return Row("total", "ok" if within else "over", seconds,
               f"budget {budget:.0f} s" + ("" if within else ": fewer --steps or more --jobs"))


def exit_code(rows: list[Row]) -> int:
    return 1 if any(r.status == "FAIL" for r in rows) else 0


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# wheel -> what goes without it (the message names them; the table shows each consequence)
OPTIONAL = {"nbclient": "notebooks run as plain scripts", "ipykernel": "notebooks run as plain scripts",
            "transformers": "the decoding check is skipped"}


def missing_wheels() -> str:
    """One line naming the wheels this machine lacks and what goes without them ('' if none)."""
    gone = [w for w in OPTIONAL if not _have(w)]
    if not gone:
        return ""
    effects = sorted({OPTIONAL[w] for w in gone})
    return (f"gpu-check: not installed: {', '.join(gone)} ({'; '.join(effects)}); "
            f"pip install {' '.join(gone)} for every check")


def _tail(text: str, n: int = 3) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # IPython colours the error's name
    return " | ".join(line.strip() for line in text.strip().splitlines()[-n:] if line.strip())[-300:]


def notebook_script(path: Path) -> str:
    """The code cells of a notebook as one script (IPython magics and shell lines left out)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c["cell_type"] == "code"]
    keep = [line for block in code for line in block.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(keep) + "\n"


def run_notebook(name: str, env: dict, timeout: float) -> Row:
    """``solutions/<name>.ipynb`` at the tiny profile: with nbclient (the project's runner) when
    Jupyter is installed, else its code cells as one script; ``timeout`` per cell, or per script."""
    path = ROOT / "solutions" / f"{name}.ipynb"
    t0 = time.perf_counter()
    if _have("nbclient") and _have("ipykernel"):
        from lmcourse.notebook_runner import execute_notebook

        try:
            execute_notebook(path, timeout=int(timeout), env={**env, "MPLBACKEND": "Agg"})
            return Row(f"notebook {name}", "ok", time.perf_counter() - t0, "nbclient")
        except Exception as exc:  # noqa: BLE001 (any failure of the notebook is this check's result)
            return Row(f"notebook {name}", "FAIL", time.perf_counter() - t0, f"nbclient: {_tail(str(exc), 2)}")
    how = "as a script (no nbclient/ipykernel)"
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / f"{name}.py"
        script.write_text(notebook_script(path), encoding="utf-8")
        try:
            proc = subprocess.run([sys.executable, str(script)], cwd=path.parent, env={**os.environ, **env,
                                  "MPLBACKEND": "Agg"}, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Row(f"notebook {name}", "FAIL", time.perf_counter() - t0, f"{how}: timed out after {timeout:.0f} s")
    status = "ok" if proc.returncode == 0 else "FAIL"
    why = "" if status == "ok" else f": {_tail(proc.stderr)}"
    return Row(f"notebook {name}", status, time.perf_counter() - t0, how + why)


def run_notebooks(names: list[str], env: dict, timeout: float, jobs: int) -> list[Row]:
    """Every notebook of ``names``, ``jobs`` at a time (each in its own process), rows in order."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda n: run_notebook(n, env, timeout), names))


# the figures worth a column, from the summary line lmcourse train prints last
_SUMMARY = re.compile(r"([\d,.]+)\s*(?:k\s*)?tokens/s|MFU\s*[\d.]+\s*%|[\d.]+\s*%\s*MFU"
                      r"|val loss [\d.]+|exact match [\d.]+%")


_AMP = re.compile(r"\bamp (\S+)")


def train_row(label: str, returncode: int, stdout: str, stderr: str, seconds: float,
              forced: str | None, sample: bool) -> Row:
    """The row of one ``lmcourse train`` run from what it printed: FAIL on a non-zero exit, on a
    missing summary line (or sample, where ``sample``: the GPT prints one), or when a forced
    precision was not the one used."""
    if returncode != 0:
        return Row(label, "FAIL", seconds, f"exit {returncode}: {_tail(stderr or stdout)}")
    if not stdout.strip() or not stdout.strip().splitlines()[-1].startswith("done:"):
        return Row(label, "FAIL", seconds, f"no summary line: {_tail(stdout)}")
    if sample and "--- sample ---" not in stdout:
        return Row(label, "FAIL", seconds, f"no sample: {_tail(stdout)}")
    amp = _AMP.search(stdout)
    amp = amp.group(1).rstrip(",") if amp else "?"
    if forced and not amp.startswith(forced):
        return Row(label, "FAIL", seconds, f"LMCOURSE_PRECISION={forced} was not used: amp {amp}")
    summary = stdout.strip().splitlines()[-1]
    figures = "; ".join(m.group(0) for m in _SUMMARY.finditer(summary))
    return Row(label, "ok", seconds, f"amp {amp}; " + (figures or _tail(summary, 1)))


def run_train(task: str, profile: str, steps: int, precision: str | None, timeout: float,
              extra: tuple[str, ...] = (), what: str = "") -> Row:
    label = f"train {task} ({profile}, {what or (precision + ' forced' if precision else 'card default')})"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "lmcourse.commands.main", "train", task, "--profile", profile,
               "--steps", str(steps),
               "--checkpoint_path", str(Path(tmp) / f"{task}.pt"), "--overwrite", "--no-progress", *extra]
        env = {**os.environ, **({"LMCOURSE_PRECISION": precision} if precision else {})}
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Row(label, "FAIL", time.perf_counter() - t0, f"timed out after {timeout:.0f} s")
    return train_row(label, proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0, precision,
                     sample=task == "gpt")


def _bench(name: str):
    """``bench/<name>.py`` as a module (this folder is no package)."""
    import importlib.util

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def decode_rows(device: str, gpt2_small: bool, new_tokens: int) -> list[Row]:
    """A row per way of decoding (bench_decode's part 3): its speed-up over transformers' ``generate`` and
    whether its ids are that ``generate``'s; a way that differs fails."""
    size = " (GPT-2 small size)" if gpt2_small else " (tiny)"
    if not _have("transformers"):
        return [Row("decode vs transformers" + size, "skipped", 0.0, "needs transformers: pip install transformers")]
    t0 = time.perf_counter()
    try:
        found = _bench("bench_decode").versus_transformers(device, gpt2_small, new_tokens)
    except Exception as exc:  # noqa: BLE001 (the check's failure is its row)
        return [Row("decode vs transformers" + size, "FAIL", time.perf_counter() - t0, _tail(repr(exc), 1))]
    base = found[0].seconds
    rows = []
    for r in found:
        label = f"decode: {r.name}" + (size if r is found[0] else "")
        if r.seconds is None:
            rows.append(Row(label, "skipped", 0.0, r.note))
            continue
        rows.append(Row(label, "ok" if r.same_ids else "FAIL", r.seconds,
                        f"{new_tokens / r.seconds:,.0f} tok/s, {base / r.seconds:.2f}x generate, "
                        f"ids {'equal' if r.same_ids else 'DIFFER'}"))
    return rows


def sync_free_row(device: str) -> Row:
    """One validation of ``lmcourse.train`` with ``eval_sync_free`` under CUDA's sync debug mode "error":
    a host sync before the one read of the sum raises, and fails the row."""
    label = "sync-free validation"
    if not device.startswith("cuda"):
        return Row(label, "skipped", 0.0, "CUDA's sync debug mode needs a CUDA GPU (the CPU test holds the losses)")
    import torch

    from lmcourse.distributed import DistEnv
    from lmcourse.nn import GPT, GPTConfig
    from lmcourse.train import _eval_total, batch_on_device

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384)).to(device)
    tokens = torch.randint(65, (100_000,), device=device)
    dev = torch.device(device)
    t0 = time.perf_counter()
    _eval_total(model, tokens, 64, 256, 2, 0, dev, True, batch_on_device, None, 64, DistEnv(device=dev), True)
    torch.cuda.synchronize()
    try:
        torch.cuda.set_sync_debug_mode("error")
        total = _eval_total(model, tokens, 64, 256, 20, 0, dev, True, batch_on_device, None, 64,
                            DistEnv(device=dev), True)
    except RuntimeError as exc:
        return Row(label, "FAIL", time.perf_counter() - t0, f"a host sync: {_tail(str(exc), 1)}")
    finally:
        torch.cuda.set_sync_debug_mode(0)
    return Row(label, "ok", time.perf_counter() - t0,
               f"20 batches, no host sync before the read (mean loss {float(total) / 20:.3f})")


FAST_FLAGS = ("--compile_mode", "max-autotune-no-cudagraphs", "--eval_sync_free", "--attention", "flash")


def training_ratio_rows(nanogpt: Path | None, device: str, target: float, quick: bool, timeout: float) -> list[Row]:
    """Time to validation ``target``: the course's loop (fast paths on; and off without ``quick``) against
    nanoGPT's ``train.py`` (bench_nanogpt); on the CPU its baby sizes and the plain loop."""
    cuda = device.startswith("cuda")
    label = f"train ratio to val <= {target:g} vs nanoGPT" + ("" if cuda else " (baby, CPU)")
    if nanogpt is None:
        return [Row(label, "skipped", 0.0, "no nanoGPT checkout: --nanogpt PATH or LMCOURSE_NANOGPT=PATH "
                                           "(a clone of github.com/karpathy/nanoGPT)")]
    bench = _bench("bench_nanogpt")
    sizes = bench.FULL if cuda else bench.BABY
    rows = []
    # on the CPU the plain loop only: compiling the step there costs a minute and proves nothing of a card
    for fast in ((False,) if not cuda else (True,) if quick else (True, False)):
        t0 = time.perf_counter()
        try:
            course, peer = bench.compare(nanogpt, sizes, device, target, fast, timeout, log=lambda *a: None)
        except Exception as exc:  # noqa: BLE001 (the check's failure is its row)
            rows.append(Row(label, "FAIL", time.perf_counter() - t0, _tail(repr(exc), 1)))
            continue
        how = "fast paths" if fast else "plain"
        figures = (f"course ({how}) {_secs(course)} at step {course.step}, nanoGPT {_secs(peer)} at step "
                   f"{peer.step}: {bench.ratio_text(course, peer)}")
        notes = "; ".join(f"{r.name}: {r.note}" for r in (course, peer) if r.note)
        status = "ok" if course.seconds is not None and peer.seconds is not None else "FAIL"
        rows.append(Row(f"{label} ({how})", status, time.perf_counter() - t0,
                        figures + (f"; {notes}" if notes else "")))
    return rows


def _secs(result) -> str:
    return f"{result.seconds:.1f} s" if result.seconds is not None else "not reached"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--allow-cpu", action="store_true", help="run on the CPU at tiny sizes when there is no GPU")
    ap.add_argument("--steps", type=int, default=None,
                    help="training steps per run (default 300 on a GPU, 20 on the CPU)")
    ap.add_argument("--notebooks", nargs="*", default=list(NOTEBOOKS), help="solution notebooks to run")
    from lmcourse.commands.tasks import discover

    tasks = list(discover())        # every model `lmcourse train` has
    ap.add_argument("--tasks", nargs="*", default=tasks, choices=tasks, help="lmcourse train models to run")
    ap.add_argument("--no-decode", action="store_true", help="leave out the decoding check")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per notebook or training run")
    ap.add_argument("--jobs", type=int, default=None,
                    help="notebooks run at once (default 4 on a GPU, 1 on the CPU)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds the whole check should take (the last row says whether it did; default 360, "
                         "--quick 300)")
    ap.add_argument("--quick", action="store_true", help="the short run (see above): one table in a few minutes")
    ap.add_argument("--nanogpt", type=Path, default=os.environ.get("LMCOURSE_NANOGPT") or None,
                    help="a nanoGPT checkout for the training ratio (default: $LMCOURSE_NANOGPT)")
    ap.add_argument("--train-target", type=float, default=None,
                    help="the training ratio's validation loss (default 1.47, --quick 1.8; the CPU's baby sizes 2.5)")
    args = ap.parse_args(argv)
    if args.quick:
        args.notebooks = [] if args.notebooks == list(NOTEBOOKS) else args.notebooks
        args.tasks = ["gpt"] if args.tasks == tasks else args.tasks
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.allow_cpu:
        print("gpu-check: no CUDA GPU here (torch.cuda.is_available() is False): run it on a machine with one,\n"
              "or with --allow-cpu to run the same checks on the CPU at tiny sizes.", file=sys.stderr)
        return 2
    device = "cuda" if cuda else "cpu"
    steps = args.steps or ((100 if args.quick else 300) if cuda else (10 if args.quick else 20))
    budget = args.budget or (300.0 if args.quick else 360.0)
    target = args.train_target or ((1.8 if args.quick else 1.47) if cuda else 2.5)
    where = torch.cuda.get_device_name(0) if cuda else "the CPU (--allow-cpu)"
    print(f"gpu-check on {where}, torch {torch.__version__}", flush=True)
    if missing_wheels():
        print(missing_wheels(), flush=True)
    start = time.perf_counter()
    rows: list[Row] = []
    env = {"LMCOURSE_PROFILE": "tiny", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    if args.notebooks:
        rows += run_notebooks(args.notebooks, env, args.timeout, args.jobs or (4 if cuda else 1))
        print(table(rows), flush=True)
    profile = "gpu" if cuda else "tiny"
    for task in args.tasks:
        for precision in (None, "fp16"):
            if precision and not cuda:
                rows.append(Row(f"train {task} ({profile}, fp16 forced)", "skipped", 0.0,
                                "fp16 with a gradient scaler needs a CUDA GPU"))
            else:
                rows.append(run_train(task, profile, steps, precision, args.timeout))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    if "gpt" in args.tasks:
        if cuda:
            rows.append(run_train("gpt", profile, steps, None, args.timeout, FAST_FLAGS, "fast paths"))
        else:
            rows.append(Row(f"train gpt ({profile}, fast paths)", "skipped", 0.0,
                            "compile_mode and attention=flash are for a CUDA GPU (the CPU tests hold their losses)"))
        rows.append(sync_free_row(device))
        print("\n".join(table(rows[-2:]).splitlines()[-2:]), flush=True)
    if not args.no_decode:
        rows += decode_rows(device, gpt2_small=cuda, new_tokens=128 if cuda else 16)
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    rows += training_ratio_rows(args.nanogpt, device, target, args.quick, args.timeout * (4 if cuda else 1))
    rows.append(total_row(time.perf_counter() - start, budget))
    print("\n" + table(rows))
    code = exit_code(rows)
    print("\ngpu-check: " + ("every check passed" if code == 0 else "a check FAILED (see the table)"))
    return code


if __name__ == "__main__":
    sys.exit(main())
