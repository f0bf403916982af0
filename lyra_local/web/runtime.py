"""One generation of models with what the server builds on them, and the leases that keep it open.

A reload swaps in a new ``Runtime``; the old one serves the work already
started on it (a streamed turn, a recall, a dream pass, an import) and closes
when the last of those ends, never under it. Each HTTP request holds a lease
for its whole life, streamed body included (``LeaseMiddleware``), and the app
state resolves ``models``/``memory``/``companion`` to the request's leased
runtime through a context variable, so one request never mixes two
generations. This module must not decide when to reload: ``AppState`` does.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from ..companion import Companion
from ..config import Settings
from ..llm.registry import Models
from ..memory import Memory
from ..mind import Dreamer
from ..store import Store

if TYPE_CHECKING:
    from .app import AppState

LEASED: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar("lyra_leased_runtime", default=None)
UNLEASED_PATHS = ("/health", "/static/")  # answered without a model


class Runtime:
    """Models, and the memory and companion built on them, for one configuration."""

    def __init__(self, models: Models, store: Store, settings: Settings) -> None:
        self.models = models
        self.store = store
        self.settings = settings
        self._lock = threading.Lock()
        self._memory: Memory | None = None
        self._companion: Companion | None = None
        models.add_close_hook(self._close_companion)  # its background embedding must end before the models

    @property
    def memory(self) -> Memory:
        with self._lock:
            if self._memory is None:
                self._memory = Memory(self.store, self.models.embed, zone=self.settings.companion.zone)
            return self._memory

    @property
    def companion(self) -> Companion:
        memory = self.memory
        with self._lock:
            if self._companion is None:
                self._companion = Companion(memory, self.models.chat, self.settings.companion)
            return self._companion

    def last_chat(self) -> float | None:
        return None if self._companion is None else self._companion.last_turn_at

    def hold(self) -> Callable[[], None]:
        """Take a lease now for work that outlives the request (an import): call the result once, when done."""
        self.models.acquire()
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                released.set()
                self.models.release()

        return release

    def _close_companion(self) -> None:
        with self._lock:
            companion, self._companion = self._companion, None
        if companion is not None:
            companion.close()


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
        if scope["type"] not in ("http", "websocket") or path.startswith(UNLEASED_PATHS):
            await self.app(scope, receive, send)
            return
        runtime = self.state.acquire_current()
        token = LEASED.set(runtime)
        try:
            await self.app(scope, receive, send)
        finally:
            LEASED.reset(token)
            runtime.models.release()  # closes a retired runtime's models in the background
