"""Every number ``memory/dates.py`` reads is bounded: no form of date, with any number in it, can raise.

Why: one message ("Last year, <4,400 nines> days before May 5, I planted roses")
that ends its own turn with an error breaks more than that turn: recall's ``date`` stage reads
stored turns again (``spoken_of``), so every later question naming a recent period
would fail too, and ``/api/recall`` and ``/api/search`` answer 500. The "N days
before" form must not call ``int()`` on digits of any length (``int()`` refuses over
4,300). Here each form the module reads is driven with huge numbers, zeros,
4,400-digit numbers and odd spacing; and the message itself goes through the
real app, after which recall, search and a chat turn about yesterday work.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from lyra_local.config import Settings
from lyra_local.memory.dates import EARLIEST, LATEST, date_range, question_period, spoken_of

from .conftest import fake_client
from .sse import sse_events

POISON = "Last year, " + "9" * 4400 + " days before May 5, I planted roses."

# Numbers a person might type: small, huge, zero, zero-padded, and past int()'s 4,300-digit limit.
NUMBER = st.one_of(
    st.integers(0, 40).map(str),
    st.integers(0, 9999).map(lambda n: f"{n:04d}"),
    st.integers(0, 10**40).map(str),
    st.integers(1, 4500).map(lambda n: "9" * n),
    st.integers(1, 4500).map(lambda n: "0" * n),
    st.integers(1, 4500).map(lambda n: "0" * n + "7"),
    st.sampled_from(["9" * 4400, "1" + "0" * 4400, "0", "00", "31", "32", "29", "99"]),
)
GAP = st.sampled_from([" ", "  ", "\t", "\n", " \u00a0", "   \n ", ", ", ""])
MONTH = st.sampled_from(["january", "Feb", "feb.", "march", "MAY", "may", "june", "sept", "sep", "December",
                         "dec.", "jul", "Augustus"])
SEASON = st.sampled_from(["spring", "summer", "autumn", "fall", "winter"])
ORDINAL = st.sampled_from(["", "st", "nd", "rd", "th"])
COUNT = st.one_of(NUMBER, st.sampled_from(["a", "an", "one", "two", "three", "four", "five", "six", "few",
                                           "couple", "couple of", "the"]))


@st.composite
def calendar_day(draw: st.DrawFn) -> str:
    """``_DATE``: "May 3rd, 2023", "May 3", "the 3rd of June 2023", "3 June"."""
    day, year = draw(NUMBER) + draw(ORDINAL), draw(st.none() | NUMBER)
    tail = "" if year is None else draw(st.sampled_from([",", ""])) + draw(GAP) + year
    if draw(st.booleans()):
        return f"{draw(MONTH)}{draw(GAP)}{day}{tail}"
    return f"{draw(st.sampled_from(['', 'the ']))}{day}{draw(GAP)}{draw(st.sampled_from(['', 'of ']))}" \
           f"{draw(MONTH)}{tail}"


@st.composite
def between(draw: st.DrawFn) -> str:
    """Two ``_DATE``s after "between": a span."""
    return f"between{draw(GAP)}{draw(calendar_day())}{draw(GAP)}and{draw(GAP)}{draw(calendar_day())}"


@st.composite
def span_before(draw: st.DrawFn) -> str:
    """``_SPAN_BEFORE``: "two weeks before August 11, 2023", "<4,400 nines> days before May 5"."""
    unit = draw(st.sampled_from(["day", "days", "week", "weeks", "weekend", "month", "months"]))
    return f"{draw(COUNT)}{draw(GAP)}{unit}{draw(GAP)}before{draw(GAP)}{draw(calendar_day())}"


@st.composite
def named_range(draw: st.DrawFn) -> str:
    """Every form ``_naive_range`` reads (and ``_year_left_out``'s "in June")."""
    gap, number = draw(GAP), draw(NUMBER)
    return draw(st.sampled_from([
        f"{draw(SEASON)}{gap}{draw(st.sampled_from(['', 'of ']))}{number}",  # summer of 2023
        f"{draw(MONTH)}{gap}{number}",  # March 2024
        f"{draw(st.sampled_from(['in', 'during', 'since', 'back in', 'early', 'late']))}{gap}{draw(MONTH)}",
        f"{draw(st.sampled_from(['in', 'during']))}{gap}{number}",  # in 1999
        f"{draw(st.sampled_from(['in', 'during']))}{gap}the{gap}{draw(SEASON)}",
        f"{draw(st.sampled_from(['last', 'this']))}{gap}{draw(SEASON)}",
        "yesterday",
        f"last{gap}{draw(st.sampled_from(['weekend', 'monday', 'thursday', 'sunday']))}",
        f"{draw(st.sampled_from(['last', 'this']))}{gap}{draw(st.sampled_from(['week', 'month', 'year']))}",
        f"{draw(COUNT)}{gap}{draw(st.sampled_from(['day', 'days', 'week', 'months', 'year', 'years']))}{gap}ago",
    ]))


FORM = st.one_of(calendar_day(), between(), span_before(), named_range())
# Forms alone, after "last"/"ago" (so spoken_of reads them), and two at once, as a sentence would have them.
TEXT = st.one_of(FORM, FORM.map(lambda f: f"Last year, {f}, I planted roses."),
                 st.tuples(FORM, GAP, FORM).map("".join))
NOW = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59),
                   timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=14)),
                                              timezone(timedelta(hours=-12))]))


def assert_usable(found: tuple[datetime, datetime] | None, now: datetime) -> None:
    if found is not None:
        start, end = found
        assert start.tzinfo is now.tzinfo and end.tzinfo is now.tzinfo
        assert EARLIEST <= start.replace(tzinfo=None) < end.replace(tzinfo=None) <= LATEST


@settings(max_examples=400)
@given(text=TEXT, now=NOW)
def test_every_date_form_with_any_number_never_raises_and_stays_in_range(text: str, now: datetime) -> None:
    assert_usable(date_range(text, now), now)
    period = question_period(text, now)
    assert_usable(None if period is None else (period.start, period.end), now)
    assert_usable(spoken_of(text, now), now)


def test_four_thousand_four_hundred_nines_days_before_a_date_reaches_year_one() -> None:
    now = datetime(2024, 6, 20, tzinfo=timezone.utc)
    found = date_range(POISON, now)
    assert found is not None and found[0].replace(tzinfo=None) == EARLIEST
    assert found[1] == datetime(2024, 5, 5, tzinfo=timezone.utc)
    assert spoken_of(POISON, now) == found


def test_a_message_with_a_huge_day_count_does_not_break_recall_search_or_later_turns(
        make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings('[companion]\nuser_name = "Sam"\n')) as client:
        session = client.post("/api/sessions", json={"name": "garden"}).json()["id"]
        said = sse_events(client.post(f"/api/sessions/{session}/chat", json={"message": POISON}).text.splitlines())
        recall = client.get("/api/recall", params={"q": "what did we talk about yesterday"})
        assert recall.status_code == 200, recall.text
        assert client.get("/api/search", params={"q": "yesterday"}).status_code == 200
        asked = sse_events(client.post(f"/api/sessions/{session}/chat",
                                       json={"message": "what did we talk about yesterday?"}).text.splitlines())
        assert "error" not in [kind for kind, _ in asked] and asked[-1][0] == "done", asked
        assert "error" not in [kind for kind, _ in said] and said[-1][0] == "done", said
        assert [m["content"] for m in client.get(f"/api/sessions/{session}/messages").json()["messages"]] == [
            POISON, "ok", "what did we talk about yesterday?", "ok"]
