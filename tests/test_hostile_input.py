"""No user text breaks a turn: chat, the OpenAI route, recall and MCP on any text.

Property-based (hypothesis) against the real app — store, recall, routes,
streams — on the scripted fake models, so hundreds of turns take seconds. The
texts mix dates that overflow a calendar ("Rome, 2000 years ago"), huge numbers,
any Unicode, control characters, NUL and lone surrogates (which JSON allows).
A turn must stream to ``done``, the user's message must be stored, and recall
must answer 200. Where something does fail (a model that raises what no one
foresaw), the request gets a clear JSON error or an ``error`` event and the
server goes on. The same cases run against a real ``lyra serve`` with the real
tiny model in tests/test_hostile_real.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.fastmcp.exceptions import ToolError

from lyra_local.cli.chat import _reply
from lyra_local.companion import Companion
from lyra_local.config import Settings, load_settings
from lyra_local.coord import Coordinator
from lyra_local.llm.base import ChatDelta, GenerationOptions, Message, Vectors
from lyra_local.llm.registry import Models
from lyra_local.mcp_server import build_server
from lyra_local.memory import Memory
from lyra_local.store import Store
from lyra_local.textsafe import well_formed
from lyra_local.web import create_app

from .conftest import MODELS_DIR, fake_client
from .fakes import FakeChatModel, FakeEmbedder
from .sse import sse_events

DATES = ["Rome, 2000 years ago", "march 0000", "December 9999", "dec 10000", "in 1900", "last winter",
         "yesterday", "99999999999999999999 days ago", "5000 years ago", "a few weeks ago"]
ODD = ["\x00", "\ud800", "\udfff", "\ud83d", "\x1b[31m", "\u202e", "\ufeff", "\r\n", "\t", "\x7f", "\u0085",
       "\u2028", "👩‍👩‍👧", "NEAR(", '"', "*", "AND", "OR NOT", "^", "-", "col:", "%", "_", "\\", "'", "[", "](",
       "<script>", "{}", "\U0010ffff"]
PIECES = st.one_of(
    st.sampled_from(DATES + ODD),
    st.integers(-10**40, 10**40).map(str),
    st.floats().map(str),
    st.integers(0xD800, 0xDFFF).map(chr),  # lone surrogates: hypothesis's text() never makes them
    st.text(max_size=20),
)
TEXT = st.lists(PIECES, min_size=1, max_size=10).map(" ".join).filter(bool)
BIG = ["x" * 200_000, "[" * 200_000, "Rome, 2000 years ago " * 9_000, "\x00" * 200_000, "😀" * 200_000,
       "\ud800" * 200_000, ("9" * 4_000 + " days ago ") * 40, "march 0000 " * 18_000]


def post_json(client: TestClient, url: str, payload: Any) -> Any:
    """JSON as a client may send it: ``ensure_ascii`` escapes a lone surrogate as ``\\ud800``."""
    return client.post(url, content=json.dumps(payload).encode(), headers={"content-type": "application/json"})


def isolated_settings(tmp: Path) -> Settings:
    (tmp / "lyra.toml").write_text("")
    return load_settings(tmp / "lyra.toml", env={"LYRA_DATA_DIR": str(tmp / "data"),
                                                 "LYRA_MODELS_DIR": str(MODELS_DIR), "LYRA_DREAM__ENABLED": "false"})


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for all examples: the memory grows with every hostile turn, as a real one would."""
    with fake_client(isolated_settings(tmp_path_factory.mktemp("hostile"))) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def session_id(client: TestClient) -> int:
    return int(client.post("/api/sessions", json={"name": "hostile"}).json()["id"])


def store_of(client: TestClient) -> Store:
    return client.app.state.lyra.owner_runtime().store  # type: ignore[attr-defined,no-any-return]


def assert_turn_completes(client: TestClient, session: int, text: str) -> list[tuple[str, dict[str, Any]]]:
    resp = post_json(client, f"/api/sessions/{session}/chat", {"message": text})
    assert resp.status_code == 200, resp.text[:500]
    got = sse_events(resp.text.splitlines())
    kinds = [k for k, _ in got]
    assert kinds[0] == "stored" and kinds[-1] == "done" and "error" not in kinds, got[-3:]
    stored = store_of(client).exchanges.get(got[0][1]["exchange_id"])
    assert stored is not None and stored.role == "user" and stored.content == well_formed(text)
    assert got[-1][1]["exchange_id"] is not None  # the reply is stored too
    return got


def assert_recall_answers(client: TestClient, q: str, **params: Any) -> None:
    resp = client.get("/api/recall", params={"q": well_formed(q)[:4000], **params})
    if resp.status_code == 400:  # a bound that is not a time is refused, naming it
        message = resp.json()["error"]["message"]
        assert message.startswith(("since", "until")) and {"since", "until"} & params.keys(), message
        return
    assert resp.status_code == 200, resp.text[:500]
    assert isinstance(resp.json()["hits"], list)


# -- chat, recall and the OpenAI route on any text ----------------------------------------------

@settings(max_examples=80)
@given(text=TEXT)
def test_any_chat_text_streams_to_done_and_is_stored(client: TestClient, session_id: int, text: str) -> None:
    assert_turn_completes(client, session_id, text)


@settings(max_examples=80)
@given(q=TEXT.filter(lambda t: well_formed(t)[:4000] != ""), mode=st.sampled_from(["hybrid", "dense", "bm25"]),
       tier=st.sampled_from(["exchange", "gist", "digest"]),
       since=st.none() | st.text(max_size=30), until=st.none() | st.text(max_size=30))
def test_any_recall_query_answers(client: TestClient, session_id: int, q: str, mode: str, tier: str,
                                  since: str | None, until: str | None) -> None:
    params = {"mode": mode, "tier": tier, **({"since": since} if since else {}), **({"until": until} if until else {})}
    assert_recall_answers(client, q, **params)


@settings(max_examples=40)
@given(text=TEXT, stream=st.booleans(), parts=st.booleans())
def test_any_text_through_the_openai_route(client: TestClient, text: str, stream: bool, parts: bool) -> None:
    content: Any = [{"type": "text", "text": text}] if parts else text
    resp = post_json(client, "/v1/chat/completions",
                     {"messages": [{"role": "user", "content": content}], "stream": stream, "user": "hostile"})
    assert resp.status_code == 200, resp.text[:500]
    if stream:
        data = [line[6:] for line in resp.text.splitlines() if line.startswith("data: ")]
        assert data[-1] == "[DONE]" and not any('"error"' in d for d in data)
    else:
        assert resp.json()["choices"][0]["message"]["content"] == "ok"


@pytest.mark.parametrize("text", BIG, ids=lambda t: f"{len(t)}x{t[:12]!r}")
def test_a_200_kb_message_streams_to_done_and_is_stored(client: TestClient, session_id: int, text: str) -> None:
    assert_turn_completes(client, session_id, text)
    assert_recall_answers(client, text)


@pytest.mark.parametrize("text", ["Rome, 2000 years ago", "march 0000", "December 9999"])
def test_the_cases_from_the_issue(client: TestClient, session_id: int, text: str) -> None:
    assert_recall_answers(client, text)  # was a 500
    assert_turn_completes(client, session_id, f"What happened in {text}?")  # was a stream with no end


def test_a_refused_body_with_a_lone_surrogate_is_a_422(client: TestClient) -> None:
    resp = post_json(client, "/api/sessions", {"name": "\ud800" * 300})  # too long: refused, and echoed
    assert resp.status_code == 422 and "detail" in resp.json()


# -- what no one foresaw: one request fails clearly, the server goes on ----------------------------

class ExplodingChat(FakeChatModel):
    """Raises a plain RuntimeError (not a LyraError) after ``after`` deltas, while ``armed``."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after, self.armed = after, True

    def stream(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Iterator[ChatDelta]:
        for i, delta in enumerate(super().stream(messages, options)):
            if self.armed and i >= self.after:
                raise RuntimeError("the model library broke")
            yield delta


class ExplodingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.armed = True

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.armed:
            raise RuntimeError("the embedding library broke")
        return super().embed(texts)


@pytest.fixture
def exploding(tmp_path: Path) -> Iterator[tuple[TestClient, ExplodingChat, ExplodingEmbedder]]:
    settings = isolated_settings(tmp_path)
    chat, embed = ExplodingChat(after=1), ExplodingEmbedder()
    app = create_app(settings, models=Models(settings, chat=chat, embed=embed))  # type: ignore[arg-type]
    # raise_server_exceptions=False: see the answer a real client gets, not the exception.
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as test_client:
        yield test_client, chat, embed


def test_an_unexpected_failure_ends_the_stream_with_error_and_done_and_keeps_the_message(
        exploding: tuple[TestClient, ExplodingChat, ExplodingEmbedder]) -> None:
    client, chat, embed = exploding
    session = client.post("/api/sessions", json={"name": "x"}).json()["id"]

    def failed_turn(message: str) -> dict[str, Any]:
        resp = post_json(client, f"/api/sessions/{session}/chat", {"message": message})
        assert resp.status_code == 200
        got = sse_events(resp.text.splitlines())
        assert [k for k, _ in got][0] == "stored" and [k for k, _ in got][-2:] == ["error", "done"]
        return got[-2][1]

    # The embedder breaks: the message is stored without a vector, the context cannot be built.
    error = failed_turn("Rome, 2000 years ago")
    assert error["status"] == 500 and "RuntimeError" in error["text"] and "your message is saved" in error["text"]
    # The chat model breaks after one word: the message and the partial reply are stored.
    embed.armed = False
    chat.enqueue("one two three")
    error = failed_turn("march 0000")
    assert "RuntimeError" in error["text"] and "your message is saved" in error["text"]
    history = client.get(f"/api/sessions/{session}/messages").json()["messages"]
    assert [(m["role"], m["content"]) for m in history] == [
        ("user", "Rome, 2000 years ago"), ("user", "march 0000"), ("assistant", "one")]
    chat.armed = False
    assert_turn_completes(client, session, "and now?")  # the server goes on


def test_an_unexpected_failure_of_the_openai_route_is_a_clear_json_error(
        exploding: tuple[TestClient, ExplodingChat, ExplodingEmbedder]) -> None:
    client, chat, embed = exploding
    chat.after, embed.armed = 0, False
    body = {"messages": [{"role": "user", "content": "hi"}]}
    resp = post_json(client, "/v1/chat/completions", body)
    assert resp.status_code == 500 and "RuntimeError" in resp.json()["error"]["message"]
    resp = post_json(client, "/v1/chat/completions", {**body, "stream": True})
    data = [line[6:] for line in resp.text.splitlines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]" and json.loads(data[-2])["error"]["code"] == 500
    chat.armed = False
    assert post_json(client, "/v1/chat/completions", body).json()["choices"][0]["message"]["content"] == "ok"


def test_an_unexpected_failure_of_recall_is_a_json_500_and_the_next_request_works(
        exploding: tuple[TestClient, ExplodingChat, ExplodingEmbedder]) -> None:
    client, _, embed = exploding
    resp = client.get("/api/recall", params={"q": "tomatoes"})
    assert resp.status_code == 500
    assert resp.json()["error"]["type"] == "InternalError" and "RuntimeError" in resp.json()["error"]["message"]
    embed.armed = False
    assert client.get("/api/recall", params={"q": "tomatoes"}).status_code == 200


# -- MCP: a tool call on any text answers; a failing one is an error result ---------------------------

@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Store]]:
    """The MCP tools on one store for all examples, and that store, to read back what they wrote."""
    tmp = tmp_path_factory.mktemp("mcp")
    store = Store(tmp / "data")
    yield build_server(Coordinator(store, isolated_settings(tmp), Memory(store, FakeEmbedder())), "agent:tester"), store
    store.close()


def call_tool(server: Any, name: str, args: dict[str, Any]) -> Any:
    """The tool's answer, the same in its structured result and in the text an agent reads.

    A tool that fails answers an error result: in process, ``call_tool`` raises ``ToolError``.
    """
    content, structured = asyncio.run(server.call_tool(name, args))
    answer = structured["result"] if list(structured) == ["result"] else structured  # a list comes wrapped
    assert [json.loads(block.text) for block in content] == (answer if isinstance(answer, list) else [answer])
    return answer


RECALL_HIT = {"content", "kind", "role", "created_at", "session_id", "score", "stages"}


@settings(max_examples=40)
@given(text=TEXT.filter(lambda t: t.strip()))
def test_any_text_remembered_and_recalled_over_mcp(mcp_server: tuple[Any, Store], text: str) -> None:
    """`remember` keeps any text as sent, lone surrogates made U+FFFD; `recall` on it answers well-formed hits."""
    server, store = mcp_server
    note = call_tool(server, "remember", {"content": text})
    assert note["author"] == "agent:tester"
    stored = store.exchanges.get(note["id"])
    assert stored is not None and stored.session_id == note["session_id"]
    assert stored.content == well_formed(text)
    hits = call_tool(server, "recall", {"query": text, "k": 10**30})
    assert 0 < len(hits) <= 50  # k is bounded; the note just kept has a vector, so dense recall finds something
    for hit in hits:
        assert set(hit) == RECALL_HIT and hit["content"] == well_formed(hit["content"])


def test_a_failing_mcp_call_is_an_error_result_and_the_next_one_answers(mcp_server: tuple[Any, Store]) -> None:
    server, _ = mcp_server
    with pytest.raises(ToolError, match="nothing to remember"):
        call_tool(server, "remember", {"content": " \t\n"})
    assert call_tool(server, "remember", {"content": "still here"})["author"] == "agent:tester"


def test_a_failed_turn_in_lyra_chat_is_reported_and_the_conversation_goes_on(
        tmp_path: Path, store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    settings = isolated_settings(tmp_path)
    chat = ExplodingChat(after=1)
    companion = Companion(Memory(store, FakeEmbedder()), chat, settings.companion)
    session = store.sessions.create("terminal").id
    try:
        chat.enqueue("one two")
        _reply(companion, session, "Rome, 2000 years ago \udcff", "Lyra")  # undecodable bytes, as surrogateescape
        assert "[error] this turn failed (RuntimeError: the model library broke)" in capsys.readouterr().err
        chat.armed = False
        _reply(companion, session, "march 0000", "Lyra")
        assert capsys.readouterr().out.endswith("lyra> ok\n")
        assert [e.content for e in store.exchanges.history(session)] == [
            "Rome, 2000 years ago \ufffd", "one", "march 0000", "ok"]
    finally:
        companion.close()
