"""Values in messages: short, and never through a student's ``__repr__`` (they are decoded plain
data by the time a message is written, :mod:`.plain`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["show"]

_ITEMS = 8          # a container shows its first items and how many there are


def show(x: Any, depth: int = 0) -> str:
    t = type(x)
    if t is float:
        return f"{x:.6g}"
    if t is str and len(x) > 80:
        return repr(x[:77]) + "…"
    if t in (str, int, bool, type(None), bytes):
        return repr(x)
    if depth < 3 and isinstance(x, Mapping):
        items = [f"{show(k, depth + 1)}: {show(v, depth + 1)}" for k, v in list(x.items())[:_ITEMS]]
        more = f", … ({len(x)} items)" if len(x) > _ITEMS else ""
        return "{" + ", ".join(items) + more + "}"
    if depth < 3 and t in (list, tuple, set, frozenset):
        seq = list(x) if t in (list, tuple) else sorted(x, key=repr)
        more = f", … ({len(seq)} items)" if len(seq) > _ITEMS else ""
        body = ", ".join(show(v, depth + 1) for v in seq[:_ITEMS]) + more
        if t is list:
            return f"[{body}]"
        if t is tuple:
            return f"({body}{',' if len(seq) == 1 else ''})"
        return "{" + body + "}" if seq else f"{t.__name__}()"
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.device.type == "meta" or x.numel() > 12:
            return f"a tensor of shape {tuple(x.shape)} ({str(x.dtype).removeprefix('torch.')})"
        return f"tensor({x.tolist()})"
    return repr(x) if t.__module__ in ("torch", "lmcourse.marking.plain") else f"<a {t.__name__}>"
