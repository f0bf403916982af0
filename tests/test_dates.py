"""Dates in questions as time ranges: a pure function."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lyra_local.memory.dates import date_range, question_periods
from lyra_local.store.db import to_iso

NOW = datetime(2024, 6, 20, 15, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("What was I doing in March 2024?", "2024-03-01", "2024-04-01"),
    ("what happened in Dec 2023", "2023-12-01", "2024-01-01"),
    ("What did I cook in May?", "2024-05-01", "2024-06-01"),
    ("Where was I in September?", "2023-09-01", "2023-10-01"),  # the latest September before now
    ("my plans in 2023", "2023-01-01", "2024-01-01"),
    ("what did we talk about last week", "2024-06-10", "2024-06-17"),
    ("anything from last month?", "2024-05-01", "2024-06-01"),
    ("how was last winter", "2023-12-01", "2024-03-01"),
    ("last summer", "2023-06-01", "2023-09-01"),
    ("what did I say yesterday", "2024-06-19", "2024-06-20"),
    ("two weeks ago I mentioned a film", "2024-06-03", "2024-06-09"),
])
def test_a_question_names_a_period(text: str, start: str, end: str) -> None:
    found = date_range(text, NOW)
    assert found is not None
    assert (found[0].date().isoformat(), found[1].date().isoformat()) == (start, end)
    assert found[0].tzinfo == timezone.utc


@pytest.mark.parametrize("text", ["Where do I live now?", "What may I have said about tea?", "Which book?"])
def test_no_period_no_range(text: str) -> None:
    assert date_range(text, NOW) is None


# -- any text, any "now": never raises ("Rome, 2000 years ago" is a date to no calendar) ---------------

@pytest.mark.parametrize("text", ["Rome, 2000 years ago", "march 0000", "December 9999", "dec 10000",
                                  "5000 years ago", "99999999999999999999 days ago", "1" * 5000 + " days ago",
                                  "in 1900", "last year", "yesterday"])
def test_far_or_impossible_dates_clamp_or_name_nothing(text: str) -> None:
    for now in (NOW, datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
                datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-12)))):
        found = date_range(text, now)
        if found is not None:
            assert found[0] < found[1]
            to_iso(found[0]), to_iso(found[1])  # what recall does with it: no overflow


def test_rome_two_thousand_years_ago_is_clamped_to_year_one() -> None:
    found = date_range("Rome, 2000 years ago", NOW)
    assert found is not None and found[0].year == 1 and 500 < found[1].year < 600


def test_december_9999_is_clamped_and_year_zero_names_nothing() -> None:
    found = date_range("December 9999", NOW)
    assert found is not None and found[0] == datetime(9999, 12, 1, tzinfo=timezone.utc)
    assert date_range("march 0000", NOW) is None
    assert date_range("Caesar, 5000 years ago", NOW) is None


WORDS = st.sampled_from(["in", "during", "last", "this", "ago", "since", "early", "back in", "yesterday",
                         "march", "Dec", "may", "winter", "fall", "week", "month", "year", "years", "days",
                         "a", "few", "couple", "two", ",", "."])
NUMBERS = st.integers(min_value=0, max_value=10**30).map(str) | st.integers(0, 9999).map(lambda n: f"{n:04d}")
DATE_TEXT = st.lists(WORDS | NUMBERS | st.text(max_size=8), max_size=12).map(" ".join)
ANY_NOW = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59),
                       timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=14)),
                                                  timezone(timedelta(hours=-12)), timezone(timedelta(minutes=330))]))


@settings(max_examples=300)
@given(text=DATE_TEXT | st.text(), now=ANY_NOW)
def test_any_text_at_any_time_gives_a_usable_range_or_none(text: str, now: datetime) -> None:
    found = date_range(text, now)
    if found is not None:
        start, end = found
        assert start < end and start.tzinfo is now.tzinfo and end.tzinfo is now.tzinfo
        assert to_iso(start) < to_iso(end)


@pytest.mark.parametrize(("text", "days"), [
    ("what did I do on 2024-01-10?", ["2024-01-10"]),
    ("on 10.01.2024", ["2024-01-10", "2024-10-01"]),  # a dot: day first, then the other way round
    ("on 01/10/2024", ["2024-01-10", "2024-10-01"]),  # a slash: month first
    ("on 13/01/2024", ["2024-01-13"]),  # only one reading is a date
    ("on 5.6.23", ["2023-06-05", "2023-05-06"]),
    ("version 1.2.3 broke", []), ("call 555-12-2024", []), ("at 10.30", []), ("on 31/02/2024", []),
])
def test_a_numeric_date_is_each_day_it_may_be(text: str, days: list[str]) -> None:
    found = question_periods(text, NOW)
    assert [p.start.date().isoformat() for p in found] == days
    assert all(p.end - p.start == timedelta(days=1) and not p.implied_year for p in found)


@settings(max_examples=200)
@given(parts=st.lists(st.integers(0, 10**6).map(str), min_size=1, max_size=4), sep=st.sampled_from(".-/"),
       now=ANY_NOW)
def test_any_numeric_date_at_any_time_reads_or_names_nothing(parts: list[str], sep: str, now: datetime) -> None:
    for period in question_periods(f"on {sep.join(parts)}", now):
        assert period.start < period.end and to_iso(period.start) < to_iso(period.end)
