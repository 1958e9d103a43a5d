"""What a grading run prints and writes for the TA: ``grades.csv``, the summary table and the
``--timings`` table."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from .classify import STATUSES

if TYPE_CHECKING:
    from .result import Result
    from .template import Template


# roster and deadline columns (:mod:`.semester`); ``score`` stays the raw autograded score
EXTRA_COLUMNS = ("name", "submitted_at", "due", "late_hours", "penalty_pct", "penalty", "final_score")


# the column `lmcourse grade similarity` appends (similarity_report.COLUMN); kept across regrades
SIMILARITY = "similarity"


def _earlier_similarity(path: Path) -> dict[str, str] | None:
    """student -> the similarity column of the grades.csv at ``path``; None when it has none."""
    if not path.is_file():
        return None
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
        if not rows or SIMILARITY not in rows[0] or "student" not in rows[0]:
            return None
    return {r["student"]: r[SIMILARITY] or "" for r in rows}


def write_csv(results: list[Result], tpl: Template, path: Path) -> list[str]:
    """One row per student: score, max_score (all points) and auto_max (the autograded part; the
    rest is graded by hand), status, flags, detail, name and late columns, then one column per
    grade cell. A ``similarity`` column an earlier run's file had is kept for the students served
    from the cache (their notebook is the one compared); returns a line for the TA when some
    students' values could not be kept."""
    ids = [gid for gid, _, _ in tpl.grade_cells]
    earlier = _earlier_similarity(Path(path))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "assignment", "score", "max_score", "auto_max", "status", "flags", "detail",
                    *EXTRA_COLUMNS, *ids, *([SIMILARITY] if earlier is not None else [])])
        for r in results:
            extra = {"penalty_pct": "0", "penalty": "0", "final_score": f"{r.score:g}", **r.extra}
            kept = [earlier.get(r.student, "") if r.cached else ""] if earlier is not None else []
            w.writerow([r.student, r.assignment, f"{r.score:g}", f"{r.max_score:g}", f"{r.auto_max:g}", r.status,
                        ";".join(r.flags), r.detail, *[extra.get(c, "") for c in EXTRA_COLUMNS],
                        *["" if r.tests.get(g) is None else f"{r.tests[g]:g}" for g in ids], *kept])
    rerun = [r.student for r in results if not r.cached and earlier and earlier.get(r.student)]
    if not rerun:
        return []
    folder = Path(path).parent
    return [f"{path}: the similarity column is blank for {len(rerun)} regraded student(s) ({', '.join(rerun[:5])}"
            f"{', ...' if len(rerun) > 5 else ''}): their notebook was not the one compared; run `lmcourse grade "
            f"similarity {results[0].assignment} {folder}` to fill it again"]


def summary(results: list[Result]) -> str:
    """The terminal table: one row per student, then the count of each status."""
    rows = [("student", "score", "status", "flags")]
    rows += [(r.student, r.score_text() + (f" -{r.extra['penalty_pct']}%" if r.extra.get(
              "penalty_pct", "0") != "0" else ""), r.status + (" (cached)" if r.cached else ""),
              ",".join(r.flags) or "-") for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    manual = results[0].max_score - results[0].auto_max if results else 0
    cached = sum(r.cached for r in results)
    many = f"{len(results)} submission{'' if len(results) == 1 else 's'}"
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items() if n) +
                 f"  ({many}; {manual:g} more points are graded by hand"
                 + (f"; {cached} cached from an earlier run, --force to rerun" if cached else "") + ")")
    lines += [f"{r.student}: {r.status}: {r.detail}" for r in results if r.status == "wrong-assignment"]
    return "\n".join(lines)


# runner stamps -> phases (``--timings``): each phase ends at its stamp, starts at the one before
_PHASES = (("sandbox+python start", "start"), ("runner imports", "imports"), ("kernel start", "kernel"),
           ("preamble cell", "preamble"), ("notebook cells", "cells"), ("kernel shutdown", "shutdown"),
           ("runner: result out, exit", "exited"), ("process-tree kill", "killed"),
           ("result parse", "parsed"))


def phase_times(stamps: dict[str, float]) -> dict[str, float]:
    """A run's phases in seconds from its timestamps (the runner's and the host's)."""
    out, last = {}, stamps.get("popen")
    for name, key in _PHASES:
        if key in stamps and last is not None:
            out[name] = round(stamps[key] - last, 3)
            last = stamps[key]
    return out


def timing_table(results: list[Result], batch: dict[str, float]) -> str:
    """``--timings``: per-submission phases (mean and total over the submissions graded in this
    run), then the batch phases."""
    fresh = [r for r in results if r.timings]
    names: list[str] = []
    for r in fresh:
        names += [n for n in r.timings if n not in names]
    lines = [f"timings ({len(fresh)} submissions run now; seconds)",
             f"  {'phase':34s} {'mean':>7s} {'total':>8s}"]
    for n in names:
        vals = [r.timings[n] for r in fresh if n in r.timings]
        lines.append(f"  {n:34s} {sum(vals) / len(vals):7.2f} {sum(vals):8.2f}")
    if fresh:
        tot = [r.seconds for r in fresh]
        lines.append(f"  {'whole submission (in its worker)':34s} {sum(tot) / len(tot):7.2f} {sum(tot):8.2f}")
    for n, v in batch.items():
        lines.append(f"  batch: {n:48s} {v:8.2f}")
    return "\n".join(lines)
