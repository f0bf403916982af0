"""``/api/digests``: the dream's day, week and month digests, read and corrected by the person (an edit is kept
as their own statement, a deletion sticks until the digest's sources change: ``store/corrections.py``)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ..deps import AsPerson
from ..params import RowId, TextEdit

router = APIRouter(prefix="/api")


@router.get("/digests")
async def digests(you: AsPerson, granularity: Literal["day", "week", "month"] | None = None) -> dict[str, Any]:
    rows = await run_in_threadpool(you.store.derived.digests, granularity)
    return {"digests": [dataclasses.asdict(d) for d in rows]}


@router.put("/digests/{digest_id}")
def edit_digest(digest_id: RowId, body: TextEdit, you: AsPerson) -> dict[str, Any]:
    vector = you.memory.embedder.embed([body.content])[0]
    digest = you.store.corrections.edit_digest(digest_id, body.content.strip(), vector, you.memory.embedder.name)
    return {"digest": dataclasses.asdict(digest)}


@router.delete("/digests/{digest_id}")
def delete_digest(digest_id: RowId, you: AsPerson) -> dict[str, Any]:
    return {"deleted": you.store.corrections.delete_digest(digest_id)}
