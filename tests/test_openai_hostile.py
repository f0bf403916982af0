"""A lone surrogate in the name an OpenAI client gives (``"user": "sam\\ud83d"``) answers 200, keeps the
connection, and names one storable session.

The ``user`` field names the client's session and is stored; a lone UTF-16
surrogate (a client's cut through an emoji, legal as a JSON escape) made SQLite
refuse it, the route answered 500, and because that 500 came from the generic
handler (which Starlette re-raises to the server after answering), uvicorn also
closed the client's kept-alive connection. The route on the fake models here,
then a real ``lyra serve`` with a client that sends a second request on the
same connection.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from lyra_local.config import Settings

from .conftest import MODELS_DIR, base_env, fake_client, serve_lyra

LONE = b'"sam\\ud83d"'  # as JSON has it: the escape of half a surrogate pair
STORED = "sam\ufffd"


def completion(client: Any, user: bytes = LONE, **headers: str | bytes) -> httpx.Response:
    """A completion whose JSON ``user`` is ``user`` as written (the test client or an ``httpx.Client``)."""
    body = b'{"max_tokens": 4, "user": ' + user + b', "messages": [{"role": "user", "content": "hello"}]}'
    return client.post("/v1/chat/completions", content=body,  # type: ignore[no-any-return]
                       headers={"content-type": "application/json", **headers})


def sessions(client: Any) -> list[dict[str, Any]]:
    return list(client.get("/api/sessions").json()["sessions"])


def test_a_lone_surrogate_in_user_answers_200_and_names_one_session(make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings()) as client:
        for _ in range(2):
            answer = completion(client)
            assert answer.status_code == 200, answer.text
            assert answer.json()["choices"][0]["message"]["content"] == "ok"
        found = [s for s in sessions(client) if s["source"] == "openai"]
        assert [(s["name"], s["source_id"]) for s in found] == [(STORED, STORED)]
        off = completion(client, LONE, **{"X-Lyra-Remember": "off"})  # off the record: its own session, same name
        assert off.status_code == 200, off.text
        assert sorted((s["source"], s["remember"]) for s in sessions(client) if s["name"] == STORED) == [
            ("openai", True), ("openai-off-the-record", False)]


def test_a_session_header_of_any_bytes_names_a_storable_session(make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings()) as client:
        answer = completion(client, b'"ignored"', **{"X-Lyra-Session": b"sam\xed\xa0\xbd \xf0\x9f"})
        assert answer.status_code == 200, answer.text
        found = [s["source_id"] for s in sessions(client) if s["source"] == "openai"]
        assert len(found) == 1 and found[0].startswith("sam"), found  # a header is read as latin-1: no surrogate


def local_port(response: httpx.Response) -> int:
    """The client's own port for the connection that carried ``response``."""
    return int(response.extensions["network_stream"].get_extra_info("client_addr")[1])


@pytest.mark.slow
@pytest.mark.models
def test_a_real_server_answers_a_lone_surrogate_in_user_as_json_and_keeps_the_connection(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    with serve_lyra(tmp_path, env, "[dream]\nenabled = false\n") as served, \
            httpx.Client(base_url=served.url, timeout=120, limits=httpx.Limits(max_connections=1)) as client:
        first = completion(client)
        first.json()  # JSON whatever the status
        second = completion(client)
        assert local_port(second) == local_port(first), "the server closed the kept-alive connection"
        assert (first.status_code, second.status_code) == (200, 200), (first.text, second.text)
        assert [s["name"] for s in sessions(client) if s["source"] == "openai"] == [STORED]
        assert "Exception in ASGI application" not in served.log.read_text()
