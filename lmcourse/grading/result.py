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
