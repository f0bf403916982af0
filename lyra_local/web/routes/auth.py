"""``/api/auth``: logging in and out (the login is checked in ``web/logins.py``: the same work for every name,
and failure limits per name and device that nobody can use to lock out someone else).

The login cookie is ``HttpOnly`` (no script reads it) and ``SameSite=Strict`` (no other site's page sends it),
and ``__Host-``/``Secure`` where the page allows it (``web/cookies.py``). ``state`` and ``login`` are open
paths (``web/auth.py``); the rest act for the person logged in.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...store.household import DEVICE_DAYS, SESSION_DAYS, Person
from .. import cookies
from ..auth import login_free
from ..deps import AsPerson, app_state
from ..logins import check_login

router = APIRouter(prefix="/api")


class Login(BaseModel):
    name: str = Field(max_length=200)
    secret: str = Field(max_length=1024)


def brief(person: Person) -> dict[str, Any]:
    return {"id": person.id, "name": person.name, "kind": person.kind, "owner": person.owner}


def log_in(request: Request, response: Response, raw: str) -> None:
    """Set the login cookie of a session just opened (a login, or one's own new password)."""
    cookies.put(request, response, cookies.SESSION, raw, SESSION_DAYS * 86400)


@router.get("/auth/state")
async def auth_state(request: Request) -> dict[str, Any]:
    """Open: whether this browser must log in, and as whom it is logged in (if it is)."""
    state = app_state(request)

    def look() -> dict[str, Any]:
        session = cookies.read(request.headers, cookies.SESSION)
        person = state.household.logins.person_of(session) if session else None
        free = login_free(state)
        if person is None and free:
            person = state.household.owner()
        return {"login_required": not free, "person": None if person is None else brief(person),
                "people_count": len(state.household.people())}

    return await run_in_threadpool(look)


@router.post("/auth/login")
async def login(body: Login, request: Request, response: Response) -> dict[str, Any]:
    """A name and a password (``web/logins.py``: the same work for every name, and limits per name and device);
    sets the login cookie and the device cookie that keeps this browser apart from everyone else's failures."""
    state = app_state(request)
    address = request.client.host if request.client else "unknown"  # the socket's (web/serving.py)
    device = cookies.read(request.headers, cookies.DEVICE)
    person = await run_in_threadpool(check_login, state.household, body.name, body.secret, address, device)
    device = await run_in_threadpool(state.household.devices.remember, device, person.id)
    cookies.put(request, response, cookies.DEVICE, device, DEVICE_DAYS * 86400)
    log_in(request, response, await run_in_threadpool(state.household.logins.open, person.id))
    return {"person": brief(person)}


@router.post("/auth/logout")
async def logout(request: Request, response: Response) -> dict[str, Any]:
    session = cookies.read(request.headers, cookies.SESSION)
    if session:
        await run_in_threadpool(app_state(request).household.logins.end, session)
    cookies.end(request, response, cookies.SESSION)
    return {}


@router.post("/auth/logout-everywhere")
async def logout_everywhere(request: Request, you: AsPerson, response: Response) -> dict[str, Any]:
    """Every login session of this person ends, on every device (this one too)."""
    ended = await run_in_threadpool(app_state(request).household.logins.end_all, you.id)
    cookies.end(request, response, cookies.SESSION)
    return {"ended": ended}
