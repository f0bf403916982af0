"""Binding every request to one person before any route runs: who is asking, and whose memory they reach.

Who is asking, in this order:

1. ``Authorization: Bearer``: the configured ``server.api_token`` is the owner
   (their bootstrap credential); a personal token (``lyra_...``) is its person;
   anything else is refused, never ignored, except where no login is asked
   (below): an OpenAI client always sends some key.
2. The ``lyra_session`` cookie of a login (``HttpOnly``, ``SameSite=Strict``).
   The page also says whose page it is (``X-Lyra-Person``): a tab opened for
   one person is refused (409) once another has logged in on the browser.
3. Nobody: with exactly one person, a loopback bind and no API token, that
   person (today's single-person Lyra asks for no login, also once its owner
   chose the password they need before adding someone, and again once
   everyone else was removed); otherwise 401.

Who was found is written into the request itself (its ASGI scope, ``Bound``
under ``PERSON_KEY``), never into hidden state: a route is handed that person
with their own runtime as a dependency (``web/deps.py``, ``AsPerson``), so it
reads one person's store and no other, and there is no ``WHERE person`` for a
route to forget. A path that needs nobody (``open_paths.py``) is bound to no one, and a
route there that asks for a person fails loudly (``Unbound``) instead of
reaching someone's memory. Only the order of turns at a shared model follows
the person as a context variable (``llm/fair.py``: ``ASKER``), which decides who
waits, never whose memory is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from ..config import is_loopback
from ..errors import LyraError
from ..llm.fair import ASKER
from ..people import is_bootstrap_token
from ..store.household import Person
from .cookies import SESSION, TwoCookies
from .cookies import read as read_cookie
from .guard import refusal
from .open_paths import needs_no_login
from .while_logged_in import serve_while

if TYPE_CHECKING:
    from .state import AppState

COOKIE = SESSION  # the login cookie's name on a plain-http page (web/cookies.py: ``__Host-`` where it can be)
# Whose page sent a request (static/api.js): a tab opened for Ada must not act as Ben because Ben logged in on
# this browser in another tab since (the cookie is the browser's, not the tab's): such a request is refused.
PAGE_HEADER = "x-lyra-person"
PERSON_KEY = "lyra.person"  # the ASGI scope's key for who a request acts as (``Bound``)


@dataclass(frozen=True)
class Bound:
    """Who a request acts as, as the login found them."""

    person: Person
    # A personal API token (not a login, nor the owner's configured api_token): it may use the memory but never
    # change how its person logs in (``deps.not_by_token``), so a leaked token cannot lock them out or outlive
    # its revocation by minting another.
    by_token: bool


class Unbound(LyraError):
    """Something asked for a person's memory where no person is bound (a route that should not need one)."""

    status_code = 500


class Forbidden(LyraError):
    status_code = 403


class Refused(LyraError):
    status_code = 401

    def __init__(self, kind: str, message: str, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.kind = kind


def identify(state: AppState, headers: Mapping[str, str]) -> Person | None:
    """The person a request acts as, or None where none is needed to decide (the caller refuses); raises
    ``Refused`` for a credential that is wrong, revoked or expired."""
    household = state.household
    auth = headers.get("authorization", "")
    if auth:
        if is_api_token(state, auth):
            return household.owner()
        given = auth.removeprefix("Bearer ").strip()
        person = household.tokens.person_of(given)
        if person is None and login_free(state):
            return household.owner()  # alone on loopback: an OpenAI client's placeholder key asks for no one
        if person is None:
            raise Refused("unauthorized", "missing, wrong or revoked API token",
                          "send 'Authorization: Bearer <token>': a personal token from Tokens, or "
                          "server.api_token (the owner's)")
        return person
    session = read_cookie(headers, SESSION)  # TwoCookies: one was planted (web/cookies.py)
    if session:
        person = household.logins.person_of(session)
        if person is not None:
            return person
        # A login that ended (logged out everywhere, a reset, a removal) is said so even when alone, so that a
        # removed person's browser does not become the owner's; unless no password could answer it.
        owner = household.owner()
        if not (login_free(state) and owner is not None and not owner.has_secret):
            raise Refused("login_required", "your login has ended", "log in again")
    if login_free(state):
        return household.owner()
    if state.settings.server.api_token is not None and len(household.people()) == 1:
        raise Refused("unauthorized", "missing or wrong API token",
                      "send 'Authorization: Bearer <server.api_token>'")
    raise Refused("login_required", "log in first", "POST /api/auth/login with your name and password, or send "
                  "'Authorization: Bearer <token>' with a personal token")


def is_api_token(state: AppState, authorization: str) -> bool:
    """Whether an ``Authorization`` header carries the configured ``server.api_token`` (the owner's)."""
    return is_bootstrap_token(state.settings, authorization.removeprefix("Bearer ").strip())


def login_free(state: AppState) -> bool:
    """A single person on loopback without an API token logs in to nothing: a one-person Lyra asks for no password."""
    if state.settings.server.api_token is not None or not is_loopback(state.bind_host):
        return False
    return len(state.household.people()) == 1


class PersonBinding:
    """ASGI middleware: every request but the open ones acts as one person, or is refused (401)."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if needs_no_login(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        try:
            person = await run_in_threadpool(identify, self.state, headers)
        except Refused as exc:
            await refusal(401, exc.kind, exc.message, exc.hint or "")(scope, receive, send)
            return
        except TwoCookies as exc:
            await refusal(exc.status_code, "two_cookies", exc.message, exc.hint or "")(scope, receive, send)
            return
        if person is None:  # an owner row missing: a household that was never opened by this server
            await refusal(401, "login_required", "log in first", "")(scope, receive, send)
            return
        claimed = headers.get(PAGE_HEADER)
        if claimed is not None and claimed != person.id:
            answer = refusal(409, "PersonChanged", "this page was opened for someone else: another person has "
                             "logged in on this browser since", "reload the page")
            answer.headers["X-Lyra-Person-Changed"] = "1"
            await answer(scope, receive, send)
            return
        auth = headers.get("authorization", "")
        scope[PERSON_KEY] = Bound(person, by_token=bool(auth) and not is_api_token(self.state, auth))
        asker = ASKER.set(person.id)  # whose turn it is at a shared model (llm/fair.py); never whose memory
        try:
            if scope["type"] == "http":  # a stream ends with the login or token it was opened with
                await serve_while(self.app, scope, receive, send, lambda: self.still(headers, person.id))
            else:
                await self.app(scope, receive, send)
        finally:
            ASKER.reset(asker)

    def still(self, headers: Mapping[str, str], person_id: str) -> bool:
        """Whether the credential a request came with still acts as ``person_id`` (``while_logged_in``)."""
        try:
            person = identify(self.state, headers)
        except (Refused, TwoCookies):
            return False
        return person is not None and person.id == person_id


def require_owner(person: Person) -> None:
    if not person.owner:
        raise Forbidden("only the household's owner may do this", hint="ask the owner")
