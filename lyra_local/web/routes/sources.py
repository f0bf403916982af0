"""Derived memory the person can see through and correct: sources of every memory, edits and deletions.

``GET /api/sources/{kind}/{id}`` shows what a gist, fact, digest or arc was
built from (the turns, with their dates and conversations). Edits are kept as
the person's own statements and the dream never overwrites them; a deletion
sticks until the memory's sources change (``store/corrections.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from ..mind.grounding import cited
from ..mind.narrative import narrative_basis
from .deps import app_state
from .params import RowId

router = APIRouter(prefix="/api")
Kind = Literal["gist", "fact", "digest", "narrative", "self_state", "world"]


class TextEdit(BaseModel):
    content: str = Field(min_length=1, max_length=20_000)


class SelfEdit(BaseModel):
    mood: str | None = Field(None, min_length=1, max_length=30)
    self_narrative: str | None = Field(None, max_length=2_000)
    reflections: list[str] | None = Field(None, max_length=10)


@router.get("/sources/{kind}/{item_id}")
def sources(kind: Kind, item_id: RowId, request: Request) -> dict[str, Any]:
    """The turns behind a memory; for one that quotes (an extractive gist), the turns it quotes."""
    corrections = app_state(request).store.corrections
    turns = corrections.sources(kind, item_id)
    shown = cited(corrections.content(kind, item_id), turns)
    return {"kind": kind, "id": item_id, "total": len(turns), "turns": shown}


@router.put("/sessions/{session_id}/gist")
def edit_gist(session_id: RowId, body: TextEdit, request: Request) -> dict[str, Any]:
    state = app_state(request)
    state.store.sessions.get(session_id)  # 404 for an unknown session
    vector = state.memory.embedder.embed([body.content])[0]
    gist = state.store.corrections.edit_gist(session_id, body.content.strip(), vector, state.memory.embedder.name)
    return {"gist": dataclasses.asdict(gist)}


@router.delete("/sessions/{session_id}/gist")
def delete_gist(session_id: RowId, request: Request) -> dict[str, Any]:
    return {"deleted": app_state(request).store.corrections.delete_gist(session_id)}


@router.put("/digests/{digest_id}")
def edit_digest(digest_id: RowId, body: TextEdit, request: Request) -> dict[str, Any]:
    state = app_state(request)
    vector = state.memory.embedder.embed([body.content])[0]
    digest = state.store.corrections.edit_digest(digest_id, body.content.strip(), vector,
                                                 state.memory.embedder.name)
    return {"digest": dataclasses.asdict(digest)}


@router.delete("/digests/{digest_id}")
def delete_digest(digest_id: RowId, request: Request) -> dict[str, Any]:
    return {"deleted": app_state(request).store.corrections.delete_digest(digest_id)}


@router.put("/narrative")
def edit_narrative(body: TextEdit, request: Request) -> dict[str, Any]:
    store = app_state(request).store
    store.corrections.edit_narrative(body.content.strip())
    return {"narrative": store.derived.current_narrative()}


@router.delete("/narrative")
def delete_narrative(request: Request) -> dict[str, Any]:
    store = app_state(request).store
    return {"deleted": store.corrections.delete_narrative(narrative_basis(store))}


@router.patch("/self")
def edit_self(body: SelfEdit, request: Request) -> dict[str, Any]:
    store = app_state(request).store
    changes = body.model_dump(exclude_none=True)
    if changes:
        store.corrections.edit_self_state(changes)
    return {"self_state": store.derived.self_state()}
