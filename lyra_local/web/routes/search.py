"""``/api/search``: the search page: turns, gists, facts and digests that match, by meaning and by words."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...memory.search import Order, SearchQuery, SearchTier, search
from ..deps import AsPerson
from ..params import RowId

router = APIRouter(prefix="/api")


class SearchParams(BaseModel):
    """``/api/search``'s query string: what ``SearchQuery`` takes."""

    q: str = Field(min_length=1, max_length=4000, description="what to look for, by meaning and by words")
    since: str | None = None
    until: str | None = None
    session_id: RowId | None = None
    tier: SearchTier | None = None
    k: int = Field(20, ge=1, le=100)
    current_session_id: RowId | None = Field(None, description="the conversation the person is in: what was said "
                                             "in it in the last minutes comes after older memories")
    order: Order = Field("best", description="best match first, or by the days a memory speaks of")

    def query(self) -> SearchQuery:
        return SearchQuery(self.q, k=self.k, tier=self.tier, session_id=self.session_id, since=self.since,
                           until=self.until, current_session_id=self.current_session_id, order=self.order)


@router.get("/search")
async def search_memory(you: AsPerson, params: Annotated[SearchParams, Query()]) -> dict[str, Any]:
    """Turns, gists, facts and digests that match, each with the days it speaks of, its conversation, the turn
    to open, and a snippet with the words that matched."""
    found = await run_in_threadpool(search, you.memory, params.query())
    return {"query": params.q, "results": [dataclasses.asdict(f) for f in found]}
