"""Notebook 12's memorisation experiments: passages to extract, training text with planted duplicates, a
character n-gram model that continues greedily (notebook 01's counts, on characters), and the plot.

The extraction rate and the deduplication are the notebook's own answers, passed in or called by the notebook:
nothing here does an exercise's work.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

__all__ = ["CharNgram", "passages", "plant_duplicates", "plot_rates"]


def passages(text: str, n: int, chars: int, seed: int = 0, avoid: Sequence[str] = ()) -> list[str]:
    """``n`` passages of ``chars`` characters of ``text``, each starting at a line's start, drawn without
    repeats; none that holds a blank line (a planted copy stays one paragraph), contains one of ``avoid`` or lies
    inside one."""
    rng = random.Random(f"passages-{seed}")
    starts = [m.end() for m in re.finditer("\n", text[:len(text) - chars])]
    rng.shuffle(starts)
    out = []
    for s in starts:
        piece = text[s:s + chars]
        clash = any(piece in a or a in piece for a in avoid)
        if len(piece) == chars and "\n\n" not in piece and not clash:
            out.append(piece)
        if len(out) == n:
            break
    return out


def plant_duplicates(text: str, planted: Sequence[str], copies: int, seed: int = 0) -> str:
    """``text`` with each of ``planted`` inserted ``copies`` times as a paragraph of its own, at random
    paragraph boundaries (the original stays where it was)."""
    rng = random.Random(f"plant-{seed}")
    paragraphs = text.split("\n\n")
    for piece in planted:
        for _ in range(copies):
            paragraphs.insert(rng.randrange(len(paragraphs) + 1), piece)
    return "\n\n".join(paragraphs)


class CharNgram:
    """A character n-gram model: the most frequent next character after each context of up to ``n - 1``
    characters of ``text``, backing off to a shorter context when a longer one was never seen."""

    def __init__(self, text: str, n: int) -> None:
        self.n = n
        self.best: list[dict[str, str]] = []
        for order in range(n):                       # context lengths 0 .. n - 1
            counts: dict[str, Counter] = defaultdict(Counter)
            for i in range(order, len(text)):
                counts[text[i - order:i]][text[i]] += 1
            self.best.append({ctx: c.most_common(1)[0][0] for ctx, c in counts.items()})

    def next_char(self, context: str) -> str:
        for order in range(min(self.n - 1, len(context)), -1, -1):
            ctx = context[len(context) - order:]
            if ctx in self.best[order]:
                return self.best[order][ctx]
        return " "

    def continue_text(self, prompt: str, s: int) -> str:
        text = prompt
        for _ in range(s):
            text += self.next_char(text)
        return text[len(prompt):]

    def extraction_rate(self, texts: Sequence[str], p: int, s: int) -> float:
        """The share of ``texts`` whose next ``s`` characters come back after their first ``p``."""
        return sum(self.continue_text(t[:p], s) == t[p:p + s] for t in texts) / max(1, len(texts))


def plot_rates(rates: dict[str, dict[str, float]], title: str, ax=None):
    """Grouped bars: one group per model, one bar per kind of passage (planted, training, held-out)."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(10, 4))[1]
    models = list(rates)
    kinds = sorted({k for r in rates.values() for k in r}, key=lambda k: list(next(iter(rates.values()))).index(k)
                   if k in next(iter(rates.values())) else 99)
    width = 0.8 / max(1, len(kinds))
    for j, kind in enumerate(kinds):
        xs = [i + (j - (len(kinds) - 1) / 2) * width for i in range(len(models))]
        ax.bar(xs, [rates[m].get(kind, float("nan")) for m in models], width, label=kind)
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels(models, fontsize=8, rotation=15)
    ax.set_ylabel("extraction rate")
    ax.set_ylim(0, 1.05)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax
