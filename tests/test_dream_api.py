"""The dream cycle through the HTTP API: dream now, status, the live log (SSE), the profile the user edits."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.llm.local import LocalEmbedder
from lyra_local.llm.registry import Models
from lyra_local.mind import Dreamer
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session, respond
from .web_fixtures import SAM, AppParts


@pytest.fixture
def app_parts(embedder: LocalEmbedder) -> AppParts:
    """The scripted chat model and the real embedder: the profile's gate fits keys by meaning."""
    return AppParts(SAM, FakeChatModel(respond=respond), embedder)


def wait_for_pass(client: TestClient, timeout: float = 20.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = client.get("/api/dream/events", params={"follow": "false"}).json()["events"]
        if any(e["kind"] == "pass.end" for e in events):
            return events
        time.sleep(0.1)
    raise AssertionError("the dream pass did not finish")


def test_dream_now_then_status_and_the_consolidated_memory(client: TestClient) -> None:
    store = client.app.state.lyra.owner_runtime().store  # type: ignore[attr-defined]
    sid = add_session(store, "home", "2024-01-10", ["I live in Berlin with my cat Miso", "Lovely"])
    before = client.get("/api/dream").json()
    assert before["backlog"]["sessions_pending"] == 1 and before["drives"]["continuity"] > 0
    assert before["last_pass"] is None
    # one reading of the drives: the Memory panel's (/api/self) is the Dream panel's, even before any pass
    assert client.get("/api/self").json()["drives"] == before["drives"]

    assert client.post("/api/dream").json()["started"] is True
    events = wait_for_pass(client)
    assert [e["kind"] for e in events][0] == "pass.start" and "gist" in [e["kind"] for e in events]

    status = client.get("/api/dream").json()
    assert status["last_pass"]["status"] == "done" and status["drives"]["stability"] == 1
    assert status["backlog"]["sessions_pending"] == 0 and status["running"] is False
    assert "Berlin" in client.get(f"/api/sessions/{sid}/gist").json()["gist"]["content"]
    assert {f["key"] for f in client.get("/api/profile").json()["facts"]} == {"home city", "pet"}
    assert {d["granularity"] for d in client.get("/api/digests").json()["digests"]} == {"day", "week", "month"}
    assert client.get("/api/narrative").json()["narrative"]
    me = client.get("/api/self").json()
    assert me["self_state"]["mood"] == "content" and me["drives"]["stability"] == 1


def test_the_live_log_streams_over_sse(client: TestClient) -> None:
    store = client.app.state.lyra.owner_runtime().store  # type: ignore[attr-defined]
    add_session(store, "home", "2024-01-10", ["I live in Berlin", "Nice"])
    client.post("/api/dream")
    kinds = []
    with client.stream("GET", "/api/dream/events") as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("data: "):
                kinds.append(json.loads(line[6:])["kind"])
                if kinds[-1] == "pass.end":
                    break
    assert kinds[0] == "pass.start" and "gist" in kinds and kinds[-1] == "pass.end"


def test_the_user_corrects_the_profile_and_the_history_keeps_every_value(client: TestClient) -> None:
    assert client.put("/api/profile", json={"key": "Home City", "value": "Berlin"}).json()["author"] == "user"
    client.put("/api/profile", json={"key": "home_city", "value": "Lisbon"})
    client.put("/api/profile", json={"key": "pet", "value": "a cat"})
    assert [(f["key"], f["value"]) for f in client.get("/api/profile").json()["facts"]] == [
        ("home city", "Lisbon"), ("pet", "a cat")]
    history = client.get("/api/profile/history", params={"key": "home city"}).json()["history"]
    assert [h["value"] for h in history] == ["Berlin", "Lisbon"] and history[0]["superseded_by"] == history[1]["id"]
    assert client.delete("/api/profile/pet").json()["retired"] == 1
    assert [f["key"] for f in client.get("/api/profile").json()["facts"]] == ["home city"]
    assert client.put("/api/profile", json={"key": "!!", "value": "x"}).status_code == 400


def test_the_scheduler_dreams_on_its_own_when_nobody_talks(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings('[dream]\nenabled = true\ninterval_s = 5\nidle_s = 0\nsession_idle_s = 0\n',
                             LYRA_DREAM__ENABLED="true")
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(respond=respond), embed=FakeEmbedder()))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        sid = add_session(app.state.lyra.owner_runtime().store, "home", "2024-01-10", ["I live in Berlin", "Nice"])
        events = wait_for_pass(client, timeout=30)
        assert events[0]["detail"]["forced"] is False
        assert client.get(f"/api/sessions/{sid}/gist").json()["gist"] is not None


def test_a_scheduled_pass_waits_while_someone_is_chatting(make_settings: Callable[..., Settings]) -> None:
    from lyra_local.mind.dream.scheduler import DreamScheduler

    made: list[object] = []

    def make(person: str, stop: object) -> Dreamer:
        made.append(stop)
        raise RuntimeError("no models in this test: counting the passes that start is enough")

    settings = make_settings('[dream]\nidle_s = 60\n').dream
    last_chat = [time.monotonic()]
    scheduler = DreamScheduler(make, settings, lambda: last_chat[0], lambda: {"sam": 3})
    scheduler.tick()
    assert made == []  # a turn a moment ago: no pass
    last_chat[0] = time.monotonic() - 61
    scheduler.tick()
    assert len(made) == 1  # quiet for longer than idle_s: a pass was started
    now = datetime.now()
    window = f"{(now - timedelta(hours=1)):%H:%M}-{(now + timedelta(hours=1)):%H:%M}"
    DreamScheduler(make, settings.model_copy(update={"quiet_hours": window, "idle_s": 0}), lambda: None,
                   lambda: {"sam": 3}).tick()
    assert len(made) == 1  # quiet hours: no pass
