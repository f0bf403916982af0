"""The app factory and the OpenAI-compatible API, on a scripted fake model (fast)."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import pytest
from fastapi.testclient import TestClient

from lyra_local.errors import ModelUnavailable
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .conftest import EMBED_GGUF, require_file
from .fakes import FakeChatModel, FakeEmbedder


def sse_data(text: str) -> list[str]:
    return [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]


def test_health(client: TestClient) -> None:
    body = client.get("/health").json()
    assert body["status"] == "ok" and body["version"]


def test_models_listing(client: TestClient) -> None:
    body = client.get("/v1/models").json()
    assert body["object"] == "list" and body["data"][0]["id"] == "lyra"


def test_non_streaming_completion(client: TestClient, chat: FakeChatModel) -> None:
    chat.enqueue("Hello Ana, nice to see you.")
    resp = client.post("/v1/chat/completions", json={
        "model": "lyra", "max_tokens": 20, "temperature": 0.3,
        "messages": [{"role": "system", "content": "be kind"}, {"role": "user", "content": "hi"}]})
    assert resp.status_code == 200
    body = resp.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Hello Ana, nice to see you."}
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    messages, options = chat.history[-1]
    assert messages[-1] == {"role": "user", "content": "hi"}
    assert options is not None and options.max_tokens == 20 and options.temperature == 0.3


def test_streaming_chunks_follow_openai_format(client: TestClient, chat: FakeChatModel) -> None:
    chat.enqueue("one two three")
    resp = client.post("/v1/chat/completions", json={
        "stream": True, "messages": [{"role": "user", "content": [{"type": "text", "text": "count"}]}]})
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    data = sse_data(resp.text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == "one two three"
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert chat.history[-1][0][-1]["content"] == "count"


def test_model_down_is_reported_inside_the_stream(client: TestClient, chat: FakeChatModel) -> None:
    def broken(*args, **kwargs):
        raise ModelUnavailable("chat model server http://gpu:8080 failed 5 times", hint="start it")
        yield  # pragma: no cover

    chat.stream = broken  # type: ignore[method-assign]
    resp = client.post("/v1/chat/completions", json={"stream": True, "messages": [{"role": "user", "content": "x"}]})
    data = sse_data(resp.text)
    assert data[-1] == "[DONE]"
    error = json.loads(data[-2])["error"]
    assert "failed 5 times" in error["message"] and error["code"] == 503


def test_model_down_non_streaming_is_json_error(client: TestClient, chat: FakeChatModel) -> None:
    def broken(*args, **kwargs):
        raise ModelUnavailable("model server down", hint="start it")
        yield  # pragma: no cover

    chat.stream = broken  # type: ignore[method-assign]
    resp = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
    assert resp.status_code == 503
    error = resp.json()["error"]
    assert error["type"] == "ModelUnavailable" and "model server down" in error["message"]
    # the user's message was kept all the same
    store = client.app.state.lyra.owner_runtime().store
    assert [e.content for e in store.exchanges.history(store.sessions.find(source="openai", source_id="default").id)] == ["x"]


def test_request_without_user_message_is_rejected(client: TestClient) -> None:
    resp = client.post("/v1/chat/completions", json={"messages": [{"role": "system", "content": "x"}]})
    assert resp.status_code == 400
    assert "no user message" in resp.json()["error"]["message"]


def test_api_token_is_required_when_configured(make_settings, chat: FakeChatModel) -> None:
    settings = make_settings('[server]\napi_token = "letmein-0123456789"\n')
    app = create_app(settings, models=Models(settings, chat=chat, embed=FakeEmbedder()))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/health").status_code == 200  # liveness stays open
        assert client.get("/v1/models").status_code == 401
        assert client.get("/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/v1/models", headers={"Authorization": "Bearer letmein-0123456789"}).status_code == 200


@pytest.mark.models  # the changed chat model is loaded before it takes over
def test_reload_picks_up_a_config_change(make_settings, tmp_path, chat: FakeChatModel) -> None:
    settings = make_settings("[models.chat]\nn_ctx = 2048\n")
    config = settings.config_file
    assert config is not None
    models = Models(settings, chat=chat, embed=FakeEmbedder())
    app = create_app(settings, models=models)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        config.write_text(
            f'data_dir = "{settings.data_dir}"\nmodels_dir = "{settings.models_dir}"\n[models.chat]\nn_ctx = 1024\n')
        resp = client.post("/admin/reload")
        assert resp.status_code == 200
        state = app.state.lyra
        assert state.settings.models.chat.n_ctx == 1024
        assert state.models.chat is not chat  # a fresh registry from the new config
    assert models.wait_closed(5)  # the old registry was released (given backends stay their giver's to close)


def test_reload_with_a_broken_config_keeps_running(make_settings, chat: FakeChatModel) -> None:
    settings = make_settings()
    app = create_app(settings, models=Models(settings, chat=chat, embed=FakeEmbedder()))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        settings.config_file.write_text("[server]\nport = 'x'\n")
        resp = client.post("/admin/reload")
        assert resp.status_code == 500 and "server.port" in resp.json()["error"]["message"]
        assert app.state.lyra.models.chat is chat


def unknown_architecture(path: Path) -> Path:
    """A whole GGUF file (its header says so) of an architecture llama.cpp does not know: only loading tells."""
    writer = gguf.GGUFWriter(str(path), "no-such-architecture")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.models  # "cut" is the default embedding model's file, cut short
@pytest.mark.parametrize("broken, says", [
    ("absent", "model file not found"), ("page", "is not a GGUF model file"), ("cut", "is incomplete"),
    ("alien", "could not load"),
])
def test_a_reload_to_a_broken_model_is_refused_and_the_old_one_keeps_answering(
        make_settings, chat: FakeChatModel, tmp_path: Path, broken: str, says: str) -> None:
    settings = make_settings()
    path = tmp_path / f"{broken}.gguf"
    if broken == "page":
        path.write_text("<!DOCTYPE html><html>Not Found</html>")
    elif broken == "cut":
        with require_file(EMBED_GGUF).open("rb") as whole:
            path.write_bytes(whole.read(3_000_000))
    elif broken == "alien":
        unknown_architecture(path)
    app = create_app(settings, models=Models(settings, chat=chat, embed=FakeEmbedder()))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        settings.config_file.write_text(f'[models.chat]\npath = "{path}"\n')
        resp = client.post("/admin/reload")
        assert resp.status_code == 500, resp.text
        message = resp.json()["error"]["message"]
        assert "reload refused, still serving the running configuration" in message and says in message
        assert app.state.lyra.models.chat is chat
        reply = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "still there?"}]})
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"]


def test_recall_api_returns_hits_with_their_provenance(client: TestClient) -> None:
    memory = client.app.state.lyra.owner_runtime().memory
    session = memory.store.sessions.create("garden")
    memory.remember(session.id, "user", "The tomatoes on the balcony are ripening.")
    memory.remember(session.id, "assistant", "Lovely, which variety did you plant?")
    body = client.get("/api/recall", params={"q": "balcony tomatoes", "k": 1, "context": 1}).json()
    hit = body["hits"][0]
    assert hit["content"] == "The tomatoes on the balcony are ripening."
    assert {k: hit[k] for k in ("kind", "session_id", "role")} == {"kind": "exchange", "session_id": session.id,
                                                                  "role": "user"}
    assert hit["score"] > 0 and "bm25" in hit["stages"] and hit["created_at"]
    assert [c["content"] for c in hit["context"]] == ["Lovely, which variety did you plant?"]


def test_recall_api_validates_its_input(client: TestClient) -> None:
    assert client.get("/api/recall", params={"q": ""}).status_code == 422
    assert client.get("/api/recall", params={"q": "x", "tier": "nope"}).status_code == 422
