"""``/api/people``: the owner manages the household's people, never their minds.

Adding, resetting a password and removing someone go through here, but
nothing here reads another person's conversations; a removal's confirmation
shows counts only. A personal token can do none of it (``not_by_token``).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...passwords import check_secret, hash_secret
from ..auth import require_owner
from ..deps import AsPerson, app_state, not_by_token

router = APIRouter(prefix="/api")


class Secret(BaseModel):
    secret: str = Field(max_length=1024)


class NewPerson(BaseModel):
    name: str = Field(max_length=200)
    kind: Literal["adult", "child"] = "adult"
    secret: str = Field(max_length=1024)


@router.get("/people", dependencies=[Depends(not_by_token)])
async def people(request: Request, you: AsPerson) -> dict[str, Any]:
    require_owner(you.person)
    everyone = await run_in_threadpool(app_state(request).household.people)
    return {"people": [p.view() for p in everyone]}


@router.post("/people", dependencies=[Depends(not_by_token)])
async def add_person(body: NewPerson, request: Request, you: AsPerson) -> dict[str, Any]:
    require_owner(you.person)
    state = app_state(request)
    await run_in_threadpool(state.household.can_add)  # before the slow hash
    check_secret(body.kind, body.secret)
    person = await run_in_threadpool(state.household.add, body.name, body.kind, hash_secret(body.secret))
    return {"person": person.view()}


@router.put("/people/{person_id}/secret", dependencies=[Depends(not_by_token)])
async def reset_secret(person_id: str, body: Secret, request: Request, you: AsPerson) -> dict[str, Any]:
    require_owner(you.person)
    household = app_state(request).household
    person = await run_in_threadpool(household.person, person_id)
    check_secret(person.kind, body.secret)
    await run_in_threadpool(household.logins.set_secret, person.id, hash_secret(body.secret))
    return {}


@router.get("/people/{person_id}/removal", dependencies=[Depends(not_by_token)])
async def removal(person_id: str, request: Request, you: AsPerson) -> dict[str, Any]:
    """What removing a person would forget, in numbers only (the owner never reads their memory)."""
    require_owner(you.person)
    state = app_state(request)
    person = await run_in_threadpool(state.household.person, person_id)
    held = await run_in_threadpool(state.held, person)
    tokens = await run_in_threadpool(state.household.tokens.of, person.id)
    theirs, after = await run_in_threadpool(state.household.shared.by, person.id)
    return {"person": person.view(), "conversations": held.conversations, "messages": held.messages,
            "memories": held.memories, "tokens": len(tokens), "household_versions": theirs,
            "household_versions_after": after}


@router.delete("/people/{person_id}", dependencies=[Depends(not_by_token)])
async def remove_person(person_id: str, request: Request, you: AsPerson) -> dict[str, Any]:
    """Forget everything the person said and everything built from it, then their folder and their login."""
    require_owner(you.person)
    await run_in_threadpool(app_state(request).remove_person, person_id)  # never the owner (begin_removal)
    return {"removed": person_id}
