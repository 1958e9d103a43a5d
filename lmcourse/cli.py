"""The `lmcourse` command: build, doctor, solutions (and grade, for TAs)."""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
from pathlib import Path


def _cmd_build(args) -> int:
    from .grading.build import MasterError, build

    try:
        build(names=args.names or None)
    except MasterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_doctor(args) -> int:
    """Versions, device, profile and corpus, each with what to do when it is missing."""
    from . import __version__, data, runtime

    problems = 0
    print(f"lmcourse {__version__} on Python {platform.python_version()} ({sys.executable})")
    for mod, fix in [("torch", "pip install torch==2.13.0 (CPU) or the CUDA build for your GPU"),
                     ("numpy", "pip install -e ."), ("matplotlib", "pip install -e ."),
                     ("tqdm", "pip install -e ."), ("nbgrader", "pip install -e ."),
                     ("jupytext", "pip install -e ."), ("nbclient", "pip install -e ."),
                     ("jupyterlab", "pip install -e .")]:
        try:
            m = importlib.import_module(mod)
            print(f"  {mod:<11} {getattr(m, '__version__', '?')}")
        except ImportError:
            print(f"  ! {mod} is not installed: {fix}")
            problems += 1
    try:
        device = runtime.pick_device()
        print(f"  device      {device}" + ("" if device.type != "cpu" else
                                           "  (no GPU found: training cells use the cpu profile)"))
        print(f"  profile     {runtime.profile_name(device)}  (set LMCOURSE_PROFILE=tiny|cpu|gpu to override)")
    except Exception as exc:  # doctor must report, not crash
        print(f"  ! device/profile: {exc}")
        problems += 1
    print(f"  corpus      {data.corpus_status()}")
    if args.fetch:
        try:
            folder = data.ensure_shakespeare()
            print(f"  corpus      ready in {folder}")
        except data.CorpusUnavailable as exc:
            print(f"  ! {exc}")
            problems += 1
    print("all good" if problems == 0 else f"{problems} problem(s) found; see the lines marked '!'")
    return 0 if problems == 0 else 1


def _cmd_solutions(args) -> int:
    from .grading.execute import run_notebooks

    paths = [Path(p) for p in args.notebooks] or sorted(Path("solutions").glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        print("lmcourse solutions: no notebooks given and none in solutions/ (run it from the course's "
              "folder, or name the notebooks)", file=sys.stderr)
        return 2
    return run_notebooks(paths, Path(args.out), profile=args.profile, timeout=args.timeout or None,
                         threads=args.threads)


def _cmd_grade(args) -> int:
    from .grading import sandbox
    from .grading.build import repo_root
    from .grading.grade import Limits, grade, sandbox_description, summary, timing_table
    from .grading.ingest import IngestError

    limits = Limits(notebook_timeout=args.notebook_timeout, cell_timeout=args.cell_timeout,
                    memory_mb=args.memory_mb, output_chars=args.output_chars, processes=args.processes)
    try:
        sandbox.choose(args.sandbox)
        sandbox.require()
    except (sandbox.SandboxUnavailable, ValueError) as exc:
        print(f"lmcourse grade: refusing to grade: {exc}", file=sys.stderr)
        return 2
    print(f"sandbox: {sandbox_description()}", file=sys.stderr)
    gradebook = (None if args.gradebook.lower() == "none" else
                 Path(args.gradebook) if args.gradebook else repo_root() / "autograder" / "gradebook.db")
    batch: dict[str, float] = {}
    try:
        results = grade(Path(args.submissions), args.assignment, Path(args.out), jobs=args.jobs,
                        limits=limits, force=args.force, progress=not args.no_progress,
                        gradebook=gradebook, timings=batch)
    except (IngestError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary(results))
    if args.timings:
        print(timing_table(results, batch), file=sys.stderr)
    print(f"wrote {Path(args.out) / 'grades.csv'} and feedback in {Path(args.out) / 'feedback'}/")
    if gradebook is not None:
        print(f"gradebook: {gradebook} (autograded notebooks beside it, for formgrader / nbgrader export)")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="lmcourse", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="masters -> nbgrader source, student notebooks, solutions")
    b.add_argument("names", nargs="*", help="notebooks to build, e.g. 01_ngram (default: all)")
    b.set_defaults(func=_cmd_build)
    d = sub.add_parser("doctor", help="check the installation, device, profile and corpus")
    d.add_argument("--fetch", action="store_true", help="also download the corpus if missing")
    d.set_defaults(func=_cmd_doctor)
    s = sub.add_parser("solutions", help="run solution notebooks headlessly (no browser needed)")
    s.add_argument("notebooks", nargs="*", help="default: every solutions/NN_*.ipynb")
    s.add_argument("--out", default="build/executed", help="where executed copies go")
    s.add_argument("--profile", choices=["tiny", "cpu", "gpu"], default=None,
                   help="LMCOURSE_PROFILE for the kernels (default: the notebooks' own choice)")
    s.add_argument("--timeout", type=int, default=1800, metavar="SECONDS",
                   help="longest a single cell may run before that notebook counts as failed and "
                        "the next one starts (default 1800; 0: no limit)")
    s.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads for torch in the kernels (default: the notebooks' own default, "
                        "LMCOURSE_THREADS or 1 on the CPU)")
    s.set_defaults(func=_cmd_solutions)
    g = sub.add_parser("grade", help="autograde a class: folder / submitted/ layout / LMS zip -> grades.csv")
    g.add_argument("assignment", help="e.g. 01_ngram")
    g.add_argument("submissions", help="folder of notebooks, nbgrader submitted/ folder, or LMS zip")
    g.add_argument("--out", default="build/grades", help="output folder (default: build/grades)")
    g.add_argument("-j", "--jobs", type=int, default=None, help="parallel workers (default: cores)")
    g.add_argument("--force", action="store_true", help="regrade submissions already graded")
    g.add_argument("--notebook-timeout", type=float, default=600, help="whole notebook, s (600)")
    g.add_argument("--cell-timeout", type=int, default=120, help="one cell, s (120)")
    g.add_argument("--memory-mb", type=int, default=4096, help="memory cap per submission, MB (4096)")
    g.add_argument("--output-chars", type=int, default=1_000_000,
                   help="printed output kept per notebook, characters (1000000)")
    g.add_argument("--processes", type=int, default=256,
                   help="processes and threads per sandbox (RLIMIT_NPROC; 256)")
    g.add_argument("--gradebook", default="",
                   help="nbgrader gradebook to write the results into (default: the course's "
                        "autograder/gradebook.db; 'none' to skip)")
    g.add_argument("--sandbox", choices=["bubblewrap", "none"], default=None,
                   help="bubblewrap (default; grading refuses to start without it) or none: run "
                        "the students' code unsandboxed, for trusted submissions only (also "
                        "LMCOURSE_SANDBOX=none)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--timings", action="store_true",
                   help="print where the time went (per-submission phases and batch phases)")
    g.set_defaults(func=_cmd_grade)
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
