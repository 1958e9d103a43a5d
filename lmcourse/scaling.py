"""Notebook 10's library: a sweep of the course's GPT over sizes and compute budgets, its results table
(read and written as CSV), and the pictures of a scaling law.

A run is one (size, budget) pair. The budget is training FLOPs ``C = 6 N D``, ``N`` the model's
non-embedding parameters, so the run trains on ``D = C / (6 N)`` tokens; its learning-rate schedule
(warm-up, cosine) ends at its own last step, as the compute-optimal analyses need (a run cut from a
longer schedule has a higher loss than one planned for its length)::

    R = lmcourse.recipes.scaling.recipe(P.name)
    rows = run_sweep(R, train_ids, val_ids, vocab_size=tok.vocab_size)
    write_csv(rows, "sweep.csv")
    frontier(rows)

The course ships the table of one cpu sweep (:func:`shipped_sweep`), so the analysis never depends on
a live run. The fits (power laws, IsoFLOP parabolas) are the notebook's exercises; the pictures take
their results as plain numbers.
"""

from __future__ import annotations

import csv
import io
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from importlib import resources
from pathlib import Path

__all__ = ["SweepRow", "run_sweep", "train_one", "write_csv", "read_csv", "shipped_sweep", "SHIPPED",
           "by_budget", "frontier", "isoflop_curves", "optimal_sizes"]

# the tables the course ships, by profile: lmcourse/data_files/scaling_sweep_<profile>.csv
SHIPPED = ("cpu",)


@dataclass(frozen=True)
class SweepRow:
    """One finished run of a sweep."""

    n_layer: int  # blocks
    n_embd: int  # width d of the residual stream
    n_head: int  # attention heads
    params: int  # non-embedding parameters N (blocks and the final LayerNorm; Kaplan's count)
    params_with_embeddings: int  # every parameter, token and position tables included (the head is tied)
    budget: float  # the compute asked for, FLOPs (C = 6 N D)
    steps: int  # optimisation steps
    tokens: int  # tokens trained on, D = steps * batch_size * block_size
    flops: float  # 6 N D of the run as trained (the budget, rounded to whole steps)
    val_loss: float  # validation loss at the last step, nats per character
    seconds: float  # wall-clock time of the run, validation included


def train_one(recipe, n_layer: int, n_embd: int, budget: float, train_ids, val_ids, vocab_size: int,
              seed: int = 0, device=None) -> SweepRow:
    """One run: the course's GPT at ``(n_layer, n_embd)``, trained for ``budget`` FLOPs by ``recipe``."""
    import torch

    from .nn.gpt import GPT, GPTConfig
    from .train import train

    torch.manual_seed(seed)
    n_head = recipe.n_head(n_embd)
    model = GPT(GPTConfig(vocab_size=vocab_size, block_size=recipe.block_size, n_layer=n_layer, n_head=n_head,
                          n_embd=n_embd, dropout=0.0))
    n = model.num_params(non_embedding=True)
    per_step = recipe.batch_size * recipe.block_size
    steps = max(1, round(budget / (6 * n * per_step)))
    cfg = recipe.train_config(steps, seed=seed, device=device, progress=False, quiet=True)
    t0 = time.perf_counter()
    hist = train(model, train_ids, val_ids, cfg)
    seconds = time.perf_counter() - t0
    tokens = steps * per_step
    return SweepRow(n_layer=n_layer, n_embd=n_embd, n_head=n_head, params=n, params_with_embeddings=model.num_params(),
                    budget=float(budget), steps=steps, tokens=tokens, flops=6.0 * n * tokens,
                    val_loss=hist.final_val_loss, seconds=round(seconds, 3))


def run_sweep(recipe, train_ids, val_ids, vocab_size: int, sizes: Sequence[tuple[int, int]] | None = None,
              budgets: Sequence[float] | None = None, seed: int = 0, device=None,
              on_run: Callable[[SweepRow], None] | None = None) -> list[SweepRow]:
    """Every size times every budget (the recipe's, unless given), smallest budget first; one row per run.

    ``train_ids`` / ``val_ids`` are 1-D LongTensors of character ids; ``on_run(row)`` is called after
    each run (to print or save progress). Every run starts from the same seed.
    """
    sizes = list(recipe.sizes if sizes is None else sizes)
    budgets = list(recipe.budgets if budgets is None else budgets)
    if recipe.max_chars is not None:
        train_ids = train_ids[:recipe.max_chars]
    rows = []
    for budget in budgets:
        for n_layer, n_embd in sizes:
            row = train_one(recipe, n_layer, n_embd, budget, train_ids, val_ids, vocab_size, seed=seed, device=device)
            rows.append(row)
            if on_run is not None:
                on_run(row)
    return rows


# --- the table as CSV --------------------------------------------------------------------------------

_FIELDS = [f.name for f in fields(SweepRow)]
_TYPES = {f.name: (int if f.type in ("int", int) else float) for f in fields(SweepRow)}


def write_csv(rows: Iterable[SweepRow], path: str | Path | None = None, comments: Sequence[str] = ()) -> str:
    """The rows as CSV text (header first, ``# `` comment lines above it), written to ``path`` if given."""
    out = io.StringIO()
    for line in comments:
        out.write(f"# {line}\n")
    writer = csv.DictWriter(out, fieldnames=_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: repr(v) if isinstance(v, float) else v for k, v in asdict(row).items()})
    text = out.getvalue()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def read_csv(source: str | Path) -> list[SweepRow]:
    """Rows from a CSV file written by :func:`write_csv` (or its text); ``#`` lines are comments."""
    text = source if isinstance(source, str) and "\n" in source else Path(source).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    reader = csv.DictReader(lines)
    missing = set(_FIELDS) - set(reader.fieldnames or [])
    if missing:
        raise ValueError(f"not a sweep table: the columns {sorted(missing)} are missing")
    return [SweepRow(**{k: _TYPES[k](float(r[k])) if _TYPES[k] is int else float(r[k]) for k in _FIELDS})
            for r in reader]


def shipped_sweep(profile: str = "cpu") -> list[SweepRow]:
    """The table of a sweep the course ran and ships (how it was made: the file's comment lines)."""
    if profile not in SHIPPED:
        raise ValueError(f"the course ships the sweep of {', '.join(SHIPPED)}, not {profile!r}")
    return read_csv(resources.files("lmcourse").joinpath("data_files", f"scaling_sweep_{profile}.csv").read_text(
        encoding="utf-8"))


def by_budget(rows: Iterable[SweepRow]) -> dict[float, list[SweepRow]]:
    """The runs of each budget, smallest model first, budgets in increasing order."""
    out: dict[float, list[SweepRow]] = {}
    for row in sorted(rows, key=lambda r: (r.budget, r.params)):
        out.setdefault(row.budget, []).append(row)
    return out


# --- pictures ------------------------------------------------------------------------------------------

def _axes(ax=None, figsize=(6.5, 4.5)):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def frontier(rows: Sequence[SweepRow], ax=None, law: Callable[[float], float] | None = None,
             law_label: str = "fit", predicted: tuple[float, float] | None = None,
             measured: tuple[float, float] | None = None, title: str = "Loss against compute"):
    """Every run's final validation loss against its FLOPs (log x), one colour per model size; the
    lowest loss at each budget joined (the frontier). ``law(C)`` draws a fitted curve, ``predicted`` and
    ``measured`` are ``(C, loss)`` points of a held-out run."""
    ax = _axes(ax)
    sizes = sorted({(r.params, r.n_layer, r.n_embd) for r in rows})
    for n, n_layer, n_embd in sizes:
        mine = sorted((r for r in rows if r.params == n), key=lambda r: r.flops)
        ax.plot([r.flops for r in mine], [r.val_loss for r in mine], "o-", alpha=0.8, ms=4,
                label=f"N = {n:.2g} ({n_layer}×{n_embd})")
    best = [min(runs, key=lambda r: r.val_loss) for runs in by_budget(rows).values()]
    ax.plot([r.flops for r in best], [r.val_loss for r in best], "k--", lw=1.5, label="frontier (best per budget)")
    xs = [r.flops for r in rows] + [p[0] for p in (predicted, measured) if p is not None]
    if law is not None and xs:
        lo, hi = math.log10(min(xs)), math.log10(max(xs))
        grid = [10 ** (lo + (hi - lo) * i / 60) for i in range(61)]
        ax.plot(grid, [law(c) for c in grid], "-", color="grey", lw=2, alpha=0.7, label=law_label)
    if predicted is not None:
        ax.plot(*predicted, "*", ms=16, color="tab:red", label=f"predicted: {predicted[1]:.3f}")
    if measured is not None:
        ax.plot(*measured, "X", ms=12, color="black", label=f"measured: {measured[1]:.3f}")
    ax.set_xscale("log")
    ax.set_xlabel("training compute C = 6 N D (FLOPs, log scale)")
    ax.set_ylabel("validation loss (nats per character)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    return ax


def isoflop_curves(rows: Sequence[SweepRow], parabolas: Mapping[float, Sequence[float]] | None = None, ax=None,
                   title: str = "IsoFLOP curves: loss against model size at fixed compute"):
    """Loss against N (log x) for each budget; ``parabolas[budget] = (a, b, c)`` draws
    ``a (log N)^2 + b log N + c`` (natural log) and marks its minimum."""
    ax = _axes(ax)
    for budget, runs in by_budget(rows).items():
        (line,) = ax.plot([r.params for r in runs], [r.val_loss for r in runs], "o", label=f"C = {budget:.1e}")
        coef = (parabolas or {}).get(budget)
        if coef is None:
            continue
        a, b, c = (float(v) for v in coef)
        lo, hi = math.log(runs[0].params), math.log(runs[-1].params)
        pad = 0.15 * (hi - lo)
        grid = [lo - pad + (hi - lo + 2 * pad) * i / 60 for i in range(61)]
        ax.plot([math.exp(g) for g in grid], [a * g * g + b * g + c for g in grid], "-", color=line.get_color())
        if a > 0:
            g = -b / (2 * a)
            ax.plot([math.exp(g)], [a * g * g + b * g + c], "*", ms=14, color=line.get_color(), mec="black")
    ax.set_xscale("log")
    ax.set_xlabel("non-embedding parameters N (log scale)")
    ax.set_ylabel("validation loss (nats per character)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax


def optimal_sizes(budgets: Sequence[float], n_opt: Sequence[float], exponent: float | None = None,
                  coefficient: float | None = None, ax=None, published: Mapping[str, float] | None = None,
                  title: str = "Compute-optimal model size"):
    """``N_opt`` of each budget on log-log axes; with ``exponent`` and ``coefficient`` the fitted line
    ``N_opt = coefficient * C^exponent``; ``published`` exponents (``{"Chinchilla": 0.50}``) as dotted
    lines of the same intercept at the middle budget, for comparison."""
    ax = _axes(ax)
    ax.loglog(budgets, n_opt, "o", ms=8, color="black", label="IsoFLOP minima")
    lo, hi = min(budgets) / 2, max(budgets) * 2
    grid = [lo * (hi / lo) ** (i / 40) for i in range(41)]
    if exponent is not None and coefficient is not None:
        ax.loglog(grid, [coefficient * c ** exponent for c in grid], "-", label=f"fit: N_opt ∝ C^{exponent:.2f}")
        mid = math.sqrt(min(budgets) * max(budgets))
        at_mid = coefficient * mid ** exponent
        for name, a in (published or {}).items():
            ax.loglog(grid, [at_mid * (c / mid) ** a for c in grid], ":", label=f"{name}: C^{a:.2f}")
    # Within a decade or two matplotlib labels every minor tick and the labels collide: label the budgets
    # themselves on x, and round sizes on y.
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xticks(list(budgets), [f"{b:.0e}".replace("e+", "e") for b in budgets])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("training compute C (FLOPs, log scale)")
    ax.set_ylabel("N_opt (non-embedding parameters)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax


def main(argv: Sequence[str] | None = None, command: str | None = None) -> int:
    """``python -m lmcourse.scaling PROFILE OUT.csv``: the profile's sweep on Shakespeare's characters,
    on the CPU with one thread unless ``--device`` says otherwise, written as a table with how it was made.
    ``--heldout`` adds runs at ``predict_factor`` times the largest budget (the held-out prediction).
    ``command``: how the user asked for it, for the table's header (default: this module's command line)."""
    import argparse
    import datetime
    import platform

    import torch

    from .data import encode_split, load_shakespeare
    from .recipes.scaling import recipe
    from .tokenizers import CharTokenizer

    parser = argparse.ArgumentParser(prog="python -m lmcourse.scaling", description=main.__doc__)
    parser.add_argument("profile", choices=["tiny", "cpu", "gpu"])
    parser.add_argument("out")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--heldout", default=None, help="a second CSV for the held-out runs")
    args = parser.parse_args(argv)
    if args.device == "cpu":
        torch.set_num_threads(1)
    R = recipe(args.profile)
    corpus = load_shakespeare(quiet=True)
    tok = CharTokenizer.from_text(corpus.text("train"))
    train_ids, val_ids = encode_split(corpus, "train", tok), encode_split(corpus, "val", tok)
    started, cpu_started = time.perf_counter(), time.process_time()
    load = f"load average {os.getloadavg()[0]:.1f} at the start" if hasattr(os, "getloadavg") else "load not known"

    def say(row: SweepRow) -> None:
        print(f"N={row.params:>8,} ({row.n_layer}x{row.n_embd})  C={row.budget:.1e}  steps={row.steps:>6}  "
              f"loss={row.val_loss:.4f}  {row.seconds:6.1f} s  (total {time.perf_counter() - started:6.1f} s)",
              flush=True)

    rows = run_sweep(R, train_ids, val_ids, tok.vocab_size, device=args.device, on_run=say)
    total = time.perf_counter() - started
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    made = [f"made by: {command or shlex.join(['python', '-m', 'lmcourse.scaling', *map(str, argv or sys.argv[1:])])}",
            f"recipe: lmcourse.recipes.scaling.recipe({args.profile!r}); one seed (0); Shakespeare characters, "
            f"validation on {', '.join(sorted(corpus.splits['val']))}",
            f"machine: {platform.machine()} CPU, {torch.get_num_threads()} torch thread(s), device {args.device}, "
            f"{load} on {os.cpu_count()} core(s); torch {torch.__version__}; {when}; the sweep took {total:.0f} s "
            f"({time.process_time() - cpu_started:.0f} s of CPU time, nearer what a core of its own takes)"]
    write_csv(rows, args.out, comments=made)
    if args.heldout:
        budget = max(R.budgets) * R.predict_factor
        held = [train_one(R, n_layer, n_embd, budget, train_ids[:R.max_chars] if R.max_chars else train_ids,
                          val_ids, tok.vocab_size, device=args.device) for n_layer, n_embd in R.sizes[-3:]]
        for row in held:
            say(row)
        write_csv(held, args.heldout, comments=[*made[:2], f"held-out runs at {R.predict_factor:g} x the largest "
                                                f"budget swept; {made[2]}"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
