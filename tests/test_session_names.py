"""A conversation's name can never make creating or renaming it fail: a first message with an emoji at
UTF-16 offset 47 is sent from the UI.

The UI names a new conversation after the first 48 characters of its first
message; it cut by UTF-16 code units, so 47 ASCII characters and an emoji gave
a name ending in half a surrogate pair, ``POST /api/sessions`` answered 422 and
the message was lost. Now the UI cuts by grapheme (``clip`` in dom.js), and the
server makes a name storable as it does a chat message (a lone surrogate
becomes U+FFFD), so neither side alone can lose the message.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from lyra_local.config import Settings

from .conftest import Served, fake_client
from .test_web_chat_features import CONFIG, replied
from .test_web_ui import send
from .web_fixtures import Serving

FIRST = "a" * 47 + "\U0001f600"  # the emoji's first UTF-16 unit is the 48th


def posted(client: Any, method: str, url: str, name: bytes) -> httpx.Response:
    """A JSON body whose name is ``name`` as written: ``\\ud83d`` is the escape of half a surrogate pair."""
    return client.request(method, url, content=b'{"name": "' + name + b'"}',  # type: ignore[no-any-return]
                          headers={"content-type": "application/json"})


def test_a_name_with_a_lone_surrogate_creates_and_renames_a_session(make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings()) as client:
        created = posted(client, "POST", "/api/sessions", b"a" * 47 + b"\\ud83d")  # what the UI sent
        assert created.status_code == 201, created.text
        assert created.json()["name"] == "a" * 47 + "\ufffd"
        renamed = posted(client, "PATCH", f"/api/sessions/{created.json()['id']}", b"garden \\ude00")
        assert renamed.status_code == 200, renamed.text
        assert [s["name"] for s in client.get("/api/sessions").json()["sessions"]] == ["garden \ufffd"]


@pytest.fixture(scope="module")
def serving() -> Serving:
    return Serving(CONFIG, settled=True)  # a server of its own, with no conversation yet: the UI names one


@pytest.mark.slow
@pytest.mark.models
def test_a_first_message_with_an_emoji_at_offset_47_creates_its_conversation(page: Page, served: Served) -> None:
    assert httpx.get(f"{served.url}/api/sessions").json()["sessions"] == []
    send(page, FIRST)
    deadline = time.monotonic() + 60  # the message is stored, or the page says why not
    while not (page.locator("#error").is_visible() or httpx.get(f"{served.url}/api/sessions").json()["sessions"]):
        assert time.monotonic() < deadline, "neither a conversation nor an error after 60 s"
        time.sleep(0.1)
    expect(page.locator("#error")).to_be_hidden()
    replied(page, 1)
    [session] = httpx.get(f"{served.url}/api/sessions").json()["sessions"]
    assert session["name"] == FIRST  # 48 characters as a person counts them: the whole message
    messages = httpx.get(f"{served.url}/api/sessions/{session['id']}/messages").json()["messages"]
    assert messages[0]["content"] == FIRST
    expect(page.locator(".message.user .bubble").first).to_have_text(FIRST)
    expect(page.locator("#session-list li")).to_have_count(1)
