"""The memory API: ``/api/recall`` (one tier, every knob; who said each hit: ``said_by``), ``/api/search``
(the search page: every kind, only what matches) and ``/api/timeline`` (the Memory panel's digests, folded by month)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from ..memory import RecallQuery
from ..memory.folded_timeline import timeline
from ..memory.search import Order, SearchQuery, SearchTier, search
from ..memory.speakers import who_said
from ..transfer.timestamps import time_bound
from .deps import app_state
from .params import RowId

router = APIRouter(prefix="/api")


@router.get("/recall")
async def recall(
    request: Request,
    q: str = Query(min_length=1, max_length=4000, description="what to look for"),
    k: int = Query(10, ge=1, le=100),
    tier: Literal["exchange", "gist", "digest"] = "exchange",
    session_id: RowId | None = None,
    exclude_session_id: RowId | None = None,
    since: str | None = None,
    until: str | None = None,
    role: Literal["user", "assistant"] | None = None,
    recency: float = Query(0.0, ge=0.0, le=1.0),
    context: int = Query(0, ge=0, le=5),
    mode: Literal["hybrid", "dense", "bm25"] = "hybrid",
) -> dict[str, Any]:
    query = RecallQuery(q, k=k, tier=tier, session_id=session_id, exclude_session_id=exclude_session_id,
                        since=time_bound(since, "since"), until=time_bound(until, "until"), role=role,
                        recency_weight=recency, neighbours=context, mode=mode)
    memory = app_state(request).memory
    hits = await run_in_threadpool(memory.recall, query)
    return {"query": q, "hits": [{**dataclasses.asdict(h), "said_by": who_said(h.role, h.author, memory.known)}
                                 for h in hits]}


@router.get("/search")
async def search_memory(
    request: Request,
    q: str = Query(min_length=1, max_length=4000, description="what to look for, by meaning and by words"),
    since: str | None = None,
    until: str | None = None,
    session_id: RowId | None = None,
    tier: SearchTier | None = None,
    k: int = Query(20, ge=1, le=100),
    current_session_id: Annotated[RowId | None, Query(description="the conversation the person is in: what was "
                                                      "said in it in the last minutes comes after older memories")
                                  ] = None,
    order: Annotated[Order, Query(description="best match first, or by the days a memory speaks of")] = "best",
) -> dict[str, Any]:
    """Turns, gists, facts and digests that match, each with the days it speaks of, its conversation, the turn
    to open, and a snippet with the words that matched."""
    query = SearchQuery(q, k=k, tier=tier, session_id=session_id, since=since, until=until,
                        current_session_id=current_session_id, order=order)
    found = await run_in_threadpool(search, app_state(request).memory, query)
    return {"query": q, "results": [dataclasses.asdict(f) for f in found]}


@router.get("/timeline")
async def memory_timeline(request: Request) -> dict[str, Any]:
    """The digests as the Memory panel shows them: months newest first, each with the days (and weeks) that had
    talk, and its entries, a period with one child shown as that child and each text once."""
    digests = await run_in_threadpool(app_state(request).store.derived.digests)
    return {"months": [{"month": m.month, "days": m.days, "weeks": m.weeks, "count": m.count,
                        "entries": [dataclasses.asdict(d) for d in m.entries]} for m in timeline(digests)]}
