"""Two people's conversations on the OpenAI route never wait on each other's turn lock: each
person's first conversation is id 1 in their own store, so the lock is keyed by (person, conversation).

The real app served by uvicorn on a scripted chat model that holds Ada's turn until the test lets it go.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import httpx

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder
from .threaded_server import serve_in_thread

WAIT_S = 30.0  # how long the test waits for what must happen at once (it fails, never sleeps, past this)


def test_one_persons_turn_does_not_hold_another_persons_conversation_of_the_same_id(
        make_settings: Callable[..., Settings]) -> None:
    entered, release = threading.Event(), threading.Event()

    def respond(messages: Sequence[Message], options: GenerationOptions | None) -> str:
        if "ada-holds-on" in messages[-1]["content"]:
            entered.set()
            release.wait(WAIT_S)
        return "noted"

    settings = make_settings('[companion]\nuser_name = "Ada"\n[dream]\nenabled = false\n')
    models = Models(settings, chat=FakeChatModel(respond=respond), embed=FakeEmbedder())  # type: ignore[arg-type]
    with serve_in_thread(create_app(settings, models=models)) as url, \
            httpx.Client(base_url=url, timeout=WAIT_S * 2) as ada, httpx.Client(base_url=url, timeout=WAIT_S) as ben:
        assert ada.put("/api/me/secret", json={"secret": "ada-password-1"}).status_code == 200
        assert ada.post("/api/people", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        assert ben.post("/api/auth/login", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200

        def chat(client: httpx.Client, text: str) -> None:
            client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": text}]})

        adas = threading.Thread(target=chat, args=(ada, "ada-holds-on"))
        adas.start()
        try:
            assert entered.wait(WAIT_S), "Ada's turn never reached the model"
            bens = threading.Thread(target=chat, args=(ben, "ben-was-not-kept-waiting"), daemon=True)
            bens.start()
            stored: list[str] = []
            deadline = time.monotonic() + WAIT_S
            while not stored and time.monotonic() < deadline:  # Ben's message is stored while Ada's turn runs
                sessions = ben.get("/api/sessions").json()["sessions"]
                if sessions:
                    assert sessions[0]["id"] == ada.get("/api/sessions").json()["sessions"][0]["id"]  # both id 1
                    messages = ben.get(f"/api/sessions/{sessions[0]['id']}/messages").json()["messages"]
                    stored = [m["content"] for m in messages if m["role"] == "user"]
                time.sleep(0.05)
            assert stored == ["ben-was-not-kept-waiting"]
        finally:
            release.set()
            adas.join(WAIT_S)
