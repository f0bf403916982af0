"""A client that hangs up mid-stream and at once sends its next request keeps both replies.

Generation stops after the token in flight once the server notices the hang-up,
and the partial reply is stored then; were the next request, in the same session,
to store its message first, the partial reply would answer a message that
no longer ended the conversation and be refused (lost), and
tests/test_cli.py::test_client_disconnect_stops_generation would fail about one run
in three on the real model. Here the first reply's second word waits until the
second request has had time to store its message, so the order is forced.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
import pytest

from lyra_local.config import Settings
from lyra_local.llm.base import ChatDelta, GenerationOptions, Message
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder
from .threaded_server import serve_in_thread


class GatedChat(FakeChatModel):
    """The first reply streams its first word, then waits for ``gate`` before the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.first = True

    def stream(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Iterator[ChatDelta]:
        gated, self.first = self.first, False
        for i, delta in enumerate(super().stream(messages, options)):
            if gated and i == 1:
                assert self.gate.wait(20), "the test never opened the gate"
            yield delta


def messages(client: httpx.Client) -> list[tuple[str, str]]:
    sessions = client.get("/api/sessions").json()["sessions"]
    if not sessions:
        return []
    found = client.get(f"/api/sessions/{sessions[0]['id']}/messages").json()["messages"]
    return [(m["role"], m["content"]) for m in found]


@pytest.mark.slow
def test_a_hang_up_then_a_new_request_keeps_the_partial_reply(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    chat = GatedChat()
    chat.enqueue("a long essay about the sea", "short answer")
    app = create_app(settings, models=Models(settings, chat=chat, embed=FakeEmbedder()))
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        with client.stream("POST", "/v1/chat/completions", json={
                "stream": True, "messages": [{"role": "user", "content": "Write a long essay."}]}) as streamed:
            for line in streamed.iter_lines():
                if '"content": "a"' in line:
                    break  # the first word came: hang up while the rest waits at the gate
        answer: dict[str, Any] = {}
        second = threading.Thread(target=lambda: answer.update(httpx.post(f"{url}/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "hi"}]}, timeout=30).json()))
        second.start()
        deadline = time.monotonic() + 1.5  # the time "hi" had to come first (as it did before the fix)
        while time.monotonic() < deadline and ("user", "hi") not in messages(client):
            time.sleep(0.05)
        chat.gate.set()
        second.join(30)
        assert answer["choices"][0]["message"]["content"] == "short answer", answer
        stored = messages(client)
        assert [m for m in stored if m[0] == "user"] == [("user", "Write a long essay."), ("user", "hi")]
        assert [role for role, _ in stored] == ["user", "assistant", "user", "assistant"], stored
        assert stored[1][1].startswith("a") and stored[3] == ("assistant", "short answer")
