"""The `lmcourse` command: build, doctor, lab, solutions, release (and grade, for TAs).

The console script's entry point (``lmcourse = "lmcourse.commands.main:main"``). Each subcommand
parses its flags here and calls the module that does the work; ``lmcourse train`` and
``lmcourse links`` hand everything after their name to their own parsers
(:mod:`lmcourse.commands.train`, :mod:`lmcourse.commands.links`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .doctor import doctor


def installed(part: str) -> bool:
    """Whether this install holds ``lmcourse.<part>``: a clone has every part; a student release has
    neither the authoring tools (``authoring``: build, release, and the clone's solutions and lab)
    nor the TA's grader (``grading``), and its command lists only what works there."""
    # the package's own folder, not an import search: an editable install elsewhere would answer for it
    return (Path(__file__).resolve().parents[1] / part / "__init__.py").is_file()


if installed("grading"):
    from ..grading.nbgrader_cli import skip_uri_grammar

    skip_uri_grammar()   # before anything imports nbformat: seconds off every command (nbgrader_cli.URI_GRAMMAR)


def _cmd_build(args) -> int:
    from ..authoring.build import MasterError, build

    try:
        build(names=args.names or None)
    except MasterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_release(args) -> int:
    from ..authoring.release import ReleaseError, release
    from .paths import repo_root

    if not args.through and not args.all:  # a release holds answers unless told which notebooks: never by default
        print("lmcourse release: say which notebooks: --through NN_name for a graded class (the notebooks "
              "released so far, without the course's reference code of that one and the later ones), or --all "
              "(every notebook with the course's reference code, which answers their exercises: for a class that "
              "is not graded)", file=sys.stderr)
        return 2
    if args.through and args.all:
        print("lmcourse release: --through and --all exclude each other", file=sys.stderr)
        return 2
    notes: list[str] = []
    try:
        written = release(repo_root(), Path(args.out), through=args.through, notes=notes)
    except ReleaseError as exc:
        print(f"lmcourse release: {exc}", file=sys.stderr)
        return 1
    answers = ("the course's reference code of every notebook is in its package: its answers, fine for a class "
               "that is not graded" if args.all else f"no reference code of {args.through} or later notebooks")
    print(f"student release in {args.out}: {len(written)} notebooks, the lmcourse package, README.md, "
          f"pyproject.toml (no solutions, hidden tests or catalogues; {answers})" + "".join(f"\n{n}" for n in notes))
    return 0


def _cmd_solutions(args) -> int:
    from ..notebook_runner import run_notebooks

    paths = [Path(p) for p in args.notebooks] or sorted(Path("solutions").glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        print("lmcourse solutions: no notebooks given and none in solutions/ (run it from the course's "
              "folder, or name the notebooks)", file=sys.stderr)
        return 2
    return run_notebooks(paths, Path(args.out), profile=args.profile, timeout=args.timeout or None,
                         threads=args.threads)


WORK_IGNORE = "# the student's own work: never committed (made by `lmcourse lab`)\n*\n"


def planned_student_copies(source: Path, work: Path) -> tuple[list[str], list[str]]:
    """What :func:`copy_student_notebooks` would do, touching nothing: (to copy, kept) file names."""
    names = [nb.name for nb in sorted(source.glob("[0-9][0-9]_*.ipynb"))]
    kept = [n for n in names if (work / n).exists()]
    return [n for n in names if n not in kept], kept


def copy_student_notebooks(source: Path, work: Path) -> tuple[list[str], list[str]]:
    """Copy each ``source/NN_*.ipynb`` into ``work`` unless a file of that name is there already:
    the student's copy is never overwritten, and notebooks new in ``source`` (after a ``git pull``)
    appear. ``work`` ignores itself in git. Returns (copied, kept) file names."""
    import shutil

    work.mkdir(parents=True, exist_ok=True)
    ignore = work / ".gitignore"
    if not ignore.exists():
        ignore.write_text(WORK_IGNORE)
    copied, kept = [], []
    for nb in sorted(source.glob("[0-9][0-9]_*.ipynb")):
        target = work / nb.name
        if target.exists():
            kept.append(nb.name)
            continue
        tmp = target.with_name(f".{nb.name}.copying")
        shutil.copyfile(nb, tmp)
        tmp.replace(target)  # a half-copied file never passes for the student's own
        copied.append(nb.name)
    return copied, kept


STUDENT_CONFIG = Path(__file__).resolve().parents[1] / "labconfig" / "student"


def lab_command(work: Path, ta: bool, extra: list[str], root: Path,
                start_in: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The JupyterLab command line and environment: the student's lab (instructor panels hidden,
    no news pop-up, no nbgrader config warnings, the notebook's kernel started without a "Select
    Kernel" dialog) on ``work``, or with ``ta`` the full instructor view on the course root
    ``autograder/``. ``start_in``: a folder under ``work`` the lab opens on (e.g. ``solutions``)."""
    import os

    env = dict(os.environ)
    folder = root / "autograder" if ta else work
    cmd = [str(Path(sys.executable).parent / "jupyter"), "lab", str(folder)]
    if not ta:
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            [str(STUDENT_CONFIG)] + [p for p in env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if p])
        # settings defaults (overrides.json) are read only from the app settings folder, which a
        # pip-installed JupyterLab leaves empty: autoStartDefaultKernel starts the preferred kernel
        cmd.append(f"--LabApp.app_settings_dir={STUDENT_CONFIG / 'settings'}")
    if start_in:
        cmd.append(f"--LabApp.default_url=/lab/tree/{start_in}")
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")  # containers and Colab run as root
    return cmd + list(extra), env


def _cmd_lab(args) -> int:
    import os
    import subprocess

    from .paths import repo_root

    root = repo_root()
    cwd = None           # the folder the server starts in (None: this one)
    if args.solutions:   # the self-learner's view: solutions/ and build/executed/, nothing copied
        if args.work or args.ta:
            print("lmcourse lab: --solutions opens the course folder itself; it takes no --work or --ta",
                  file=sys.stderr)
            return 2
        cmd, env = lab_command(root, False, args.jupyter_args, root, start_in="solutions")
        print("lmcourse lab: the solutions (solutions/) and, after `make solutions`, their executed copies "
              "with outputs and plots (build/executed/); `git checkout solutions/` undoes edits there")
    elif args.ta:   # the instructor's view of the course root: no student copies
        if args.work:
            print("lmcourse lab: --ta opens the course root autograder/; it takes no --work", file=sys.stderr)
            return 2
        cmd, env = lab_command(root, True, args.jupyter_args, root)
        cwd = root / "autograder"
        # nbgrader reads nbgrader_config.py from the folder the server starts in and keeps
        # gradebook.db there: started elsewhere, Formgrader has no course
        print("lmcourse lab: TA view (Create Assignment, Formgrader) on the course root autograder/; "
              f"starts in {cwd}")
    else:
        work = Path(args.work) if args.work else root / "work"
        if args.dry_run:   # says what it would copy, writes nothing
            copied, kept = planned_student_copies(root / "notebooks", work)
        else:
            copied, kept = copy_student_notebooks(root / "notebooks", work)
        would = "would copy" if args.dry_run else "copied"
        if copied:
            print(f"lmcourse lab: {would} {', '.join(copied)} into {work}/ (your own copies: edit and "
                  "save there; notebooks/ stays as released)")
        if kept:
            print(f"lmcourse lab: kept your {len(kept)} notebook(s) in {work}/ as they are")
        cmd, env = lab_command(work, False, args.jupyter_args, root)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    if cwd is not None:
        os.chdir(cwd)
    if os.name == "posix":
        os.execve(cmd[0], cmd, env)
        return 0        # not reached: the lab replaced this process
    return subprocess.call(cmd, env=env)


def _self_test(args, limits) -> int:
    """``lmcourse grade A --self-test``: the solution graded as a student's; 0 on full marks."""
    from ..grading.grade import self_test, summary

    try:
        res, lost = self_test(args.assignment, Path(args.out), limits)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary([res]))
    if res.status == "graded" and res.score >= res.auto_max:
        print(f"self-test: the solution gets every autograded point ({res.score_text()}): the grader works "
              f"for {args.assignment}. Feedback page: {Path(args.out) / res.feedback}")
        return 0
    print(f"self-test FAILED: the solution got {res.score_text()}, status {res.status}"
          + (f", points lost in {', '.join(lost)}" if lost else "") + (f"; {res.detail}" if res.detail else "")
          + f". Look at {Path(args.out) / (res.feedback or 'grades.csv')}", file=sys.stderr)
    return 1


def _cmd_grade(args) -> int:
    from ..grading import sandbox
    from ..grading.grade import grade, summary, timing_table
    from ..grading.ingest import IngestError
    from ..grading.limits import Limits
    from ..grading.limits import flags as limit_flags
    from .paths import repo_root

    limits = Limits(**{name: getattr(args, name) for name, *_ in limit_flags()})
    if args.self_test and args.submissions:
        print("lmcourse grade: --self-test grades the course's own solution: give no submissions "
              f"(lmcourse grade {args.assignment} --self-test)", file=sys.stderr)
        return 2
    if not args.self_test and not args.submissions:
        print("lmcourse grade: say what to grade: lmcourse grade ASSIGNMENT SUBMISSIONS (a folder, an nbgrader "
              "submitted/ folder or an LMS zip), or lmcourse grade ASSIGNMENT --self-test", file=sys.stderr)
        return 2
    args.out = args.out or (f"build/self-test/{args.assignment}" if args.self_test else "build/grades")
    try:
        sandbox.choose(sandbox.NONE if args.unsafe else args.sandbox)
        sandbox.require()
    except (sandbox.SandboxUnavailable, ValueError) as exc:
        print(f"lmcourse grade: refusing to grade: {exc}", file=sys.stderr)
        return 2
    print(f"sandbox: {sandbox.describe()}", file=sys.stderr)
    if args.self_test:
        return _self_test(args, limits)
    from ..grading.late import LateError
    from ..grading.roster import RosterError
    from ..grading.semester import ClassSetup, read_run

    if args.student:   # a regrade keeps the last full run's gradebook, roster, due time and late policy
        run = read_run(Path(args.out))
        if not args.gradebook and "gradebook" in run:
            args.gradebook = run["gradebook"] or "none"
            print(f"--gradebook {args.gradebook} (as in the last run)", file=sys.stderr)
        for name in ("roster", "due", "late_policy"):
            if getattr(args, name) is None and run.get(name):
                setattr(args, name, run[name])
                print(f"--{name.replace('_', '-')} {run[name]} (as in the last run)", file=sys.stderr)
    shard = None
    if args.shard:   # one share of the class (lmcourse/grading/shard.py); the merge writes the gradebook
        from ..grading.shard import ShardError, parse

        try:
            shard = parse(args.shard)
        except ShardError as exc:
            print(f"lmcourse grade: {exc}", file=sys.stderr)
            return 2
        if args.student:
            print("lmcourse grade: --student regrades in the merged folder (or the shard's): not with --shard",
                  file=sys.stderr)
            return 2
        args.gradebook = args.gradebook or "none"   # N shards must not write one SQLite file at once
        print(f"shard {shard[0]}/{shard[1]}", file=sys.stderr)
    gradebook = (None if args.gradebook.lower() == "none" else
                 Path(args.gradebook) if args.gradebook else repo_root() / "autograder" / "gradebook.db")
    batch: dict[str, float] = {}
    notes: list[str] = []
    try:
        setup = ClassSetup.from_options(args.roster, args.due, args.late_policy)
        results = grade(Path(args.submissions), args.assignment, Path(args.out), jobs=args.jobs,
                        limits=limits, force=args.force, progress=not args.no_progress,
                        gradebook=gradebook, timings=batch, setup=setup, student=args.student, notes=notes,
                        shard=shard)
    except (IngestError, FileNotFoundError, LateError, RosterError, LookupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary(results))
    for note in notes:
        print(note)
    if args.timings:
        print(timing_table(results, batch), file=sys.stderr)
    print(f"wrote {Path(args.out) / 'grades.csv'} and feedback in {Path(args.out) / 'feedback'}/")
    if gradebook is not None:
        print(f"gradebook: {gradebook} (autograded notebooks beside it, for formgrader / nbgrader export)")
    return 0


# they have parsers of their own, reached before `grade`'s: listed here so that its help names them
GRADE_SUBCOMMANDS = """\
more grading commands (each with its own --help):
  lmcourse grade export ...      Canvas / Moodle grade files and a feedback bundle from a graded folder
  lmcourse grade merge ...       join the folders of `--shard K/N` runs into one
  lmcourse grade gradescope ...  build a Gradescope autograder zip (--try NOTEBOOK: run it here on one)
  lmcourse grade similarity ...  answers that look copied, for a person to review (TA only)
  lmcourse grade ASSIGNMENT --self-test   grade the solution as a student would hand it in
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["train"]:  # everything after `train` goes to lmcourse.commands.train's own parser
        from .train import main as train_main

        return train_main(argv[1:], prog="lmcourse train")
    if argv[:1] == ["links"]:  # Open in Colab / Kaggle, nbgitpuller: lmcourse.commands.links has its own parser
        from .links import main as links_main

        return links_main(argv[1:])
    if argv[:1] == ["grade"] and not installed("grading"):
        print("lmcourse grade: this install has no grader (a student release); grading runs in a clone of "
              "the course", file=sys.stderr)
        return 2
    if argv[:2] == ["grade", "export"]:  # `lmcourse grade export`: its own parser (lmcourse.grading.export)
        from ..grading.export import main as export_main

        return export_main(argv[2:])
    if argv[:2] == ["grade", "merge"]:   # join `--shard K/N` runs (lmcourse.grading.shard)
        from ..grading.shard import main as merge_main

        return merge_main(argv[2:])
    if argv[:2] == ["grade", "gradescope"]:   # a Gradescope autograder zip (lmcourse.grading.gradescope)
        from ..grading.gradescope import main as gradescope_main

        return gradescope_main(argv[2:])
    if argv[:2] == ["grade", "similarity"]:   # answers that look copied, for a human (lmcourse.grading.similarity)
        from ..grading.similarity_report import main as similarity_main

        return similarity_main(argv[2:])
    p = argparse.ArgumentParser(prog="lmcourse", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("train", help="train a notebook's model bigger: 05's GPT (on one process or under torchrun "
                                 "on many), 06's masked LM, 09's encoder-decoder, 10's scaling sweep (lmcourse train "
                                 "gpt|mlm|seq2seq|sweep --help)")
    sub.add_parser("links", help="the Open in Colab / Kaggle links, README badges and a JupyterHub's nbgitpuller "
                                 "links (lmcourse links --help)")
    if installed("authoring"):
        _clone_commands(sub)
    d = sub.add_parser("doctor", help="check the installation, device, threads, sandbox, disk, kernel "
                                          "and corpus")
    d.add_argument("--fetch", action="store_true", help="also download the corpus if missing")
    d.set_defaults(func=doctor)
    if installed("grading"):
        _grade_command(sub)
    args = p.parse_args(argv)
    if getattr(args, "jupyter_args", None) and args.jupyter_args[0] == "--":
        args.jupyter_args = args.jupyter_args[1:]
    from .paths import CourseRepoNotFound

    try:
        return args.func(args)
    except CourseRepoNotFound as exc:   # an installed package outside a clone: say so, no traceback
        print(f"lmcourse {args.cmd}: {exc}", file=sys.stderr)
        return 2


def _clone_commands(sub) -> None:
    """build, release, solutions and lab: they read a clone's masters, solutions and work folder."""
    b = sub.add_parser("build", help="masters -> nbgrader source, student notebooks, solutions")
    b.add_argument("names", nargs="*", help="notebooks to build, e.g. 01_ngram (default: all)")
    b.set_defaults(func=_cmd_build)
    r = sub.add_parser("release", help="instructors: write the student release (notebooks, package, README; "
                                       "no solutions, hidden tests or catalogues) to publish; --through NN_name "
                                       "for a graded class, --all for one that is not")
    r.add_argument("out", help="a new folder to write it into")
    r.add_argument("--through", metavar="NN_name", default=None,
                   help="the notebooks up to this one, without the reference code of it and later ones "
                        "(its visible tests use recorded expected values); for notebooks graded from records")
    r.add_argument("--all", action="store_true", help="every notebook, with the course's reference code (the "
                   "answers of every exercise): for a class that is not graded")
    r.set_defaults(func=_cmd_release)
    s = sub.add_parser("solutions", help="run solution notebooks headlessly (no browser needed)")
    s.add_argument("notebooks", nargs="*", help="default: every solutions/NN_*.ipynb")
    s.add_argument("--out", default="build/executed",
                   help="where executed copies go, one folder per profile: OUT/tiny/, OUT/cpu/, ...")
    s.add_argument("--profile", choices=["tiny", "cpu", "gpu"], default=None,
                   help="LMCOURSE_PROFILE for the kernels (default: the notebooks' own choice)")
    s.add_argument("--timeout", type=int, default=1800, metavar="SECONDS",
                   help="longest a single cell may run before that notebook counts as failed and "
                        "the next one starts (default 1800; 0: no limit)")
    s.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads for torch in the kernels (default: the notebooks' own default, "
                        "LMCOURSE_THREADS or 1 on the CPU)")
    s.set_defaults(func=_cmd_solutions)
    lab = sub.add_parser("lab", help="copy new notebooks into your work folder (never overwriting yours) and "
                                     "open JupyterLab there")
    lab.add_argument("--work", default=None, help="your work folder (default: work/ in the course folder)")
    lab.add_argument("--ta", action="store_true",
                     help="instructor view: every nbgrader panel, on the course root autograder/ (make lab TA=1)")
    lab.add_argument("--solutions", action="store_true",
                     help="self-learners: open the solutions and their executed copies (build/executed/, "
                          "from `make solutions`) instead of your work folder")
    lab.add_argument("--dry-run", action="store_true",
                     help="say what would be copied and print the JupyterLab command; writes and starts nothing")
    lab.add_argument("jupyter_args", nargs=argparse.REMAINDER,
                     help="passed to jupyter lab, e.g. -- --ip 0.0.0.0 --no-browser --port 8888")
    lab.set_defaults(func=_cmd_lab)


def _grade_command(sub) -> None:
    """grade: the TA's pipeline (lmcourse.grading)."""
    g = sub.add_parser("grade", help="autograde a class: folder / submitted/ layout / LMS zip -> grades.csv "
                                     "(then `lmcourse grade export`: Canvas / Moodle files, feedback bundle)",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=GRADE_SUBCOMMANDS)
    g.add_argument("assignment", help="e.g. 01_ngram")
    g.add_argument("submissions", nargs="?", default=None,
                   help="folder of notebooks, nbgrader submitted/ folder, or LMS zip")
    g.add_argument("--out", default=None, help="output folder (default: build/grades; "
                   "with --self-test, build/self-test/ASSIGNMENT)")
    g.add_argument("--self-test", action="store_true",
                   help="check the grader on a perfect submission: grade the solution as a student would "
                        "hand it in (the student notebook with the solution's answers) and print the result; "
                        "exit 1 unless it gets every autograded point")
    g.add_argument("-j", "--jobs", type=int, default=None, help="parallel workers (default: cores)")
    g.add_argument("--force", action="store_true", help="regrade submissions already graded")
    from ..grading.limits import flags as limit_flags

    for _, flag, kind, default, what in limit_flags():      # from the Limits fields
        g.add_argument(flag, type=kind, default=default, help=f"{what} ({default:.15g})")
    g.add_argument("--gradebook", default="",
                   help="nbgrader gradebook to write the results into (default: the course's "
                        "autograder/gradebook.db; 'none' to skip)")
    g.add_argument("--sandbox", choices=["bubblewrap", "none"], default=None,
                   help="bubblewrap (default; grading refuses to start without it) or none: run "
                        "the students' code unsandboxed, for trusted submissions only (also "
                        "LMCOURSE_SANDBOX=none)")
    g.add_argument("--unsafe", action="store_true",
                   help="the same as --sandbox none: grade without a sandbox where bubblewrap is absent "
                        "(macOS, Windows), trusted submissions only")
    g.add_argument("--roster", default=None, help="class list CSV: id,name,email,section,extension (students "
                   "without a submission get a missing-notebook row; others are flagged not-on-roster)")
    g.add_argument("--due", default=None, help="due time, ISO 8601 with its timezone: an offset "
                   "(2026-03-01T23:59+01:00; days of an extension are 24 h) or a zone name "
                   "('2026-03-01T23:59 Europe/Berlin'; days follow the clock across DST)")
    g.add_argument("--late-policy", default=None,
                   help="none (default), zero, or e.g. 10%%/day or 2%%/hour, optionally ,floor=50%% ,grace=15m")
    g.add_argument("--student", default=None, metavar="ID",
                   help="regrade this one student's submission; the others' results stay as they are")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--shard", default=None, metavar="K/N",
                   help="grade only the K-th of N shares of the class (by a hash of the student id), e.g. 2/8; "
                        "auto or auto/N: K from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX; then "
                        "`lmcourse grade merge OUT_1 ... OUT_N --out OUT`")
    g.add_argument("--timings", action="store_true",
                   help="print where the time went (per-submission phases and batch phases)")
    g.set_defaults(func=_cmd_grade)


if __name__ == "__main__":
    sys.exit(main())
