"""A reply cut at the length limit (marked, Continue, still marked after a reload), a stopped reply still marked
after a reload, and an imported ChatGPT reply labelled "ChatGPT" with a Why? that says it was imported: in a
real headless Chromium against a real `lyra serve` with the real tiny model. Screenshots go to
test-output/screenshots/."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from .chatgpt_export import conversation, write_export
from .conftest import Served
from .test_web_chat_features import CONFIG as FEATURES_CONFIG
from .test_web_chat_features import replied
from .test_web_ui import opened, send, shot, start
from .web_fixtures import Serving

CONFIG = FEATURES_CONFIG.replace("max_tokens = 32", "max_tokens = {max_tokens}")  # the same server, another length

pytestmark = [pytest.mark.slow, pytest.mark.models]

STORY = "Tell me a long story about a lighthouse keeper and her cat, with many details."


@pytest.fixture(scope="module")
def serving() -> Serving:
    """Replies of 8 tokens at most: a story is cut at the limit."""
    return Serving(CONFIG.format(max_tokens=8), settled=True)


def reopened(page: Page, url: str, session_id: str) -> None:
    """The page loaded afresh on conversation ``session_id``: what it shows comes from the server."""
    page.goto(f"{url}/#session={session_id}")
    page.reload()
    page.goto(f"{url}/#session={session_id}")
    expect(page.locator(f"#session-list li[data-id='{session_id}'].active")).to_have_count(1, timeout=30_000)
    page.wait_for_load_state("networkidle")


def open_session(served: Served) -> str:
    sessions = httpx.get(f"{served.url}/api/sessions").json()["sessions"]
    return str(sessions[0]["id"])


def test_a_cut_reply_is_marked_with_continue_after_a_reload_and_continue_extends_it(page: Page,
                                                                                   served: Served) -> None:
    send(page, STORY)
    replied(page, 1)
    reply = page.locator(".message.assistant").last
    expect(reply.locator(".cut-note")).to_have_text("Cut at the length limit.")
    expect(reply.get_by_role("button", name="Continue this reply")).to_be_visible()
    cut_text = reply.locator(".bubble").inner_text()
    session = open_session(served)
    history = httpx.get(f"{served.url}/api/sessions/{session}/messages").json()["messages"]
    assert history[-1]["ending"] == "length"  # stored with the reply, not remembered by the page

    reopened(page, served.url, session)
    reply = page.locator(".message.assistant").last
    expect(reply.locator(".cut-note")).to_have_text("Cut at the length limit.")
    expect(reply.locator(".bubble")).to_have_text(cut_text)
    shot(page, "cut-reply")

    reply.get_by_role("button", name="Continue this reply").click()
    replied(page, 1)  # still one reply: it grew
    grown = page.locator(".message.assistant").last
    expect(grown.locator(".pager-count")).to_have_text("2/2")
    text = grown.locator(".bubble").inner_text()
    assert text.startswith(cut_text.strip()) and len(text) > len(cut_text), (cut_text, text)
    expect(page.locator(".message.user")).to_have_count(1)  # Continue is no new turn of the person's
    shot(page, "cut-reply-continued")


def imported_session(served: Served, tmp_path: Path) -> str:
    export = write_export(tmp_path / "export.zip", [conversation("c1", "Interview prep", [
        ("user", "Hi! I'm Maya. I have an interview on 2 May for a ward manager job, can you help me prepare?"),
        ("assistant", "Of course. Start by listing three moments on the ward you are proudest of, then practise "
                      "telling each one in two minutes."),
    ])])
    job = httpx.put(f"{served.url}/api/import", params={"filename": "export.zip"},
                    content=export.read_bytes()).json()["job"]
    deadline = time.monotonic() + 60
    while httpx.get(f"{served.url}/api/import/{job}").json()["status"] == "running":
        assert time.monotonic() < deadline, "the import did not finish"
        time.sleep(0.2)
    sessions = httpx.get(f"{served.url}/api/sessions").json()["sessions"]
    return str(next(s["id"] for s in sessions if s["name"] == "Interview prep"))


def test_an_imported_reply_is_chatgpts_and_why_says_it_was_imported(page: Page, served: Served,
                                                                    tmp_path: Path) -> None:
    session = imported_session(served, tmp_path)
    reopened(page, served.url, session)
    theirs = page.locator(".message.assistant").first
    expect(theirs.locator(".who")).to_have_text("ChatGPT")
    expect(page.locator(".message.user .who").first).to_have_text("Sam")
    expect(theirs.get_by_role("button", name="Regenerate this reply")).to_have_count(0)
    theirs.get_by_role("button", name="Why?").click()
    why = theirs.locator(".why")
    expect(why).to_contain_text("Imported from ChatGPT: written there on Mon 8 May 2023.", timeout=30_000)
    expect(why).to_contain_text("It had no Lyra context")
    expect(why).not_to_contain_text("traces exist")
    shot(page, "why-imported")

    send(page, "Thanks! Which moment should I start with?")  # a reply written here is Lyra's, with a real Why?
    replied(page, 2)
    mine = page.locator(".message.assistant").last
    expect(mine.locator(".who")).to_have_text("Lyra")
    mine.get_by_role("button", name="Why?").click()
    expect(mine.locator(".why")).to_contain_text("tokens of context", timeout=30_000)
    expect(mine.locator(".why")).not_to_contain_text("RECALLED")


@pytest.fixture
def chatty(tmp_path: Path) -> Iterator[Served]:
    """Long replies (up to 400 tokens), so there is time to stop one."""
    yield from start(tmp_path, CONFIG.format(max_tokens=400))


def test_a_stopped_reply_is_still_marked_after_a_reload(browser: Browser, chatty: Served) -> None:
    with opened(browser, chatty.url, settled=True) as page:
        send(page, STORY)
        expect(page.locator(".message.assistant.streaming .bubble")).not_to_have_text("", timeout=60_000)
        page.locator("#stop").click()
        # once the server has stored the stopped reply, the page shows it as stored, still marked
        expect(page.get_by_role("button", name="Regenerate this reply")).to_be_visible(timeout=20_000)
        expect(page.locator(".message.assistant .cut-note")).to_have_text("Stopped before the end.")
        session = open_session(chatty)
        reopened(page, chatty.url, session)
        reply = page.locator(".message.assistant").last
        expect(reply.locator(".cut-note")).to_have_text("Stopped before the end.")
        expect(reply.get_by_role("button", name="Continue this reply")).to_be_visible()
        shot(page, "stopped-after-reload")
