"""``create_app(settings)``: builds the FastAPI app and owns the lifecycles.

The store and models come from a ``lyra_local.runtime.Runtime`` made here (models
load on first use, never at import time) and are closed in the lifespan.
Errors from the ``LyraError`` family become JSON with their status code, in the
OpenAI error shape so OpenAI clients show the message. The routes are in
``routes/``, one module per URL family; what they share is ``state.AppState``;
the server's background jobs are ``background.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import AsyncContextManager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from .. import __version__
from ..config import Settings
from ..errors import LyraError
from ..fsutil import loosened_note
from ..llm.registry import Models
from ..people import shared_reader
from ..runtime import Runtime
from ..store.household import Household
from . import failures
from .auth import PersonBinding
from .background import start_background, start_catch_up
from .guard import HostOriginGuard
from .leases import LeaseMiddleware
from .routes import ROUTERS
from .state import AppState

log = logging.getLogger(__name__)


def create_app(
    settings: Settings,
    *,
    models: Models | None = None,
    config_path: Path | None = None,
    handle_sighup: bool = False,
) -> FastAPI:
    """Build the app. Pass ``models`` to share an already built registry (tests)."""
    household = Household(settings.data_dir)
    try:
        runtime = Runtime(settings, models=models, household=shared_reader(household))
        state = AppState(runtime, household, config_path or settings.config_file, bind_host=settings.server.host)
    except BaseException:
        household.close()
        raise
    app = FastAPI(title="Lyra", version=__version__, lifespan=lifespan(state, handle_sighup))
    app.state.lyra = state
    for router in ROUTERS:
        app.include_router(router)

    @app.exception_handler(LyraError)
    async def lyra_error(request: Request, exc: LyraError) -> JSONResponse:
        return JSONResponse(failures.error_body(exc), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))  # a 429's Retry-After

    failures.install(app)  # anything else: a JSON answer for that request, and the server goes on

    app.add_middleware(LeaseMiddleware, state=state)  # a request's models stay open until its response ends
    app.add_middleware(PersonBinding, state=state)  # before any route: whose memory this request reaches
    # Added last, so it runs first: a foreign Host or a cross-site write never reaches the login check.
    app.add_middleware(HostOriginGuard, server=lambda: state.settings.server, bind_host=settings.server.host)
    # Outermost of all: whatever fails inside (a route, a middleware) is answered here and goes no further, so
    # the server keeps the client's kept-alive connection.
    app.add_middleware(failures.AnswerUnexpected)
    return app


def lifespan(state: AppState, handle_sighup: bool) -> Callable[[FastAPI], AsyncContextManager[None]]:
    """The app's lifespan: removals cut short finished, the background jobs started; at the end, everything
    stopped and closed in order (the scheduler, this server's record in each store, the memories and models)."""

    @contextlib.asynccontextmanager
    async def run(app: FastAPI) -> AsyncIterator[None]:
        if handle_sighup:
            _install_sighup(state)
        await run_in_threadpool(state.finish_removals)  # a removal cut short: finished before anything runs
        loose = await run_in_threadpool(loosened_note, state.household.data_dir)
        if loose is not None:
            log.warning("%s", loose)
        for store in state.open_stores():
            store.coord.register(state.instance_id, "server", "web UI and API (lyra serve)")
        state.started = True
        start_catch_up(state)
        start_background(state)
        try:
            yield
        finally:
            await _stop(state)

    return run


async def _stop(state: AppState) -> None:
    if state.dreams is not None:
        await run_in_threadpool(state.dreams.shutdown)
    try:
        for store in state.open_stores():
            await run_in_threadpool(store.coord.complete, state.instance_id, "stopped")
    except LyraError as exc:  # a full disk: the instance reads as running until its heartbeat is stale
        log.error("could not record that this server stopped: %s", exc)
    finally:
        try:
            await run_in_threadpool(state.close)
        except LyraError as exc:  # an index snapshot a full disk refused: rebuilt from SQLite next time
            log.error("closing the memory: %s", exc)


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
