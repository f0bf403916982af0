"""``/api/narrative``: the dream's story of the person, read, edited (kept as the person's own) or deleted."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ...mind.summaries.narrative import narrative_basis
from ..deps import AsPerson
from ..params import TextEdit

router = APIRouter(prefix="/api")


@router.get("/narrative")
async def narrative(you: AsPerson) -> dict[str, Any]:
    current = await run_in_threadpool(you.store.derived.current_narrative)
    return {"narrative": current["content"] if current else None, "id": current["id"] if current else None,
            "method": current["method"] if current else None}


@router.put("/narrative")
def edit_narrative(body: TextEdit, you: AsPerson) -> dict[str, Any]:
    store = you.store
    store.corrections.edit_narrative(body.content.strip())
    return {"narrative": store.derived.current_narrative()}


@router.delete("/narrative")
def delete_narrative(you: AsPerson) -> dict[str, Any]:
    store = you.store
    return {"deleted": store.corrections.delete_narrative(narrative_basis(store))}
