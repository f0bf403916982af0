"""``/api/self``: the companion's mood, energy, self-narrative and reflections, and the person's edits of them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...mind.dream.drives import compute_drives
from ..deps import AsPerson, app_state
from .dream import sensed

router = APIRouter(prefix="/api")


class SelfEdit(BaseModel):
    mood: str | None = Field(None, min_length=1, max_length=30)
    self_narrative: str | None = Field(None, max_length=2_000)
    reflections: list[str] | None = Field(None, max_length=10)


@router.get("/self")
async def self_state(request: Request, you: AsPerson) -> dict[str, Any]:
    """The companion's mood, energy, self-narrative and reflections, and its drives now (as ``/api/dream``)."""
    return {"self_state": await run_in_threadpool(you.store.derived.self_state),
            "drives": compute_drives(await run_in_threadpool(sensed, you.store, app_state(request).settings))}


@router.patch("/self")
def edit_self(body: SelfEdit, you: AsPerson) -> dict[str, Any]:
    store = you.store
    changes = body.model_dump(exclude_none=True)
    if changes:
        store.corrections.edit_self_state(changes)
    return {"self_state": store.derived.self_state()}
