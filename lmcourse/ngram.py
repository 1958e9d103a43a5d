"""Count tables for n-gram models, so probabilities are look-ups rather than scans.

The notebook's students count n-grams themselves; :class:`ContextTable` only regroups a
count dictionary ``{(w1, ..., wn): count}`` by context ``(w1, ..., w{n-1})`` and caches the
totals that every estimator needs. The reference answers of notebook 01 live in
:mod:`lmcourse.reference.ngram`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass
class ContextTable:
    """Counts of n-grams of one order, grouped by their context (the first n-1 words).

    ``next[h][w]``  count of the n-gram ``h + (w,)``, i.e. c(h, w)
    ``total[h]``    sum over w of c(h, w), i.e. c(h)
    ``distinct[h]`` number of different words w with c(h, w) > 0, i.e. N1+(h •)
    """

    n: int
    next: dict[tuple, dict[str, int]] = field(default_factory=dict)
    total: dict[tuple, int] = field(default_factory=dict)
    distinct: dict[tuple, int] = field(default_factory=dict)

    @classmethod
    def from_counts(cls, counts: Mapping[tuple, int]) -> "ContextTable":
        orders = {len(g) for g in counts}
        if len(orders) > 1:
            raise ValueError(f"n-grams of mixed orders {sorted(orders)}: build one table per order")
        n = orders.pop() if orders else 1
        nxt: dict[tuple, dict[str, int]] = {}
        for gram, c in counts.items():
            if c <= 0:
                continue
            nxt.setdefault(tuple(gram[:-1]), {})[gram[-1]] = int(c)
        total = {h: sum(d.values()) for h, d in nxt.items()}
        distinct = {h: len(d) for h, d in nxt.items()}
        return cls(n, nxt, total, distinct)

    def __repr__(self) -> str:
        return f"ContextTable(n={self.n}, contexts={len(self.next):,}, ngrams={sum(self.distinct.values()):,})"
