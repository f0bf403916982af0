"""What Lyra shows about a person is true and in the right mouth, with the real default models.

A new user's first hour: a fresh ``lyra serve`` with no name configured, Maya's ChatGPT export (four
conversations, ``tests/maya_export.py``) uploaded through the page's import, one forced dream, and the Memory
panel read as she would read it. With the 135M demo model the dream's drafts fail their checks, so what is
shown is what can be known without a capable model: the facts she states about herself, summaries edited from
her own sentences, ChatGPT's answers credited to ChatGPT. The screenshots (test-output/screenshots/maya-*.png)
are the "after" of docs/benchmarks.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, expect

from . import maya_export
from .conftest import Served
from .served_web import dream, import_file
from .test_web_ui import CONFIG, shot, start

pytestmark = [pytest.mark.slow, pytest.mark.models]
DREAM_S = 900
CHAIN = re.compile(r"said, [“\"].*said, [“\"]", re.S)  # `X said, "…" Y said, "…"`: a transcript, not a summary


@pytest.fixture(scope="module")
def maya(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("maya")
    for served in start(tmp, CONFIG.replace('user_name = "Sam"\n', "")):  # a new user: no name configured
        import_file(served, maya_export.write(tmp / "chatgpt-export.zip"))
        print(f"\nthe forced dream over Maya's four conversations took {dream(served, DREAM_S):.0f} s")
        yield served


def get(served: Served, path: str) -> Any:
    response = httpx.get(f"{served.url}{path}", timeout=30)
    response.raise_for_status()
    return response.json()


def summaries(served: Served) -> list[str]:
    """Every gist, digest and the arc the dream wrote."""
    gists = [get(served, f"/api/sessions/{s['id']}/gist")["gist"] for s in get(served, "/api/sessions")["sessions"]]
    texts = [g["content"] for g in gists if g]
    texts += [d["content"] for d in get(served, "/api/digests")["digests"]]
    narrative = get(served, "/api/narrative")["narrative"]
    return texts + ([narrative] if narrative else [])


def test_about_you_holds_what_maya_said_of_herself_and_nothing_false(maya: Served) -> None:
    facts = [(f["key"], " ".join(f["value"].casefold().split())) for f in get(maya, "/api/profile")["facts"]]
    print("About you:", facts)
    false = [(k, v) for k, v in facts if not maya_export.is_true(k, v)]
    assert false == [], f"false facts: {false}"
    held = {name for name, pattern in maya_export.PLANTED.items() if any(pattern.search(v) for _, v in facts)}
    # The 135M model's proposals are refused (their quotes are not hers), so what is held is the parse floor's:
    # her name, her sister and her habit. The lexicon floor this replaced held 5 of 7 here, from lists written for
    # these very sentences, and 0 of 14 on conversations kept from the project; the grammar floor holds less and
    # no lie.
    assert {"name", "sister", "hobby"} <= held, f"only {sorted(held)} of the seven planted facts: {facts}"


def test_no_summary_credits_chatgpt_to_lyra_or_reads_as_a_transcript(maya: Served) -> None:
    texts = summaries(maya)
    assert texts, "the dream wrote no summary"
    for text in texts:
        print("summary:", text)
        assert "Lyra" not in text, text  # Lyra never spoke in these conversations: ChatGPT did
        assert not CHAIN.search(text), text


def test_lyras_own_voice_never_copies_mayas_words(maya: Served) -> None:
    state = get(maya, "/api/self")["self_state"] or {}
    mine = [state.get("self_narrative") or "", *(state.get("reflections") or [])]
    print("How I am:", mine)
    for text in mine:
        assert maya_export.copied_runs(text, maya_export.HER_WORDS) == [], text


def test_the_memory_panel_shows_each_text_once(browser: Browser, maya: Served) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.goto(maya.url)
    page.wait_for_load_state("networkidle")
    page.click(".tab[data-panel=memory]")
    page.wait_for_load_state("networkidle")
    expect(page.locator("#timeline details").first).to_be_visible()
    page.evaluate("document.querySelectorAll('#timeline details').forEach(d => { d.open = true; })")
    page.wait_for_load_state("networkidle")
    shot(page, "maya-memory-panel")
    page.locator("#timeline").scroll_into_view_if_needed()
    shot(page, "maya-timeline")
    texts = [" ".join(t.split()) for t in page.locator("#timeline .memory-item p").all_inner_texts()]
    assert texts and len(texts) == len(set(texts)), texts
    labels = page.locator("#timeline summary").all_inner_texts()
    assert [label.split(" · ")[1].split(" in ")[0] for label in labels] == ["2 days", "2 days"], labels  # as talked
    page.close()


def test_a_reader_sees_her_facts_her_words_quoted_and_her_job_found_by_a_question(
        browser: Browser, maya: Served) -> None:
    """As a reader would check it: About you holds what she said of herself (and only that), every
    summary is her or ChatGPT's words quoted under their name and day, and "what is my job?" finds the turn that
    says it, though the question shares no word with it."""
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.goto(maya.url)
    page.wait_for_load_state("networkidle")
    page.click(".tab[data-panel=memory]")
    page.wait_for_load_state("networkidle")
    profile = page.locator("#profile")
    expect(profile).to_contain_text("Maya")
    shot(page, "maya-about-you")
    for text in summaries(maya):
        assert "replied that" not in text and "mentioned that" not in text, text  # no reported speech by rules
    page.click(".tab[data-panel=search]")
    page.fill("#search-input", "what is my job?")
    page.press("#search-input", "Enter")
    found = page.locator("#search-results li[data-tier=exchange]").filter(has_text="as a nurse")
    expect(found.first).to_be_visible(timeout=30_000)
    expect(found.first.locator(".badge.who")).to_have_text("You")  # who said it: her, as the chat calls her
    shot(page, "maya-search-what-is-my-job")
    page.fill("#search-input", "greyhound coat rain")
    page.press("#search-input", "Enter")
    reply = page.locator("#search-results li[data-tier=exchange]").filter(has_text="fleece-lined coat")
    expect(reply.first.locator(".badge.who")).to_have_text("ChatGPT")  # an imported reply is ChatGPT's, not Lyra's
    page.close()
