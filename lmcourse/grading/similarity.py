"""``lmcourse grade similarity``: which students' answers look copied, for a human to look at
(the command and what it writes: :mod:`.similarity_report`).

Each student's code (:mod:`.similarity_sources`: the answer cells and the cells they added) is
compared with the solution, with the course's reference code and with every other student's.
It never changes a score: it writes ``similarity.html`` (the flagged pairs, matched lines side
by side), ``similarity.csv`` and, for a graded ``OUT``, a ``similarity`` column in ``grades.csv``.

The detector is copydetect (MIT; pip ``copydetect``): MOSS's winnowing over code that Pygments
has tokenised and normalised (every variable name becomes ``V``, function name ``F``, string
``S``; comments and spacing dropped), so renamed variables, changed comments and reordered
functions still match. It is used in memory (``CodeFingerprint(fp=...)``), one fingerprint per
answer cell, so that no match runs across the border of two cells. Why it: it installs with pip
and runs offline in this process (JPlag needs a JVM, Dolos Node.js, and MOSS is a remote service
that would receive the students' code); 0.5.0 (March 2024) is small, tested and MIT. Its own
HTML report reads files and labels them by path; ours shows the matched lines cell by cell.
Our choices:

- every k-gram is kept (``guarantee = noise``, window 1): on answers this small it costs
  nothing, and the result does not depend on Python's per-process string hashing;
- the stubs every student is handed are removed from each cell's fingerprint here, not with
  copydetect's ``boilerplate=`` (0.5.0 intersects with ``assume_unique=True`` on a fingerprint
  that repeats a k-gram, and so also drops a student's own repeated code);
- a classmate's code is the union of their cells' k-grams (no k-gram across two cells), the
  solution and the reference files are taken whole.

A student's score against a document is the share of their own code (their cells' normalised
characters after the stubs are removed) that occurs in it. Flagged: a score of at least
``--threshold`` over at least ``--min-match`` characters, or an answer that reads a
reference's source at run time (:func:`.similarity_sources.runtime_source`).
"""

from __future__ import annotations

import copy
import io
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import similarity_sources as sources
from .similarity_sources import Document, SimilarityError, Unreadable

# The shortest match, in characters of normalised code (copydetect's noise threshold, its default):
# `for i in range(len(padded) - n + 1):` normalises to `forVinrange(len(V)-V+1):`, 24. Shorter runs
# are what any two answers share.
K = 25
# Defaults, from the alternatives catalogues of 01 and 03 (tests/grading/test_similarity.py): an
# honest student's code scores at most 0.39 against the solution there and 0.32 against another
# honest student; the planted copies 0.86 or more. 0.5 sits between, nearer the honest side: a
# student who copied half their answers is worth a look.
THRESHOLD = 0.5
# A whole match this short is one line any student writes: `return Q @ K.transpose(-2, -1) /
# math.sqrt(Q.size(-1))` normalises to 31 characters, `return [BOS] * (n - 1) + list(words) + [EOS]` to 27.
MIN_MATCH = 60


@dataclass
class Match:
    """How much of one student's code occurs in another document."""
    student: str
    other: Document
    score: float                    # share of the student's own code found in `other`
    matched: int                    # normalised characters of it
    cells: dict[str, float] = field(default_factory=dict)   # cell -> its own share, where any matched

    def flagged(self, threshold: float, min_match: int) -> bool:
        return self.score >= threshold and self.matched >= min_match

    def what(self) -> str:
        return self.other.label if self.other.kind == "solution" else f"{self.other.kind} {self.other.label}"


@dataclass
class Verdict:
    """One student's line of the report."""
    student: str
    best: Match | None              # the highest flagged solution/reference match, else the highest
                                    # score (None: nothing of their own to compare)
    flagged: list[Match]            # every match over the threshold
    runtime: dict[str, list[str]]   # cell -> where it reads source at run time
    own: int                        # normalised characters of their own code
    # classmates over the threshold who, like this student, copied the solution or the reference:
    # the common source explains the match, so the report lists them without their code
    echoes: list[Match] = field(default_factory=list)

    @property
    def is_flagged(self) -> bool:
        return bool(self.flagged or self.runtime)

    def reasons(self) -> list[str]:
        out = [f"copy of {m.what()}" for m in self.flagged]
        if self.echoes:
            out.append(f"like {len(self.echoes)} classmate(s) who copied it too")
        if self.runtime:
            out.append(self.runtime_kind())
        return out

    def runtime_kind(self) -> str:
        """What the run-time hits are: source read, a tokenizer library imported, or both."""
        hits = [h for found in self.runtime.values() for h in found]
        kinds = []
        if any(sources.TOKENIZER_IMPORTED not in h for h in hits):
            kinds.append("reference source loaded at run time")
        if any(sources.TOKENIZER_IMPORTED in h for h in hits):
            kinds.append(sources.TOKENIZER_IMPORTED)
        return "; ".join(kinds)

    def column(self) -> str:
        """The ``similarity`` cell of ``grades.csv``: never a bare number (an export reads numbers)."""
        if self.best is None:
            text = "0.00 nothing of their own"
        else:
            text = f"{self.best.score:.2f} {self.best.what()}" + (" (flagged)" if self.flagged else "")
        return text + (f"; {self.runtime_kind()}" if self.runtime else "")


@dataclass
class Outcome:
    assignment: str
    verdicts: list[Verdict]
    unreadable: list[Unreadable]
    documents: dict[str, Document]          # label -> document (students, solution, references)
    threshold: float
    min_match: int
    cell_prints: dict = field(default_factory=dict)    # student -> {cell: fingerprint}, stubs removed
    _wholes: dict = field(default_factory=dict)

    def whole(self, label: str):
        """The fingerprint of a document's whole text (for the report's matched lines), made once."""
        if label not in self._wholes:
            self._wholes[label] = fingerprint(self.documents[label].text())
        return self._wholes[label]


# ---------------------------------------------------------------- fingerprints

def fingerprint(text: str):
    """copydetect's fingerprint of Python ``text``, every k-gram kept."""
    from copydetect.detector import CodeFingerprint

    return CodeFingerprint("answer.py", K, 1, None, True, "python", fp=io.StringIO(text))


def _covered(starts) -> int:
    """Characters covered by the k-grams that start at ``starts`` (the union of [s, s + K))."""
    total, end = 0, 0
    for s in sorted(starts):
        total += max(0, s + K - max(s, end))
        end = max(end, s + K)
    return int(total)


def without(fp, boiler: frozenset):
    """``fp`` with the k-grams of ``boiler`` removed and its coverage counted again (a copy)."""
    out = copy.copy(fp)
    out.hashes = fp.hashes - boiler
    out.hash_idx = {h: [int(i) for i in fp.hash_idx[h]] for h in out.hashes}    # plain ints: counted often
    out.token_coverage = _covered(i for idx in out.hash_idx.values() for i in idx)
    return out


def _matched(fp, other: set) -> int:
    """Normalised characters of ``fp``'s code that occur in ``other`` (a set of k-gram hashes)."""
    if fp.hashes.isdisjoint(other):
        return 0
    common = fp.hashes & other
    if len(common) == len(fp.hashes):       # all of it (a copy): counted once already
        return fp.token_coverage
    return _covered(i for h in common for i in fp.hash_idx[h])


def compare(student: Document, cells: dict, other: Document, other_hashes: set) -> Match:
    """The share of ``student``'s code (``cells``: their fingerprints, stubs removed) found in
    ``other`` (``other_hashes``: its k-grams)."""
    own = sum(fp.token_coverage for fp in cells.values())
    match = Match(student.label, other, 0.0, 0)
    for name, fp in cells.items():
        m = _matched(fp, other_hashes)
        if m:
            match.matched += m
            match.cells[name] = m / fp.token_coverage
    match.score = match.matched / own if own else 0.0
    return match


def assess(assignment: str, src: Path, root: Path, threshold: float = THRESHOLD,
           min_match: int = MIN_MATCH) -> Outcome:
    """Everything the report needs; writes nothing (zips are unpacked into a temporary folder)."""
    release = sources.release_of(root, assignment)
    sol = sources.solution(root, assignment)
    refs = sources.references(assignment, root)
    with tempfile.TemporaryDirectory(prefix="lmcourse-similarity-") as tmp:
        docs, bad = sources.students(src, assignment, release, Path(tmp))
    if not docs:
        why = "; ".join(f"{u.student}: {u.why}" for u in bad[:5])
        raise SimilarityError(f"{src}: no submission could be read ({why})")
    boiler = frozenset().union(*(fingerprint(b).hashes for b in sources.boilerplate(release)))
    raw = {d.label: {n: fingerprint(t) for n, t in d.cells.items()} for d in docs}
    cells = {label: {n: fp for n, r in fps.items() if (fp := without(r, boiler)).token_coverage}
             for label, fps in raw.items()}
    # what a student's code is compared with: the course's texts whole, a classmate's cell by cell
    hashes = {d.label: fingerprint(d.text()).hashes for d in [sol, *refs]}
    hashes.update({label: set().union(*(fp.hashes for fp in fps.values())) for label, fps in raw.items()})
    verdicts = []
    for d in docs:
        others = [sol, *refs, *[o for o in docs if o is not d]]
        matches = [compare(d, cells[d.label], o, hashes[o.label]) for o in others]
        own = sum(fp.token_coverage for fp in cells[d.label].values())
        # the course's texts first: students who copied the solution also match each other
        course = [m for m in matches[:1 + len(refs)] if m.flagged(threshold, min_match)]
        best = max(course or matches, key=lambda m: m.score) if own else None   # ties: the first
        runtime = {n: hits for n, t in d.cells.items() if (hits := sources.runtime_source(t))}
        verdicts.append(Verdict(d.label, best, [m for m in matches if m.flagged(threshold, min_match)],
                                runtime, own))
    copied = {v.student for v in verdicts if any(m.other.kind != "student" for m in v.flagged)}
    for v in verdicts:
        if v.student in copied:
            v.echoes = [m for m in v.flagged if m.other.kind == "student" and m.other.label in copied]
            v.flagged = [m for m in v.flagged if m not in v.echoes]
    documents = {d.label: d for d in [sol, *refs, *docs]}
    return Outcome(assignment, verdicts, bad, documents, threshold, min_match, cells)
