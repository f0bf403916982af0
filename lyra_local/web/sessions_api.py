"""Sessions and chat for the web UI: list, create, rename, forget, history, a streamed turn, the trace."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, field_validator
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ..companion import TurnEvent
from ..store.sessions import SessionNotFound
from ..textsafe import well_formed
from .deps import app_state
from .failures import describe_failure
from .streaming import stream_in_thread

router = APIRouter(prefix="/api")


class NewSession(BaseModel):
    name: str = Field("New chat", max_length=200)


class Rename(BaseModel):
    name: str = Field(min_length=1, max_length=200)


class ChatRequest(BaseModel):
    message: str = Field(min_length=1, max_length=200_000)

    @field_validator("message", mode="before")
    @classmethod
    def _storable(cls, value: object) -> object:
        return well_formed(value) if isinstance(value, str) else value


@router.get("/sessions")
async def list_sessions(request: Request, limit: int = 100, offset: int = 0) -> dict[str, Any]:
    store = app_state(request).store
    sessions = await run_in_threadpool(store.sessions.list, limit=limit, offset=offset)
    return {"sessions": [dataclasses.asdict(s) for s in sessions]}


@router.post("/sessions", status_code=201)
async def create_session(body: NewSession, request: Request) -> dict[str, Any]:
    session = await run_in_threadpool(app_state(request).store.sessions.create, body.name)
    return dataclasses.asdict(session)


@router.patch("/sessions/{session_id}")
async def rename_session(session_id: int, body: Rename, request: Request) -> dict[str, Any]:
    session = await run_in_threadpool(app_state(request).store.sessions.rename, session_id, body.name)
    return dataclasses.asdict(session)


@router.delete("/sessions/{session_id}")
async def forget_session(session_id: int, request: Request) -> dict[str, Any]:
    """Deleting a session forgets it: rows, vectors, full text; summaries are rebuilt without it."""
    forgotten = await run_in_threadpool(app_state(request).memory.forget_session, session_id)
    return {"forgotten": dataclasses.asdict(forgotten)}


@router.get("/sessions/{session_id}/messages")
async def history(session_id: int, request: Request, limit: int | None = None) -> dict[str, Any]:
    store = app_state(request).store
    await run_in_threadpool(store.sessions.get, session_id)
    messages = await run_in_threadpool(store.exchanges.history, session_id, limit=limit)
    return {"messages": [dataclasses.asdict(m) for m in messages]}


@router.post("/sessions/{session_id}/chat")
async def chat(session_id: int, body: ChatRequest, request: Request) -> EventSourceResponse:
    """One turn, streamed as server-sent events: stored, delta..., (notice), (error), done."""
    state = app_state(request)
    await run_in_threadpool(state.store.sessions.get, session_id)  # 404 before the stream starts
    companion = state.companion

    async def events() -> AsyncIterator[dict[str, str]]:
        # Whatever fails, the stream ends with an error event and done, and says whether the message was kept.
        stored = ended = False
        try:
            async for event in stream_in_thread(lambda: companion.turn(session_id, body.message)):
                assert isinstance(event, TurnEvent)
                stored = stored or event.type == "stored"
                ended = event.type == "done"
                yield {"event": event.type, "data": json.dumps({"text": event.text, **event.data})}
        except Exception as exc:
            text, status = describe_failure(exc, f"a turn in session {session_id}")
            kept = "your message is saved" if stored else "your message was not saved: send it again"
            yield {"event": "error", "data": json.dumps({"text": f"{text} ({kept})", "status": status})}
        if not ended:
            yield {"event": "done", "data": json.dumps({"text": "", "exchange_id": None, "finish_reason": "error"})}

    return EventSourceResponse(events(), ping=15)


@router.get("/exchanges/{exchange_id}/trace")
async def trace(exchange_id: int, request: Request) -> dict[str, Any]:
    """Which memories went into the context of this reply, and why."""
    found = await run_in_threadpool(app_state(request).companion.trace, exchange_id)
    if found is None:
        raise SessionNotFound(f"no context trace for exchange {exchange_id}",
                              hint="traces exist for assistant replies only")
    return found
