"""The leases that keep one generation of models (a ``lyra_local.runtime.Runtime``) open under the server.

A reload swaps in a new ``Runtime`` (``Runtime.renewed``); the old one serves the work already
started on it (a streamed turn, a recall, a dream pass, an import) and closes
when the last of those ends, never under it. Each HTTP request holds a lease
for its whole life, streamed body included (``LeaseMiddleware``), written into
the request itself (its ASGI scope, under ``GENERATION_KEY``): the person a
route is handed (``web/deps.py``) has their runtime on that generation, so one
request never mixes two generations, nor two people. Work outside a request
holds a lease of its own (``AppState.lease``, ``hold``) and names its
generation and person. This module must not decide when to reload: ``AppState`` does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from ..mind import Dreamer
from ..runtime import Runtime
from .open_paths import needs_no_models

if TYPE_CHECKING:
    from .state import AppState

GENERATION_KEY = "lyra.generation"  # the ASGI scope's key for the generation a request leased (a ``Runtime``)


def hold(runtime: Runtime) -> Callable[[], None]:
    """Take a lease on ``runtime``'s models now for work that outlives the request (an import): call the
    result once, when done."""
    runtime.models.acquire()
    released = threading.Event()

    def release() -> None:
        if not released.is_set():
            released.set()
            runtime.models.release()

    return release


class LeasedDreamer(Dreamer):
    """A dreamer that holds its runtime's lease from creation until ``close``."""

    def __init__(self, runtime: Runtime, release: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(runtime.store, runtime.models.summary, runtime.models.embed, runtime.settings, **kwargs)
        self._release = release

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._release()


class LeaseMiddleware:
    """Every request runs on one runtime, leased until its response (streamed or not) has ended."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] not in ("http", "websocket") or needs_no_models(path):
            await self.app(scope, receive, send)
            return
        runtime = self.state.acquire_current()
        scope[GENERATION_KEY] = runtime
        try:
            await self.app(scope, receive, send)
        finally:
            runtime.models.release()  # closes a retired runtime's models in the background
