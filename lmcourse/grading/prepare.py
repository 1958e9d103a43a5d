"""Check a submitted notebook against the release and make the copy that is graded.

- ``invalid-notebook``: empty file, not JSON, not an nbformat-4 notebook;
- ``wrong-assignment``: none of the release's grade ids is present;
- locked cells (tests, setup) compared with the release: an edited one is flagged
  (``tests-edited`` / ``locked-edited``) and a missing one (``tests-deleted`` /
  ``cells-deleted``) is put back at its place; the restored copy is graded anyway;
- nbgrader metadata compared with the release (``metadata-edited``) and restored;
- a grader-controlled preamble (seeds, output cap, genuine helper identities) is injected
  first, and a guard cell before every test cell that verifies — and restores — the
  comparison helpers, printing a marker line the grader reads back (``helpers-tampered``).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field

import nbformat

GUARD_TAG = "lmcourse_injected"
MARKER = "[lmcourse-guard]"
_KEYS = ("grade", "solution", "locked", "points", "grade_id", "task")
_MARKER_RE = re.compile(re.escape(MARKER) + r" (\S+) (ok|tampered:(\S+))")


@dataclass
class Prepared:
    status: str = "graded"          # or invalid-notebook / wrong-assignment
    flags: list[str] = field(default_factory=list)
    detail: str = ""
    nb: nbformat.NotebookNode | None = None


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def _norm(src) -> str:
    src = "".join(src) if isinstance(src, list) else (src or "")
    return "\n".join(line.rstrip() for line in src.strip().splitlines())


def _flag(p: Prepared, flag: str) -> None:
    if flag not in p.flags:
        p.flags.append(flag)


PREAMBLE = r'''# Injected by lmcourse grade (not part of the assignment).
def _lmcourse_install(seed, output_cap):
    import builtins, math, random, sys, types
    import numpy
    import lmcourse.checks as checks
    try:
        import torch
    except Exception:  # torch is optional for some notebooks
        torch = None
    random.seed(seed)
    numpy.random.seed(seed)
    if torch is not None:
        torch.manual_seed(seed)
    ip = get_ipython()
    watched = [(math, "isclose"), (numpy, "allclose"), (numpy, "isclose"), (numpy, "array_equal"),
               (numpy.testing, "assert_allclose"), (builtins, "isinstance"), (builtins, "abs")]
    if torch is not None:
        watched += [(torch, "allclose"), (torch, "isclose"), (torch, "equal"),
                    (torch.testing, "assert_close")]
    api = [n for n in dir(checks) if not n.startswith("_") and callable(getattr(checks, n))]
    watched += [(checks, n) for n in api]
    genuine = [(o, n, getattr(o, n)) for o, n in watched]
    modules = {"np": numpy, "numpy": numpy, "math": math}
    if torch is not None:
        modules["torch"] = torch
    by_name = {n: getattr(checks, n) for n in api}
    hooks = {e: list(cb) for e, cb in ip.events.callbacks.items()}
    own_tb = vars(ip).get("showtraceback"), vars(ip).get("_showtraceback")
    trusted = ("matplotlib", "matplotlib_inline", "ipykernel", "IPython", "ipywidgets")
    transformers = (list(ip.input_transformers_post), list(ip.ast_transformers))

    class _Capped:
        def __init__(self, stream):
            self.stream, self.left = stream, output_cap
        def write(self, s):
            if self.left <= 0:
                return len(s)
            if len(s) > self.left:
                self.stream.write(s[: self.left] + "\n[output cut: the grader's output cap]\n")
                self.left = 0
                return len(s)
            self.left -= len(s)
            return self.stream.write(s)
        def flush(self):
            return self.stream.flush()
        def __getattr__(self, name):
            return getattr(self.stream, name)

    out, err = _Capped(sys.stdout), _Capped(sys.stderr)
    sys.stdout, sys.stderr = out, err

    def check(grade_id):
        bad = []
        for owner, name, obj in genuine:
            if getattr(owner, name, None) is not obj:
                bad.append(f"{getattr(owner, '__name__', owner)}.{name}")
                setattr(owner, name, obj)
        ns = ip.user_ns
        for name, obj in by_name.items():
            if name in ns and ns[name] is not obj:
                bad.append(name)
                ns[name] = obj
        for name, mod in modules.items():
            if name in ns and ns[name] is not mod:
                bad.append(name)
                ns[name] = mod
        for attr, orig in zip(("showtraceback", "_showtraceback"), own_tb):
            if vars(ip).get(attr) is not orig:
                bad.append(attr)
                if orig is None:
                    vars(ip).pop(attr, None)
                else:
                    vars(ip)[attr] = orig
        if ip.custom_exceptions:
            bad.append("set_custom_exc")
            ip.set_custom_exc((), None)
        for event, cbs in ip.events.callbacks.items():
            # libraries register hooks on import (matplotlib: post_execute); others are suspect
            keep = [cb for cb in cbs if cb in hooks.get(event, [])
                    or str(getattr(cb, "__module__", "")).split(".")[0] in trusted]
            if len(keep) != len(cbs):
                bad.append(f"events.{event}")
                cbs[:] = keep
        if (list(ip.input_transformers_post), list(ip.ast_transformers)) != transformers:
            bad.append("transformers")
            ip.input_transformers_post[:] = transformers[0]
            ip.ast_transformers[:] = transformers[1]
        if sys.stdout is not out or sys.stderr is not err:
            sys.stdout, sys.stderr = out, err
        state = "ok" if not bad else "tampered:" + ",".join(sorted(set(bad)))
        out.stream.write(f"MARKER {grade_id} {state}\n")
        out.stream.flush()

    mod = types.ModuleType("_lmcourse_guard")
    mod.check = check
    sys.modules["_lmcourse_guard"] = mod

_lmcourse_install(SEED, OUTPUT_CAP)
del _lmcourse_install
'''


def _injected(kind: str, source: str, before: str | None = None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata[GUARD_TAG] = {"kind": kind, **({"before": before} if before else {})}
    return cell


def preamble_source(seed: int, output_cap: int) -> str:
    return (PREAMBLE.replace("MARKER", MARKER).replace("SEED", str(int(seed)))
            .replace("OUTPUT_CAP", str(int(output_cap))))


def prepare(raw: bytes, release: nbformat.NotebookNode, seed: int = 0,
            output_cap: int = 1_000_000) -> Prepared:
    """The notebook to grade (``.nb``), with status, flags and a one-line detail."""
    p = Prepared()
    if not raw.strip():
        return Prepared("invalid-notebook", detail="empty file")
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        return Prepared("invalid-notebook", detail=f"not JSON: {str(exc)[:120]}")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return Prepared("invalid-notebook", detail="JSON but not a notebook (no cell list)")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 (nbformat raises several types)
        return Prepared("invalid-notebook", detail=f"not a valid notebook: {str(exc).splitlines()[0][:120]}")

    rel_cells = [c for c in release.cells if _meta(c).get("grade_id")]
    rel_by_id = {_meta(c)["grade_id"]: c for c in rel_cells}
    sub_ids = {_meta(c).get("grade_id") for c in nb.cells} - {None}
    if not sub_ids & set(rel_by_id):
        detail = "none of this assignment's graded cells is in the notebook"
        if sub_ids:
            detail += f" (it has {', '.join(sorted(sub_ids)[:4])}...)"
        return Prepared("wrong-assignment", detail=detail)

    kept: dict[str, nbformat.NotebookNode] = {}
    cells = []
    for cell in nb.cells:
        cell.metadata.pop(GUARD_TAG, None)  # a student cannot pose as the grader
        gid = _meta(cell).get("grade_id")
        if gid is None:
            cells.append(cell)
            continue
        ref = rel_by_id.get(gid)
        if ref is None or gid in kept:
            _flag(p, "metadata-edited")           # unknown or duplicated grade id
            cell.metadata.pop("nbgrader", None)
            cells.append(cell)
            continue
        rm = _meta(ref)
        if cell.cell_type != ref.cell_type or any(_meta(cell).get(k) != rm.get(k) for k in _KEYS):
            _flag(p, "metadata-edited")
        if rm.get("locked") or (rm.get("grade") and not rm.get("solution")):
            if _norm(cell.source) != _norm(ref.source):
                _flag(p, "tests-edited" if rm.get("grade") else "locked-edited")
            cell = copy.deepcopy(ref)                  # restored from the release
        elif cell.cell_type != ref.cell_type:
            cell = nbformat.from_dict({**copy.deepcopy(ref), "source": cell.source})
        else:
            cell.metadata["nbgrader"] = copy.deepcopy(ref.metadata["nbgrader"])
        kept[gid] = cell
        cells.append(cell)

    # put back what was deleted, after the release cell that precedes it
    for i, ref in enumerate(rel_cells):
        gid = _meta(ref)["grade_id"]
        if gid in kept:
            continue
        rm = _meta(ref)
        _flag(p, "tests-deleted" if rm.get("grade") and not rm.get("solution") else "cells-deleted")
        restored = copy.deepcopy(ref)
        pos = 0
        for prev in reversed(rel_cells[:i]):
            pid = _meta(prev)["grade_id"]
            if pid in kept:
                pos = next(j for j, c in enumerate(cells) if c is kept[pid]) + 1
                break
        cells.insert(pos, restored)
        kept[gid] = restored

    # injected cells: the preamble first, a guard before every auto-graded test cell
    final = [_injected("preamble", preamble_source(seed, output_cap))]
    for cell in cells:
        m = _meta(cell)
        if cell.cell_type == "code" and m.get("grade") and not m.get("solution"):
            final.append(_injected("guard", f"__import__('sys').modules['_lmcourse_guard'].check("
                                            f"{m['grade_id']!r})", before=m["grade_id"]))
        final.append(cell)
    nb.cells = final
    nb.metadata["kernelspec"] = copy.deepcopy(release.metadata.get("kernelspec", nb.metadata.get("kernelspec")))
    p.nb = nb
    return p


def read_guards(nb: nbformat.NotebookNode) -> tuple[dict[str, list[str]], list[str]]:
    """From an executed notebook: {test grade id: tampered names} and the guard cells that
    printed no marker (student code stopped the report, or the kernel died before)."""
    tampered: dict[str, list[str]] = {}
    silent: list[str] = []
    for cell in nb.cells:
        info = cell.metadata.get(GUARD_TAG)
        if not info or info.get("kind") != "guard":
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        found = [m for m in _MARKER_RE.finditer(text) if m.group(1) == info["before"]]
        if not found:
            silent.append(info["before"])
        elif found[-1].group(3):
            tampered[info["before"]] = found[-1].group(3).split(",")
    return tampered, silent


def strip_injected(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.cells = [c for c in nb.cells if GUARD_TAG not in c.metadata]
    return nb
