"""Dates in questions as time ranges: a pure function."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from lyra_local.memory.dates import date_range

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
