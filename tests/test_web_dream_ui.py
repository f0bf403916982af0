"""The Dream panel in a real headless Chromium, against the real app served by uvicorn on scripted fake models
(each summary takes a moment, so the pass can be watched): the log reads in sentences with the conversations'
titles and no developer jargon, progress counts conversations ("1 of 3 conversations"), a reflection that
copied the person is said to be kept, and the drives and the raw log wait under Advanced."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence

import pytest
from playwright.sync_api import Browser, expect

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session, respond
from .test_web_ui import shot
from .threaded_server import serve_in_thread

pytestmark = [pytest.mark.slow]
MOVING = "I'm thinking of moving from Leeds to Edinburgh in September"
JARGON = ("session:", ".rejected", "gist", "digest", "reflected:", "{")


def slow_and_copying(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """test_dream's stand-in model, a second per summary, whose reflection copies the person's sentence."""
    if options is not None and options.json_schema is not None and "your mood" in messages[-1]["content"]:
        return json.dumps({"mood": "curious", "energy": 0.6, "self_narrative": MOVING, "reflections": []})
    if "Summarize it" in messages[-1]["content"]:
        time.sleep(1.0)
    return respond(messages, options)


def test_the_dream_panel_says_what_it_did_in_sentences(browser: Browser,
                                                       make_settings: Callable[..., Settings]) -> None:
    settings = make_settings('[companion]\nuser_name = "Sam"\n[dream]\nenabled = false\nsession_idle_s = 0\n')
    models = Models(settings, chat=FakeChatModel(respond=slow_and_copying), embed=FakeEmbedder())  # type: ignore[arg-type]
    app = create_app(settings, models=models)
    with serve_in_thread(app) as url:
        store = app.state.lyra.owner_runtime().store
        add_session(store, "Interview prep", "2024-03-01", ["I have an interview on 2 May", "Good luck!"])
        add_session(store, "Biscuit", "2024-03-02", ["we adopted a rescue greyhound called Biscuit", "Lovely!"])
        add_session(store, "Moving north", "2024-03-03", [MOVING, "Edinburgh is lovely."])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        page.click(".tab[data-panel=dream]")
        expect(page.locator("#backlog")).to_contain_text("Conversations waiting to be summarised")
        expect(page.locator("#dream-drives .gauge")).to_have_count(4)
        expect(page.locator("#dream-drives")).to_be_hidden()  # under Advanced, closed
        page.click("#dream-now")
        status = page.locator("#dream-progress-text")
        expect(status).to_have_text(re.compile(r"Summarising: [12] of 3 conversations"), timeout=20_000)
        shot(page, "dream-progress")
        log = page.locator("#dream-log")
        expect(log).to_contain_text("Finished:", timeout=60_000)
        expect(status).to_have_text("Summarised 3 of 3 conversations.")
        expect(log).to_contain_text("Started dreaming because you asked: 3 conversations to summarise.")
        expect(log).to_contain_text("Summarised ‘Interview prep’ (1 of 3 conversations).")
        expect(log).to_contain_text("Summarised ‘Moving north’ (3 of 3 conversations).")
        # the first reflection was refused, and there was none before it: nothing was "kept"
        expect(log).to_contain_text("Wrote no reflection yet: the model's draft copied your words.")
        expect(log).not_to_contain_text("Kept the last reflection")
        expect(page.locator("#last-pass")).to_contain_text("summarised 3 conversations")
        day = page.evaluate("LyraDates.dayLabel(new Date().toISOString())")  # the page's one date format
        expect(page.locator("#last-pass")).to_contain_text(f"Last dreamt {day}, ")
        expect(page.locator("#last-pass")).not_to_contain_text(re.compile(r"\d+/\d+/\d{4}"))  # no US date
        expect(log).to_contain_text("Reflected on my mood; the rest of how I am stays as it was.")
        text = log.inner_text()
        for jargon in JARGON:
            assert jargon not in text, jargon
        page.click("#dream-advanced > summary")
        expect(page.locator("#dream-drives")).to_be_visible()
        expect(page.locator("#dream-drives-meaning")).to_contain_text("Conversations waiting to be summarised.")
        expect(page.locator("#dream-raw")).to_contain_text("gist session:")  # kept for developers
        shot(page, "dream-sentences")
        page.click(".tab[data-panel=memory]")  # How I am: never her sentence as Lyra's
        expect(page.locator("#self-mood")).not_to_have_text("I have not reflected yet.")
        assert MOVING not in page.locator("section[aria-labelledby=h-self]").inner_text()
        page.close()
        assert errors == []
