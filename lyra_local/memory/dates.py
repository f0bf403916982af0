"""Dates in questions ("in March 2024", "on 7 July, 2023", "on 10.01.2024", "last spring") as a time range. Pure
functions.

The range is matched against the turns' real dates, so "what was I doing in
May" finds May's conversations even when no word of the answer says "May".
A period whose year the question leaves out ("in June", "on May 3rd") is the
latest one before now, and says so (``Period.implied_year``): recall steps it
back a year at a time to the latest such period it has memories of. The same
reading applied to a turn against the turn's own date ("I went yesterday",
said on 8 May 2023) tells which days a turn speaks of (``spoken_of``).

It must never raise: any text a person types ("Rome, 2000 years ago",
"march 0000", "December 9999", "4,400 nines days before May 5") reaches it
through recall and chat, and a stored turn is read again by every later
question about its days (``spoken_of``), so one bad turn would break them all.
Every number is read through ``_number``, which is bounded; a range is
clamped to the dates every time zone can represent; a period that lies wholly
outside them names nothing (``None``).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import NamedTuple

MONTHS = {m: i for i, m in enumerate(["january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"], 1)}
MONTHS.update({name[:3]: i for name, i in list(MONTHS.items())})
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "few": 3, "couple": 2}
Range = tuple[datetime, datetime]


class Period(NamedTuple):
    start: datetime
    end: datetime
    implied_year: bool  # the text named no year: the latest such period before now was taken


# A day inside datetime's range on both ends, so converting to UTC from any offset cannot overflow.
EARLIEST = datetime(1, 1, 2)
LATEST = datetime(9999, 12, 30)


# The largest number read from text: a day count past it lies before year 1 from any date, and ``int()``
# refuses a string of over 4,300 digits (ValueError), which a person may well type.
_MOST = 10**10


def _number(digits: str, most: int = _MOST) -> int:
    """The number ``digits`` spell, at most ``most``; the one way this module reads a number from text.

    Every pattern's digits go through here, so no length of number typed can
    make ``int()`` raise: a string longer than ``most`` has digits is ``most``.
    """
    digits = digits.lstrip("0") or "0"
    return most if len(digits) > len(str(most)) else min(int(digits), most)


def _clamp(moment: datetime) -> datetime:
    return min(max(moment, EARLIEST), LATEST)


def _day(year: int, month: int = 1, day: int = 1) -> datetime:
    """Midnight of a calendar day, clamped: year 0 is ``EARLIEST``, year 10000 ``LATEST``."""
    if year < EARLIEST.year:
        return EARLIEST
    if year > LATEST.year:
        return LATEST
    return _clamp(datetime(year, month, day))


def _shift(moment: datetime, days: int) -> datetime:
    """``moment`` moved by a whole number of days (any size), clamped."""
    if days <= (EARLIEST - moment).days:
        return EARLIEST
    if days >= (LATEST - moment).days:
        return LATEST
    return moment + timedelta(days=days)


def _month(year: int, month: int) -> Range:
    end_year, end_month = _shift_months(year, month, 1)
    return _day(year, month), _day(end_year, end_month)


def _year(year: int) -> Range:
    return _day(year), _day(year + 1)


def _shift_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def date_range(text: str, now: datetime) -> Range | None:
    """The period a question speaks of, in ``now``'s time zone; ``None`` when it names none."""
    found = question_period(text, now)
    return None if found is None else (found.start, found.end)


def question_period(text: str, now: datetime) -> Period | None:
    """Like ``date_range``, saying too whether the year was left out."""
    found = _naive_period(text.lower(), now.replace(tzinfo=None))
    return None if found is None else _zoned(found, now)


def question_periods(text: str, now: datetime) -> list[Period]:
    """Every reading of the period a question names, the likelier first: a numeric date whose day and month
    could be either way round ("03/10/2023") is both days; anything else is ``question_period``'s one."""
    t = text.lower()
    if _DATE.search(t) is None:
        readings = [z for day in numeric_days(t) if (z := _zoned(day, now)) is not None]
        if len(readings) > 1:
            return readings
    found = question_period(text, now)
    return [] if found is None else [found]


def _zoned(found: Period, now: datetime) -> Period | None:
    start, end = _clamp(found.start), _clamp(found.end)
    if start >= end:  # wholly before year 1 or after 9999: no turn can be from then
        return None
    return Period(start.replace(tzinfo=now.tzinfo), end.replace(tzinfo=now.tzinfo), found.implied_year)


# "2024-01-10" (year first), "10.01.2024", "10/01/24": a day written in digits, not part of a longer number or time
_NUMERIC = re.compile(r"(?<![\d.:/-])(?:(\d{4})([-./])(\d{1,2})\2(\d{1,2})|(\d{1,2})([-./])(\d{1,2})\6(\d{4}|\d{2}))"
                      r"(?![\d:]|[-./]\d)")


def numeric_days(t: str) -> list[Period]:
    """The days the first numeric date of ``t`` may be, the likelier first. Year first is ISO's order, year
    month day. Otherwise the separator says which is the usual order: a slash month first (10/01/2024 is
    October 1st in the United States), a dot or a dash day first (10.01.2024 is 10 January in Europe); the
    other order is the second reading when it is a date too. A two-digit year is this century's."""
    m = _NUMERIC.search(t)
    if m is None:
        return []
    if m.group(1):
        orders = [(_number(m.group(1)), _number(m.group(3)), _number(m.group(4)))]
    else:
        a, b, y = _number(m.group(5)), _number(m.group(7)), _number(m.group(8))
        y += 2000 if len(m.group(8)) == 2 else 0
        month_first = (y, a, b)
        day_first = (y, b, a)
        orders = [month_first, day_first] if m.group(6) == "/" else [day_first, month_first]
    out = []
    for year, month, day in dict.fromkeys(orders):
        if 1 <= month <= 12 and 1 <= day <= 31:
            try:
                start = _day(year, month, day)
            except ValueError:  # 31 April
                continue
            out.append(Period(start, _shift(start, 1), False))
    return out


def days_after(moment: datetime, days: int) -> datetime:
    """``moment`` plus whole days, clamped to the dates every time zone can represent."""
    return _shift(moment.replace(tzinfo=None), days).replace(tzinfo=moment.tzinfo)


def spoken_of(text: str, said_at: datetime) -> Range | None:
    """The past period a turn speaks of, read against the turn's own date ("yesterday", said on 8 May: 7 May)."""
    if not PAST_WORDS.search(text):
        return None
    return date_range(text, said_at)


PAST_WORDS = re.compile(r"\b(yesterday|last|ago)\b", re.IGNORECASE)


def year_earlier(period: Period) -> Period | None:
    """The same period a year before (for a question that left its year out); ``None`` past year 1."""
    if period.start.year <= EARLIEST.year + 1:
        return None
    try:
        return Period(period.start.replace(year=period.start.year - 1),
                      period.end.replace(year=period.end.year - 1), True)
    except ValueError:  # 29 February
        return Period(_shift(period.start, -365), _shift(period.end, -365), True)


MONTH_NAMES = "|".join([*(k for k in MONTHS if len(k) > 3 or k == "may"),
                        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sept", "sep", "oct", "nov", "dec"])
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"
# "May 3, 2023", "May 3rd", "3 June, 2023", "the 3rd of June"
_DATE = re.compile(r"\b(?:(" + MONTH_NAMES + r")\.?\s+" + _DAY + r"\b" + _YEAR +
                   r"|(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?(" + MONTH_NAMES + r")\b\.?" + _YEAR + ")")
_SPAN_BEFORE = re.compile(r"\b(?:(the|a|one|two|three|four|five|six|\d+|few|couple(?: of)?)\s+)?"
                          r"(day|week|weekend|month)s?\s+before\s*$")


def _calendar_day(m: re.Match[str], naive: datetime) -> Period | None:
    """A matched ``_DATE`` as one day; the latest such day up to now when its year is left out."""
    month_word, day, year = (m.group(1), m.group(2), m.group(3)) if m.group(1) else (m.group(5), m.group(4), m.group(6))
    month = MONTHS.get(month_word[:3])
    d = _number(day)
    if month is None or not 1 <= d <= 31:
        return None
    implied = year is None
    y = _number(year) if year else naive.year
    try:
        start = _day(y, month, d)
    except ValueError:  # 31 April
        return None
    if implied and start > naive:
        start = _day(y - 1, month, d) if not (month == 2 and d == 29) else _day(y - 1, 3, 1)
    return Period(start, _shift(start, 1), implied)


def _naive_period(t: str, naive: datetime) -> Period | None:
    dates = [(m, day) for m in _DATE.finditer(t) if (day := _calendar_day(m, naive)) is not None]
    if dates:
        first_match, first = dates[0]
        if len(dates) > 1 and re.search(r"\bbetween\s*$", t[:first_match.start()]):
            last = dates[1][1]
            if last.implied_year and not first.implied_year:  # "between 11 August 2023 and 15 August"
                last = _in_year(last, first.start.year)
            if first.implied_year and not last.implied_year:  # "between August 11 and August 15 2023"
                first = _in_year(first, last.start.year)
            return Period(first.start, last.end, first.implied_year) if first.start < last.end else first
        span = _SPAN_BEFORE.search(t[:first_match.start()])
        if span:  # "two weeks before August 11, 2023", "the weekend before May 5"
            count = span.group(1) or "a"
            n = _number(count) if count.isdigit() else NUMBERS.get(count.split()[0], 1)
            days = {"day": 1, "week": 7, "weekend": 9, "month": 31}[span.group(2)] * n
            return Period(_shift(first.start, -days), first.start, first.implied_year)
        return first
    numeric = numeric_days(t)
    if numeric:
        return numeric[0]
    found = _naive_range(t, naive)
    if found is not None:
        return Period(found[0], found[1], _year_left_out(t))
    return None


def _in_year(day: Period, year: int) -> Period:
    """A one-day period moved to ``year`` (its year was implied by the other end of a span)."""
    try:
        start = day.start.replace(year=year)
    except ValueError:  # 29 February
        return day
    return Period(start, _shift(start, 1), False)


def _year_left_out(t: str) -> bool:
    """Whether a period read by ``_naive_range`` came from a month or season with no year ("in June")."""
    return bool(re.search(r"\b(?:in|during|since|back in|early|late)\s+(?:the\s+)?(?:" + MONTH_NAMES +
                          r"|spring|summer|autumn|fall|winter)\b(?!\.?\s+(?:of\s+)?\d{4})", t))


def _naive_range(t: str, naive: datetime) -> Range | None:
    """The period a question names, from the calendar's names first ("summer 2023", "in June"), else counted
    back from now ("yesterday", "last week", "two months ago")."""
    return _named_range(t, naive) or _relative_range(t, naive)


def _named_range(t: str, naive: datetime) -> Range | None:
    m = re.search(r"\b(spring|summer|autumn|fall|winter)\s+(?:of\s+)?(\d{4})\b", t)
    if m:  # "summer 2023", "the end of summer 2023"
        first, year = SEASONS[m.group(1)], _number(m.group(2))
        end_year, end_month = _shift_months(year, first, 3)
        return _day(year, first), _day(end_year, end_month)
    m = re.search(r"\b(" + "|".join(MONTHS) + r")\w*\.?\s+(\d{4})\b", t)
    if m:
        return _month(_number(m.group(2)), MONTHS[m.group(1)[:3]])
    months = "|".join(k for k in MONTHS if len(k) > 3 or k == "may")
    m = re.search(r"\b(?:in|during|since|back in|early|late)\s+(" + months + r")\b", t)
    if m:
        month = MONTHS[m.group(1)[:3]]
        return _month(naive.year if month <= naive.month else naive.year - 1, month)
    m = re.search(r"\b(?:in|during)\s+((?:19|20)\d{2})\b", t)
    if m:
        return _year(_number(m.group(1)))
    m = re.search(r"\b(?:in|during)\s+the\s+(spring|summer|autumn|fall|winter)\b", t)
    if m:  # "during the summer": the latest one that has begun
        first = SEASONS[m.group(1)]
        year = naive.year if _day(naive.year, first) <= naive else naive.year - 1
        end_year, end_month = _shift_months(year, first, 3)
        return _day(year, first), _day(end_year, end_month)
    m = re.search(r"\b(last|this)\s+(spring|summer|autumn|fall|winter)\b", t)
    if m:
        first = SEASONS[m.group(2)]
        year = naive.year if first != 12 else naive.year - 1
        if m.group(1) == "last" and _shift(_day(year, first), 92) > naive or _day(year, first) > naive:
            year -= 1
        end_year, end_month = _shift_months(year, first, 3)
        return _day(year, first), _day(end_year, end_month)
    return None


def _relative_range(t: str, naive: datetime) -> Range | None:
    today = datetime(naive.year, naive.month, naive.day)
    if re.search(r"\byesterday\b", t):
        return _shift(today, -1), today
    m = re.search(r"\blast\s+(weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", t)
    if m:  # the latest one before today; a weekend is Friday evening to Sunday
        target = 4 if m.group(1) == "weekend" else WEEKDAYS.index(m.group(1))
        back = (today.weekday() - target - 1) % 7 + 1
        start = _shift(today, -back)
        return start, _shift(start, 3 if m.group(1) == "weekend" else 1)
    m = re.search(r"\b(last|this)\s+(week|month|year)\b", t)
    if m:
        unit, last = m.group(2), m.group(1) == "last"
        if unit == "week":
            start = _shift(today, -today.weekday() - (7 if last else 0))
            return start, _shift(start, 7)
        if unit == "month":
            return _month(*_shift_months(naive.year, naive.month, -1 if last else 0))
        return _year(naive.year - last)
    m = re.search(r"\b(\d+|" + "|".join(NUMBERS) + r")\s+(day|week|month|year)s?\s+ago\b", t)
    if m:
        word = m.group(1)
        n = _number(word) if word.isdigit() else NUMBERS[word]
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[m.group(2)] * n
        margin = max(1, days // 4)
        return _shift(naive, -days - margin), _shift(naive, -days + margin)
    return None
