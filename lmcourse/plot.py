"""Pictures the notebooks show: Zipf's law, perplexity curves, loss curves, attention maps.

Every function takes plain data, draws on a new (or given) matplotlib Axes and returns it,
so notebooks stay one line per picture and tests can check the figure without a screen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def _axes(ax=None, figsize=(6, 4)):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def zipf(counts: Mapping[str, int], ax=None, label: str = "corpus"):
    """Frequency against rank on log-log axes, with the ideal slope -1 for comparison."""
    ax = _axes(ax)
    freqs = sorted((c for c in counts.values() if c > 0), reverse=True)
    ranks = range(1, len(freqs) + 1)
    ax.loglog(ranks, freqs, label=label)
    if freqs:
        ax.loglog([1, len(freqs)], [freqs[0], freqs[0] / len(freqs)], "--", label="Zipf: f ∝ 1/rank")
    ax.set_xlabel("rank of word")
    ax.set_ylabel("count")
    ax.set_title("Zipf's law")
    ax.legend()
    return ax


def perplexity_by_order(results: Mapping[str, Mapping[str, Sequence[float]]], orders: Sequence[int],
                        ax=None, cap: float | None = None):
    """``results[model][split]`` lists one perplexity per n in ``orders``.

    Infinite perplexities are drawn at the top edge (``cap``) with an upward marker, so an
    unsmoothed model's explosion is visible rather than silently dropped.
    """
    ax = _axes(ax, figsize=(7, 4.5))
    finite = [p for per in results.values() for ps in per.values() for p in ps if math.isfinite(p)]
    top = cap or (max(finite) * 3 if finite else 1e4)
    styles = {"train": "-", "val": "--"}
    for model, per_split in results.items():
        color = None
        for split, ppl in per_split.items():
            ys = [p if math.isfinite(p) else top for p in ppl]
            (line,) = ax.plot(orders, ys, styles.get(split, ":"), marker="o", color=color,
                              label=f"{model} ({split})")
            color = line.get_color()
            for x, p in zip(orders, ppl):
                if not math.isfinite(p):
                    ax.annotate("∞", (x, top), textcoords="offset points", xytext=(0, 4),
                                ha="center", color=color)
    ax.set_yscale("log")
    ax.set_xticks(list(orders))
    ax.set_xlabel("n (order of the n-gram model)")
    ax.set_ylabel("perplexity (log scale)")
    ax.set_title("Perplexity as n grows")
    ax.legend(fontsize=8)
    return ax


def _smooth(values: Sequence[float], window: int) -> list[float]:
    """Trailing moving average (the first points average what exists so far)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def loss_curves(histories, ax=None, smooth: int | None = None, title: str = "Training and validation loss"):
    """Loss against step for one run or several (``{"RNN": hist, "LSTM": hist2}``) on one Axes.

    Each run gets one colour: a thin line for the (smoothed) mini-batch training loss and
    markers joined by a thick dashed line for the validation loss. ``smooth`` is the moving-
    average window (default: about 2% of the steps).
    """
    ax = _axes(ax, figsize=(7, 4.5))
    runs = histories if isinstance(histories, Mapping) else {"model": histories}
    for name, h in runs.items():
        window = smooth or max(1, len(h.train_loss) // 50)
        (line,) = ax.plot(h.steps, _smooth(h.train_loss, window), lw=1, alpha=0.8, label=f"{name} train")
        if h.val_loss:
            ax.plot(h.val_steps, h.val_loss, "o--", lw=2, color=line.get_color(), label=f"{name} val")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return ax


def gradient_by_distance(norms: Mapping[str, Sequence[float]], ax=None,
                         title: str = "How far back does the gradient reach?"):
    """``norms[model][k]`` is the gradient norm w.r.t. the input k steps back; log-scale y axis."""
    ax = _axes(ax, figsize=(7, 4.5))
    for name, ys in norms.items():
        ax.semilogy(range(len(ys)), [max(float(y), 1e-30) for y in ys], label=name)
    ax.set_xlabel("k (steps back from the prediction)")
    ax.set_ylabel("‖∂ loss / ∂ x_{T-k}‖ (log scale)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    return ax


# --- Attention (notebook 03 on) ---------------------------------------------------------------
# Convention for every attention picture: row i is the query (the position that looks),
# column j is the key (the position looked at), so row i of the weights sums to 1.


def _matrix(values):
    """A 2-D float numpy array from a tensor (any device, with grad) or nested lists."""
    import numpy as np

    if hasattr(values, "detach"):
        values = values.detach().to("cpu").double().numpy()
    m = np.asarray(values, dtype=float)
    while m.ndim > 2 and m.shape[0] == 1:  # drop leading batch dimensions of size 1
        m = m[0]
    if m.ndim != 2:
        raise ValueError(f"expected a (T_q, T_k) matrix, got an array of shape {m.shape}")
    return m


def _token_ticks(ax, tokens, n_rows: int, n_cols: int) -> None:
    if tokens is None:  # the axes are positions: whole numbers only (never 2.5)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        return
    tokens = [str(t) for t in tokens]
    if len(tokens) < max(n_rows, n_cols):
        raise ValueError(f"{len(tokens)} tokens for a {n_rows} x {n_cols} matrix")
    ax.set_xticks(range(n_cols))
    ax.set_xticklabels(tokens[:n_cols], rotation=90)
    ax.set_yticks(range(n_rows))
    ax.set_yticklabels(tokens[:n_rows])


def attention_heatmap(weights, tokens: Sequence[str] | None = None, ax=None,
                      title: str = "Attention weights", annotate: bool | None = None):
    """One head's weights ``(T_q, T_k)`` as a heatmap on a fixed 0..1 colour scale.

    ``tokens`` label the axes; ``annotate`` writes each weight in its cell (default: when the
    matrix is at most 10 x 10).
    """
    w = _matrix(weights)
    ax = _axes(ax, figsize=(5.5, 4.5))
    im = ax.imshow(w, cmap="viridis", vmin=0.0, vmax=1.0)
    _token_ticks(ax, tokens, *w.shape)
    if annotate if annotate is not None else max(w.shape) <= 10:
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="black" if w[i, j] > 0.6 else "white")
    ax.set_xlabel("key j (attended to)")
    ax.set_ylabel("query i (attending)")
    ax.set_title(title)
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def attention_heads(weights, tokens: Sequence[str] | None = None, titles: Sequence[str] | None = None,
                    title: str | None = None):
    """All heads side by side: ``weights`` is ``(h, T, T)`` (or ``(1, h, T, T)``).

    Returns the list of Axes, one per head, sharing one 0..1 colour scale.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    w = weights.detach().to("cpu").double().numpy() if hasattr(weights, "detach") else np.asarray(weights)
    if w.ndim == 4 and w.shape[0] == 1:
        w = w[0]
    if w.ndim != 3:
        raise ValueError(f"expected weights of shape (h, T, T), got {w.shape}")
    h = w.shape[0]
    fig, axes = plt.subplots(1, h, figsize=(3.2 * h + 1, 3.6), squeeze=False)
    axes = list(axes[0])
    for i, ax in enumerate(axes):
        im = ax.imshow(w[i], cmap="viridis", vmin=0.0, vmax=1.0)
        _token_ticks(ax, tokens, *w[i].shape)
        if tokens is not None and i > 0:
            ax.set_yticklabels([])
        ax.set_title(titles[i] if titles is not None else f"head {i}")
        ax.set_xlabel("key j")
    axes[0].set_ylabel("query i")
    fig.colorbar(im, ax=axes, fraction=0.02, pad=0.02)
    if title:
        fig.suptitle(title)
    return axes


def attention_mask(mask, tokens: Sequence[str] | None = None, ax=None, title: str = "Causal mask M"):
    """A mask as two colours: allowed (``0`` in an additive mask, ``True`` in a boolean one)
    and blocked (``-inf`` / ``False``); small masks get each cell written out."""
    import matplotlib.colors as mcolors
    import numpy as np

    m = _matrix(mask)
    if str(getattr(mask, "dtype", "")) in ("torch.bool", "bool"):
        blocked = m == 0
    else:
        blocked = np.isneginf(m)
        if np.any(~blocked & (m != 0)):
            raise ValueError("an additive mask holds only 0 (allowed) and -inf (blocked)")
    ax = _axes(ax, figsize=(4.5, 4))
    ax.imshow(blocked, cmap=mcolors.ListedColormap(["#cfe8cf", "#3b3b3b"]), vmin=0, vmax=1)
    _token_ticks(ax, tokens, *blocked.shape)
    if max(blocked.shape) <= 12:
        for i in range(blocked.shape[0]):
            for j in range(blocked.shape[1]):
                ax.text(j, i, "−∞" if blocked[i, j] else "0", ha="center", va="center",
                        color="white" if blocked[i, j] else "black", fontsize=8)
    ax.set_xlabel("key j (attended to)")
    ax.set_ylabel("query i (attending)")
    ax.set_title(title)
    return ax


def attention_cost(lengths: Sequence[int], seconds: Mapping[str, Sequence[float]],
                   bytes_: Mapping[str, Sequence[float]] | None = None,
                   title: str = "Cost of attention as the sequence grows"):
    """Time (and memory, if given) against sequence length T on log-log axes, one line per
    method, with a dashed ``∝ T²`` guide through the first method's last point."""
    import matplotlib.pyplot as plt

    panels = 2 if bytes_ else 1
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4), squeeze=False)
    axes = list(axes[0])
    series = [(axes[0], {k: [s * 1e3 for s in v] for k, v in seconds.items()}, "time per call (ms)")]
    if bytes_:
        series.append((axes[1], {k: [b / 2**20 for b in v] for k, v in bytes_.items()}, "memory (MiB)"))
    for ax, data, ylabel in series:
        for name, ys in data.items():
            ax.loglog(lengths, [max(y, 1e-9) for y in ys], "o-", label=name)
        first = next(iter(data.values()))
        if first:
            t_n, y_n = lengths[-1], max(first[-1], 1e-9)
            ax.loglog(lengths, [y_n * (t / t_n) ** 2 for t in lengths], "k--", lw=1, label="∝ T²")
        ax.set_xticks(list(lengths))
        ax.set_xticklabels([str(t) for t in lengths])
        ax.minorticks_off()
        ax.set_xlabel("sequence length T")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    fig.suptitle(title)
    return axes


def validation_sweep(values: Sequence[float], curves: Mapping[str, Sequence[float]], xlabel: str, ax=None,
                     log_x: bool = False, title: str = "Choosing a hyperparameter on validation text"):
    """Validation perplexity against one hyperparameter (``values``), one line per entry of
    ``curves`` (e.g. ``{"n=2": [...], "n=3": [...]}``); each line's minimum gets a ring and the
    best of all a star, labelled with its value."""
    ax = _axes(ax, figsize=(6.5, 4.2))
    best = None
    for label, ppl in curves.items():
        (line,) = ax.plot(values, ppl, marker=".", label=label)
        i = min(range(len(ppl)), key=ppl.__getitem__)
        ax.plot([values[i]], [ppl[i]], "o", mfc="none", ms=10, color=line.get_color())
        if best is None or ppl[i] < best[1]:
            best = (values[i], ppl[i], label)
    if best is not None:
        ax.plot([best[0]], [best[1]], "*", ms=16, color="black",
                label=f"best: {best[2]}, {xlabel} = {best[0]:g} ({best[1]:.1f})")
    if log_x:
        ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel + (" (log scale)" if log_x else ""))
    ax.set_ylabel("validation perplexity (log scale)")
    ax.set_title(title)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return ax
