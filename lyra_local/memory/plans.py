"""When a plan was for: a plan's date read against the day it was said, and whether that date has passed.

"moving to Edinburgh in September", said on 2 April 2024, is for September
2024. Shown in November 2026 it is a plan whose date has passed: About you and
the companion's context say so, rather than speak of a move "in September" a
year and a half on. The date is the fact's value's own or else the sentence of
the turn it was learnt from. A plan looks forward where a question looks back,
so a date with no year ("in September", "on 2 May") is the next such one on or
after the day it was said, not the last one before it (``dates.question_period``),
and "next month", "next April", "tomorrow", "in three weeks" count from that
day. ``planned`` is pure; ``of_fact`` reads the fact's source turn from the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..store import Store
from ..store.derived import ProfileFact
from .dates import LATEST, MONTHS, NUMBERS, Period, question_period
from .keys import PLAN_KEYS

_UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14}
_NEXT = re.compile(r"\b(?:next|this coming)\s+(week|month|year|" + "|".join(MONTHS) + r")\b")
_IN = re.compile(r"\bin\s+(\d{1,3}|" + "|".join(NUMBERS) + r")\s+(day|week|fortnight|month|year)s?\b")
_TOMORROW = re.compile(r"\btomorrow\b")


@dataclass(frozen=True)
class Planned:
    start: datetime
    end: datetime  # exclusive
    past: bool  # the whole period lies before now

    @property
    def label(self) -> str:
        """"2 May 2024", "September 2024", "2024", or "3 – 9 June 2024": as a person says when."""
        last = self.end - timedelta(days=1)
        if last.date() == self.start.date():
            return f"{self.start.day} {self.start:%B %Y}"
        if self.start.day == 1 and (self.end.day, self.end.month) == (1, self.start.month % 12 + 1):
            return f"{self.start:%B %Y}"
        if (self.start.month, self.start.day, self.end.month, self.end.day) == (1, 1, 1, 1):
            return f"{self.start.year}"
        return f"{self.start.day} {self.start:%B %Y} – {last.day} {last:%B %Y}"


def planned(texts: list[str], said_at: datetime, now: datetime) -> Planned | None:
    """The period the first of ``texts`` that names one is for (said on ``said_at``), and whether it is past."""
    for text in texts:
        period = _forward(text.casefold(), said_at)
        if period is not None:
            start, end = period
            return Planned(start, end, past=end <= now)
    return None


def described(value: str, label: str | None, past: bool) -> str:
    """A plan's value as text says it, with its date: "move to Edinburgh (planned for September 2024; that date has
    passed)"; any other value as it is (``label`` None)."""
    if label is None:
        return value
    return f"{value} (planned for {label}{'; that date has passed' if past else ''})"


def of_fact(store: Store, fact: ProfileFact, now: datetime) -> Planned | None:
    """When a plan fact is for: its value's date, else its source turn's, read against the day it was said."""
    if fact.key not in PLAN_KEYS:
        return None
    turns = [t for t in store.corrections.sources("fact", fact.id) if t["role"] == "user"]
    said = turns[0]["created_at"] if turns else fact.observed_at or fact.created_at
    return planned([fact.value, *(t["content"] for t in turns[:1])], _moment(said, now), now)


def _moment(iso: str, now: datetime) -> datetime:
    moment = datetime.fromisoformat(iso)
    return (moment if moment.tzinfo else moment.replace(tzinfo=now.tzinfo)).astimezone(now.tzinfo)


def _forward(text: str, said_at: datetime) -> tuple[datetime, datetime] | None:
    day = said_at.replace(hour=0, minute=0, second=0, microsecond=0)
    if _TOMORROW.search(text):
        return day + timedelta(days=1), day + timedelta(days=2)
    found = _IN.search(text)
    if found:
        count = int(found.group(1)) if found.group(1).isdigit() else NUMBERS[found.group(1)]
        unit = found.group(2)
        if unit in _UNIT_DAYS:
            start = day + timedelta(days=count * _UNIT_DAYS[unit])
            return start, start + timedelta(days=_UNIT_DAYS[unit])
        return _month_span(day, count * (12 if unit == "year" else 1))
    found = _NEXT.search(text)
    if found:
        what = found.group(1)
        if what == "week":
            monday = day + timedelta(days=7 - day.weekday())
            return monday, monday + timedelta(days=7)
        if what == "month":
            return _month_span(day, 1)
        if what == "year":
            return day.replace(year=day.year + 1, month=1, day=1), day.replace(year=day.year + 2, month=1, day=1)
        month = MONTHS[what]
        ahead = (month - day.month) % 12 or 12
        return _month_span(day, ahead)
    period = question_period(text, said_at)
    if period is None:
        return None
    return _ahead(period, day)


def _ahead(period: Period, day: datetime) -> tuple[datetime, datetime]:
    """A period with no year, read as the last one before the day said, moved to the next one from it."""
    start, end = period.start, period.end
    while period.implied_year and end <= day and end.year < LATEST.year:
        start, end = _next_year(start), _next_year(end)
    return start, end


def _next_year(moment: datetime) -> datetime:
    try:
        return moment.replace(year=moment.year + 1)
    except ValueError:  # 29 February
        return moment.replace(year=moment.year + 1, day=28)


def _month_span(day: datetime, months_ahead: int) -> tuple[datetime, datetime]:
    index = day.year * 12 + day.month - 1 + months_ahead
    start = day.replace(year=index // 12, month=index % 12 + 1, day=1)
    after = index + 1
    return start, start.replace(year=after // 12, month=after % 12 + 1)
