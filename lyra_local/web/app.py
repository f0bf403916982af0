"""``create_app(settings)``: builds the FastAPI app and owns the lifecycles.

The store and models come from a ``lyra_local.runtime.Runtime`` made here (models
load on first use, never at import time) and are closed in the lifespan.
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
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from .. import __version__
from ..companion import Companion
from ..config import Settings, load_settings, model_file_problems
from ..errors import LyraError, ReloadRefused
from ..llm.registry import Models
from ..memory import Memory
from ..memory.reembed import catch_up
from ..mind import Dreamer
from ..mind.scheduler import DreamScheduler
from ..modelfiles.pull_jobs import PullJobs
from ..runtime import Runtime
from ..store import Store, context_view, reembedding
from ..store.forget import forget_idle_off_the_record
from . import (
    admin,
    coord_api,
    corrections_api,
    failures,
    forget_api,
    memory_api,
    mind_api,
    models_api,
    openai_api,
    sessions_api,
    transfer_api,
    ui,
)
from .guard import HostOriginGuard
from .runtime import LEASED, LeasedDreamer, LeaseMiddleware, hold

log = logging.getLogger(__name__)
OPEN_PATHS = {"/health"}
HEARTBEAT_S = 30.0  # `lyra restore` refuses while a server heartbeats
OFF_THE_RECORD_CHECK_S = 300.0  # how often idle off-the-record conversations are looked for (and at start-up)
CATCH_UP_WAIT_S = 600.0  # how long a new catch-up waits for the one it replaces to let go
REEMBED_RETRY_S = 300.0  # how often a failed re-embedding is tried again (a model server may be back)
REFUSED = "reload refused, still serving the running configuration"


class AppState:
    """What the routes share: settings, the store and the current ``Runtime`` (models, memory, companion).

    ``models``, ``memory`` and ``companion`` are the request's leased runtime's
    inside a request (see ``runtime.LeaseMiddleware``), else the current one's.
    Work outside a request takes its own lease (``lease``, ``hold``, ``dreamer``).
    """

    def __init__(self, runtime: Runtime, config_path: Path | None = None) -> None:
        """``runtime``: the first generation; it owns the store, which every later one borrows."""
        self.settings = runtime.settings
        self.store: Store = runtime.store
        self.config_path = config_path
        self.reload_lock = threading.Lock()
        self.dreams: DreamScheduler | None = None
        self.imports = transfer_api.ImportJobs()
        self.pulls = PullJobs()  # downloads a person started in Settings → Models; cancelled at shutdown
        self.instance_id = f"server-{socket.gethostname()}-{os.getpid()}"
        self._first = runtime
        self._runtime = runtime
        self._earlier_chat: float | None = None  # the last turn on runtimes since retired

    @property
    def runtime(self) -> Runtime:
        return LEASED.get() or self._runtime

    @property
    def models(self) -> Models:
        return self.runtime.models

    @property
    def memory(self) -> Memory:
        return self.runtime.memory

    @property
    def companion(self) -> Companion:
        return self.runtime.companion

    def acquire_current(self) -> Runtime:
        """The current runtime with one lease taken on it (release with ``runtime.models.release()``)."""
        with self.reload_lock:
            runtime = self._runtime
            runtime.models.acquire()
        return runtime

    @contextlib.contextmanager
    def lease(self) -> Iterator[Runtime]:
        """Hold the current runtime open for a piece of work that runs outside a request."""
        runtime = self.acquire_current()
        token = LEASED.set(runtime)
        try:
            yield runtime
        finally:
            LEASED.reset(token)
            runtime.models.release()

    def hold(self) -> Callable[[], None]:
        """A lease on this request's runtime for work that outlives the request; call the result when done."""
        return hold(self.runtime)

    def dreamer(self, stop: threading.Event) -> Dreamer:
        """A dreamer on the current models, holding them until it is closed; one instance id per process."""
        runtime = self.acquire_current()
        try:
            return LeasedDreamer(runtime, runtime.models.release, stop=stop,
                                 instance_id=f"dream-{socket.gethostname()}-{os.getpid()}")
        except BaseException:
            runtime.models.release()
            raise

    def last_chat(self) -> float | None:
        times = [t for t in (self._earlier_chat, self._runtime.last_chat()) if t is not None]
        return max(times, default=None)

    def reload(self, settings: Settings | None = None, commit: Callable[[], None] | None = None) -> None:
        """Re-read the config (or take ``settings``, a candidate) and swap in fresh models; work in flight
        finishes on the old ones, which close when the last of it ends.

        The new models are checked first (files whole, changed ones loaded and doing their role's work once:
        ``Models.check``): if one fails,
        ``ReloadRefused`` says why and the running configuration keeps serving. ``commit`` runs only once
        they passed, just before the swap (Settings → Models writes lyra.toml there, so a refused choice
        leaves the file as it was); if it raises, nothing is swapped. With ``settings``, later reloads read
        ``settings.config_file``.
        """
        with self.reload_lock:
            given = settings is not None
            settings = load_settings(self.config_path) if settings is None else settings
            problems = model_file_problems(settings)
            if problems:
                raise ReloadRefused(f"{REFUSED}:\n  " + "\n  ".join(problems), reason="; ".join(problems))
            old = self._runtime
            new = old.renewed(settings)
            try:
                new.models.check(changed_roles(old.settings, settings))  # each does its role's work once
            except LyraError as exc:
                new.close()
                raise ReloadRefused(f"{REFUSED}: {exc.message}", reason=exc.message, hint=exc.hint) from exc
            try:
                if commit is not None:
                    commit()
            except BaseException:
                new.close()
                raise
            self._earlier_chat = self.last_chat()
            self._runtime = new
            self.settings = settings
            if given and settings.config_file is not None:
                self.config_path = settings.config_file
        old.retire()
        if settings.data_dir != self.store.data_dir:
            log.warning("data_dir changed to %s: that takes a restart; still using %s",
                        settings.data_dir, self.store.data_dir)
        start_catch_up(self, after=old.built_models)  # a new embedding model: every tier gets its vectors
        log.info("configuration reloaded; models will load on next use")

    def close(self, wait_s: float = 10.0) -> None:
        """At shutdown: let the work still leasing the models end (briefly), then close the companion, the
        models and, with the first runtime (whose models a reload may have retired), the store. Imports stop
        first (after the batch they are writing) and their uploads go at once (``store/uploads.py``); downloads
        stop too, keeping their partial files for a pull to resume."""
        self.pulls.stop_all(wait_s)
        self.store.uploads.stop_all("the server stopped", wait_s)
        self._runtime.close(wait_s)
        self._first.close()  # after a reload: work still on its retired models has had its time


def changed_roles(old: Settings, new: Settings) -> list[str]:
    """The roles whose model a new configuration changes (or adds)."""
    return [role for role in new.roles() if role not in old.roles() or new.role_spec(role) != old.role_spec(role)]


def expire_off_the_record(state: AppState) -> None:
    """Delete off-the-record conversations idle for ``companion.off_the_record_hours``."""
    gone = forget_idle_off_the_record(state.store, state.settings.companion.off_the_record_hours)
    if gone.sessions:
        log.info("deleted %d off-the-record conversation(s) idle for %g h", gone.sessions,
                 state.settings.companion.off_the_record_hours)


def create_app(
    settings: Settings,
    *,
    models: Models | None = None,
    config_path: Path | None = None,
    handle_sighup: bool = False,
) -> FastAPI:
    """Build the app. Pass ``models`` to share an already built registry (tests)."""
    state = AppState(Runtime(settings, models=models), config_path or settings.config_file)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if handle_sighup:
            _install_sighup(state)
        start_catch_up(state)
        state.store.coord.register(state.instance_id, "server", "web UI and API (lyra serve)")
        state.dreams = DreamScheduler(state.dreamer, state.settings.dream, state.last_chat)
        state.dreams.every(HEARTBEAT_S, lambda: state.store.coord.heartbeat(state.instance_id))
        state.dreams.every(OFF_THE_RECORD_CHECK_S, lambda: expire_off_the_record(state))
        state.dreams.every(REEMBED_RETRY_S, lambda: retry_failed_re_embedding(state), at_once=False)
        state.dreams.start()
        try:
            yield
        finally:
            await run_in_threadpool(state.dreams.shutdown)
            try:
                await run_in_threadpool(state.store.coord.complete, state.instance_id, "stopped")
            except LyraError as exc:  # a full disk: the instance reads as running until its heartbeat is stale
                log.error("could not record that this server stopped: %s", exc)
            finally:
                try:
                    await run_in_threadpool(state.close)
                except LyraError as exc:  # an index snapshot a full disk refused: rebuilt from SQLite next time
                    log.error("closing the memory: %s", exc)

    app = FastAPI(title="Lyra", version=__version__, lifespan=lifespan)
    app.state.lyra = state
    app.include_router(admin.router)
    app.include_router(openai_api.router)
    app.include_router(memory_api.router)
    app.include_router(forget_api.router)
    app.include_router(corrections_api.router)
    app.include_router(sessions_api.router)
    app.include_router(mind_api.router)
    app.include_router(transfer_api.router)
    app.include_router(coord_api.router)
    app.include_router(models_api.router)
    app.include_router(ui.router)

    @app.exception_handler(LyraError)
    async def lyra_error(request: Request, exc: LyraError) -> JSONResponse:
        return JSONResponse(failures.error_body(exc), status_code=exc.status_code)

    failures.install(app)  # anything else: a JSON answer for that request, and the server goes on

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

    app.add_middleware(LeaseMiddleware, state=state)  # a request's models stay open until its response ends
    # Added last, so it runs first: a foreign Host or a cross-site write never reaches the token check.
    app.add_middleware(HostOriginGuard, server=lambda: state.settings.server, bind_host=settings.server.host)
    # Outermost of all: whatever fails inside (a route, a middleware) is answered here and goes no further, so
    # the server keeps the client's kept-alive connection.
    app.add_middleware(failures.AnswerUnexpected)
    return app


def start_catch_up(state: AppState, *, after: Models | None = None) -> None:
    """Re-embed in the background what lacks a vector of the configured model (once ``after`` has closed)."""
    threading.Thread(target=_catch_up_embeddings, args=(state, after), name="reembed", daemon=True).start()


def retry_failed_re_embedding(state: AppState) -> None:
    """Start the re-embedding again if the current models' last run failed (it resumes where it stopped)."""
    if state.memory.reembedding.state == "failed":
        start_catch_up(state)


def _catch_up_embeddings(state: AppState, after: Models | None) -> None:
    """Embed turns, gists and digests that lack a vector of the configured model (a new model, a crash mid-turn).

    After a reload, the previous catch-up (on the old models) stops at its next
    batch and its models close first: two catch-ups would race to switch the active model.
    """
    if after is not None and not after.wait_closed(CATCH_UP_WAIT_S):
        log.warning("the previous models are still in use; re-embedding starts anyway")
    try:
        with state.lease() as runtime:  # held, so that shutdown waits for it before closing the store under it
            _build_context_view(state.store)
            memory = runtime.memory
            if memory.switching_model or reembedding.any_missing(state.store, memory.embedder.name):
                log.info("re-embedding the memory with %s in the background", memory.embedder.name)
                catch_up(memory, stop=lambda: runtime.models.retired)  # never raises: a failure is recorded
    except (LyraError, sqlite3.Error) as exc:  # shutdown closing the store or the models under it
        log.error("background re-embedding stopped: %s", exc)


def _build_context_view(store: Store) -> None:
    """Turns stored before the context view existed get their rows; recall uses the view meanwhile."""
    pending = context_view.pending(store)
    if not pending:
        return
    log.info("building the context view of %d stored turns in the background", pending)
    reported = [0.0]

    def progress(done: int, total: int) -> None:
        if done / total >= reported[0] + 0.1 or done == total:
            reported[0] = done / total
            log.info("context view: %d of %d turns", done, total)

    context_view.backfill(store, progress)


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
