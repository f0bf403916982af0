"""The Memory panel and search on a real history, in a real headless Chromium against a real ``lyra serve``
with the real tiny models: the first 19 sessions of LoCoMo's first conversation
(``locomo-dev.json`` in the folder ``LYRA_REAL_DATA`` names: written outside this project under its own licence,
never copied into it), imported through the web API as the recall evaluation imports LoCoMo
(``scripts/recall_sets.py``), then
one forced dream pass. Each session keeps its first 8 turns: the dream drafts a summary per session, and whole
sessions (22 turns on average) made the pass take 5 minutes on 2 CPUs, 15 on a busy machine; 19 sessions over six
months is what the panel is measured on.

The panel reads like memory: the timeline folded by month with human dates, texts a few lines long with "more",
the operations report and the drives' numbers folded away in Advanced, one reading of the drives in Memory and
Dream. Search dates a digest by its period (2023, not the day the dream ran) and shows a text once.
Screenshots go to test-output/screenshots/.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from ..conftest import REPO, Served
from ..served_web import dream, import_file
from ..test_web_ui import CONFIG, shot, start
from . import real_data

pytestmark = [pytest.mark.slow, pytest.mark.models]
LOCOMO = "locomo-dev.json"  # LoCoMo's dev half, in the folder LYRA_REAL_DATA names: never in the repository
SESSIONS = 19
TURNS = 8  # of each session
DREAM_S = 900
MONTH = re.compile(r"^(January|February|March|April|May|June|July|August|September|October|November|December) "
                   r"\d{4}")
DAY_OR_WEEK = re.compile(r"^((Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{1,2}|week of \d{1,2}) [A-Z][a-z]{2} \d{4}$")


def history_jsonl(tmp: Path) -> Path:
    sys.path.insert(0, str(REPO / "scripts"))
    from recall_sets import locomo  # the conversion the recall evaluation uses

    first = next(locomo(real_data(LOCOMO)))
    first.sessions = first.sessions[:SESSIONS]
    for session in first.sessions:
        session["messages"] = session["messages"][:TURNS]
    path = tmp / "conv-26.jsonl"
    path.write_text(first.jsonl(), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def remembered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("locomo-ui")
    for served in start(tmp, CONFIG.replace('user_name = "Sam"', 'user_name = "Caroline"')):
        import_file(served, history_jsonl(tmp))
        took = dream(served, DREAM_S)
        print(f"\nthe forced dream over {SESSIONS} sessions took {took:.0f} s")
        yield served


def open_panel(browser: Browser, served: Served, panel: str = "memory") -> Page:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: page.errors.append(str(e)))  # type: ignore[attr-defined]
    page.goto(served.url)
    page.wait_for_load_state("networkidle")
    page.click(f".tab[data-panel={panel}]")
    page.wait_for_load_state("networkidle")
    return page


def test_the_memory_panel_is_folded_with_human_dates(browser: Browser, remembered: Served) -> None:
    page = open_panel(browser, remembered)
    months = page.locator("#timeline details.month")
    expect(months.first).to_be_visible()
    assert months.count() == 6  # May to October 2023
    assert page.locator("#timeline details[open]").count() == 0  # folded
    labels = [s.strip() for s in page.locator("#timeline summary").all_inner_texts()]
    assert all(MONTH.match(label) for label in labels), labels
    assert labels[0].startswith("October 2023") and labels[-1].startswith("May 2023")  # newest first
    assert "-W" not in page.locator("#timeline").inner_text()  # no raw period key anywhere
    assert not page.locator("#sitrep").is_visible()  # the operations report is in Advanced, folded
    assert not page.locator("#drives").is_visible()
    assert page.locator("#advanced").get_attribute("open") is None
    height = page.evaluate("document.querySelector('#panel').scrollHeight")
    assert height < 4000, height  # it once was a 20,000-pixel column
    mood = page.locator("#self-mood").inner_text()
    assert "Lyra feels" in mood and not re.search(r"\d", mood), mood
    shot(page, "memory-panel-locomo")

    months.last.locator("summary").click()  # May 2023
    opened = months.last.locator("li > time")
    expect(opened.first).to_be_visible()
    dates = opened.all_inner_texts()
    assert dates[0] == "May 2023" and all(DAY_OR_WEEK.match(d) for d in dates[1:]), dates
    assert any(d.startswith("Mon 8 May 2023") for d in dates), dates  # session 1: 1:56 pm on 8 May, 2023
    clamped = months.last.locator(".memory-item p.clamp")
    expect(clamped.first).to_be_visible()
    lines = clamped.first.evaluate("p => p.clientHeight / parseFloat(getComputedStyle(p).lineHeight)")
    assert lines <= 3.5, lines  # a few lines
    short = clamped.count()
    more = months.last.locator("button.more").first  # by its class: its name becomes "less"
    more.click()
    expect(more).to_have_attribute("aria-expanded", "true")
    expect(clamped).to_have_count(short - 1)  # that one opened whole
    shot(page, "memory-panel-locomo-may")

    page.locator("#advanced > summary").click()
    expect(page.locator("#sitrep")).to_be_visible()
    expect(page.locator("#sitrep")).to_contain_text("Instances:")
    memory_drives = page.locator("#drives .gauge-value").all_inner_texts()
    page.click(".tab[data-panel=dream]")
    page.locator("#dream-advanced > summary").click()  # the drives are under Advanced there too
    expect(page.locator("#dream-drives .gauge-value")).to_have_count(4)
    assert page.locator("#dream-drives .gauge-value").all_inner_texts() == memory_drives  # one reading
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()


def test_search_dates_a_digest_by_its_period_and_shows_a_text_once(
        browser: Browser, remembered: Served) -> None:
    digests = httpx.get(f"{remembered.url}/api/digests", params={"granularity": "day"}).json()["digests"]
    gists = {}
    for session in httpx.get(f"{remembered.url}/api/sessions").json()["sessions"]:
        gist = httpx.get(f"{remembered.url}/api/sessions/{session['id']}/gist").json()["gist"]
        if gist:
            gists[gist["content"]] = session
    day = next(d for d in digests if d["content"] in gists)  # a day of one conversation: its summary's words
    words = " ".join(re.findall(r"[A-Za-z]{4,}", day["content"])[:8])
    page = open_panel(browser, remembered, "search")
    page.fill("#search-input", words)
    page.press("#search-input", "Enter")
    expect(page.locator("#search-status")).to_contain_text("found", timeout=60_000)
    results = page.locator("#search-results li.result")
    snippets = [" ".join(re.findall(r"\w+", t.lower())) for t in results.locator(".snippet").all_inner_texts()]
    assert len(snippets) == len(set(snippets)), snippets  # the day's digest and the summary: one text, once
    dated = results.locator("time.badge.date")
    for i in range(dated.count()):  # every result is dated by what it speaks of (2023), not the dream's day
        assert dated.nth(i).get_attribute("datetime").startswith("2023"), dated.nth(i).inner_text()
        assert dated.nth(i).inner_text().endswith("2023"), dated.nth(i).inner_text()
    page.select_option("#search-tier", "digest")
    page.press("#search-input", "Enter")
    expect(page.locator("#search-results li.result[data-tier=digest]").first).to_be_visible(timeout=60_000)
    digest = page.locator("#search-results li.result[data-tier=digest]").first
    when = digest.locator("time").inner_text()
    assert DAY_OR_WEEK.match(when) or MONTH.match(when), when
    assert when.endswith("2023") and digest.locator("time").get_attribute("datetime").startswith("2023"), when
    expect(digest.locator(".snippet mark").first).to_be_visible()  # the matched words, marked
    shot(page, "search-locomo")

    page.select_option("#search-tier", "gist")
    page.press("#search-input", "Enter")
    summary = page.locator("#search-results li.result[data-tier=gist]").first
    expect(summary).to_be_visible(timeout=60_000)
    snippet = summary.locator(".snippet").inner_text()
    assert len(snippet) < 300, snippet  # a long summary is cut around the match
    whole = next(t for t in gists if snippet.strip("…")[:40] in t)
    assert (snippet != whole) == (len(whole) > 280), (snippet, whole)
    open_link = summary.get_by_role("link", name="Open")
    forget = summary.get_by_role("button", name="Forget")
    assert open_link.get_attribute("href").startswith("#session=")
    box_open, box_forget = open_link.bounding_box(), forget.bounding_box()
    assert box_open and box_forget and abs(box_forget["y"] - box_open["y"]) > 10  # not side by side
    open_link.click()
    expect(page.locator("#messages li.highlight")).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]
    page.close()
