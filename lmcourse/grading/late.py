"""Deadlines, extensions and late penalties for ``lmcourse grade`` and ``lmcourse grade export``.

``--due`` is an ISO 8601 time **with** its timezone (``2026-03-01T23:59+01:00``,
``2026-03-01T22:59Z``, or a zone name: ``2026-03-01T23:59 Europe/Berlin``, which keeps a
``2d`` extension at 23:59 on the clock across a daylight-saving change, where an offset makes a
day 24 hours); a time without one is refused, since a deadline read in the grading
machine's timezone would move by hours. A roster's ``extension`` column (:mod:`.roster`) is a
duration added to the due time (``48h``, ``2d``, ``1d12h``, ``90m``) or a personal due time
(ISO 8601 with timezone).

``--late-policy``:

==================================  ===================================================
``none`` (default)                  lateness is reported, never penalised
``zero``                            a late submission scores 0
``10%/day``, ``2%/hour``            that share of the score off per day / hour late;
                                    every started day or hour counts (1 minute late is
                                    one day under ``%/day``)
``...,floor=50%``                   the penalty never takes the score below 50% of
                                    what it was (``10%/day,floor=50%``)
``...,grace=15m``                   this long after the due time is still on time
                                    (any policy, e.g. ``zero,grace=10m``)
==================================  ===================================================

The penalty is a share of the raw score (the autograded points, plus the hand-graded ones
once ``lmcourse grade export`` merges them): ``final = raw - penalty``.

Where the time comes from (see :mod:`.lms`): nbgrader's ``timestamp.txt`` gives it exactly.
A Canvas download has only its ``LATE`` marker: under ``zero`` that is enough; under a rate
the submission loses one unit (the least any late submission loses) and is flagged
``late-time-unknown`` so the TA can look up the time in Canvas; a student with an extension
and a ``LATE`` marker is not penalised (Canvas's marker does not know the roster's extension)
and is flagged the same way. Moodle downloads and plain folders carry no time: no penalty,
and the summary says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

UNITS = {"hour": timedelta(hours=1), "day": timedelta(days=1)}
_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)\s*d(?:ays?)?)?\s*(?:(\d+(?:\.\d+)?)\s*h(?:ours?)?)?\s*"
                       r"(?:(\d+(?:\.\d+)?)\s*m(?:in(?:utes?)?)?)?\s*$", re.IGNORECASE)


class LateError(ValueError):
    """A due time, extension or late policy that cannot be read; the message says how to write it."""


_ZONE = re.compile(r"^(?P<time>.*?)(?:\[(?P<a>[^\]\s]+)\]|\s+(?P<b>[A-Za-z_]+(?:/[A-Za-z0-9_+\-]+)+))$")


def parse_time(text: str, what: str = "--due") -> datetime:
    """An ISO 8601 time with a timezone: ``Z``, an offset, or a zone name
    (``2026-10-23T23:59 Europe/Berlin`` or ``2026-10-23T23:59[Europe/Berlin]``), as an aware
    datetime. With a zone name a duration added to it (an extension) counts days on the
    clock, across a daylight-saving change too; with an offset a day is 24 hours."""
    s = text.strip()
    zone = None
    m = _ZONE.match(s)
    if m:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        name = m["a"] or m["b"]
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise LateError(f"{what} {text!r}: no timezone called {name!r} (e.g. Europe/Berlin)") from exc
        s = m["time"].strip()
    try:
        t = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
    except ValueError as exc:
        raise LateError(f"{what} {text!r} is not an ISO 8601 time, e.g. 2026-03-01T23:59+01:00") from exc
    if zone is not None:
        if t.tzinfo is None:
            return t.replace(tzinfo=zone)
        if t.astimezone(zone).utcoffset() != t.utcoffset():     # RFC 9557's 23:59+02:00[Europe/Berlin]
            raise LateError(f"{what} {text!r}: the offset is not {name}'s at that time: give one or the other")
        return t.astimezone(zone)
    if t.tzinfo is None or t.utcoffset() is None:
        e = s if len(s) > 10 else f"{s}T23:59"        # a bare date: its suggestions need a time of day
        raise LateError(f"{what} {text!r} has no timezone: a deadline must say which one, e.g. "
                        f"{e}+01:00, {e}Z (UTC) or '{e} Europe/Berlin'")
    return t


def format_time(t: datetime) -> str:
    """``t`` as :func:`parse_time` reads it back (the zone name kept where there is one)."""
    key = getattr(t.tzinfo, "key", None)
    return t.isoformat() + (f"[{key}]" if key else "")


def parse_duration(text: str, what: str = "duration") -> timedelta:
    """``2d``, ``36h``, ``90m``, ``1d12h``, ``2 days``; ``0`` is no time."""
    s = text.strip()
    if s in ("0", ""):
        return timedelta(0)
    m = _DURATION.match(s)
    if not m or not any(m.groups()):
        raise LateError(f"{what} {text!r}: write a duration such as 48h, 2d, 1d12h or 90m")
    d, h, mins = (float(x) if x else 0.0 for x in m.groups())
    return timedelta(days=d, hours=h, minutes=mins)


def personal_due(due: datetime | None, extension: str) -> datetime | None:
    """The due time of one student: ``due`` moved by a duration, or a time of its own."""
    ext = (extension or "").strip()
    if not ext:
        return due
    if re.match(r"^\d{4}-\d{2}-\d{2}", ext):
        return parse_time(ext, "extension")
    if due is None:
        return None
    return due + parse_duration(ext, "extension")


@dataclass(frozen=True)
class LatePolicy:
    kind: str = "none"                 # "none", "zero" or "rate"
    rate: float = 0.0                  # share of the score per unit (0.1 = 10%)
    unit: str = "day"                  # "hour" or "day"
    floor: float = 0.0                 # the score never goes below this share of itself
    grace: timedelta = timedelta(0)

    @classmethod
    def parse(cls, text: str) -> LatePolicy:
        parts = [p.strip() for p in (text or "none").split(",") if p.strip()]
        head, opts = (parts[0] if parts else "none").lower(), parts[1:]
        how = "write none, zero, or a rate like 10%/day or 2%/hour, then optionally ,floor=50% ,grace=15m"
        kw: dict = {}
        if head in ("none", "zero"):
            kw["kind"] = head
        else:
            m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%\s*/\s*(hour|day|h|d)", head)
            if not m:
                raise LateError(f"--late-policy {text!r}: {how}")
            rate = float(m[1]) / 100
            if not 0 < rate <= 1:
                raise LateError(f"--late-policy {text!r}: the rate must be above 0% and at most 100%")
            kw.update(kind="rate", rate=rate, unit={"h": "hour", "d": "day"}.get(m[2], m[2]))
        for opt in opts:
            key, _, val = opt.partition("=")
            key = key.strip().lower()
            if key == "floor" and kw["kind"] == "rate":
                m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%", val.strip())
                if not m or float(m[1]) > 100:
                    raise LateError(f"--late-policy {text!r}: floor is a percentage, e.g. floor=50%")
                kw["floor"] = float(m[1]) / 100
            elif key == "floor":
                raise LateError(f"--late-policy {text!r}: floor= goes with a rate (10%/day,floor=50%), "
                                f"not with {kw['kind']}")
            elif key == "grace":
                kw["grace"] = parse_duration(val, f"--late-policy {text!r}: grace")
            else:
                raise LateError(f"--late-policy {text!r}: unknown option {opt!r} ({how})")
        return cls(**kw)

    def describe(self) -> str:
        base = {"none": "none", "zero": "zero"}.get(self.kind) or (
            f"{self.rate * 100:g}%/{self.unit}" + (f", floor={self.floor * 100:g}%" if self.floor else ""))
        return base + (f", grace={self.grace.total_seconds() / 60:g}m" if self.grace else "")

    def share(self, late_by: timedelta) -> float:
        """The share of the score taken off a submission ``late_by`` past its due time (grace
        already subtracted)."""
        if self.kind == "none" or late_by <= timedelta(0):
            return 0.0
        if self.kind == "zero":
            return 1.0
        units = math.ceil(late_by / UNITS[self.unit])
        return min(self.rate * units, 1.0 - self.floor)


@dataclass
class Lateness:
    """One submission against its due time."""
    due: datetime | None                 # the student's own (extension applied)
    submitted_at: datetime | None
    late: bool | None                    # None: cannot be told
    late_by: timedelta | None            # None when late but the time is not known
    share: float                         # of the raw score, taken off
    flags: list[str]
    note: str = ""

    def hours(self) -> str:
        return "" if self.late_by is None else f"{max(self.late_by.total_seconds(), 0) / 3600:.2f}"


def assess(policy: LatePolicy, due: datetime | None, extension: str = "",
           submitted_at: datetime | None = None, late_marker: bool = False,
           marks_late: bool = False) -> Lateness:
    """``marks_late``: the format marks late submissions (Canvas), so no marker means on time."""
    own = personal_due(due, extension)
    if submitted_at is not None and own is not None:
        by = submitted_at - own - policy.grace
        late = by > timedelta(0)
        return Lateness(own, submitted_at, late, by if late else timedelta(0),
                        policy.share(by), ["late"] if late else [],
                        f"{by.total_seconds() / 3600:.2f} h late" if late else "")
    if late_marker:
        if (extension or "").strip():
            return Lateness(own, submitted_at, None, None, 0.0, ["late-time-unknown"],
                            "LATE in the LMS, but has an extension: check the time, no penalty applied")
        share = policy.share(UNITS[policy.unit]) if policy.kind == "rate" else policy.share(timedelta(1))
        flags = ["late"] + (["late-time-unknown"] if policy.kind == "rate" else [])
        note = "LATE in the LMS" + (f" (time unknown: penalised one {policy.unit})" if policy.kind == "rate" else "")
        return Lateness(own, submitted_at, True, None, share, flags, note)
    if marks_late and submitted_at is None:
        return Lateness(own, None, False, None, 0.0, [])
    if submitted_at is None and own is not None:
        return Lateness(own, None, None, None, 0.0, [], "no submission time in this format")
    return Lateness(own, submitted_at, False if submitted_at else None, None, 0.0, [])


def columns(late: Lateness | None, raw: float) -> dict[str, str]:
    """The late columns of ``grades.csv`` for a raw score (empty where nothing is known)."""
    if late is None:
        return {"submitted_at": "", "due": "", "late_hours": "", "penalty_pct": "0", "penalty": "0",
                "final_score": f"{raw:g}"}
    penalty, final = apply(raw, late.share)
    return {"submitted_at": late.submitted_at.isoformat() if late.submitted_at else "",
            "due": late.due.isoformat() if late.due else "", "late_hours": late.hours() if late.late else "",
            "penalty_pct": f"{late.share * 100:g}", "penalty": f"{penalty:g}", "final_score": f"{final:g}"}


def apply(raw: float, share: float) -> tuple[float, float]:
    """(penalty, final score), rounded to 4 places."""
    penalty = round(raw * share, 4)
    return penalty, round(raw - penalty, 4)
