"""The OpenAI-compatible API: ``/v1/models`` and ``/v1/chat/completions``.

Chunks follow OpenAI's format exactly (role first, content deltas, a final chunk
with ``finish_reason``, then ``[DONE]``), so the ``openai`` client and Open WebUI
work unchanged. A client that disconnects mid-stream stops generation.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ...errors import BadRequest, LyraError, ModelUnavailable
from ...llm.base import ChatModel, GenerationOptions, Message
from ...oserrors import storage_error
from ...store import Store
from ...textsafe import well_formed
from ...turn_events import Delta, Done, TurnError, TurnEvent
from ..deps import AsPerson
from ..failures import describe_failure
from ..params import Seed, Tokens
from ..streaming import stream_in_thread

router = APIRouter(prefix="/v1")
MODEL_ID = "lyra"
T = TypeVar("T")


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str | None = None

    @field_validator("text", mode="before")
    @classmethod
    def _storable(cls, value: object) -> object:
        return well_formed(value) if isinstance(value, str) else value


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant", "developer", "tool"]
    content: str | list[ContentPart] | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _storable(cls, value: object) -> object:
        return well_formed(value) if isinstance(value, str) else value

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(part.text or "" for part in self.content if part.type == "text")
        return self.content or ""


class ChatCompletionRequest(BaseModel):
    # OpenAI clients send many optional fields (n, logprobs, ...); we ignore what we do not use.
    model_config = ConfigDict(extra="ignore")
    model: str = MODEL_ID
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    max_tokens: Tokens | None = None
    max_completion_tokens: Tokens | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    stop: str | list[str] | None = None
    seed: Seed | None = None
    user: str | None = None  # names the session: stored, so a lone surrogate in it becomes U+FFFD

    @field_validator("user", mode="before")
    @classmethod
    def _storable(cls, value: object) -> object:
        return well_formed(value) if isinstance(value, str) else value

    def options(self) -> GenerationOptions:
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        return GenerationOptions(max_tokens=self.max_completion_tokens or self.max_tokens,
                                 temperature=self.temperature, top_p=self.top_p, stop=stop, seed=self.seed)

    def plain_messages(self) -> list[Message]:
        out: list[Message] = []
        for msg in self.messages:
            if msg.role in ("tool",):
                continue
            role = "system" if msg.role == "developer" else msg.role
            out.append({"role": role, "content": msg.text()})  # type: ignore[typeddict-item]
        if not any(m["role"] == "user" for m in out):
            raise BadRequest("the conversation has no user message")
        return out


@router.get("/models")
async def list_models(you: AsPerson) -> dict[str, Any]:
    chat = you.models.chat
    return {"object": "list", "data": [
        {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "lyra", "root": chat.name},
    ]}


def remembering(request: Request) -> bool:
    """``X-Lyra-Remember: off`` makes the conversation off the record (``on``, the default, remembers it)."""
    value = request.headers.get("x-lyra-remember", "on").strip().lower()
    if value not in ("on", "off"):
        raise BadRequest(f"X-Lyra-Remember must be on or off, not {value[:20]!r}")
    return value == "on"


def session_for(request: Request, body: ChatCompletionRequest, store: Store) -> int:
    """The session a client talks in: ``X-Lyra-Session``, else the ``user`` field, else "default".

    Off the record it is another session of the same name, never the remembered one. Clients that
    send their first requests for a name together all get that one session.
    """
    # Stored, so storable whichever it came from (a lone surrogate made every query on it fail): ``user``
    # already is (the model's validator), and a header is read as latin-1, which has no surrogates.
    name = well_formed((request.headers.get("x-lyra-session") or body.user or "default").strip()[:200]) or "default"
    remember = remembering(request)
    source = "openai" if remember else "openai-off-the-record"
    return store.sessions.find_or_create(source, name, name, remember=remember).id


class SessionTurns:
    """One turn at a time in each person's conversation, held from its start until its generator is closed.

    Keyed by (person, conversation): conversation ids are per person's store (everyone's first one is 1), so a
    bare id would make one person's burst wait behind another's.

    A client that hangs up mid-stream is noticed asynchronously: generation stops after the token in
    flight and the partial reply is stored then. Its next request, in the same session, can come
    before that; had its message been stored first, the partial reply would answer a message that no
    longer ends the conversation and be refused (``Conflict``), lost. Waiting here (in the worker
    thread, like the wait for the chat model's own lock) keeps each reply after the message it answers.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        # (person, conversation) -> (its lock, turns holding or waiting)
        self._held: dict[tuple[str, int], tuple[threading.Lock, int]] = {}

    @contextlib.contextmanager
    def one(self, person_id: str, session_id: int) -> Iterator[None]:
        key = (person_id, session_id)
        with self._guard:
            lock, users = self._held.get(key, (threading.Lock(), 0))
            self._held[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._held[key]
                if users == 1:
                    del self._held[key]
                else:
                    self._held[key] = (lock, users - 1)


def session_turns(request: Request) -> SessionTurns:
    """The app's ``SessionTurns``, made on first use (in the event loop, so made once)."""
    turns = getattr(request.app.state, "openai_turns", None)
    if not isinstance(turns, SessionTurns):
        turns = request.app.state.openai_turns = SessionTurns()
    return turns


async def answered(call: Callable[[], T], doing: str) -> T:
    """``call()`` in the thread pool, any failure a ``LyraError`` (answered as JSON by the app's handler) whose
    message says what this route was doing (``describe_failure``), rather than the generic answer of
    ``web/failures.py`` for the whole app."""
    try:
        return await run_in_threadpool(call)
    except LyraError:
        raise
    except Exception as exc:  # a clear JSON answer for this request; the server goes on
        named = storage_error(exc)
        if named is not None:  # a full disk (507), a read-only one (503)...: its own status
            raise named from exc
        failure, _ = describe_failure(exc, doing)
        raise LyraError(failure, hint="the server's log has the details") from exc


@router.post("/chat/completions", response_model=None)
async def chat_completions(body: ChatCompletionRequest, request: Request,
                           you: AsPerson) -> dict[str, Any] | EventSourceResponse:
    """Lyra as a model *with memory*: the last user message is the turn; Lyra supplies the rest."""
    message = body.plain_messages()[-1]
    if message["role"] != "user":
        raise BadRequest("the last message must be the user's")
    session_id = await answered(lambda: session_for(request, body, you.store), "finding this client's conversation")
    companion = you.companion
    person_id = you.id
    turns = session_turns(request)
    options = body.options()

    def turn() -> Iterator[TurnEvent]:
        with turns.one(person_id, session_id):  # released once the turn is closed, its (partial) reply stored
            yield from companion.turn(session_id, message["content"], options)

    if not body.stream:
        return await _answer(turn, companion.chat, Completion())
    return EventSourceResponse(_chunks(turn, Completion()), ping=15)


@dataclass(frozen=True)
class Completion:
    """One completion's identity, which its answer, or each of its chunks, carries."""

    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))

    def chunk(self, delta: dict[str, str], finish: str | None = None) -> str:
        return json.dumps({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": MODEL_ID,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })


async def _answer(turn: Callable[[], Iterator[TurnEvent]], chat: ChatModel,
                  completion: Completion) -> dict[str, Any]:
    """The whole turn as one ``chat.completion``; a turn that failed before any text is the error it gave."""
    events = await answered(lambda: list(turn()), "this chat completion")
    text = "".join(e.text for e in events if isinstance(e, Delta))
    errors = [e for e in events if isinstance(e, TurnError)]
    done = next((e for e in events if isinstance(e, Done)), None)
    if errors and (not text or done is None):
        failed = errors[0]
        raise ModelUnavailable(failed.text) if failed.status == 503 else _status_error(failed.text, failed.status)
    assert done is not None, "a turn without an error ends with done"
    completion_tokens = await run_in_threadpool(chat.count_tokens, text)
    prompt_tokens = done.context_tokens
    return {
        "id": completion.id, "object": "chat.completion", "created": completion.created, "model": MODEL_ID,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": done.finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


async def _chunks(turn: Callable[[], Iterator[TurnEvent]], completion: Completion) -> AsyncIterator[str]:
    """The turn as OpenAI's chunks: role first, content deltas, the finish; an error as an error chunk; then
    ``[DONE]``, whatever happened."""
    yield completion.chunk({"role": "assistant", "content": ""})
    failed = False
    try:
        async for event in stream_in_thread(turn):
            assert isinstance(event, TurnEvent)
            if isinstance(event, Delta):
                yield completion.chunk({"content": event.text})
            elif isinstance(event, TurnError):
                failed = True
                yield json.dumps({"error": {"message": event.text, "type": "ModelUnavailable", "code": event.status}})
            elif isinstance(event, Done) and not failed:
                yield completion.chunk({}, event.finish_reason)
    except Exception as exc:  # the stream still ends with an error and [DONE]
        failure, status = describe_failure(exc, "this chat completion")
        yield json.dumps({"error": {"message": failure, "type": type(exc).__name__ if isinstance(
            exc, LyraError) else "InternalError", "code": status}})
    yield "[DONE]"


def _status_error(message: str, status: int) -> LyraError:
    """A turn's error event as an exception with the status the turn gave it."""
    error = LyraError(message)
    error.status_code = status
    return error
