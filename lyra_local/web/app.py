"""``create_app(settings)``: builds the FastAPI app and owns the lifecycles.

Models are created here and torn down in the lifespan, never at import time.
Errors from the ``LyraError`` family become JSON with their status code, in the
OpenAI error shape so OpenAI clients show the message.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import signal
import socket
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from .. import __version__
from ..companion import Companion
from ..config import Settings, load_settings
from ..errors import LyraError
from ..llm.registry import Models
from ..memory import Memory
from ..mind import Dreamer
from ..mind.scheduler import DreamScheduler
from ..store import Store
from . import admin, coord_api, memory_api, mind_api, openai_api, sessions_api, transfer_api, ui

log = logging.getLogger(__name__)
OPEN_PATHS = {"/health"}
HEARTBEAT_S = 30.0  # `lyra restore` refuses while a server heartbeats


@dataclass
class AppState:
    """What the routes share: settings, models and memory; models are swapped on reload."""

    settings: Settings
    models: Models
    store: Store
    config_path: Path | None = None
    reload_lock: threading.Lock = field(default_factory=threading.Lock)
    _memory: Memory | None = None
    _companion: Companion | None = None
    dreams: DreamScheduler | None = None
    imports: transfer_api.ImportJobs = field(default_factory=transfer_api.ImportJobs)
    instance_id: str = field(default_factory=lambda: f"server-{socket.gethostname()}-{os.getpid()}")

    def dreamer(self, stop: threading.Event) -> Dreamer:
        """A dreamer on the current models; one instance id per server process."""
        return Dreamer(self.store, self.models.summary, self.models.embed, self.settings,
                       instance_id=f"dream-{socket.gethostname()}-{os.getpid()}", stop=stop)

    def last_chat(self) -> float | None:
        return None if self._companion is None else self._companion.last_turn_at

    @property
    def memory(self) -> Memory:
        models = self.models
        if self._memory is None or self._memory.embedder is not models.embed:
            self._memory = Memory(self.store, models.embed)
        return self._memory

    @property
    def companion(self) -> Companion:
        memory, chat = self.memory, self.models.chat
        current = self._companion
        if current is None or current.memory is not memory or current.chat is not chat:
            if current is not None:
                current.close()
            current = self._companion = Companion(memory, chat, self.settings.companion)
        return current

    def reload(self) -> None:
        """Re-read the config and swap in fresh models; in-flight requests finish on the old ones."""
        with self.reload_lock:
            settings = load_settings(self.config_path)
            old, self.models = self.models, Models(settings)
            self.settings = settings
        # close() waits for each old model's lock, i.e. for in-flight generations.
        threading.Thread(target=old.close, name="close-old-models", daemon=True).start()
        if settings.data_dir != self.store.data_dir:
            log.warning("data_dir changed to %s: that takes a restart; still using %s",
                        settings.data_dir, self.store.data_dir)
        log.info("configuration reloaded; models will load on next use")


def create_app(
    settings: Settings,
    *,
    models: Models | None = None,
    config_path: Path | None = None,
    handle_sighup: bool = False,
) -> FastAPI:
    """Build the app. Pass ``models`` to share an already built registry (tests)."""
    state = AppState(settings, models or Models(settings), Store(settings.data_dir),
                     config_path or settings.config_file)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if handle_sighup:
            _install_sighup(state)
        threading.Thread(target=_catch_up_embeddings, args=(state,), name="reembed", daemon=True).start()
        state.store.coord.register(state.instance_id, "server", "web UI and API (lyra serve)")
        state.dreams = DreamScheduler(state.dreamer, state.settings.dream, state.last_chat)
        state.dreams.every(HEARTBEAT_S, lambda: state.store.coord.heartbeat(state.instance_id))
        state.dreams.start()
        try:
            yield
        finally:
            await run_in_threadpool(state.dreams.shutdown)
            await run_in_threadpool(state.store.coord.complete, state.instance_id, "stopped")
            if state._companion is not None:
                await run_in_threadpool(state._companion.close)
            await run_in_threadpool(state.models.close)
            await run_in_threadpool(state.store.close)

    app = FastAPI(title="Lyra", version=__version__, lifespan=lifespan)
    app.state.lyra = state
    app.include_router(admin.router)
    app.include_router(openai_api.router)
    app.include_router(memory_api.router)
    app.include_router(sessions_api.router)
    app.include_router(mind_api.router)
    app.include_router(transfer_api.router)
    app.include_router(coord_api.router)
    app.include_router(ui.router)

    @app.exception_handler(LyraError)
    async def lyra_error(request: Request, exc: LyraError) -> JSONResponse:
        return JSONResponse(error_body(exc), status_code=exc.status_code)

    @app.middleware("http")
    async def require_token(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        token = state.settings.server.api_token
        path = request.url.path
        if token is None or path in OPEN_PATHS or path == "/" or path.startswith("/static/"):
            return await call_next(request)
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if hmac.compare_digest(given.encode(), token.get_secret_value().encode()):
            return await call_next(request)
        return JSONResponse(
            {"error": {"message": "missing or wrong API token", "type": "unauthorized",
                       "hint": "send 'Authorization: Bearer <server.api_token>'"}},
            status_code=401)

    return app


def error_body(exc: LyraError) -> dict[str, dict[str, str | None]]:
    return {"error": {"message": exc.message, "type": type(exc).__name__, "hint": exc.hint}}


def _catch_up_embeddings(state: AppState) -> None:
    """Embed rows that lack a vector of the configured model (a new model, or a crash mid-turn)."""
    try:
        memory = state.memory
        if memory.switching_model or state.store.exchanges.missing_vectors(memory.embedder.name, limit=1):
            log.info("re-embedding the memory with %s in the background", memory.embedder.name)
            memory.reembed()
    except (LyraError, sqlite3.Error) as exc:  # a dead model server, or shutdown closing the store
        log.error("background re-embedding stopped: %s", exc)


def _install_sighup(state: AppState) -> None:
    loop = asyncio.get_running_loop()

    def on_hup() -> None:
        async def reload() -> None:
            try:
                await run_in_threadpool(state.reload)
            except LyraError as exc:
                log.error("reload failed, keeping the running configuration: %s", exc)

        loop.create_task(reload())

    try:
        loop.add_signal_handler(signal.SIGHUP, on_hup)
    except (ValueError, RuntimeError, NotImplementedError, AttributeError):
        log.info("SIGHUP reload unavailable here; use POST /admin/reload")
