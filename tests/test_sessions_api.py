"""Sessions, streamed turns and context traces through the HTTP API, on the scripted fake model."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from lyra_local.errors import ModelUnavailable

from .fakes import FakeChatModel
from .sse import sse_events
from .web_fixtures import SAM, AppParts


@pytest.fixture
def app_parts() -> AppParts:
    return AppParts(SAM, FakeChatModel(n_ctx=2048))


def events(text: str) -> list[tuple[str, dict]]:
    return sse_events(text.splitlines())


def test_session_lifecycle(client: TestClient) -> None:
    first = client.post("/api/sessions", json={"name": "Garden"}).json()
    second = client.post("/api/sessions", json={}).json()
    assert second["name"] == "New chat"
    listed = [s["id"] for s in client.get("/api/sessions").json()["sessions"]]
    assert listed == [second["id"], first["id"]]  # newest first
    assert client.patch(f"/api/sessions/{first['id']}", json={"name": "Balcony garden"}).json()["name"] == \
        "Balcony garden"
    assert client.patch(f"/api/sessions/{first['id']}", json={"name": ""}).status_code == 422
    assert client.delete(f"/api/sessions/{second['id']}").status_code == 200
    assert [s["id"] for s in client.get("/api/sessions").json()["sessions"]] == [first["id"]]
    missing = client.get(f"/api/sessions/{second['id']}/messages")
    assert missing.status_code == 404 and "no session" in missing.json()["error"]["message"]


def test_a_streamed_turn_stores_both_messages_and_a_trace(client: TestClient, chat: FakeChatModel) -> None:
    session = client.post("/api/sessions", json={"name": "chat"}).json()
    chat.enqueue("Hello Sam, how are the tomatoes?")
    resp = client.post(f"/api/sessions/{session['id']}/chat", json={"message": "Hi there!"})
    got = events(resp.text)
    kinds = [k for k, _ in got]
    assert kinds[0] == "stored" and kinds[-1] == "done" and kinds.count("delta") == 6
    assert "".join(d["text"] for k, d in got if k == "delta") == "Hello Sam, how are the tomatoes?"
    history = client.get(f"/api/sessions/{session['id']}/messages").json()["messages"]
    assert [(m["role"], m["content"]) for m in history] == [("user", "Hi there!"),
                                                           ("assistant", "Hello Sam, how are the tomatoes?")]
    reply_id = got[-1][1]["exchange_id"]
    assert reply_id == history[1]["id"]
    trace = client.get(f"/api/exchanges/{reply_id}/trace").json()
    assert trace["context_tokens"] > 0 and isinstance(trace["memories"], list)
    prompt = chat.history[-1][0]
    assert prompt[0]["role"] == "system" and "Sam" in prompt[0]["content"]
    assert prompt[-1] == {"role": "user", "content": "Hi there!"}


def test_a_fact_from_another_session_is_in_the_trace(client: TestClient, chat: FakeChatModel) -> None:
    garden = client.post("/api/sessions", json={"name": "garden"}).json()
    client.post(f"/api/sessions/{garden['id']}/chat", json={"message": "My cat Miso loves sleeping on the balcony"})
    other = client.post("/api/sessions", json={"name": "later"}).json()
    got = events(client.post(f"/api/sessions/{other['id']}/chat", json={"message": "What does Miso love?"}).text)
    trace = client.get(f"/api/exchanges/{got[-1][1]['exchange_id']}/trace").json()
    recalled = [m for m in trace["memories"] if m["layer"] == "recalled"]
    assert any("Miso loves sleeping" in m["content"] for m in recalled)
    assert all({"kind", "id", "score", "stage"} <= set(m) for m in recalled)


def test_model_down_reports_in_the_stream_and_keeps_the_message(client: TestClient, chat) -> None:
    def broken(*args, **kwargs):
        raise ModelUnavailable("chat model server failed 5 times", hint="start it")
        yield  # pragma: no cover

    chat.stream = broken  # type: ignore[method-assign]
    session = client.post("/api/sessions", json={"name": "x"}).json()
    got = events(client.post(f"/api/sessions/{session['id']}/chat", json={"message": "are you there?"}).text)
    assert [k for k, _ in got] == ["stored", "error", "done"]
    assert "failed 5 times" in got[1][1]["text"] and got[1][1]["status"] == 503
    history = client.get(f"/api/sessions/{session['id']}/messages").json()["messages"]
    assert [m["content"] for m in history] == ["are you there?"]


def test_an_over_long_message_is_stored_whole_and_cut_for_the_model(client: TestClient, chat) -> None:
    session = client.post("/api/sessions", json={"name": "x"}).json()
    long = "word " * 5000
    got = events(client.post(f"/api/sessions/{session['id']}/chat", json={"message": long}).text)
    assert "notice" in [k for k, _ in got]
    assert len(chat.history[-1][0][-1]["content"].split()) < 2048
    stored = client.get(f"/api/sessions/{session['id']}/messages").json()["messages"][0]["content"]
    assert stored == long


def test_openai_route_keeps_memory_per_session(client: TestClient, chat: FakeChatModel) -> None:
    chat.enqueue("Noted!", "Your cat is Miso.")
    client.post("/v1/chat/completions", headers={"X-Lyra-Session": "phone"},
                json={"messages": [{"role": "user", "content": "My cat is called Miso"}]})
    client.post("/v1/chat/completions", json={"user": "phone",
                                              "messages": [{"role": "user", "content": "What is my cat called?"}]})
    sessions = client.get("/api/sessions").json()["sessions"]
    assert [s["name"] for s in sessions] == ["phone"]
    prompt = chat.history[-1][0]
    assert any("My cat is called Miso" in m["content"] for m in prompt[:-1])  # the earlier turn is in context
