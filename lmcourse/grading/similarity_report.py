"""``lmcourse grade similarity``'s command and what it writes (the comparison: :mod:`.similarity`):
``similarity.html`` (the flagged pairs, matched lines side by side), ``similarity.csv`` (one row
per student) and, for a graded ``OUT``, the ``similarity`` column of ``grades.csv`` (added or
refreshed; no other cell and no row order changes). Everything is made in memory first, then each
file is written to a temporary name and moved into place, so a crash leaves the old file or the
new one, never half of one."""

from __future__ import annotations

import csv
import html
import io
import os
import sys
from pathlib import Path

from . import similarity_sources as sources
from .reports import SIMILARITY as COLUMN  # one name: the grader keeps the column it reads
from .similarity import MIN_MATCH, THRESHOLD, Match, Outcome, assess
from .similarity_sources import SimilarityError

PAIRS_SHOWN = 3         # classmate pairs shown with code per student; more are listed (a group who share a text)
CSV_HEADER = ["student", "best_match", "score", "kind", "flagged", "why", "matched_chars", "own_chars", "cells"]

_STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:110em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top;text-align:left}
pre{margin:0;font-size:12px;white-space:pre-wrap}.hl-a{background:#fbb}.hl-b{background:#bfb}
.flag{color:#b00;font-weight:bold}section{margin:2em 0}h3{margin-bottom:.3em}"""


def _atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def csv_text(outcome: Outcome) -> str:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(CSV_HEADER)
    for v in outcome.verdicts:
        b = v.best
        w.writerow([v.student, b.other.label if b else "", f"{b.score:.2f}" if b else "0.00",
                    b.other.kind if b else "", "yes" if v.is_flagged else "no", "; ".join(v.reasons()),
                    b.matched if b else 0, v.own,
                    " ".join(f"{c}={s:.2f}" for c, s in sorted(b.cells.items())) if b else ""])
    for u in outcome.unreadable:
        w.writerow([u.student, "", "", "", "no", f"not compared: {u.why}", 0, 0, ""])
    return buf.getvalue()


def grades_text(path: Path, outcome: Outcome) -> str:
    """``grades.csv`` with its ``similarity`` column set (appended the first time)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or "student" not in rows[0]:
        from .similarity_sources import SimilarityError

        raise SimilarityError(f"{path}: not a grades.csv of `lmcourse grade` (no student column)")
    header, body = rows[0], rows[1:]
    sid = header.index("student")
    if COLUMN in header:
        col = header.index(COLUMN)
    else:
        col = len(header)
        header = [*header, COLUMN]
        body = [[*r, ""] for r in body]
    text = {v.student: v.column() for v in outcome.verdicts}
    text.update({u.student: f"not compared: {u.why}" for u in outcome.unreadable})
    for r in body:
        if len(r) > col:
            r[col] = text.get(r[sid], "")
    buf = io.StringIO(newline="")
    w = csv.writer(buf)          # the dialect reports.write_csv writes: every other cell keeps its bytes
    w.writerow(header)
    w.writerows(body)
    return buf.getvalue()


def _pair(outcome: Outcome, m: Match) -> str:
    """One flagged match: per matched cell, the student's cell and the other text's matched lines."""
    from copydetect.detector import compare_files
    from copydetect.utils import highlight_overlap

    other = outcome.whole(m.other.label)
    rows = []
    for cell, share in sorted(m.cells.items(), key=lambda cs: -cs[1]):
        fp = outcome.cell_prints[m.student][cell]
        _, _, (mine, theirs) = compare_files(fp, other)
        if mine.shape[1] == 0:
            continue
        left, _ = highlight_overlap(fp.raw_code, mine, "<span class='hl-a'>", "</span>", escape_html=True)
        right, _ = highlight_overlap(other.raw_code, theirs, "<span class='hl-b'>", "</span>", truncate=3,
                                     escape_html=True)
        rows.append(f"<tr><td>{html.escape(cell)}<br>{share:.2f} of it</td><td><pre>{left}</pre></td>"
                    f"<td><pre>{right}</pre></td></tr>")
    title = f"{html.escape(m.student)} &harr; {html.escape(m.what())}: {m.score:.2f}"
    return (f"<section><h3>{title}</h3><p>{m.score:.2f} of {html.escape(m.student)}'s own code "
            f"({m.matched} normalised characters) occurs in {html.escape(m.what())}.</p><table>"
            f"<tr><th>cell</th><th>{html.escape(m.student)}</th><th>{html.escape(m.what())} (matched "
            f"lines, with 3 lines around)</th></tr>{''.join(rows)}</table></section>")


def html_text(outcome: Outcome) -> str:
    import copydetect

    esc = html.escape
    shown: set[frozenset] = set()
    sections: dict[str, int] = {}          # student -> classmate pairs shown with code
    pairs, more = [], []
    for m in sorted((m for v in outcome.verdicts for m in v.flagged), key=lambda m: -m.score):
        key = frozenset((m.student, m.other.label))
        if m.other.kind == "student":
            if key in shown:
                continue        # the other direction of a pair already shown, from its higher score
            if min(sections.get(m.student, 0), sections.get(m.other.label, 0)) >= PAIRS_SHOWN:
                more.append(f"<tr><td>{esc(m.student)} &harr; {esc(m.other.label)}</td><td>{m.score:.2f}</td></tr>")
                shown.add(key)
                continue        # a group who share one text: its first pairs show the code
            for who in key:
                sections[who] = sections.get(who, 0) + 1
        shown.add(key)
        pairs.append(_pair(outcome, m))
    if more:
        pairs.append(f"<h3>More pairs over the threshold</h3><p>Each student here already has {PAIRS_SHOWN} "
                     "pairs shown with their code above.</p><table><tr><th>pair</th><th>score</th></tr>"
                     + "".join(more) + "</table>")
    runtime = [f"<section><h3>{esc(v.student)}: {esc(v.runtime_kind())}</h3><table>"
               + "".join(f"<tr><td>{esc(c)}</td><td><pre>{esc(chr(10).join(hits))}</pre></td>"
                         f"<td><pre>{esc(outcome.documents[v.student].cells[c])}</pre></td></tr>"
                         for c, hits in v.runtime.items()) + "</table></section>"
               for v in outcome.verdicts if v.runtime]
    echoes = sorted({(min(m.student, m.other.label), max(m.student, m.other.label)): m.score
                     for v in outcome.verdicts for m in v.echoes}.items())
    echo_rows = "".join(f"<tr><td>{esc(a)} &harr; {esc(b)}</td><td>{score:.2f}</td></tr>"
                        for (a, b), score in echoes)
    rows = []
    for v in outcome.verdicts:
        best = f"<td>{esc(v.best.what())}</td><td>{v.best.score:.2f}</td>" if v.best else "<td>-</td><td>0.00</td>"
        flag = f"<span class='flag'>{esc('; '.join(v.reasons()))}</span>" if v.is_flagged else ""
        rows.append(f"<tr><td>{esc(v.student)}</td>{best}<td>{flag}</td></tr>")
    rows += [f"<tr><td>{esc(u.student)}</td><td>-</td><td>-</td><td>not compared: {esc(u.why)}</td></tr>"
             for u in outcome.unreadable]
    n_flag = sum(v.is_flagged for v in outcome.verdicts)
    # the count above leaves these out: name them where the count is read, not only in the table
    skipped = (f" {len(outcome.unreadable)} not compared: "
               + ", ".join(f"{esc(u.student)} ({esc(u.why)})" for u in outcome.unreadable) + "."
               if outcome.unreadable else "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Similarity: {esc(outcome.assignment)}</title>
<style>{_STYLE}</style></head><body>
<h1>Similarity report: {esc(outcome.assignment)}</h1>
<p><b>For the TA only: it shows the solution's text.</b> A flag asks a person to look; it changes no
score. {len(outcome.verdicts)} students compared with the solution, the course's reference code and each
other; {n_flag} flagged.{skipped} A student's score is the share of their own code (stubs removed, names and
comments normalised away) that occurs in one other text; flagged from {outcome.threshold:g} over at least
{outcome.min_match} normalised characters, or when an answer reads source at run time.
Detector: copydetect {esc(copydetect.__version__)} (winnowing, as MOSS).</p>
<h2>Students</h2><table><tr><th>student</th><th>best match</th><th>score</th><th>flag</th></tr>
{''.join(rows)}</table>
<h2>Flagged pairs</h2>{''.join(pairs) or '<p>none</p>'}
<h2>Classmates alike through a copied course text</h2>
<p>Both copied the solution or the reference (above), so they match each other too; their code is not repeated
here.</p>{f'<table><tr><th>pair</th><th>score</th></tr>{echo_rows}</table>' if echoes else '<p>none</p>'}
<h2>Source read at run time</h2>{''.join(runtime) or '<p>none</p>'}
</body></html>
"""


def write_outputs(outcome: Outcome, out: Path, graded: Path | None) -> list[Path]:
    """similarity.html, similarity.csv and (``graded``) grades.csv's column; returns what was written."""
    out = Path(out)
    texts = {out / "similarity.html": html_text(outcome), out / "similarity.csv": csv_text(outcome)}
    if graded is not None:
        texts[Path(graded) / "grades.csv"] = grades_text(Path(graded) / "grades.csv", outcome)
    for path, text in texts.items():
        _atomic(path, text)
    return list(texts)


# ---------------------------------------------------------------- the command

def main(argv: list[str], prog: str = "lmcourse grade similarity") -> int:
    import argparse

    from ..commands.paths import CourseRepoNotFound, repo_root

    def share(text: str) -> float:
        x = float(text)
        if not 0 < x <= 1:
            raise argparse.ArgumentTypeError(f"{text}: a share between 0 and 1, e.g. 0.5")
        return x

    def chars(text: str) -> int:
        if not text.isdigit():
            raise argparse.ArgumentTypeError(f"{text}: a number of characters, e.g. {MIN_MATCH}")
        return int(text)

    p = argparse.ArgumentParser(prog=prog, description="flag answers that look copied from the solution, the "
                                "course's reference code or another student (it changes no score)")
    p.add_argument("assignment", help="e.g. 01_ngram")
    p.add_argument("submissions", help="folder of notebooks, nbgrader submitted/ folder, LMS zip, or the --out "
                   "folder of `lmcourse grade` (its grades.csv gets a similarity column)")
    p.add_argument("--out", default=None, help="where similarity.html and similarity.csv go (default: the graded "
                   "folder when given one, else build/similarity)")
    p.add_argument("--threshold", type=share, default=THRESHOLD,
                   help=f"flag a student when this share of their code occurs in one other text ({THRESHOLD})")
    p.add_argument("--min-match", type=chars, default=MIN_MATCH, metavar="CHARS",
                   help=f"... and that is at least this many characters of normalised code ({MIN_MATCH})")
    args = p.parse_args(argv)
    src = Path(args.submissions)
    try:
        outcome = assess(args.assignment, src, repo_root(), args.threshold, args.min_match)
        graded = src if sources.graded_out(src) else None
        out = Path(args.out) if args.out else (graded or Path("build/similarity"))
        written = write_outputs(outcome, out, graded)
    except (SimilarityError, CourseRepoNotFound, OSError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    for u in outcome.unreadable:
        print(f"{prog}: not compared: {u.student}: {u.why}", file=sys.stderr)
    flagged = [v for v in outcome.verdicts if v.is_flagged]
    print(f"{args.assignment}: {len(outcome.verdicts)} students compared with the solution, "
          f"{len(outcome.documents) - len(outcome.verdicts) - 1} reference file(s) and each other; "
          f"{len(flagged)} flagged (threshold {args.threshold:g}, at least {args.min_match} characters)"
          + (f"; {len(outcome.unreadable)} not compared: "
             + ", ".join(f"{u.student} ({u.why})" for u in outcome.unreadable) if outcome.unreadable else ""))
    for v in flagged:
        print(f"  {v.student}: {v.column()}")
    print("wrote " + ", ".join(str(w) for w in written) + " (TA only: it shows the solution's text)")
    return 0
