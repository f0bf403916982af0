"""``/api/profile``: the facts the dream learnt about the person, as cards, and the person's own corrections."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...errors import BadRequest
from ...memory.keys import normalize_key
from ...mind.facts.about import cards
from ..deps import AsPerson
from ..params import RowId

router = APIRouter(prefix="/api")


class FactEdit(BaseModel):
    key: str = Field(min_length=1, max_length=80)
    value: str = Field(min_length=1, max_length=500)


@router.get("/profile")
async def profile(you: AsPerson) -> dict[str, Any]:
    """The facts as cards (where each was said, confirmed, new since the person last looked)."""
    found, seen = await run_in_threadpool(cards, you.store)
    return {"facts": [dataclasses.asdict(c) for c in found], "seen_at": seen}


@router.post("/profile/seen")
async def profile_seen(you: AsPerson) -> dict[str, Any]:
    """The person has looked: what the dream learnt until now is no longer new."""
    return {"seen_at": await run_in_threadpool(you.store.derived.mark_profile_seen)}


@router.post("/profile/facts/{fact_id}/confirm")
async def confirm_fact(fact_id: RowId, you: AsPerson) -> dict[str, Any]:
    """"That's right": the fact becomes the person's statement; the dream never changes it."""
    fact = await run_in_threadpool(you.store.corrections.confirm_fact, fact_id)
    return {"fact": dataclasses.asdict(fact)}


@router.post("/profile/facts/{fact_id}/reject")
async def reject_fact(fact_id: RowId, you: AsPerson) -> dict[str, Any]:
    """"That's wrong": the fact goes and is not learnt again from what was said so far."""
    return {"deleted": await run_in_threadpool(you.store.corrections.reject_fact, fact_id)}


@router.get("/profile/history")
async def profile_history(you: AsPerson, key: str) -> dict[str, Any]:
    facts = await run_in_threadpool(you.store.derived.fact_history, normalize_key(key))
    return {"key": normalize_key(key), "history": [dataclasses.asdict(f) for f in facts]}


@router.put("/profile")
async def set_fact(body: FactEdit, you: AsPerson) -> dict[str, Any]:
    """The user's own correction: it supersedes the current value, which stays in history."""
    key = normalize_key(body.key)
    if not key:
        raise BadRequest("a fact needs a key made of letters or digits")
    fact = await run_in_threadpool(you.store.derived.set_fact, key, body.value.strip(),
                                   author="user")
    return dataclasses.asdict(fact)


@router.delete("/profile/{key}")
async def retire_fact(key: str, you: AsPerson) -> dict[str, Any]:
    retired = await run_in_threadpool(you.store.derived.delete_fact, normalize_key(key))
    return {"retired": retired}
