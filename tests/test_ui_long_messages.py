"""A message of 150,000 lines opens in the web UI, in a real headless Chromium against a real `lyra serve`.

The page showed a person's message by spreading every line into one
``replaceChildren(...)`` call, which throws ``RangeError: Maximum call stack
size exceeded`` at about 100,000 arguments; the server accepts 200,000
characters, so such a message made its conversation open empty, with only an
error. The lines are appended one by one now, as is every list from the server.
"""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from .conftest import Served

pytestmark = [pytest.mark.slow, pytest.mark.models]

LINES = 150_000
MESSAGE = "the first line" + "\n" * LINES + "the last line"


def test_a_message_of_150000_lines_opens_with_its_conversation(page: Page, served: Served) -> None:
    session = httpx.post(f"{served.url}/api/sessions", json={"name": "Long lines"}, timeout=30).json()
    turn = httpx.post(f"{served.url}/api/sessions/{session['id']}/chat", json={"message": MESSAGE}, timeout=300)
    assert turn.status_code == 200 and "event: done" in turn.text, turn.text[-2000:]
    stored = httpx.get(f"{served.url}/api/sessions/{session['id']}/messages", timeout=30).json()["messages"]
    assert [m["content"] for m in stored if m["role"] == "user"] == [MESSAGE]

    page.reload()  # the session list now has it
    page.click(f"#session-list li[data-id='{session['id']}'] .session-name")
    page.wait_for_function(  # the message shown, or the error that replaced it
        "document.querySelector('.message.user .bubble') || !document.getElementById('error').hidden", timeout=60_000)
    assert page.locator("#error").is_hidden(), page.locator("#error").inner_text()
    bubble = page.locator(".message.user .bubble")
    expect(bubble).to_have_count(1)
    shown = bubble.evaluate("(b) => ({ breaks: b.querySelectorAll('br').length, text: b.textContent })")
    assert shown["breaks"] == LINES
    assert shown["text"] == "the first line" + "the last line"
    expect(page.locator(".message.assistant .bubble")).to_have_count(1)
    assert page.errors == []  # type: ignore[attr-defined]
