"""The small interface every model backend implements, and the types it speaks.

Calls are blocking: a web route runs them in a thread pool. A stream is a
generator; closing it (``.close()``) stops generation on the backend.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..config import Sampling

Role = Literal["system", "user", "assistant"]


class Message(TypedDict):
    role: Role
    content: str


@dataclass(frozen=True)
class GenerationOptions:
    """Per-request overrides of a role's sampling defaults; ``None`` keeps the default."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: Sequence[str] = ()
    seed: int | None = None
    json_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class ChatDelta:
    """A piece of a streamed reply; the last one carries ``finish_reason``."""

    text: str
    finish_reason: str | None = None


@dataclass(frozen=True)
class ModelInfo:
    """What `doctor`, `/v1/models` and the settings view show about a loaded model."""

    role: str
    backend: str
    name: str
    details: dict[str, Any] = field(default_factory=dict)


Vectors = npt.NDArray[np.float32]


def request_params(sampling: Sampling, options: GenerationOptions | None) -> dict[str, Any]:
    """Sampling defaults overridden by a request's options, as OpenAI-style parameters.

    llama-cpp-python and llama.cpp's server take the same names, so both backends share this.
    """
    opts = options or GenerationOptions()
    params: dict[str, Any] = {
        "max_tokens": opts.max_tokens or sampling.max_tokens,
        "temperature": sampling.temperature if opts.temperature is None else opts.temperature,
        "top_p": sampling.top_p if opts.top_p is None else opts.top_p,
        "top_k": sampling.top_k,
        "min_p": sampling.min_p,
        "repeat_penalty": sampling.repeat_penalty,
    }
    seed = sampling.seed if opts.seed is None else opts.seed
    if seed is not None:
        params["seed"] = seed
    if opts.stop:
        params["stop"] = list(opts.stop)
    if opts.json_schema is not None:
        params["response_format"] = {"type": "json_object", "schema": opts.json_schema}
    return params


def completion_from_response(body: dict[str, Any]) -> Completion:
    """An OpenAI-style chat completion response as a ``Completion``."""
    choice = body["choices"][0]
    usage = body.get("usage") or {}
    return Completion(
        text=choice["message"].get("content") or "",
        finish_reason=choice.get("finish_reason") or "stop",
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        completion_tokens=int(usage.get("completion_tokens", 0)),
    )


@runtime_checkable
class ChatModel(Protocol):
    """Something that answers a conversation."""

    @property
    def name(self) -> str: ...

    @property
    def n_ctx(self) -> int: ...

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` by the model's own tokenizer (no special tokens)."""
        ...

    def complete(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Completion: ...

    def stream(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Iterator[ChatDelta]: ...

    def info(self) -> ModelInfo: ...

    def close(self) -> None: ...


# Set while background work (the dream cycle) calls a model: such callers yield to others, never to each other.
_BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("lyra_background_model_call", default=False)


@contextlib.contextmanager
def background_call() -> Iterator[None]:
    """Mark this thread's model calls as background work that yields to waiting foreground callers."""
    token = _BACKGROUND.set(True)
    try:
        yield
    finally:
        _BACKGROUND.reset(token)


def in_background() -> bool:
    return _BACKGROUND.get()


@runtime_checkable
class Loadable(Protocol):
    """A backend that can get ready before its first call: a local model loads its file, a server is asked if it
    is up. A reload readies the models it is about to swap in, so a model that cannot serve fails the reload."""

    def load(self) -> None: ...


@runtime_checkable
class Preemptible(Protocol):
    """A model shared in-process: background work checks ``contended`` and yields to waiting callers."""

    def contended(self) -> bool:
        """Whether another caller is waiting for this model right now."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Something that turns texts into L2-normalised float32 vectors."""

    @property
    def name(self) -> str:
        """Identity of the embedding model: vectors of two identities never mix."""
        ...

    @property
    def dim(self) -> int: ...

    def count_tokens(self, text: str) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length row per text, in order."""
        ...

    def info(self) -> ModelInfo: ...

    def close(self) -> None: ...


@runtime_checkable
class Reranker(Protocol):
    """Something that scores how well each passage answers a query (a cross-encoder: both read together)."""

    @property
    def name(self) -> str: ...

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in order; higher is more relevant (the scale is the model's own)."""
        ...

    def info(self) -> ModelInfo: ...

    def close(self) -> None: ...
