"""What a route is handed: the app's shared state, and the person its request acts as (``AsPerson``).

The person is a FastAPI dependency, defined here once: ``you: AsPerson`` gives a route that person with their
own runtime (store, memory, companion) on the generation of models the request leased. The login middleware
(``web/auth.py``) and the lease (``web/leases.py``) write who and which generation into the request; nothing
else carries them, so a route that was not handed a person has no memory to reach, and a route on a path bound
to nobody (``open_paths.OPEN_PATHS``) that asks for one fails loudly (``Unbound``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from .auth import PERSON_KEY, Bound, Forbidden, Unbound, require_owner
from .leases import GENERATION_KEY
from .state import PersonRuntime

if TYPE_CHECKING:
    from ..runtime import Runtime
    from .state import AppState


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.lyra
    return state


def person_runtime(request: Request) -> PersonRuntime:
    """The person this request acts as, with their runtime on the request's generation of models."""
    bound = request.scope.get(PERSON_KEY)
    if not isinstance(bound, Bound):
        raise Unbound("this request is bound to no person, so it reaches no memory",
                      hint="a route that reads or writes memory must not be an open path (web/open_paths.py)")
    generation: Runtime | None = request.scope.get(GENERATION_KEY)
    return app_state(request).person_runtime(bound.person, generation, by_token=bound.by_token)


AsPerson = Annotated[PersonRuntime, Depends(person_runtime)]
"""A route's parameter for the person its request acts as: ``you: AsPerson``."""


def owner_only(you: AsPerson) -> None:
    """A route dependency: what changes the box for everyone (models, reloads) is the owner's to do."""
    require_owner(you.person)


def not_by_token(you: AsPerson) -> None:
    """A route dependency: what changes how a person logs in (passwords, tokens, people) needs a login (or the
    owner's configured api_token), never a personal token."""
    if you.by_token:
        raise Forbidden("a personal API token cannot change passwords, tokens or people",
                        hint="do it logged in, in the web UI (Tokens, People), or with `lyra tokens` / `lyra people`")
