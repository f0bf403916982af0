"""Logging in and out, people, personal API tokens and the household memory (``/api/auth``, ``/api/me``,
``/api/people``, ``/api/tokens``, ``/api/household``).

The owner manages people, never their minds: adding, resetting a password and
removing someone go through here, but nothing here reads another person's
conversations; a removal's confirmation shows counts only. A login is refused
after too many failures (429 with ``Retry-After``), kept in ``household.db`` so
a restart does not reset it; how they are counted, and why a device that logged
in before is never refused for someone else's, is ``web/logins.py``. The login
cookie is ``HttpOnly`` (no script reads it) and ``SameSite=Strict`` (no other
site's page sends it), and ``Secure`` behind https.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..passwords import check_secret, hash_secret
from ..store.household import DEVICE_DAYS, SESSION_DAYS, Person
from . import cookies
from .deps import app_state
from .logins import LoginFailed, check_login
from .people import Forbidden, bound_person, login_free, not_by_token, require_owner

router = APIRouter(prefix="/api")


class Login(BaseModel):
    name: str = Field(max_length=200)
    secret: str = Field(max_length=1024)


class Secret(BaseModel):
    secret: str = Field(max_length=1024)


class OwnSecret(BaseModel):
    secret: str = Field(max_length=1024)
    current: str | None = Field(None, max_length=1024, description="the password (or PIN) it replaces, if any")


class NewPerson(BaseModel):
    name: str = Field(max_length=200)
    kind: Literal["adult", "child"] = "adult"
    secret: str = Field(max_length=1024)


class Rename(BaseModel):
    name: str = Field(max_length=200)


class NewToken(BaseModel):
    name: str = Field("token", max_length=200)


class SharedEdit(BaseModel):
    content: str = Field(max_length=20_000)


def _brief(person: Person) -> dict[str, Any]:
    return {"id": person.id, "name": person.name, "kind": person.kind, "owner": person.owner}


# -- logging in -------------------------------------------------------------------------------------------------
@router.get("/auth/state")
async def auth_state(request: Request) -> dict[str, Any]:
    """Open: whether this browser must log in, and as whom it is logged in (if it is)."""
    state = app_state(request)

    def look() -> dict[str, Any]:
        session = cookies.read(request.headers, cookies.SESSION)
        person = state.household.session_person(session) if session else None
        free = login_free(state)
        if person is None and free:
            person = state.household.owner()
        return {"login_required": not free, "person": None if person is None else _brief(person),
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
    device = await run_in_threadpool(state.household.remember_device, device, person.id)
    cookies.put(request, response, cookies.DEVICE, device, DEVICE_DAYS * 86400)
    _log_in(request, response, await run_in_threadpool(state.household.open_session, person.id))
    return {"person": _brief(person)}


@router.post("/auth/logout")
async def logout(request: Request, response: Response) -> dict[str, Any]:
    session = cookies.read(request.headers, cookies.SESSION)
    if session:
        await run_in_threadpool(app_state(request).household.end_session, session)
    cookies.end(request, response, cookies.SESSION)
    return {}


@router.post("/auth/logout-everywhere")
async def logout_everywhere(request: Request, response: Response) -> dict[str, Any]:
    """Every login session of this person ends, on every device (this one too)."""
    ended = await run_in_threadpool(app_state(request).household.end_all_sessions, bound_person().id)
    cookies.end(request, response, cookies.SESSION)
    return {"ended": ended}


# -- oneself ----------------------------------------------------------------------------------------------------
@router.get("/me")
async def me(request: Request) -> dict[str, Any]:
    state = app_state(request)
    person = await run_in_threadpool(state.household.person, bound_person().id)
    return {**person.view(), "login_free": await run_in_threadpool(login_free, state)}


@router.put("/me/secret", dependencies=[Depends(not_by_token)])
async def my_secret(body: OwnSecret, request: Request, response: Response) -> dict[str, Any]:
    """Choose one's own password (or a child's PIN): every login session of theirs on other devices ends, and
    this browser stays logged in (from now on a login is asked, here too, once the cookie ends). Replacing one
    asks for it (``current``), checked as a login is, limits included: a stolen cookie cannot lock its person
    out, nor guess their password here faster than at the login."""
    person = bound_person()
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
    await run_in_threadpool(household.set_secret, person.id, hash_secret(body.secret))
    _log_in(request, response, await run_in_threadpool(household.open_session, person.id))
    return {}


def _log_in(request: Request, response: Response, raw: str) -> None:
    cookies.put(request, response, cookies.SESSION, raw, SESSION_DAYS * 86400)


@router.put("/me/name", dependencies=[Depends(not_by_token)])
async def my_name(body: Rename, request: Request) -> dict[str, Any]:
    person = await run_in_threadpool(app_state(request).household.rename, bound_person().id, body.name)
    return {"person": person.view()}


# -- people (the owner) -----------------------------------------------------------------------------------------
@router.get("/people", dependencies=[Depends(not_by_token)])
async def people(request: Request) -> dict[str, Any]:
    require_owner(bound_person())
    everyone = await run_in_threadpool(app_state(request).household.people)
    return {"people": [p.view() for p in everyone]}


@router.post("/people", dependencies=[Depends(not_by_token)])
async def add_person(body: NewPerson, request: Request) -> dict[str, Any]:
    owner = bound_person()
    require_owner(owner)
    state = app_state(request)
    await run_in_threadpool(state.household.can_add)  # before the slow hash
    check_secret(body.kind, body.secret)
    person = await run_in_threadpool(state.household.add, body.name, body.kind, hash_secret(body.secret))
    return {"person": person.view()}


@router.put("/people/{person_id}/secret", dependencies=[Depends(not_by_token)])
async def reset_secret(person_id: str, body: Secret, request: Request) -> dict[str, Any]:
    require_owner(bound_person())
    household = app_state(request).household
    person = await run_in_threadpool(household.person, person_id)
    check_secret(person.kind, body.secret)
    await run_in_threadpool(household.set_secret, person.id, hash_secret(body.secret))
    return {}


@router.get("/people/{person_id}/removal", dependencies=[Depends(not_by_token)])
async def removal(person_id: str, request: Request) -> dict[str, Any]:
    """What removing a person would forget, in numbers only (the owner never reads their memory)."""
    require_owner(bound_person())
    state = app_state(request)
    person = await run_in_threadpool(state.household.person, person_id)
    held = await run_in_threadpool(state.held, person)
    tokens = await run_in_threadpool(state.household.tokens, person.id)
    theirs, after = await run_in_threadpool(state.household.shared_by, person.id)
    return {"person": person.view(), "conversations": held.conversations, "messages": held.messages,
            "memories": held.memories, "tokens": len(tokens), "household_versions": theirs,
            "household_versions_after": after}


@router.delete("/people/{person_id}", dependencies=[Depends(not_by_token)])
async def remove_person(person_id: str, request: Request) -> dict[str, Any]:
    """Forget everything the person said and everything built from it, then their folder and their login."""
    require_owner(bound_person())
    await run_in_threadpool(app_state(request).remove_person, person_id)  # never the owner (begin_removal)
    return {"removed": person_id}


# -- personal API tokens ----------------------------------------------------------------------------------------
@router.get("/tokens")
async def tokens(request: Request) -> dict[str, Any]:
    mine = await run_in_threadpool(app_state(request).household.tokens, bound_person().id)
    return {"tokens": [_token(t) for t in mine]}


@router.post("/tokens", dependencies=[Depends(not_by_token)])
async def new_token(body: NewToken, request: Request) -> dict[str, Any]:
    """A token acting as this person for the OpenAI route, `lyra mcp` and scripts: shown now, never again."""
    token, raw = await run_in_threadpool(app_state(request).household.create_token, bound_person().id, body.name)
    return {"token": _token(token), "secret": raw}


@router.delete("/tokens/{token_id}")  # a token may revoke itself: that only ever takes access away
async def revoke_token(token_id: int, request: Request) -> dict[str, Any]:
    await run_in_threadpool(app_state(request).household.revoke_token, bound_person().id, token_id)
    return {}


def _token(token: Any) -> dict[str, Any]:
    return {"id": token.id, "name": token.name, "created_at": token.created_at, "last_used_at": token.last_used_at}


# -- the household memory ---------------------------------------------------------------------------------------
@router.get("/household/memory")
async def shared_memory(request: Request) -> dict[str, Any]:
    person = bound_person()
    version = await run_in_threadpool(app_state(request).household.shared_memory)
    return {"memory": None if version is None else _version(version), "can_edit": person.kind == "adult"}


@router.put("/household/memory")
async def edit_shared_memory(body: SharedEdit, request: Request) -> dict[str, Any]:
    """A new version of what everyone's Lyra knows (adults only); each earlier version is kept."""
    person = bound_person()
    if person.kind != "adult":
        raise Forbidden("only adults edit the household memory", hint="ask a grown-up of the household")
    version = await run_in_threadpool(app_state(request).household.write_shared, body.content.strip(), person)
    return {"memory": _version(version)}


@router.get("/household/memory/history")
async def shared_history(request: Request) -> dict[str, Any]:
    bound_person()
    versions = await run_in_threadpool(app_state(request).household.shared_history)
    return {"versions": [_version(v) for v in versions]}


def _version(version: Any) -> dict[str, Any]:
    return {"id": version.id, "content": version.content, "author": version.author,
            "created_at": version.created_at}

