"""Grading a class on many machines: ``lmcourse grade … --shard K/N`` grades one share of the
submissions, ``lmcourse grade merge OUT_1 … OUT_N --out OUT`` joins the shards' folders into
what one run writes.

Which share a student is in depends on that student's id alone (a hash of it, modulo ``N``): the
same on every machine, whatever order the folder lists the files in and whoever else handed in,
so shards need not talk to each other. Each shard runs the whole pipeline on its share
(:func:`.grade.grade`) and records in ``OUT_K/shard.json`` which share it graded and the whole
class in its order; the merge checks that the ``N`` shards are there once each and cover the class
exactly, then writes ``grades.csv`` (the shards' rows in the class's order: the bytes one run
writes), ``students.json`` and ``run.json``, copies ``feedback/``, ``autograded/``, ``results/``
and the assignment's ``template/``, and writes the gradebook once (SQLite: one writer, not ``N``).

On a cluster, ``--shard auto`` takes ``K`` (and ``N``) from the job array's environment:
Slurm's ``SLURM_ARRAY_TASK_ID`` (minus ``SLURM_ARRAY_TASK_MIN``, plus 1) and
``SLURM_ARRAY_TASK_COUNT``, or a Kubernetes Indexed Job's ``JOB_COMPLETION_INDEX`` (0-based; the
Job's completion count is not in the pod's environment, so give it: ``--shard auto/N``).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ingest import Submission

RECORD = "shard.json"        # in each shard's OUT: which share it graded, and the whole class
MERGED = "merged.json"       # in a merge's OUT: only a folder with it is ever replaced
COPIED = ("feedback", "autograded", "results")   # one file per student in each


class ShardError(ValueError):
    """A ``--shard`` that cannot be read, or shard folders that do not make one class."""


def share_of(student: str, count: int) -> int:
    """The 1-based share of ``student`` among ``count``: a hash of the id (not Python's
    ``hash``, which differs between processes)."""
    return int.from_bytes(hashlib.sha256(student.encode("utf-8")).digest()[:8], "big") % count + 1


def parse(text: str, env: dict[str, str] | None = None) -> tuple[int, int]:
    """``K/N`` (1-based), or ``auto`` / ``auto/N`` from a Slurm array's or a Kubernetes Indexed
    Job's environment. Raises :class:`ShardError` saying what is wrong."""
    env = dict(os.environ) if env is None else env
    head, _, tail = text.strip().partition("/")
    try:
        count = int(tail) if tail else None
        if head == "auto":
            index, found = _from_env(env)
            count = count or found
        else:
            index = int(head)
    except ValueError as exc:
        raise ShardError(f"--shard {text}: write K/N (e.g. 2/8, shards numbered from 1) or auto / auto/N "
                         "(K from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)") from exc
    if count is None:
        raise ShardError(f"--shard {text}: how many shards? SLURM_ARRAY_TASK_COUNT is not set: write auto/N")
    if count < 1 or not 1 <= index <= count:
        raise ShardError(f"--shard {text}: shard {index} of {count} (shards are numbered 1 to N)")
    return index, count


def _from_env(env: dict[str, str]) -> tuple[int, int | None]:
    """(1-based shard, shard count or None) from the job engine's variables."""
    if "SLURM_ARRAY_TASK_ID" in env:      # --array=1-8 or 0-7: counted from the array's first id
        first = int(env.get("SLURM_ARRAY_TASK_MIN", "1"))
        count = int(env["SLURM_ARRAY_TASK_COUNT"]) if env.get("SLURM_ARRAY_TASK_COUNT") else None
        return int(env["SLURM_ARRAY_TASK_ID"]) - first + 1, count
    if "JOB_COMPLETION_INDEX" in env:     # Kubernetes Indexed Job: 0 .. completions-1
        return int(env["JOB_COMPLETION_INDEX"]) + 1, None
    raise ValueError("no SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX in the environment")


def take_share(subs: list[Submission], shard: tuple[int, int], out: Path) -> list[Submission]:
    """This shard's submissions (in the class's order), after recording in ``out/shard.json``
    which share it is and every student of the class in order (for :func:`merge`)."""
    index, count = shard
    mine = [s for s in subs if share_of(s.student, count) == index]
    record = {"shard": index, "count": count, "class": [s.student for s in subs],
              "students": [s.student for s in mine]}
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")
    return mine


# ---------------------------------------------------------------- merge

def _read_shards(folders: list[Path]) -> list[dict]:
    records = []
    for f in folders:
        try:
            rec = json.loads((f / RECORD).read_text(encoding="utf-8"))
            rec["run"] = json.loads((f / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ShardError(f"{f}: not a finished shard of `lmcourse grade --shard K/N` (no readable "
                             f"{RECORD} and run.json: {exc})") from exc
        if not (f / "grades.csv").is_file():
            raise ShardError(f"{f}: no grades.csv (did shard {rec.get('shard')} finish?)")
        rec["folder"] = f
        records.append(rec)
    first = records[0]
    for rec in records[1:]:
        for what in ("count", "class"):
            if rec[what] != first[what]:
                raise ShardError(f"{rec['folder']} and {first['folder']} graded different classes or shard counts "
                                 f"({what} differs): shards of one run only")
        if {k: v for k, v in rec["run"].items() if k != "gradebook"} != \
                {k: v for k, v in first["run"].items() if k != "gradebook"}:
            raise ShardError(f"{rec['folder']} and {first['folder']} were graded with different assignments, "
                             "rosters, due times or late policies (run.json)")
    seen: dict[int, Path] = {}
    for rec in records:
        if rec["shard"] in seen:
            raise ShardError(f"shard {rec['shard']}/{rec['count']} given twice: {seen[rec['shard']]}, {rec['folder']}")
        seen[rec["shard"]] = rec["folder"]
    missing = sorted(set(range(1, first["count"] + 1)) - set(seen))
    if missing:
        named = ", ".join(f"{k}/{first['count']}" for k in missing)
        raise ShardError(f"shard(s) {named} missing: give every shard's folder (or grade the missing ones first)")
    return sorted(records, key=lambda r: r["shard"])


def _rows(folder: Path) -> tuple[list[str], dict[str, list[str]]]:
    with open(folder / "grades.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], {r[0]: r for r in rows[1:]}


def _prepare_out(out: Path, shards: list[Path]) -> None:
    """``out`` new, empty, or an earlier merge (replaced whole); never a shard or another folder."""
    out = out.resolve()
    if any(out == s.resolve() for s in shards):
        raise ShardError(f"--out {out} is one of the shards: merge into a folder of its own")
    if out.exists() and any(out.iterdir()):
        if not (out / MERGED).is_file():
            raise ShardError(f"--out {out} is not empty and holds no earlier merge: give a new or empty folder")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def merge(shards: list[Path], out: Path, gradebook: Path | None = None) -> list[str]:
    """Join the shards' folders into ``out`` as one run of the whole class writes it; the
    gradebook (when given) written from the joined results. Returns the class's students."""
    if not shards:
        raise ShardError("no shard folders given")
    shards = [Path(s) for s in shards]
    records = _read_shards(shards)
    _prepare_out(Path(out), shards)
    out = Path(out)
    order = records[0]["class"]
    header, rows = None, {}
    students: dict[str, dict] = {}
    for rec in records:
        f = rec["folder"]
        head, got = _rows(f)
        if header is not None and head != header:
            raise ShardError(f"{f}/grades.csv has other columns than shard 1's")
        header = head
        if sorted(got) != sorted(rec["students"]):
            raise ShardError(f"{f}/grades.csv does not hold exactly the students of shard {rec['shard']}")
        rows.update(got)
        students.update(json.loads((f / "students.json").read_text(encoding="utf-8")))
        for sub in COPIED:
            for p in sorted((f / sub).glob("*")) if (f / sub).is_dir() else []:
                if p.is_file() and p.stem in rec["students"]:
                    (out / sub).mkdir(exist_ok=True)
                    shutil.copy2(p, out / sub / p.name)
    if sorted(rows) != sorted(order):
        raise ShardError("the shards' students do not add up to the class (a shard graded another class?)")
    buf = io.StringIO(newline="")
    w = csv.writer(buf)            # as reports.write_csv writes it: the same bytes
    w.writerow(header)
    for sid in order:
        w.writerow(rows[sid])
    (out / "grades.csv").write_text(buf.getvalue(), encoding="utf-8", newline="")
    (out / "students.json").write_text(json.dumps(students, indent=1, sort_keys=True), encoding="utf-8")
    run = dict(records[0]["run"])
    run["gradebook"] = str(Path(gradebook).resolve()) if gradebook else ""
    (out / "run.json").write_text(json.dumps(run, indent=1), encoding="utf-8")
    if (records[0]["folder"] / "template").is_dir():     # the release, reused by the gradebook write
        shutil.copytree(records[0]["folder"] / "template", out / "template")
    if gradebook is not None:
        _write_gradebook(run["assignment"], order, out, Path(gradebook))
    (out / MERGED).write_text(json.dumps({"shards": [str(r["folder"].resolve()) for r in records]}, indent=1),
                              encoding="utf-8")
    return order


def _write_gradebook(assignment: str, order: list[str], out: Path, db: Path) -> None:
    from .gradebook import write_gradebook
    from .result import Result
    from .template import Template

    results = []
    for sid in order:
        p = out / "results" / f"{sid}.json"
        if p.is_file():
            results.append(Result(**json.loads(p.read_text(encoding="utf-8"))))
    write_gradebook(results, Template(assignment, out), out, db)


def main(argv: list[str], prog: str = "lmcourse grade merge") -> int:
    import argparse

    from ..commands.paths import CourseRepoNotFound, repo_root

    p = argparse.ArgumentParser(prog=prog, description="join the folders of `lmcourse grade --shard K/N` runs "
                                "into the grades.csv, feedback and gradebook one run of the whole class writes")
    p.add_argument("shards", nargs="+", help="every shard's --out folder (OUT_1 ... OUT_N)")
    p.add_argument("--out", required=True, help="a new or empty folder (or an earlier merge's, replaced)")
    p.add_argument("--gradebook", default="", help="nbgrader gradebook to write the class into (default: the "
                   "course's autograder/gradebook.db; 'none' to skip)")
    args = p.parse_args(argv)
    try:
        gradebook = (None if args.gradebook.lower() == "none" else
                     Path(args.gradebook) if args.gradebook else repo_root() / "autograder" / "gradebook.db")
        order = merge([Path(s) for s in args.shards], Path(args.out), gradebook)
    except (ShardError, CourseRepoNotFound, FileNotFoundError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(f"merged {len(args.shards)} shards ({len(order)} students) into {Path(args.out) / 'grades.csv'}, "
          f"feedback in {Path(args.out) / 'feedback'}/" + (f"; gradebook {gradebook}" if gradebook else ""))
    return 0
