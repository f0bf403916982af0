"""Human dates in the web UI (``web/static/dates.js``), in a real headless Chromium with no server: a digest's
period key as a person says it, and a stored time as the day it was where the browser is."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from .conftest import REPO

DATES_JS = REPO / "lyra_local" / "web" / "static" / "dates.js"

pytestmark = pytest.mark.slow


def dates_page(browser: Browser, zone: str) -> Iterator[Page]:
    context = browser.new_context(timezone_id=zone)
    page = context.new_page()
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(path=str(DATES_JS))
    yield page
    context.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    yield from dates_page(browser, "Europe/Lisbon")


@pytest.mark.parametrize(("period", "label", "month", "start"), [
    ("2023-09-11", "Mon 11 Sep 2023", "2023-09", "2023-09-11"),
    ("2023-W37", "week of 11 Sep 2023", "2023-09", "2023-09-11"),
    ("2023-09", "September 2023", "2023-09", "2023-09-01"),
    ("2023-W35", "week of 28 Aug 2023", "2023-08", "2023-08-28"),  # filed under the month of its Monday
    ("2021-W01", "week of 4 Jan 2021", "2021-01", "2021-01-04"),
    ("2020-W53", "week of 28 Dec 2020", "2020-12", "2020-12-28"),
    ("2024-12-30", "Mon 30 Dec 2024", "2024-12", "2024-12-30"),
    ("someday", "someday", "someday", "someday"),  # not a key: shown as it is
])
def test_a_period_key_reads_as_a_person_says_it(page: Page, period: str, label: str, month: str, start: str) -> None:
    got = page.evaluate("p => [LyraDates.periodLabel(p), LyraDates.periodMonth(p), LyraDates.periodStart(p)]", period)
    assert got == [label, month, start]


def test_a_stored_time_is_the_day_it_was_where_the_browser_is(browser: Browser) -> None:
    late = "2023-09-11T23:30:00.000000+00:00"  # the 12th in Lisbon (summer time) and Tokyo, the 11th in New York
    for zone, day in (("Europe/Lisbon", "Tue 12 Sep 2023"), ("Asia/Tokyo", "Tue 12 Sep 2023"),
                      ("America/New_York", "Mon 11 Sep 2023")):
        for page in dates_page(browser, zone):
            assert page.evaluate("t => LyraDates.dayLabel(t)", late) == day, zone


@pytest.mark.parametrize(("began", "ended", "label"), [
    ("2023-09-11T10:00:00+00:00", "2023-09-11T18:00:00+00:00", "Mon 11 Sep 2023"),
    ("2023-09-11T10:00:00+00:00", "2023-09-14T10:00:00+00:00", "11–14 Sep 2023"),
    ("2023-08-28T10:00:00+00:00", "2023-09-02T10:00:00+00:00", "28 Aug – 2 Sep 2023"),
    ("2022-12-30T10:00:00+00:00", "2023-01-02T10:00:00+00:00", "30 Dec 2022 – 2 Jan 2023"),
])
def test_a_span_of_days_is_said_once(page: Page, began: str, ended: str, label: str) -> None:
    assert page.evaluate("([a, b]) => LyraDates.spanLabel(a, b)", [began, ended]) == label


@pytest.mark.parametrize(("stamp", "group"), [
    ("2026-11-24T08:00:00+00:00", "Today"),
    ("2026-11-23T23:00:00+00:00", "Yesterday"),
    ("2026-11-19T12:00:00+00:00", "Previous 7 days"),
    ("2026-11-17T12:00:00+00:00", "November 2026"),  # 7 days ago: no longer "previous 7 days"
    ("2023-09-11T10:00:00+00:00", "September 2023"),
    ("not a time", "Earlier"),
])
def test_a_conversation_is_grouped_by_when_it_was_last_active(page: Page, stamp: str, group: str) -> None:
    now = "new Date(2026, 10, 24, 15, 0)"  # the browser's own day, so the group does not hang on its time zone
    assert page.evaluate(f"s => LyraDates.recencyGroup(s, {now})", stamp.replace("+00:00", "")) == group


def test_a_day_in_a_conversation_is_headed_today_yesterday_or_by_its_date(page: Page) -> None:
    heads = page.evaluate("""() => {
        const now = new Date(2026, 10, 24, 15, 0);
        const at = (d, h) => new Date(2026, 10, d, h, 5).toISOString();
        return [LyraDates.dayHeading(at(24, 9), now), LyraDates.dayHeading(at(23, 22), now),
                LyraDates.dayHeading(at(20, 9), now), LyraDates.dayKey(at(24, 0)) === LyraDates.dayKey(at(24, 23)),
                LyraDates.dayKey(at(24, 23)) === LyraDates.dayKey(at(25, 0)), LyraDates.timeLabel(at(24, 9))]
    }""")
    assert heads[:5] == ["Today", "Yesterday", "Fri 20 Nov 2026", True, False]
    assert heads[5].replace("\u202f", " ").startswith("09:05") or heads[5].startswith("9:05")
