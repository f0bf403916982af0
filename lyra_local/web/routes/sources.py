"""``/api/sources``: what a gist, fact, digest or arc was built from (the turns, with their dates and
conversations), so the person can see through every derived memory before correcting it.

The corrections themselves are served with their memory (``/api/sessions/{id}/gist``, ``/api/digests``,
``/api/narrative``, ``/api/self``, ``/api/world``); the dream never overwrites an edit, and a deletion sticks
until the memory's sources change (``store/corrections.py``).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter

from ...mind.grounding.checks import cited
from ..deps import AsPerson
from ..params import RowId

router = APIRouter(prefix="/api")
Kind = Literal["gist", "fact", "digest", "narrative", "self_state", "world"]


@router.get("/sources/{kind}/{item_id}")
def sources(kind: Kind, item_id: RowId, you: AsPerson) -> dict[str, Any]:
    """The turns behind a memory; for one that quotes (an extractive gist), the turns it quotes."""
    corrections = you.store.corrections
    turns = corrections.sources(kind, item_id)
    shown = cited(corrections.content(kind, item_id), turns)
    return {"kind": kind, "id": item_id, "total": len(turns), "turns": shown}
