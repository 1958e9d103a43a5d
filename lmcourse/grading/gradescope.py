"""``lmcourse grade gradescope ASSIGNMENT --out autograder.zip``: the assignment as a Gradescope
autograder, graded by the same pipeline as ``lmcourse grade``.

Gradescope builds an image from the zip once (running ``setup.sh`` as root), then, per
submission, starts a fresh container with the student's upload in ``/autograder/submission``,
runs ``/autograder/run_autograder`` in ``/autograder`` and reads
``/autograder/results/results.json`` (its documented format: a top-level ``score``, ``output``
and ``tests``, each test with ``name``, ``score``, ``max_score``, ``status``, ``output`` and
``visibility``: ``visible``, ``after_due_date``, ``after_published`` or ``hidden``, the last
never shown to students; instructors see every test and the script's stdout).

The zip holds:

- ``setup.sh``: installs Python's venv and bubblewrap with apt, the CPU build of torch (pinned)
  from PyTorch's CPU wheel index, then the course package from ``course/`` with every other
  dependency pinned to this machine's versions (``constraints.txt``); then
  ``write_autograder_files`` below (the assignment's release and the corpus, made once in the
  image, not per submission);
- ``run_autograder``: ``run`` below: the uploaded notebook put where :func:`.grade.grade` finds
  it (nbgrader's ``submitted/`` layout, one student), graded with the zip's limits, and
  ``results.json`` written from the :class:`.result.Result` and the autograded notebook;
- ``course/``: the ``lmcourse`` package, ``pyproject.toml``, and the assignment's source notebook
  and nbgrader config (hidden tests included: the zip is for instructors only);
- ``lmcourse_gradescope.json``: the assignment, limits, sandbox and hidden-test visibility.

``LMCOURSE_AUTOGRADER_ROOT`` relocates ``/autograder`` (the tests run both scripts under a temp
folder); ``LMCOURSE_GS_VENV`` names the Python environment (default ``/autograder/venv``), and
``LMCOURSE_GS_DRY_RUN=1`` makes ``setup.sh`` print its apt and pip commands instead of running
them (the tests then use the course's own venv in place of what pip would install).

results.json, per graded test cell one test, ``Exercise 1 tests (pad_sentence_tests)``: its
score and points, and as ``output`` what the feedback page shows of that cell (its printed
lines and the last line of an error, the hidden tests' source never; text that would quote a
hidden line is withheld). Cells holding hidden tests get the zip's hidden visibility (default
``after_due_date``: their score shows the hidden tests' outcome, which a student could
otherwise probe by resubmitting), plus a 0-point ``visible`` companion that says whether the
visible checks passed, as the student's own notebook says. The status, flags and detail go to
a 0-point test with visibility ``hidden`` (the TA's eyes only) and to ``extra_data``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import traceback
import zipfile
from dataclasses import asdict
from pathlib import Path

from .limits import Limits
from .nbgrader_cli import skip_uri_grammar

ROOT_ENV = "LMCOURSE_AUTOGRADER_ROOT"
CONFIG = "lmcourse_gradescope.json"
STUDENT = "submission"            # the one student id inside a container
OUT = "lmcourse-grades"           # the grader's folder under the root (template, results, feedback)
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")
WHEN = {"visible": "now", "after_due_date": "after the due date", "after_published": "once grades are published",
        "hidden": "to the course staff only"}
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
OUTPUT_CHARS = 5000               # per test: Gradescope shows it in a box, not a log
WITHHELD = "(output withheld: it would quote a hidden test)"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (lmcourse grade gradescope).
set -euo pipefail
ROOT="${LMCOURSE_AUTOGRADER_ROOT:-/autograder}"
SRC="$ROOT/source"
VENV="${LMCOURSE_GS_VENV:-$ROOT/venv}"
# a dry run (--try) prints each install as Gradescope would run it: into $ROOT/venv, not the try's own environment
step() {
  if [ -n "${LMCOURSE_GS_DRY_RUN:-}" ]; then echo "+ (dry run, not run) ${*//"$VENV"/$ROOT/venv}"
  else echo "+ $*"; "$@"; fi
}
step apt-get update
step apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap
step python3 -m venv "$VENV"
# the CPU build first: PyPI's default torch would pull gigabytes of CUDA libraries
step "$VENV/bin/pip" install --no-cache-dir --index-url %(torch_index)s "torch==%(torch)s"
step "$VENV/bin/pip" install --no-cache-dir -c "$SRC/constraints.txt" "$SRC/course"
cd "$ROOT"   # not in course/: its lmcourse/ folder would shadow the installed package
"$VENV/bin/python" -m lmcourse.grading.gradescope prepare "$ROOT"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this per submission: the upload is in $ROOT/submission, results.json goes to $ROOT/results.
ROOT="${LMCOURSE_AUTOGRADER_ROOT:-/autograder}"
VENV="${LMCOURSE_GS_VENV:-$ROOT/venv}"
cd "$ROOT"   # not in course/: its lmcourse/ folder would shadow the installed package (run() goes there)
exec "$VENV/bin/python" -m lmcourse.grading.gradescope run "$ROOT"
"""


# ---------------------------------------------------------------- the zip (the TA's machine)

def pinned_requirements(top: str = "lmcourse") -> dict[str, str]:
    """name -> installed version of every distribution ``top`` needs (its dependencies' closure,
    extras left out), as installed here: the versions the course is tested with."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, str] = {}
    todo = [top]
    while todo:
        name = todo.pop()
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        key = canonicalize_name(dist.metadata["Name"])
        if key in found:
            continue
        found[key] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    found.pop(canonicalize_name(top), None)
    return dict(sorted(found.items()))


def _entries(assignment: str, root: Path, config: dict) -> dict[str, bytes | Path]:
    """Zip name -> content (bytes) or file to copy."""
    pins = pinned_requirements()
    torch = pins.get("torch", "").split("+")[0]   # 2.13.0+cpu: the CPU index serves it as 2.13.0
    if not torch:
        raise RuntimeError("torch is not installed here: the autograder pins the version the course runs")
    out: dict[str, bytes | Path] = {
        "setup.sh": (SETUP_SH % {"torch": torch, "torch_index": TORCH_INDEX}).encode(),
        "run_autograder": RUN_AUTOGRADER.encode(),
        CONFIG: json.dumps(config, indent=1).encode(),
        "constraints.txt": "".join(f"{k}=={v.split('+')[0] if k == 'torch' else v}\n"
                                   for k, v in pins.items()).encode(),
        "course/pyproject.toml": root / "pyproject.toml",
        "course/README.md": root / "README.md",     # pyproject's readme: the build needs it
        "course/autograder/nbgrader_config.py": root / "autograder" / "nbgrader_config.py",
    }
    src = root / "autograder" / "source" / assignment / f"{assignment}.ipynb"
    if not src.is_file():
        raise FileNotFoundError(f"no source notebook {src} (is the assignment name right? `make build` first)")
    out[f"course/autograder/source/{assignment}/{assignment}.ipynb"] = src
    pkg = root / "lmcourse"
    for p in sorted(pkg.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
            out[f"course/lmcourse/{p.relative_to(pkg).as_posix()}"] = p
    return out


def build_zip(assignment: str, dest: Path, limits: Limits | None = None, hidden_visibility: str = "after_due_date",
              sandbox: str = "auto", root: Path | None = None) -> list[str]:
    """Write the autograder zip to ``dest`` (the same bytes for the same course: entries sorted,
    fixed timestamps). Returns the entry names."""
    from ..commands.paths import repo_root

    if hidden_visibility not in VISIBILITIES:
        raise ValueError(f"hidden visibility {hidden_visibility!r}: one of {', '.join(VISIBILITIES)}")
    if sandbox not in ("auto", "bubblewrap", "none"):
        raise ValueError(f"sandbox {sandbox!r}: auto, bubblewrap or none")
    root = Path(root or repo_root())
    config = {"assignment": assignment, "hidden_visibility": hidden_visibility, "sandbox": sandbox,
              "limits": asdict(limits or Limits())}
    entries = _entries(assignment, root, config)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            executable = name in ("setup.sh", "run_autograder")
            info.external_attr = (0o755 if executable else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            body = entries[name]
            zf.writestr(info, body if isinstance(body, bytes) else body.read_bytes())
    return sorted(entries)


# ---------------------------------------------------------------- results.json (pure)

def _cell_text(cell) -> str:
    parts = []
    for o in cell.get("outputs", []):
        kind = o.get("output_type")
        if kind == "stream":
            parts.append(o.get("text", ""))
        elif kind == "error":            # as released: the last line of the traceback only
            parts.append(f"{o.get('ename', 'Error')}: {o.get('evalue', '')}\n")
        elif kind in ("execute_result", "display_data"):
            parts.append(str(o.get("data", {}).get("text/plain", "")) + "\n")
    text = "".join(parts).strip()
    return text if len(text) <= OUTPUT_CHARS else text[:OUTPUT_CHARS] + "\n... (cut)"


def cell_outputs(nb, tpl) -> dict[str, str]:
    """grade id -> what the student may see of that test cell's output (the cell as the
    feedback page shows it: :func:`.feedback.as_released`)."""
    import nbformat

    from .feedback import as_released

    nb = nbformat.from_dict(json.loads(json.dumps(nb)))   # a copy: the caller's stays as it ran
    as_released(nb, tpl)
    return {c.metadata["nbgrader"]["grade_id"]: _cell_text(c) for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
            and not c.metadata["nbgrader"].get("solution")}


def _student_detail(res) -> str:
    """What a student is told of a status other than graded: its detail."""
    return "; ".join(x for x in res.detail.split("; ") if x)


def _visible_checks(name: str, output: str | None, shown: str, full: bool, pass_line: str,
                    hidden_visibility: str) -> dict:
    """The 0-point companion of a test cell with hidden tests: whether its visible part passed
    (its pass line was printed, or the whole cell passed: the line may have been cut with a
    flood of output), never the hidden tests' verdict."""
    lines = [ln for ln in (output or "").splitlines() if pass_line in ln]
    passed = bool(lines) or full
    if passed:
        text = lines[0] if lines else f"the visible checks pass ({pass_line.split('(')[-1]}"
    else:
        text = f"{shown}\n(the points, hidden tests included, are shown {WHEN[hidden_visibility]})"
    return {"name": f"{name}: visible checks", "score": 0.0, "max_score": 0.0,
            "status": "passed" if passed else "failed", "visibility": "visible", "output": text}


def _recorded_companions(nb, assignment: str, scores: dict, points: dict, status: str,
                         hidden_visibility: str, shown) -> dict[str, dict]:
    """grade id -> the companion of a test cell graded from records (:mod:`lmcourse.marking`).
    Such a cell runs every case, visible and hidden, in one record and the grader writes one
    verdict into it, so its output cannot tell the visible part apart: the judged outcome does
    (the visible cases come first; its first failing case is named hidden or visible). Only a
    visible case's message is shown, and none of the cell's printed output, which the hidden
    cases' calls wrote too."""
    from ..marking.judge import Outcome
    from ..marking.kernel import PASS_LINE
    from ..marking.notebooks import load, marked

    if not marked(assignment):
        return {}
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in (nb.cells if nb is not None else [])
             if c.get("cell_type") == "code"}
    companions = {}
    for ex in load(assignment).exercises:
        gid = ex.test_id
        if gid not in points:
            continue
        cell = cells.get(gid)
        error = next((o for o in (cell.get("outputs", []) if cell is not None else [])
                      if o.get("output_type") == "error"), None)
        hidden_failed = Outcome(ex.name, False, 0, None, "", hidden=True).text()
        if cell is None:
            passed, text = False, f"not run ({status})"
        elif error is None:
            passed, text = float(scores.get(gid) or 0.0) >= points[gid], ""
        else:
            passed = error.get("ename") == "CheckFailed" and str(error.get("evalue", "")).startswith(hidden_failed)
            text = "" if passed else shown(f"{error.get('ename', 'Error')}: {error.get('evalue', '')}")
        if passed:
            text = f"{ex.name}: {PASS_LINE}"
        elif not text:              # no verdict in the cell: the run stopped before it (timeout, ...)
            text = f"not run ({status})" if status != "graded" else "the test cell did not pass"
        if not passed:
            text += f"\n(the points, hidden tests included, are shown {WHEN[hidden_visibility]})"
        companions[gid] = {"score": 0.0, "max_score": 0.0, "status": "passed" if passed else "failed",
                           "visibility": "visible", "output": text}
    return companions


def results_json(res, tpl, nb=None, hidden_visibility: str = "after_due_date", sandbox: str = "") -> dict:
    """Gradescope's results.json for one graded submission ``res`` (``nb``: its autograded
    notebook, None when none ran)."""
    from ..marking.kernel import PASS_LINE  # what a test cell prints when its visible part passed
    from .grade import GRADER_VERSION
    from .template import test_label

    hidden_lines = tpl.hidden_lines()
    outputs = cell_outputs(nb, tpl) if nb is not None else {}
    has_hidden = {c.metadata["nbgrader"]["grade_id"] for c in tpl.source.cells
                  if c.metadata.get("nbgrader", {}).get("grade") and "BEGIN HIDDEN TESTS" in c.source}
    withheld = False

    def shown(text: str) -> str:
        nonlocal withheld
        from .feedback import leaks

        if leaks(text, hidden_lines):
            withheld = True
            return WITHHELD
        return text

    recorded = _recorded_companions(nb, tpl.assignment, res.tests, tpl.points, res.status, hidden_visibility, shown)
    tests = []
    for gid, kind, points in tpl.grade_cells:
        if kind != "code":                # free-text answers: graded by hand, on Gradescope too
            continue
        score = float(res.tests.get(gid) or 0.0)
        name = f"{test_label(tpl.exercise_of, gid)} ({gid})"
        text = shown(outputs[gid]) if gid in outputs else f"not run ({res.status})"
        hidden = gid in has_hidden and hidden_visibility != "visible"
        if hidden and gid in recorded:
            tests.append({"name": f"{name}: visible checks", **recorded[gid]})
        elif hidden:                      # what the student's own notebook shows, at once
            tests.append(_visible_checks(name, outputs.get(gid), text, score >= points, PASS_LINE,
                                         hidden_visibility))
        tests.append({"name": name, "score": score, "max_score": points,
                      "status": "passed" if score >= points else "failed", "output": text,
                      "visibility": hidden_visibility if gid in has_hidden else "visible"})
    flags = list(res.flags) + (["feedback-withheld"] if withheld and "feedback-withheld" not in res.flags else [])
    by_hand = res.max_score - res.auto_max
    top = [f"{tpl.assignment}: {res.score:g}/{res.auto_max:g} autograded"
           + (f" (+{by_hand:g} points of free-text answers, graded by hand)" if by_hand > 0 else "")]
    if res.status != "graded":
        top.append(f"Not graded in full: {res.status}" + (f": {_student_detail(res)}" if _student_detail(res) else ""))
    tests.append({"name": "Grader report (TA only): status, flags, detail", "score": 0.0, "max_score": 0.0,
                  "status": "passed" if res.status == "graded" and not flags else "failed",
                  "visibility": "hidden",
                  "output": f"status: {res.status}\nflags: {', '.join(flags) or '-'}\ndetail: {res.detail or '-'}\n"
                            f"sandbox: {sandbox or '-'}\ngrader: lmcourse grade (version {GRADER_VERSION})"})
    return {"score": float(res.score), "output": shown("\n".join(top)), "output_format": "text",
            "stdout_visibility": "hidden", "execution_time": int(round(res.seconds)),
            "extra_data": {"status": res.status, "flags": flags, "student_id": res.student},
            "tests": tests}


# ---------------------------------------------------------------- inside Gradescope's container

def _config(root: Path) -> dict:
    return json.loads((root / "source" / CONFIG).read_text(encoding="utf-8"))


def write_autograder_files(root: Path) -> None:
    """At image build (setup.sh): the assignment's release and the corpus, once."""
    from .. import data
    from . import sandbox
    from .template import Template

    cfg = _config(root)
    Template(cfg["assignment"], root / OUT, root=root / "source" / "course")
    try:
        folder = data.ensure_shakespeare()
        print(f"corpus: {folder}")
    except data.CorpusUnavailable as exc:
        print(f"corpus: not available ({exc}); notebooks that read it fail in that cell")
    kind, why = sandbox.mode() if cfg["sandbox"] != "none" else ("none", "the zip says none")
    print(f"sandbox in this image: {kind} ({why})")


def _stage(root: Path, assignment: str) -> Path:
    """The upload as a one-student nbgrader ``submitted/`` folder: every notebook in it (a
    zip's folders flattened), read by :func:`.ingest.find_submissions` as any class is."""
    staging = root / OUT / "in"
    shutil.rmtree(staging, ignore_errors=True)
    folder = staging / "submitted" / STUDENT / assignment
    folder.mkdir(parents=True)
    for p in sorted((root / "submission").rglob("*.ipynb")):
        if p.is_file() and not p.is_symlink() and ".ipynb_checkpoints" not in p.parts:
            name = p.name if not (folder / p.name).exists() else \
                "_".join(p.relative_to(root / "submission").parts)
            shutil.copyfile(p, folder / name)
    return staging


def _choose_sandbox(wanted: str) -> str:
    """bubblewrap where it starts in this container; else, unless the zip insists on it, none
    (the container is then the only wall: docs/ta-guide.md says what that leaves)."""
    from . import sandbox

    if wanted == "none":
        sandbox.choose("none")
    elif wanted == "auto" and sandbox.mode()[0] == "unavailable":
        why = sandbox.mode()[1]
        sandbox.choose("none")
        return f"none: bubblewrap does not start in this container ({why}); Gradescope's container is the wall"
    return sandbox.describe()


def run(root: Path) -> int:
    """Per submission (run_autograder): grade the upload, write results/results.json. Always
    writes one: a grader failure gives 0 with a message, and the traceback in the stdout."""
    from .grade import grade
    from .reports import summary
    from .template import Template

    cfg = _config(root)
    asg = cfg["assignment"]
    os.chdir(root / "source" / "course")   # where the grader finds the course (lmcourse.commands.paths.repo_root)
    results_file = root / "results" / "results.json"
    results_file.parent.mkdir(parents=True, exist_ok=True)
    try:
        how = _choose_sandbox(cfg["sandbox"])
        print(f"sandbox: {how}")
        staging = _stage(root, asg)
        out = root / OUT
        (res,) = grade(staging, asg, out, jobs=1, limits=Limits(**cfg["limits"]), force=True, progress=False,
                       gradebook=None)
        tpl = Template(asg, out)
        graded = out / "autograded" / f"{STUDENT}.ipynb"
        import nbformat

        nb = nbformat.read(graded, as_version=4) if graded.is_file() else None
        doc = results_json(res, tpl, nb, cfg["hidden_visibility"], how)
        print(summary([res]))
        print(f"detail: {res.detail or '-'}")
    except Exception:  # noqa: BLE001 (the student must get a result, the TA the reason)
        print(traceback.format_exc())
        doc = {"score": 0.0, "output": "The autograder could not grade this submission (an error of the grader, "
               "not of your notebook): your course staff have been shown why.", "stdout_visibility": "hidden",
               "tests": [{"name": "Grader report (TA only)", "score": 0.0, "max_score": 0.0, "visibility": "hidden",
                          "status": "failed", "output": traceback.format_exc()[-OUTPUT_CHARS:]}],
               "extra_data": {"status": "grader-error"}}
    results_file.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    print(f"wrote {results_file}")
    return 0


# ---------------------------------------------------------------- the command

def main(argv: list[str], prog: str = "lmcourse grade gradescope") -> int:
    import argparse

    from ..commands.paths import CourseRepoNotFound
    from .limits import flags as limit_flags

    p = argparse.ArgumentParser(prog=prog, description="write a Gradescope autograder zip for an assignment "
                                "(setup.sh, run_autograder; graded by the pipeline of `lmcourse grade`)")
    p.add_argument("assignment", help="e.g. 01_ngram")
    p.add_argument("--out", default="autograder.zip", help="the zip to write (default: autograder.zip)")
    p.add_argument("--hidden-visibility", choices=VISIBILITIES, default="after_due_date",
                   help="when students see the points of test cells that hold hidden tests (Gradescope's "
                        "visibility; default after_due_date: they could otherwise probe the hidden tests by "
                        "resubmitting); the visible checks' verdict is shown at once either way")
    p.add_argument("--sandbox", choices=["auto", "bubblewrap", "none"], default="auto",
                   help="in Gradescope's container: auto (default: bubblewrap where it starts, else none, "
                        "the container being the wall), bubblewrap (no grading without it) or none")
    for name, flag, kind, default, what in limit_flags():
        p.add_argument(flag, dest=name, type=kind, default=default, help=f"{what} ({default:.15g})")
    p.add_argument("--try", dest="try_notebook", metavar="NOTEBOOK", default=None,
                   help="also run the zip here on this notebook, as Gradescope would (in a scratch folder, "
                        "setup.sh's installs only printed), and print its results.json")
    args = p.parse_args(argv)
    limits = Limits(**{name: getattr(args, name) for name, *_ in limit_flags()})
    if args.try_notebook and not Path(args.try_notebook).is_file():
        print(f"{prog}: --try {args.try_notebook}: no such notebook", file=sys.stderr)
        return 2
    try:
        names = build_zip(args.assignment, Path(args.out), limits, args.hidden_visibility, args.sandbox)
    except (FileNotFoundError, ValueError, RuntimeError, CourseRepoNotFound) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({len(names)} files: setup.sh, run_autograder, the course package and "
          f"{args.assignment}'s source notebook). It holds the hidden tests: upload it to Gradescope "
          "(Configure Autograder), never to students.")
    if args.try_notebook:
        import shutil
        import tempfile

        from .gradescope_try import try_zip

        scratch = Path(tempfile.mkdtemp(prefix="lmcourse-gradescope-try-"))
        try:
            # under the assignment's name, as a student's upload is: a try of the zip, not of the file's name
            rc, results = try_zip(Path(args.out), Path(args.try_notebook), scratch,
                                  as_name=f"{args.assignment}.ipynb")
            if results.is_file():
                print(f"--- {args.assignment}: results.json")
                print(results.read_text(encoding="utf-8"))
            else:
                print(f"{prog}: no results.json was written: Gradescope would show the student nothing",
                      file=sys.stderr)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)   # it held the zip, hidden tests included
        print("(the try's scratch folder, which held the hidden tests, is removed)")
        return rc
    return 0


if __name__ == "__main__":     # inside the container: setup.sh and run_autograder call these
    skip_uri_grammar()
    command, where = sys.argv[1], Path(sys.argv[2] if len(sys.argv) > 2 else os.environ.get(ROOT_ENV, "/autograder"))
    if command == "prepare":
        write_autograder_files(where)
        sys.exit(0)
    if command == "run":
        sys.exit(run(where))
    sys.exit(f"usage: python -m lmcourse.grading.gradescope prepare|run ROOT (not {command!r})")
