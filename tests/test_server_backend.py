"""The OpenAI-compatible server backend against real llama.cpp server processes.

The servers run llama-cpp-python's server on 127.0.0.1 with the tiny models;
the outage tests kill them with SIGKILL mid-request and start them again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import numpy as np
import pytest

from lyra_local.config import RetryPolicy, ServerModel
from lyra_local.errors import ModelRequestError, ModelUnavailable
from lyra_local.llm.base import GenerationOptions
from lyra_local.llm.server import ServerBackend

from .conftest import LlamaServer

HELLO = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]
FAST_RETRY = RetryPolicy(max_attempts=4, initial_delay_s=0.05, max_delay_s=0.2, jitter=0.5)


@pytest.fixture
def backend_for() -> Iterator[Callable[..., ServerBackend]]:
    """``backend_for(server, retry=..., role=...)``: a backend closed after the test."""
    made: list[ServerBackend] = []

    def make(server: LlamaServer, retry: RetryPolicy = FAST_RETRY, role: str = "chat") -> ServerBackend:
        spec = ServerModel(backend="server", base_url=server.url, model=server.alias, retry=retry,
                           read_timeout_s=60)
        made.append(ServerBackend(spec, role))
        return made[-1]

    yield make
    for backend in made:
        backend.close()


@pytest.mark.slow
class TestAgainstRunningServer:
    def test_complete(self, backend_for, chat_server: LlamaServer) -> None:
        chat_server.ensure_running()
        result = backend_for(chat_server).complete(HELLO, GenerationOptions(max_tokens=8))
        assert result.text.strip() and 0 < result.completion_tokens <= 8

    def test_stream(self, backend_for, chat_server: LlamaServer) -> None:
        chat_server.ensure_running()
        deltas = list(backend_for(chat_server).stream(HELLO, GenerationOptions(max_tokens=8)))
        assert "".join(d.text for d in deltas).strip()
        assert deltas[-1].finish_reason in ("stop", "length")

    def test_count_tokens_matches_local_tokenizer(self, backend_for, chat_server: LlamaServer,
                                                  chat_model) -> None:
        chat_server.ensure_running()
        text = "Lyra remembers Ana's birthday: 14 March."
        assert backend_for(chat_server).count_tokens(text) == chat_model.count_tokens(text)

    def test_n_ctx_discovered_or_configured(self, chat_server: LlamaServer) -> None:
        chat_server.ensure_running()
        spec = ServerModel(backend="server", base_url=chat_server.url, model=chat_server.alias, n_ctx=1234)
        backend = ServerBackend(spec, "chat")
        assert backend.n_ctx == 1234
        backend.close()

    def test_health_falls_back_to_models_listing(self, backend_for, chat_server: LlamaServer) -> None:
        chat_server.ensure_running()
        assert backend_for(chat_server).health()

    def test_embeddings_match_the_local_model(self, backend_for, embed_server: LlamaServer, embedder) -> None:
        texts = ["I live in Berlin.", "Mein Hund heißt Bruno.", "quarterly revenue grew"]
        remote = backend_for(embed_server, role="embed").embed(texts)
        local = embedder.embed(texts)
        assert remote.shape == (3, 384)
        assert np.allclose(np.linalg.norm(remote, axis=1), 1.0, atol=1e-4)
        assert np.min(np.sum(remote * local, axis=1)) > 0.999


@pytest.mark.slow
class TestOutages:
    def test_kill_mid_request_retries_then_clear_error_then_recovers(
            self, backend_for, chat_server: LlamaServer, caplog: pytest.LogCaptureFixture) -> None:
        chat_server.ensure_running()
        backend = backend_for(chat_server)
        outcome: dict[str, BaseException | object] = {}

        def long_request() -> None:
            try:
                outcome["result"] = backend.complete(HELLO, GenerationOptions(max_tokens=1500, temperature=1.0))
            except BaseException as exc:
                outcome["error"] = exc

        caplog.set_level(logging.WARNING, logger="lyra_local.llm.retry")
        worker = threading.Thread(target=long_request)
        worker.start()
        time.sleep(1.0)  # well into generation
        assert worker.is_alive(), "the request finished before the kill; make it longer"
        chat_server.kill()
        worker.join(timeout=30)

        error = outcome.get("error")
        assert isinstance(error, ModelUnavailable), outcome
        assert "failed 4 times" in error.message and chat_server.url in error.message
        assert error.hint and "lyra doctor" in error.hint
        retries = [r for r in caplog.records if "retry" in r.getMessage()]
        assert len(retries) == 3

        chat_server.start()
        assert backend.complete(HELLO, GenerationOptions(max_tokens=4)).text

    def test_stream_killed_after_first_token_reports_lost_reply(self, backend_for,
                                                                chat_server: LlamaServer) -> None:
        chat_server.ensure_running()
        stream = backend_for(chat_server).stream(HELLO, GenerationOptions(max_tokens=1500, temperature=1.0))
        assert next(stream).text is not None
        chat_server.kill()
        with pytest.raises(ModelUnavailable, match="middle of a reply"):
            for _ in stream:
                pass
        chat_server.start()

    def test_retries_bridge_a_restart(self, backend_for, chat_server: LlamaServer) -> None:
        chat_server.kill()
        patient = RetryPolicy(max_attempts=40, initial_delay_s=0.2, max_delay_s=0.5, jitter=0.2)
        backend = backend_for(chat_server, retry=patient)
        restarter = threading.Timer(1.0, chat_server.start)
        restarter.start()
        try:
            result = backend.complete(HELLO, GenerationOptions(max_tokens=4))
        finally:
            restarter.join()
        assert result.text

    def test_stream_to_a_dead_server_retries_then_fails(self, backend_for, chat_server: LlamaServer) -> None:
        chat_server.kill()
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match="failed 4 times"):
            list(backend_for(chat_server).stream(HELLO))
        assert time.monotonic() - started < 5
        chat_server.start()


def _scripted(statuses: list[int], seen: list[httpx.Request]) -> httpx.MockTransport:
    """A transport answering with the given status codes in turn (for status-code logic only)."""
    replies = iter(statuses)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status = next(replies)
        if status != 200:
            return httpx.Response(status, text="busy" if status >= 500 or status == 429 else "bad request")
        return httpx.Response(200, json={"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                                         "usage": {"prompt_tokens": 3, "completion_tokens": 1}})

    return httpx.MockTransport(handle)


def _scripted_backend(statuses: list[int], seen: list[httpx.Request]) -> ServerBackend:
    spec = ServerModel(backend="server", base_url="http://127.0.0.1:9", api_key="tok", retry=FAST_RETRY)
    return ServerBackend(spec, "chat", sleep=lambda _: None, transport=_scripted(statuses, seen))


def test_429_and_5xx_are_retried() -> None:
    seen: list[httpx.Request] = []
    result = _scripted_backend([503, 429, 502, 200], seen).complete(HELLO)
    assert result.text == "hi" and len(seen) == 4
    assert seen[0].headers["authorization"] == "Bearer tok"


def test_client_errors_are_not_retried() -> None:
    seen: list[httpx.Request] = []
    with pytest.raises(ModelRequestError, match="HTTP 400"):
        _scripted_backend([400, 200], seen).complete(HELLO)
    assert len(seen) == 1


def test_persistent_5xx_gives_up_after_the_policy() -> None:
    seen: list[httpx.Request] = []
    with pytest.raises(ModelUnavailable, match="HTTP 503"):
        _scripted_backend([503] * 10, seen).complete(HELLO)
    assert len(seen) == FAST_RETRY.max_attempts
