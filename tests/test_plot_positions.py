"""Position axes of attention plots carry whole numbers only (no tick at 2.5)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from lmcourse import plot  # noqa: E402


def _labels(ax):
    ax.figure.canvas.draw()
    return [t for t in list(ax.get_xticks()) + list(ax.get_yticks())
            if ax.get_xlim()[0] <= t <= ax.get_xlim()[1] or min(ax.get_ylim()) <= t <= max(ax.get_ylim())]


def test_positions_without_tokens_are_whole_numbers():
    w = torch.softmax(torch.randn(3, 12, 12), dim=-1)
    for ax in [*plot.attention_heads(w), plot.attention_heatmap(w[0])]:
        ticks = _labels(ax)
        assert ticks, "no ticks at all"
        assert all(float(t).is_integer() for t in ticks), f"fractional position ticks: {ticks}"
    plt.close("all")
