"""``/api/me``: oneself: who is logged in, one's own password (or PIN) and one's name."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...passwords import check_secret, hash_secret
from .. import cookies
from ..auth import Forbidden, login_free
from ..deps import AsPerson, app_state, not_by_token
from ..logins import LoginFailed, check_login
from .auth import log_in

router = APIRouter(prefix="/api")


class OwnSecret(BaseModel):
    secret: str = Field(max_length=1024)
    current: str | None = Field(None, max_length=1024, description="the password (or PIN) it replaces, if any")


class Rename(BaseModel):
    name: str = Field(max_length=200)


@router.get("/me")
async def me(request: Request, you: AsPerson) -> dict[str, Any]:
    state = app_state(request)
    person = await run_in_threadpool(state.household.person, you.id)
    return {**person.view(), "login_free": await run_in_threadpool(login_free, state)}


@router.put("/me/secret", dependencies=[Depends(not_by_token)])
async def my_secret(body: OwnSecret, request: Request, you: AsPerson, response: Response) -> dict[str, Any]:
    """Choose one's own password (or a child's PIN): every login session of theirs on other devices ends, and
    this browser stays logged in (from now on a login is asked, here too, once the cookie ends). Replacing one
    asks for it (``current``), checked as a login is, limits included: a stolen cookie cannot lock its person
    out, nor guess their password here faster than at the login."""
    person = you.person
    check_secret(person.kind, body.secret)
    household = app_state(request).household
    if person.has_secret:
        if not body.current:
            raise Forbidden("your current password (or PIN) is needed to choose a new one",
                            hint="send it as \"current\"; forgotten, the owner resets it (People)")
        address = request.client.host if request.client else "unknown"
        device = cookies.read(request.headers, cookies.DEVICE)
        try:
            await run_in_threadpool(check_login, household, person.name, body.current, address, device)
        except LoginFailed:
            raise Forbidden("that is not your current password (or PIN): nothing was changed",
                            hint="forgotten, the owner resets it (People)") from None
    await run_in_threadpool(household.logins.set_secret, person.id, hash_secret(body.secret))
    log_in(request, response, await run_in_threadpool(household.logins.open, person.id))
    return {}


@router.put("/me/name", dependencies=[Depends(not_by_token)])
async def my_name(body: Rename, request: Request, you: AsPerson) -> dict[str, Any]:
    person = await run_in_threadpool(app_state(request).household.rename, you.id, body.name)
    return {"person": person.view()}
