"""A model behind an OpenAI-compatible llama.cpp server, with bounded retries.

Connection errors, timeouts, 429 and 5xx are retried with exponential backoff and
jitter; other 4xx are the request's fault and fail at once. A stream is retried
only until its first token has been handed out: after that, a lost connection is
reported rather than silently restarting a reply the user has half seen.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import httpx
import numpy as np

from .. import config
from ..errors import ConfigError, ModelRequestError, ModelUnavailable
from .base import (
    ChatDelta,
    Completion,
    GenerationOptions,
    Message,
    ModelInfo,
    Vectors,
    completion_from_response,
    request_params,
)
from .retry import Retryable, RetryState, call_with_retry

EMBED_REQUEST_SIZE = 64
_RETRY_STATUS = {408, 425, 429}


class ServerBackend:
    """Chat, embeddings, re-ranking and token counting against one model on one server."""

    def __init__(
        self,
        spec: config.ServerModel,
        role: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.spec = spec
        self.role = role
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {spec.api_key.get_secret_value()}"} if spec.api_key else {}
        timeout = httpx.Timeout(spec.read_timeout_s, connect=spec.connect_timeout_s)
        self._client = httpx.Client(base_url=spec.base_url, headers=headers, timeout=timeout, transport=transport)
        self._tokenize_path: str | None = None
        self._n_ctx: int | None = spec.n_ctx
        self._dim: int | None = None
        self._meta_lock = threading.Lock()

    # -- identity ---------------------------------------------------------------

    @property
    def name(self) -> str:
        return f"{self.spec.model}@{self.spec.base_url}"

    @property
    def n_ctx(self) -> int:
        with self._meta_lock:
            if self._n_ctx is None:
                self._n_ctx = self._discover_n_ctx()
            return self._n_ctx

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def info(self) -> ModelInfo:
        return ModelInfo(self.role, "server", self.spec.model, {"base_url": self.spec.base_url})

    def close(self) -> None:
        self._client.close()

    # -- requests ---------------------------------------------------------------

    def load(self) -> None:
        """Ask the server whether it is up: its model is the server's to load (``base.Loadable``)."""
        self.health()

    def health(self) -> dict[str, Any]:
        """The server's ``/health`` (llama.cpp), else ``/v1/models``; one try, no retries."""
        try:
            resp = self._client.get("/health")
            if resp.status_code == 404:
                resp = self._client.get("/v1/models")
        except httpx.TransportError as exc:
            raise ModelUnavailable(f"model server {self.spec.base_url} unreachable: {exc}",
                                   hint=self._hint()) from exc
        if resp.status_code != 200:
            raise ModelUnavailable(f"model server {self.spec.base_url} is not healthy: HTTP {resp.status_code}",
                                   hint="it may still be loading its model; try again shortly")
        body = resp.json()
        return body if isinstance(body, dict) else {"status": "ok"}

    def complete(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Completion:
        return completion_from_response(
            self._post("/v1/chat/completions", self._chat_body(messages, options, stream=False)))

    def stream(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Iterator[ChatDelta]:
        body = self._chat_body(messages, options, stream=True)
        state = self._retry_state("chat stream")
        started = False
        while True:
            try:
                with self._client.stream("POST", "/v1/chat/completions", json=body) as resp:
                    _check_status(resp, read=True)
                    for delta in _parse_chat_stream(resp.iter_lines()):
                        started = True
                        yield delta
                    return
            except httpx.TransportError as exc:
                if started:
                    raise ModelUnavailable(
                        f"lost the model server {self.spec.base_url} in the middle of a reply ({_reason(exc)})",
                        hint=self._hint()) from exc
                state.failed(_reason(exc))
            except Retryable as exc:
                if started:
                    raise ModelUnavailable(f"model server failed mid-reply: {exc.reason}", hint=self._hint()) from exc
                state.failed(exc.reason)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:  # nothing to send (an import batch of images only); the shape still names the dimension
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), EMBED_REQUEST_SIZE):
            chunk = list(texts[start:start + EMBED_REQUEST_SIZE])
            body = self._post("/v1/embeddings", {"model": self.spec.model, "input": chunk})
            data = sorted(body["data"], key=lambda item: item.get("index", 0))
            rows.extend(_first_vector(item["embedding"]) for item in data)
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: Vectors = vectors / np.maximum(norms, 1e-12)
        return unit

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """Scores from llama.cpp's ``/v1/rerank`` (a server started with ``--reranking``), in passage order."""
        if not passages:
            return []
        body = self._post("/v1/rerank", {"model": self.spec.model, "query": query, "documents": list(passages),
                                         "top_n": len(passages)})
        scores = {int(item["index"]): float(item["relevance_score"]) for item in body.get("results", [])}
        if sorted(scores) != list(range(len(passages))):
            raise ModelRequestError(f"{self.role} model server {self.spec.base_url} scored {len(scores)} of "
                                    f"{len(passages)} passages",
                                    hint="start llama-server with --reranking and a reranking GGUF")
        return [scores[i] for i in range(len(passages))]

    def count_tokens(self, text: str) -> int:
        # llama.cpp's server has /tokenize; llama-cpp-python's has /extras/tokenize.
        if self._tokenize_path is None:
            for path, key in (("/tokenize", "content"), ("/extras/tokenize", "input")):
                try:
                    tokens = self._post(path, {key: text, "model": self.spec.model})["tokens"]
                except ModelRequestError as exc:
                    if "HTTP 404" in exc.message:
                        continue
                    raise
                self._tokenize_path = path
                return len(tokens)
            raise ModelRequestError(f"model server {self.spec.base_url} offers no tokenize endpoint",
                                    hint="use llama.cpp's llama-server, which has /tokenize")
        key = "content" if self._tokenize_path == "/tokenize" else "input"
        return len(self._post(self._tokenize_path, {key: text, "model": self.spec.model})["tokens"])

    # -- plumbing ---------------------------------------------------------------

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        def attempt() -> dict[str, Any]:
            try:
                resp = self._client.post(path, json=payload)
            except httpx.TransportError as exc:
                raise Retryable(_reason(exc)) from exc
            _check_status(resp, read=False)
            result: dict[str, Any] = resp.json()
            return result

        return call_with_retry(attempt, self._retry_state(f"POST {path}"))

    def _retry_state(self, what: str) -> RetryState:
        return RetryState(self.spec.retry, self._give_up, what=f"{self.role} model {what}", sleep=self._sleep)

    def _give_up(self, tries: int, reason: str) -> ModelUnavailable:
        return ModelUnavailable(
            f"{self.role} model server {self.spec.base_url} failed {tries} times; last error: {reason}",
            hint=self._hint())

    def _hint(self) -> str:
        return (f"check that the llama.cpp server at {self.spec.base_url} is running "
                f"(`lyra doctor` checks it), or point models.{self.role}.base_url elsewhere")

    def _chat_body(self, messages: Sequence[Message], options: GenerationOptions | None,
                   *, stream: bool) -> dict[str, Any]:
        return {"model": self.spec.model, "messages": list(messages), "stream": stream,
                **request_params(self.spec.sampling, options)}

    def _discover_n_ctx(self) -> int:
        for path in ("/props", "/v1/models"):
            try:
                resp = self._client.get(path)
            except httpx.TransportError as exc:
                raise ModelUnavailable(f"model server {self.spec.base_url} is not reachable ({_reason(exc)})",
                                       hint=self._hint()) from exc
            if resp.status_code == 200:
                found = _find_n_ctx(resp.json())
                if found:
                    return found
        raise ConfigError(f"cannot tell the context length of the {self.role} model at {self.spec.base_url}",
                          hint=f"set models.{self.role}.n_ctx in lyra.toml")


def _reason(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _check_status(resp: httpx.Response, *, read: bool) -> None:
    if resp.status_code < 400:
        return
    if read:
        resp.read()
    text = resp.text[:300]
    if resp.status_code in _RETRY_STATUS or resp.status_code >= 500:
        raise Retryable(f"HTTP {resp.status_code}: {text}")
    raise ModelRequestError(f"model server refused the request: HTTP {resp.status_code}: {text}")


def _parse_chat_stream(lines: Iterator[str]) -> Iterator[ChatDelta]:
    """OpenAI-style SSE ``data:`` lines to deltas, up to ``[DONE]``."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        chunk = json.loads(data)
        if "error" in chunk:
            raise Retryable(f"server error in stream: {chunk['error']}")
        for choice in chunk.get("choices", []):
            text = (choice.get("delta") or {}).get("content") or ""
            finish = choice.get("finish_reason")
            if text or finish:
                yield ChatDelta(text, finish)
    # llama-cpp-python's server cuts a stream short when another request arrives (interrupt_requests)
    raise Retryable("the server ended the stream early (no [DONE])")


def _first_vector(embedding: Any) -> list[float]:
    # Servers without pooling return one vector per token; we only accept pooled ones.
    if embedding and isinstance(embedding[0], list):
        raise ModelRequestError("the embedding server returned per-token vectors",
                                hint="start llama-server with --pooling mean (or the model's pooling)")
    return [float(x) for x in embedding]


def _find_n_ctx(body: Any) -> int | None:
    if isinstance(body, dict):
        for key in ("n_ctx", "n_ctx_train"):
            if isinstance(body.get(key), int) and body[key] > 0:
                return int(body[key])
        for value in body.values():
            found = _find_n_ctx(value)
            if found:
                return found
    if isinstance(body, list):
        for value in body:
            found = _find_n_ctx(value)
            if found:
                return found
    return None
