"""Regenerate, edit and branch, off the record, memory search and dated "Why?" in a real headless Chromium
against a real `lyra serve` with the real tiny model (no fixed seed: a regenerated reply is a new sample).
Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import Served
from .test_web_ui import send, shot
from .web_fixtures import Serving

CONFIG = """
[companion]
user_name = "Sam"
[dream]
enabled = false
[models.chat.sampling]
max_tokens = 32
"""

pytestmark = [pytest.mark.slow, pytest.mark.models]


@pytest.fixture(scope="module")
def serving() -> Serving:
    return Serving(CONFIG, settled=True)


def replied(page: Page, replies: int) -> None:
    """Wait until the conversation shows ``replies`` stored replies and nothing streams."""
    expect(page.locator(".message.assistant.streaming")).to_have_count(0, timeout=120_000)
    expect(page.locator("#send")).to_be_visible(timeout=120_000)
    expect(page.locator(".message.assistant[data-id]:not([data-id=''])")).to_have_count(replies, timeout=30_000)
    page.wait_for_load_state("networkidle")


def new_chat(page: Page, off_the_record: bool = False) -> None:
    """A blank conversation; "+ New chat" makes none on the server until its first message (so none stays
    empty), "+ Off the record" makes one at once (its banner says what it is)."""
    count = page.locator("#session-list li").count()
    page.click("#new-off-record" if off_the_record else "#new-session")
    expect(page.locator("#session-list li")).to_have_count(count + 1 if off_the_record else count)
    expect(page.locator("#messages > li")).to_have_count(0)


def recalled_ids(served: Served, query: str) -> set[int]:
    hits = httpx.get(f"{served.url}/api/recall", params={"q": query, "k": 100}).json()["hits"]
    return {h["id"] for h in hits}


def test_regenerate_twice_and_page_between_three_replies(page: Page, served: Served) -> None:
    new_chat(page)
    send(page, "Suggest a name for my new kitten.")
    replied(page, 1)
    reply = page.locator(".message.assistant").last
    first_id, first_text = reply.get_attribute("data-id"), reply.locator(".bubble").inner_text()
    for n in (2, 3):
        page.get_by_role("button", name="Regenerate this reply").last.click()
        replied(page, 1)
        expect(page.locator(".message.assistant .pager-count")).to_have_text(f"{n}/{n}")
    third_id = page.locator(".message.assistant").last.get_attribute("data-id")
    assert third_id != first_id
    page.get_by_role("button", name="Previous reply").click()
    expect(page.locator(".message.assistant .pager-count")).to_have_text("2/3")
    page.get_by_role("button", name="Previous reply").click()
    expect(page.locator(".message.assistant .pager-count")).to_have_text("1/3")
    expect(page.locator(".message.assistant .bubble")).to_have_text(first_text)
    expect(page.get_by_role("button", name="Previous reply")).to_be_disabled()
    shot(page, "regenerate")
    page.reload()  # the chosen one is the conversation's
    expect(page.locator(".message.assistant .pager-count")).to_have_text("1/3")
    expect(page.locator(".message.assistant")).to_have_attribute("data-id", first_id)
    ids = recalled_ids(served, first_text)
    assert int(first_id) in ids and int(third_id) not in ids  # only the chosen reply is remembered


def test_edit_a_message_and_return_to_the_old_branch(page: Page) -> None:
    new_chat(page)
    send(page, "I am planning a trip to Lisbon in May.")
    replied(page, 1)
    send(page, "What should I pack for it?")
    replied(page, 2)
    before = page.locator("#messages > li > .bubble").all_inner_texts()
    page.get_by_role("button", name="Edit this message").first.click()
    box = page.get_by_role("textbox", name="Your message, edited")
    box.fill("I am planning a trip to Porto in June.")
    box.press("Enter")
    replied(page, 1)
    expect(page.locator("#messages > li")).to_have_count(2)
    expect(page.locator(".message.user .bubble")).to_have_text("I am planning a trip to Porto in June.")
    expect(page.locator(".message.user .pager-count")).to_have_text("2/2")
    shot(page, "edit-branch")
    page.get_by_role("button", name="Previous version of this message").click()
    expect(page.locator("#messages > li")).to_have_count(4)
    assert page.locator("#messages > li > .bubble").all_inner_texts() == before  # the whole old branch is back
    expect(page.locator(".message.user .pager-count").first).to_have_text("1/2")


def test_an_off_the_record_conversation_leaves_nothing_once_left(page: Page, served: Served) -> None:
    word = "quokkazanzibar"
    new_chat(page, off_the_record=True)
    expect(page.locator("#off-record-banner")).to_be_visible()
    expect(page.locator("#empty .off-record-only")).to_be_visible()  # the empty page does not say "I remember it"
    expect(page.locator("#empty .on-record-only")).to_be_hidden()
    expect(page.locator("#session-list li.active .badge")).to_have_text("off the record")
    send(page, f"My secret word is {word}.")
    replied(page, 1)
    shot(page, "off-the-record")
    hits = httpx.get(f"{served.url}/api/recall", params={"q": word}).json()["hits"]
    assert not any(word in h["content"] for h in hits)
    found = httpx.get(f"{served.url}/api/search", params={"q": word}).json()["results"]
    assert not any(word in r["content"] for r in found)
    with zipfile.ZipFile(io.BytesIO(httpx.get(f"{served.url}/api/export").content)) as archive:
        assert not any(word.encode() in archive.read(n) for n in archive.namelist())
    sessions = page.locator("#session-list li").count()
    page.click("#new-session")  # leaving it for another conversation deletes it
    expect(page.locator("#off-record-banner")).to_be_hidden()
    expect(page.locator("#session-list li")).to_have_count(sessions - 1)  # gone; the next message makes one
    expect(page.locator("#session-list")).not_to_contain_text("off the record")
    page.wait_for_load_state("networkidle")
    data_dir = Path(httpx.get(f"{served.url}/api/settings").json()["data_dir"])
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert word.encode() not in path.read_bytes(), path


def test_search_finds_a_planted_memory_with_its_date_and_opens_it(page: Page, served: Served) -> None:
    new_chat(page)
    send(page, "My grandmother's bread recipe uses cardamom and saffron.")
    replied(page, 1)
    planted = page.locator(".message.user").last.get_attribute("data-id")
    new_chat(page)
    page.click(".tab[data-panel=search]")
    page.fill("#search-input", "cardamom saffron bread")
    page.press("#search-input", "Enter")
    result = page.locator("#search-results li[data-tier=exchange]").filter(has_text="cardamom and saffron").first
    expect(result).to_be_visible(timeout=30_000)
    date = page.evaluate("new Date().toISOString().slice(0, 10)")  # stored in UTC, shown as its day
    expect(result.locator("time.badge.date")).to_have_attribute("datetime", re.compile("^" + date))
    today = page.evaluate("LyraDates.dayLabel(new Date().toISOString())")
    expect(result.locator("time.badge.date")).to_have_text(today)
    expect(result.locator(".snippet mark").first).to_be_visible()  # the words that matched
    shot(page, "search")
    result.get_by_role("link", name="Open").first.click()  # a link (#session=…&turn=…), apart from Forget
    turn = page.locator(f"#messages li[data-id='{planted}']")
    expect(turn).to_have_class("message user highlight")
    expect(turn).to_be_focused()


def test_search_forgets_a_result_after_confirmation(page: Page, served: Served) -> None:
    new_chat(page)
    send(page, "The spare key is under the blue flowerpot.")
    replied(page, 1)
    planted = int(page.locator(".message.user").last.get_attribute("data-id"))
    page.click(".tab[data-panel=search]")
    page.fill("#search-input", "spare key flowerpot")
    page.press("#search-input", "Enter")
    result = page.locator("#search-results li[data-tier=exchange]").filter(has_text="blue flowerpot").first
    result.get_by_role("button", name="Forget").click()
    expect(page.locator("#confirm-dialog")).to_be_visible()
    page.get_by_role("button", name="Cancel").click()
    assert planted in recalled_ids(served, "spare key blue flowerpot")  # cancelled: kept
    result.get_by_role("button", name="Forget").click()
    page.get_by_role("button", name="Forget it").click()
    expect(page.locator("#search-results")).not_to_contain_text("blue flowerpot", timeout=30_000)
    assert planted not in recalled_ids(served, "spare key blue flowerpot")


def test_why_shows_the_date_and_conversation_of_each_recalled_memory(page: Page, served: Served) -> None:
    new_chat(page)
    send(page, "My sister Ingrid lives in Tromsø and keeps reindeer.")
    replied(page, 1)
    new_chat(page)
    send(page, "Where does my sister Ingrid live, and what does she keep?")
    replied(page, 1)
    page.get_by_role("button", name="Why?").last.click()
    why = page.locator(".why").last
    expect(why).to_contain_text("Tromsø", timeout=30_000)
    date = page.evaluate("window.LyraDates.dayLabel(new Date().toISOString())")  # "Thu 26 Nov 2026", as Search
    entry = why.locator("li").filter(has_text="Tromsø").first
    expect(entry.locator(".badge.date")).to_contain_text(date)
    expect(entry.locator(".why-found")).to_contain_text("found by")  # how it was found, in words
    expect(why).not_to_contain_text("recalled ·")
    shot(page, "why-dates")
    expect(entry.locator(".why-open")).to_have_text(" · Open")  # apart from the text, never glued onto it
    entry.get_by_role("link", name="Open").click()
    expect(page.locator(".message.user .bubble").first).to_have_text(
        "My sister Ingrid lives in Tromsø and keeps reindeer.")


def test_a_long_memory_is_cut_at_a_word_and_says_so(page: Page, served: Served) -> None:
    """Why? and search show the start of a long memory: cut between words, with "…", never mid-word."""
    cut = page.evaluate("""async () => {
        const { excerpt } = await import("/static/dom.js");
        const text = "open palms and open doors ".repeat(20);
        return [excerpt(text, 30), excerpt("short enough", 30), excerpt("one".repeat(20), 30)];
    }""")
    assert cut == ["open palms and open doors…", "short enough", "one" * 10 + "…"]


def test_the_new_controls_work_at_phone_width_in_the_dark_with_names(browser: Browser,
                                                                     served: Served) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 760}, color_scheme="dark")
    page = context.new_page()
    page.goto(served.url)
    page.wait_for_load_state("networkidle")
    page.click(".tab[data-panel=search]")
    expect(page.locator("#search-input")).to_be_in_viewport()
    unnamed = page.evaluate("""() => [...document.querySelectorAll('button, input, textarea, select')]
        .filter((e) => e.offsetParent !== null)
        .filter((e) => !(e.getAttribute('aria-label') || e.labels?.length || e.textContent.trim()))
        .map((e) => e.outerHTML.slice(0, 80))""")
    assert unnamed == []
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(21, 20, 18)", background  # the dark palette
    shot(page, "search-phone-dark")
    context.close()
