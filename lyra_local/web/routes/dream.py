"""``/api/dream``: the dream's status (backlog, drives, last pass), starting a pass, and its live log.

The live log is read from the store, so it shows passes of every process
(the server's scheduler and standalone ``lyra dream`` workers alike). Each
event carries ``says``, the sentence a person reads (mind/dream/sentences.py),
with the conversations' titles as they are now: a forgotten one is never named.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query, Request
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ...config import Settings
from ...errors import LyraError
from ...mind.dream.backlog import sense
from ...mind.dream.drives import Backlog, compute_drives
from ...mind.dream.log import told
from ...mind.dream.sentences import pass_summary
from ...store import Store
from ..deps import AsPerson, app_state
from ..params import EventId

router = APIRouter(prefix="/api")
POLL_S = 0.5
TAIL = 50


def sensed(store: Store, settings: Settings) -> Backlog:
    """The backlog now, which the drives are computed from: the one reading of them that every route shows
    (the Memory and the Dream panels once disagreed: one read the last pass's record, the other the backlog)."""
    return sense(store, settings.dream, zone=settings.companion.zone)


@router.get("/dream")
async def dream_status(request: Request, you: AsPerson) -> dict[str, Any]:
    """Backlog and drives now, the last finished pass, and whether a pass is running."""
    state = app_state(request)

    def read() -> dict[str, Any]:
        backlog = sensed(you.store, state.settings)
        last = you.store.dreams.last()
        mine = bool(state.dreams and state.dreams.running_for(you.id))
        return {"running": mine or bool(you.store.dreams.running()),
                "backlog": backlog.summary(), "drives": compute_drives(backlog),
                "last_pass": last, "last_pass_says": pass_summary(last.get("actions") or []) if last else None,
                "schedule": {"enabled": state.settings.dream.enabled, "interval_s": state.settings.dream.interval_s,
                             "quiet_hours": state.settings.dream.quiet_hours, "idle_s": state.settings.dream.idle_s}}

    return await run_in_threadpool(read)


@router.post("/dream", status_code=202)
async def dream_now(request: Request, you: AsPerson, force: bool = True) -> dict[str, Any]:
    """Start a pass now; its progress arrives on ``/api/dream/events``."""
    state = app_state(request)
    if state.dreams is None:
        raise LyraError("the dream scheduler is not running", hint="this happens only while the server starts")
    started = state.dreams.run_now(you.id, force=force)
    return {"started": started, "reason": None if started else "a pass is already running"}


@router.get("/dream/events", response_model=None)
async def dream_events(request: Request, you: AsPerson, after: EventId | None = None, follow: bool = True,
                       limit: int = Query(200, ge=1, le=1000)) -> Any:
    """The consolidation log after ``after`` (default: its last 50 events): JSON, or with ``follow`` an
    SSE stream that stays open."""
    store = you.store
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
