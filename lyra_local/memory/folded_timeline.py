"""The Memory panel's timeline: the digests folded by month, each text once. Pure functions.

The dream writes a digest per day, per week and per month with talk. Shown as
they are, a month of one week of one day says the same thing three times (the
week and the month are roll-ups of that one day), and counting the digests
("2 weeks, 1 day") counts roll-ups, not talk. So here:

- a period with one child is that child: a week with talk on one day is that
  day; a month whose talk falls in one week is that week (or its one day);
- no two entries have the same text, whatever the reason (a day digest whose
  only source was one summary, a roll-up of one roll-up): the most specific
  one, the day before the week before the month, is kept;
- a month is labelled by what is there: the days with talk, and the weeks
  when there are two or more ("1 day", "3 days", "5 days in 2 weeks").

It never reads the store: digests in, months out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from ..store.derived import Digest
from .search import normalized

SPECIFIC = {"day": 0, "week": 1, "month": 2}  # the most specific first


@dataclass(frozen=True)
class Month:
    """One fold: its key (``2024-01``), the days and weeks with talk in it, and its entries in the order shown
    (its own digest first, then newest first, a week just before its days)."""

    month: str
    days: int
    weeks: int
    entries: list[Digest] = field(default_factory=list)

    @property
    def count(self) -> str:
        return count_label(self.days, self.weeks)


def count_label(days: int, weeks: int) -> str:
    """What a month holds, in words: ``"1 day"``, ``"3 days"``, ``"5 days in 2 weeks"``; nothing without days."""
    if days <= 0:
        return ""
    label = f"{days} day{'s' if days > 1 else ''}"
    return f"{label} in {weeks} weeks" if weeks > 1 else label


def week_key(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def period_days(digest: Digest, days: Sequence[date]) -> list[date]:
    """The days with talk (``days``, sorted) that ``digest``'s period covers."""
    if digest.granularity == "day":
        return [d for d in days if d.isoformat() == digest.period]
    if digest.granularity == "week":
        year, week = digest.period.split("-W")
        monday = date.fromisocalendar(int(year), int(week), 1)
        return [d for d in days if monday <= d < monday + timedelta(days=7)]
    return [d for d in days if d.isoformat()[:7] == digest.period]


def folded(digests: Sequence[Digest]) -> list[Digest]:
    """The digests worth showing: a roll-up only where it gathers two or more children, each text once (the
    most specific kept)."""
    days = sorted(date.fromisoformat(d.period) for d in digests if d.granularity == "day")
    weeks_shown = {d.period for d in digests if d.granularity == "week" and len(period_days(d, days)) != 1}
    keep = []
    for digest in digests:
        covered = period_days(digest, days)
        if digest.granularity == "week" and len(covered) == 1:
            continue  # that one day says it
        if digest.granularity == "month" and covered:
            weeks = {week_key(d) for d in covered}
            if len(covered) == 1 or (len(weeks) == 1 and weeks <= weeks_shown):
                continue  # its one day, or its one week, says it
        keep.append(digest)
    seen: set[str] = set()
    out = []
    for digest in sorted(keep, key=lambda d: (SPECIFIC.get(d.granularity, 3), d.period)):
        text = normalized(digest.content)
        if text not in seen:
            seen.add(text)
            out.append(digest)
    return out


def filed_under(digest: Digest, days: Sequence[date]) -> str:
    """The month a digest is shown in: a week in the month of its first day with talk (its Monday's without)."""
    if digest.granularity == "week":
        covered = period_days(digest, days)
        if covered:
            return covered[0].isoformat()[:7]
        year, week = digest.period.split("-W")
        return date.fromisocalendar(int(year), int(week), 1).isoformat()[:7]
    return digest.period[:7]


def placed_at(digest: Digest, days: Sequence[date]) -> date:
    """Where an entry sorts in its month: a day at itself, a week at its last day with talk (so it comes just
    before the days it sums up, newest first), a month at its first day."""
    if digest.granularity == "week":
        covered = period_days(digest, days)
        if covered:
            return covered[-1]
        year, week = digest.period.split("-W")
        return date.fromisocalendar(int(year), int(week), 1)
    return date.fromisoformat(digest.period if digest.granularity == "day" else digest.period + "-01")


def timeline(digests: Sequence[Digest]) -> list[Month]:
    """The panel's timeline: months newest first, each with its count of days and weeks and its entries."""
    days = sorted(date.fromisoformat(d.period) for d in digests if d.granularity == "day")
    months: dict[str, list[Digest]] = {}
    for digest in folded(digests):
        months.setdefault(filed_under(digest, days), []).append(digest)

    def order(d: Digest) -> tuple[bool, int, int]:
        return d.granularity != "month", -placed_at(d, days).toordinal(), -SPECIFIC.get(d.granularity, 3)

    out = []
    for month in sorted(months, reverse=True):
        talk = [d for d in days if d.isoformat()[:7] == month]
        out.append(Month(month, len(talk), len({week_key(d) for d in talk}), sorted(months[month], key=order)))
    return out
