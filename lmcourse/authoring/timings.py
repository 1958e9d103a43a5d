"""The course's measured timings, in one place: the README's table "How long things take" is
:func:`table`'s output (``tests/authoring/test_timings.py`` keeps the two equal and the README's
prose free of other time figures). A new measurement replaces its row here, with the machine and
the date; ``python -m lmcourse.authoring.timings`` prints the table to paste."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MEASURED", "Timing", "table"]

TWO_CORES_SHARED = "2-core Linux machine shared with other jobs"
FIRST_RUNS = "2026-11, a new user's first run"


@dataclass(frozen=True)
class Timing:
    what: str      # what a user runs, in their words
    command: str   # the command that was timed
    figure: str    # what it took
    machine: str
    date: str      # when it was measured (ISO date, or the month and the occasion)


MEASURED = (
    Timing("Set-up of `.venv` (first `make lab` / `make test`)", "make setup",
           "2 min 9 s from the network (46 s with the wheels and the corpus already on the machine)",
           TWO_CORES_SHARED, FIRST_RUNS),
    Timing("The whole test suite from a fresh clone, set-up included (what CI runs)", "bash .ci/run",
           "36 min 28 s (CI's own run, about 1,790 tests, three test workers, the cores busy all along)",
           TWO_CORES_SHARED, "2026-11-28"),
    Timing("Every solution notebook at the tiny profile", "make solutions PROFILE=tiny",
           "48 s (3.9 to 6.7 s a notebook)", TWO_CORES_SHARED, "2026-11-26"),
    Timing("One solution notebook, alone", "lmcourse solutions solutions/01_ngram.ipynb --profile tiny",
           "5.5 s", TWO_CORES_SHARED, "2026-11-26"),
    Timing("Notebooks 01 to 04 at the cpu profile, each alone (01's smoothing sweep, 02's RNN and LSTM trained, "
           "03's attention timed, 04's three blocks trained)",
           "lmcourse solutions solutions/01_ngram.ipynb --profile cpu (and 02, 03, 04)",
           "01: 2 min 29 s (47 s of CPU time); 02: 5 min 20 s (1 min 47 s); 03: 53 s (11 s); 04: 5 min 26 s "
           "(3 min 25 s); other jobs kept the load between 5 and 10", TWO_CORES_SHARED, "2026-11-29"),
    Timing("Notebook 10 at the cpu profile (its sweep of five sizes at three budgets, then the held-out run at "
           "the shipped held-out runs' budget), with 07 after it",
           "lmcourse solutions solutions/10_scaling.ipynb solutions/07_decoding.ipynb --profile cpu",
           "10: 13 min 43 s; the command, 07 included: 14 min 24 s (9 min 15 s of CPU time); two graders on the "
           "other core kept the load near 4", TWO_CORES_SHARED, "2026-11-29"),
    Timing("Notebooks 07 and 09 at the cpu profile (07 with 05's cpu model in the course cache; 09's encoder-decoder "
           "and GPT raced)", "lmcourse solutions solutions/07_decoding.ipynb --profile cpu (and 09)",
           "07: 26 s (25 s of CPU time; 36.5 s at load near 4, run after 10 as in the row above); 09: 4 min 18 s "
           "(3 min 41 s); load near 2.5", TWO_CORES_SHARED, "2026-11-29"),
    Timing("A TA's check of the grader on the solution", "lmcourse grade 01_ngram --self-test",
           "5.5 s (08: 7.9 s)", TWO_CORES_SHARED, "2026-11-26"),
    Timing("Grading one student's notebook of 08", "lmcourse grade 08_bpe", "7.3 s", TWO_CORES_SHARED,
           "2026-11-26"),
    Timing("Notebook 11 at the cpu profile (zero-shot on two tasks, then a learning curve of 30 fine-tuning runs)",
           "lmcourse solutions solutions/11_finetuning.ipynb --profile cpu",
           "7 min 54 s (7 min 0 s of CPU time; other jobs kept the load near 4)", TWO_CORES_SHARED, "2026-11-29"),
    Timing("Notebook 12 at the cpu profile (two fine-tunings, then two memorisation GPTs trained)",
           "lmcourse solutions solutions/12_instruct.ipynb --profile cpu",
           "8 min 20 s (7 min 58 s of CPU time; other jobs kept the load near 3)", TWO_CORES_SHARED,
           "2026-11-29"),
    Timing("Notebook 06 at the cpu profile (three masked LMs and the left-to-right one trained, the course's "
           "longer runs scored beside them)",
           "lmcourse solutions solutions/06_mlm.ipynb --profile cpu",
           "2 min 51 s (2 min 17 s of CPU time; other jobs kept the load near 3)", TWO_CORES_SHARED, "2026-11-29"),
    Timing("Notebook 05 at the cpu profile (its GPT trained, then the ladder)",
           "lmcourse solutions solutions/05_gpt.ipynb --profile cpu",
           "7 min 7 s (4 min 49 s of CPU time; other jobs kept the load near 4)", TWO_CORES_SHARED, "2026-11-29"),
    Timing("Grading a class of 01 on 2 workers, bubblewrap sandbox and feedback pages included "
           "(plain `nbgrader autograde` with the course's config, serial, in the same run: 14.4 a minute)",
           "python bench/bench_grade.py 6 2",
           "25.1 submissions a minute, 1.74 times plain nbgrader (load near 1.5; 1.83 in the run before; "
           "with other jobs keeping the load near 4: 9.4 a minute, 1.85 times)", TWO_CORES_SHARED, "2026-11-29"),
)


def table(rows: tuple[Timing, ...] = MEASURED) -> str:
    """The README's table, as markdown."""
    lines = ["| what | command | took | on | measured |", "|---|---|---|---|---|"]
    lines += [f"| {t.what} | `{t.command}` | {t.figure} | {t.machine} | {t.date} |" for t in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
