"""The consolidated memory over HTTP: dream status and live log, profile, gists, digests, narrative, self-state.

The live log is read from the store, so it shows passes of every process
(the server's scheduler and standalone ``lyra dream`` workers alike). Each
event carries ``says``, the sentence a person reads (mind/dream_sentences.py),
with the conversations' titles as they are now: a forgotten one is never named.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ..errors import BadRequest, LyraError
from ..memory.keys import normalize_key
from ..mind.about import cards
from ..mind.backlog import sense
from ..mind.dream_log import told
from ..mind.dream_sentences import pass_summary
from ..mind.drives import Backlog, compute_drives
from .deps import app_state
from .params import EventId, RowId
from .people import bound_person

if TYPE_CHECKING:
    from .app import AppState

router = APIRouter(prefix="/api")
POLL_S = 0.5
TAIL = 50


class FactEdit(BaseModel):
    key: str = Field(min_length=1, max_length=80)
    value: str = Field(min_length=1, max_length=500)


def sensed(state: AppState) -> Backlog:
    """The backlog now, which the drives are computed from: the one reading of them that every route shows
    (the Memory and the Dream panels once disagreed: one read the last pass's record, the other the backlog)."""
    return sense(state.store, state.settings.dream, zone=state.settings.companion.zone)


@router.get("/dream")
async def dream_status(request: Request) -> dict[str, Any]:
    """Backlog and drives now, the last finished pass, and whether a pass is running."""
    state = app_state(request)

    def read() -> dict[str, Any]:
        backlog = sensed(state)
        last = state.store.dreams.last()
        mine = bool(state.dreams and state.dreams.running_for(bound_person().id))
        return {"running": mine or bool(state.store.dreams.running()),
                "backlog": backlog.summary(), "drives": compute_drives(backlog),
                "last_pass": last, "last_pass_says": pass_summary(last.get("actions") or []) if last else None,
                "schedule": {"enabled": state.settings.dream.enabled, "interval_s": state.settings.dream.interval_s,
                             "quiet_hours": state.settings.dream.quiet_hours, "idle_s": state.settings.dream.idle_s}}

    return await run_in_threadpool(read)


@router.post("/dream", status_code=202)
async def dream_now(request: Request, force: bool = True) -> dict[str, Any]:
    """Start a pass now; its progress arrives on ``/api/dream/events``."""
    state = app_state(request)
    if state.dreams is None:
        raise LyraError("the dream scheduler is not running", hint="this happens only while the server starts")
    started = state.dreams.run_now(bound_person().id, force=force)
    return {"started": started, "reason": None if started else "a pass is already running"}


@router.get("/dream/events", response_model=None)
async def dream_events(request: Request, after: EventId | None = None, follow: bool = True,
                       limit: int = Query(200, ge=1, le=1000)) -> Any:
    """The consolidation log after ``after`` (default: its last 50 events): JSON, or with ``follow`` an
    SSE stream that stays open."""
    store = app_state(request).store
    if after is None:
        after = max(0, await run_in_threadpool(store.coord.last_event_id) - TAIL)

    def read(since: int) -> list[dict[str, Any]]:
        return told(store, store.coord.events(since, limit))

    if not follow:
        return {"events": await run_in_threadpool(read, after)}

    async def stream() -> AsyncIterator[dict[str, str]]:
        last = after
        while not await request.is_disconnected():
            try:
                events = await run_in_threadpool(read, last)
            except sqlite3.ProgrammingError:  # their store closed under the stream: the person was removed
                return
            for event in events:
                last = event["id"]
                yield {"event": "dream", "id": str(last), "data": json.dumps(event)}
            await asyncio.sleep(POLL_S)

    return EventSourceResponse(stream(), ping=15)


@router.get("/profile")
async def profile(request: Request) -> dict[str, Any]:
    """The facts as cards (where each was said, confirmed, new since the person last looked)."""
    found, seen = await run_in_threadpool(cards, app_state(request).store)
    return {"facts": [dataclasses.asdict(c) for c in found], "seen_at": seen}


@router.post("/profile/seen")
async def profile_seen(request: Request) -> dict[str, Any]:
    """The person has looked: what the dream learnt until now is no longer new."""
    return {"seen_at": await run_in_threadpool(app_state(request).store.derived.mark_profile_seen)}


@router.post("/profile/facts/{fact_id}/confirm")
async def confirm_fact(fact_id: RowId, request: Request) -> dict[str, Any]:
    """"That's right": the fact becomes the person's statement; the dream never changes it."""
    fact = await run_in_threadpool(app_state(request).store.corrections.confirm_fact, fact_id)
    return {"fact": dataclasses.asdict(fact)}


@router.post("/profile/facts/{fact_id}/reject")
async def reject_fact(fact_id: RowId, request: Request) -> dict[str, Any]:
    """"That's wrong": the fact goes and is not learnt again from what was said so far."""
    return {"deleted": await run_in_threadpool(app_state(request).store.corrections.reject_fact, fact_id)}


@router.get("/profile/history")
async def profile_history(request: Request, key: str) -> dict[str, Any]:
    facts = await run_in_threadpool(app_state(request).store.derived.fact_history, normalize_key(key))
    return {"key": normalize_key(key), "history": [dataclasses.asdict(f) for f in facts]}


@router.put("/profile")
async def set_fact(body: FactEdit, request: Request) -> dict[str, Any]:
    """The user's own correction: it supersedes the current value, which stays in history."""
    key = normalize_key(body.key)
    if not key:
        raise BadRequest("a fact needs a key made of letters or digits")
    fact = await run_in_threadpool(app_state(request).store.derived.set_fact, key, body.value.strip(),
                                   author="user")
    return dataclasses.asdict(fact)


@router.delete("/profile/{key}")
async def retire_fact(key: str, request: Request) -> dict[str, Any]:
    retired = await run_in_threadpool(app_state(request).store.derived.delete_fact, normalize_key(key))
    return {"retired": retired}


@router.get("/sessions/{session_id}/gist")
async def session_gist(session_id: RowId, request: Request) -> dict[str, Any]:
    store = app_state(request).store
    await run_in_threadpool(store.sessions.get, session_id)  # 404 for an unknown session
    gist = await run_in_threadpool(store.derived.gist, session_id)
    return {"gist": None if gist is None else dataclasses.asdict(gist)}


@router.get("/digests")
async def digests(request: Request, granularity: Literal["day", "week", "month"] | None = None) -> dict[str, Any]:
    rows = await run_in_threadpool(app_state(request).store.derived.digests, granularity)
    return {"digests": [dataclasses.asdict(d) for d in rows]}


@router.get("/narrative")
async def narrative(request: Request) -> dict[str, Any]:
    current = await run_in_threadpool(app_state(request).store.derived.current_narrative)
    return {"narrative": current["content"] if current else None, "id": current["id"] if current else None,
            "method": current["method"] if current else None}


@router.get("/self")
async def self_state(request: Request) -> dict[str, Any]:
    """The companion's mood, energy, self-narrative and reflections, and its drives now (as ``/api/dream``)."""
    state = app_state(request)
    return {"self_state": await run_in_threadpool(state.store.derived.self_state),
            "drives": compute_drives(await run_in_threadpool(sensed, state))}
