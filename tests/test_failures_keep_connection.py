"""An unexpected failure on any route answers its JSON 500 and the client's kept-alive connection stays usable.

Starlette's handler for ``Exception`` answers and then re-raises to the server,
and uvicorn closes the connection on it: the client's next request on that
connection failed. ``failures.AnswerUnexpected`` answers instead (a stream
already started is ended where it stands) and the exception goes no further.
The routes added here fail on purpose, and a real route fails when its
embedder breaks as no one foresaw. (An id too big for SQLite would be such a
failure any client could cause; it is a 422: tests/test_bounded_ids.py.)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from fastapi.testclient import TestClient

from lyra_local.cli.serve import check_can_serve
from lyra_local.config import Settings
from lyra_local.llm.base import Vectors
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder
from .threaded_server import serve_in_thread

HINT = "try again; if it keeps failing, the server's log has the details"
RECALL = "/api/recall"  # a real route, which fails while its embedder is broken


def body_for(method: str, path: str, name: str) -> dict[str, dict[str, str]]:
    """The JSON every unexpected failure answers with (unchanged by the fix)."""
    return {"error": {"message": f"the server failed on {method} {path} ({name})", "type": "InternalError",
                      "hint": HINT}}


class BrokenEmbedder(FakeEmbedder):
    """Raises a plain ``RuntimeError`` (no ``LyraError``): a real route's failure that nothing foresaw."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise RuntimeError("the embedding library broke")


async def boom() -> None:
    raise RuntimeError("a failure nothing foresaw")


def with_failing_routes(app: FastAPI) -> FastAPI:
    """``app`` with two routes that fail: before answering, and mid-stream."""

    async def boom_mid_stream() -> StreamingResponse:
        def chunks() -> Iterator[bytes]:
            yield b"first chunk\n"
            raise RuntimeError("a failure after the answer began")

        return StreamingResponse(chunks(), media_type="text/plain")

    app.add_api_route("/test/boom", boom)
    app.add_api_route("/test/boom-mid-stream", boom_mid_stream)
    return app


def failing_app(settings: Settings) -> FastAPI:
    """The real app on fake models (the embedder broken), with the two failing routes."""
    return with_failing_routes(create_app(settings, models=Models(settings, chat=FakeChatModel(),
                                                                  embed=BrokenEmbedder())))


def local_port(response: httpx.Response) -> int:
    """The client's own port for the connection that carried ``response``."""
    return int(response.extensions["network_stream"].get_extra_info("client_addr")[1])


def test_an_unexpected_failure_is_answered_as_json_and_not_raised(
        make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture) -> None:
    # The test client raises what reaches the server: nothing may, now.
    with TestClient(failing_app(make_settings()), base_url="http://127.0.0.1") as client:
        with caplog.at_level(logging.ERROR, logger="lyra_local.web.failures"):
            answer = client.get("/test/boom")
        assert answer.status_code == 500
        assert answer.json() == body_for("GET", "/test/boom", "RuntimeError")
        logged = [r for r in caplog.records if "unexpected failure of GET /test/boom" in r.getMessage()]
        assert len(logged) == 1 and logged[0].exc_info is not None  # the traceback, once
        real = client.get(RECALL, params={"q": "tomatoes"})
        assert real.status_code == 500, real.text
        assert real.json() == body_for("GET", RECALL, "RuntimeError")
        begun = client.get("/test/boom-mid-stream")  # already started: ended as it stands, no second start
        assert (begun.status_code, begun.text) == (200, "first chunk\n")
        assert client.get("/health").status_code == 200


def test_the_handler_answers_the_same_body_when_exceptions_are_not_raised(
        make_settings: Callable[..., Settings]) -> None:
    app = failing_app(make_settings())
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        for path in ("/test/boom", RECALL):
            answer = client.get(path, params={"q": "tomatoes"})
            assert answer.status_code == 500 and answer.headers["content-type"] == "application/json"
        assert answer.json() == body_for("GET", RECALL, "RuntimeError")


@pytest.mark.slow
def test_a_failure_before_or_during_an_answer_keeps_the_connection(make_settings: Callable[..., Settings]) -> None:
    with serve_in_thread(failing_app(make_settings())) as url, \
            httpx.Client(base_url=url, timeout=30, limits=httpx.Limits(max_connections=1)) as client:
        first = client.get("/test/boom")
        assert (first.status_code, first.json()) == (500, body_for("GET", "/test/boom", "RuntimeError"))
        begun = client.get("/test/boom-mid-stream")
        assert (begun.status_code, begun.text) == (200, "first chunk\n")
        after = client.get("/health")
        assert after.status_code == 200
        assert local_port(first) == local_port(begun) == local_port(after), "the server closed the connection"


@pytest.mark.slow
@pytest.mark.models
def test_a_real_server_answers_an_unexpected_failure_and_keeps_the_connection(
        make_settings: Callable[..., Settings], caplog: pytest.LogCaptureFixture) -> None:
    """The app as `lyra serve` builds it (its checks, the models its settings name) under uvicorn as it runs it,
    plus one route that fails: nothing a client sends fails unforeseen any more, so the failure is the test's."""
    settings = make_settings()
    check_can_serve(settings, "127.0.0.1")
    app = create_app(settings)
    app.add_api_route("/test/boom", boom)
    uvicorn_log = logging.getLogger("uvicorn")  # uvicorn's own loggers do not reach the root's (caplog's)
    with caplog.at_level(logging.ERROR), serve_in_thread(app) as url, \
            httpx.Client(base_url=url, timeout=60, limits=httpx.Limits(max_connections=1)) as client:
        uvicorn_log.addHandler(caplog.handler)  # after uvicorn configured its logging, which drops handlers
        try:
            failed = client.get("/test/boom")
            port = local_port(failed)
            assert failed.status_code == 500, failed.text
            assert failed.json() == body_for("GET", "/test/boom", "RuntimeError")
            second = client.get("/api/sessions")  # a connect error here if the server dropped the connection
            assert second.status_code == 200, second.text
            assert local_port(second) == port, "the server closed the kept-alive connection"
        finally:
            uvicorn_log.removeHandler(caplog.handler)
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "Exception in ASGI application" in m], messages
    logged = [r for r in caplog.records if "unexpected failure of GET /test/boom" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None, messages  # the traceback, once
