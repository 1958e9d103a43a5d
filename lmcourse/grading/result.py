"""One submission's outcome (:class:`Result`): what the pipeline (:mod:`.grade`) fills in and the
output steps (:mod:`.feedback`, :mod:`.reports`, :mod:`.gradebook`) read. A module of its own so
those steps never import the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Result:
    student: str
    assignment: str
    status: str
    score: float = 0.0
    max_score: float = 0.0
    auto_max: float = 0.0            # of max_score, what autograding can award (rest: by hand)
    flags: list[str] = field(default_factory=list)
    detail: str = ""
    tests: dict[str, float | None] = field(default_factory=dict)
    feedback: str = ""
    seconds: float = 0.0
    key: str = ""
    timings: dict[str, float] = field(default_factory=dict)   # phase -> seconds (``--timings``)
    extra: dict[str, str] = field(default_factory=dict)   # roster / late columns (:mod:`.semester`)
    cached: bool = False             # served from OUT/results/ by this run, not run again

    def score_text(self) -> str:
        """The one way a score is shown (table, feedback page): ``19/21`` autograded, and the
        points still to come from hand grading named, ``19/21 auto, +2 by hand``."""
        by_hand = self.max_score - self.auto_max
        return f"{self.score:g}/{self.auto_max:g}" + (f" auto, +{by_hand:g} by hand" if by_hand > 0 else "")


# said wherever a wrong-assignment result is shown (table, grades.csv, feedback page, grade.txt)
WRONG_ASSIGNMENT_HINT = "was another notebook submitted?"
