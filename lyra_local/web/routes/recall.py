"""``/api/recall``: recall as the companion does it, one tier with every knob; who said each hit (``said_by``).

The search page's ``/api/search`` (every kind, only what matches) is ``routes/search.py``."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...memory import RecallQuery
from ...memory.speakers import who_said
from ...store.records import Hit
from ...transfer.timestamps import time_bound
from ..deps import AsPerson
from ..params import RowId

router = APIRouter(prefix="/api")


class RecallParams(BaseModel):
    """``/api/recall``'s query string: what ``RecallQuery`` takes, by its names on the URL."""

    q: str = Field(min_length=1, max_length=4000, description="what to look for")
    k: int = Field(10, ge=1, le=100)
    tier: Literal["exchange", "gist", "digest"] = "exchange"
    session_id: RowId | None = None
    exclude_session_id: RowId | None = None
    since: str | None = None
    until: str | None = None
    role: Literal["user", "assistant"] | None = None
    recency: float = Field(0.0, ge=0.0, le=1.0)
    context: int = Field(0, ge=0, le=5)
    mode: Literal["hybrid", "dense", "bm25"] = "hybrid"

    def query(self) -> RecallQuery:
        return RecallQuery(self.q, k=self.k, tier=self.tier, session_id=self.session_id,
                           exclude_session_id=self.exclude_session_id, since=time_bound(self.since, "since"),
                           until=time_bound(self.until, "until"), role=self.role, recency_weight=self.recency,
                           neighbours=self.context, mode=self.mode)


@router.get("/recall")
async def recall(you: AsPerson, params: Annotated[RecallParams, Query()]) -> JSONResponse:
    """The hits as JSON built here, not by FastAPI's encoder: ``asdict`` deep-copies each hit and the encoder
    walks every value again, a millisecond or more of a recall's ~20 (docs/benchmarks.md)."""
    memory = you.memory
    hits = await run_in_threadpool(memory.recall, params.query())
    return JSONResponse({"query": params.q, "hits": [hit_json(h, who_said(h.role, h.author, memory.known))
                                                     for h in hits]})


def hit_json(hit: Hit, said_by: dict[str, str | None]) -> dict[str, Any]:
    """One hit as plain JSON values: each field of ``Hit`` by its name, then who said it."""
    out: dict[str, Any] = {f.name: getattr(hit, f.name) for f in _HIT_FIELDS}
    out["score"] = float(hit.score)
    out["stages"] = list(hit.stages)
    out["context"] = [dataclasses.asdict(turn) for turn in hit.context]
    out["said_by"] = said_by
    return out


_HIT_FIELDS = dataclasses.fields(Hit)
