"""Dates in questions ("in March 2024", "last spring", "two weeks ago") as a time range. A pure function.

The range is matched against the turns' real dates, so "what was I doing in
May" finds May's conversations even when no word of the answer says "May".
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

MONTHS = {m: i for i, m in enumerate(["january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"], 1)}
MONTHS.update({name[:3]: i for name, i in list(MONTHS.items())})
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "few": 3, "couple": 2}
Range = tuple[datetime, datetime]


def _month(year: int, month: int) -> Range:
    start = datetime(year, month, 1, tzinfo=None)
    end = datetime(year + (month == 12), month % 12 + 1, 1)
    return start, end


def _shift_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def date_range(text: str, now: datetime) -> Range | None:
    """The period a question speaks of, in ``now``'s time zone; ``None`` when it names none."""
    t = text.lower()
    tz = now.tzinfo
    naive = now.replace(tzinfo=None)

    def out(r: Range) -> Range:
        return r[0].replace(tzinfo=tz), r[1].replace(tzinfo=tz)

    m = re.search(r"\b(" + "|".join(MONTHS) + r")\w*\.?\s+(\d{4})\b", t)
    if m:
        return out(_month(int(m.group(2)), MONTHS[m.group(1)[:3]]))
    m = re.search(r"\b(?:in|during|since|back in|early|late)\s+(" + "|".join(k for k in MONTHS if len(k) > 3 or k == "may")
                  + r")\b", t)
    if m:
        month = MONTHS[m.group(1)[:3]]
        year = naive.year if month <= naive.month else naive.year - 1
        return out(_month(year, month))
    m = re.search(r"\b(?:in|during)\s+((?:19|20)\d{2})\b", t)
    if m:
        year = int(m.group(1))
        return out((datetime(year, 1, 1), datetime(year + 1, 1, 1)))
    m = re.search(r"\b(last|this)\s+(spring|summer|autumn|fall|winter)\b", t)
    if m:
        first = SEASONS[m.group(2)]
        year = naive.year
        start = datetime(year, first, 1) if first != 12 else datetime(year - 1, 12, 1)
        if m.group(1) == "last" and start + timedelta(days=92) > naive or start > naive:
            start = start.replace(year=start.year - 1)
        end_year, end_month = _shift_months(start.year, start.month, 3)
        return out((start, datetime(end_year, end_month, 1)))
    if re.search(r"\byesterday\b", t):
        day = datetime(naive.year, naive.month, naive.day) - timedelta(days=1)
        return out((day, day + timedelta(days=1)))
    m = re.search(r"\b(last|this)\s+(week|month|year)\b", t)
    if m:
        unit, last = m.group(2), m.group(1) == "last"
        if unit == "week":
            monday = datetime(naive.year, naive.month, naive.day) - timedelta(days=naive.weekday())
            start = monday - timedelta(days=7) if last else monday
            return out((start, start + timedelta(days=7)))
        if unit == "month":
            year, month = _shift_months(naive.year, naive.month, -1 if last else 0)
            return out(_month(year, month))
        year = naive.year - last
        return out((datetime(year, 1, 1), datetime(year + 1, 1, 1)))
    m = re.search(r"\b(\d+|" + "|".join(NUMBERS) + r")\s+(day|week|month|year)s?\s+ago\b", t)
    if m:
        n = int(m.group(1)) if m.group(1).isdigit() else NUMBERS[m.group(1)]
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[m.group(2)] * n
        centre = naive - timedelta(days=days)
        margin = timedelta(days=max(1, days // 4))
        return out((centre - margin, centre + margin))
    return None
