"""The server's background work: each job goes person by person, naming whose memory it reaches, under a lease
on the models of its own (``AppState.lease``): the heartbeat (which also finishes removals cut short), the
sweep of idle off-the-record conversations, and re-embedding after a change of embedding model.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from typing import TYPE_CHECKING

from ..errors import LyraError
from ..llm.registry import Models
from ..memory.reembed import catch_up
from ..mind.dream.scheduler import DreamScheduler
from ..store import Store, context_view, reembedding
from ..store.forget.erase import forget_idle_off_the_record

if TYPE_CHECKING:
    from .state import AppState

log = logging.getLogger(__name__)
HEARTBEAT_S = 30.0  # `lyra restore` refuses while a server heartbeats
OFF_THE_RECORD_CHECK_S = 300.0  # how often idle off-the-record conversations are looked for (and at start-up)
CATCH_UP_WAIT_S = 600.0  # how long a new catch-up waits for the one it replaces to let go
REEMBED_RETRY_S = 300.0  # how often a failed re-embedding is tried again (a model server may be back)


def expire_off_the_record(state: AppState) -> None:
    """Delete everyone's off-the-record conversations idle for ``companion.off_the_record_hours``."""
    hours = state.settings.companion.off_the_record_hours
    for person in state.household.people():
        gone = forget_idle_off_the_record(state.store_of(person), hours)
        if gone.sessions:
            log.info("deleted %d off-the-record conversation(s) idle for %g h", gone.sessions, hours)


def heartbeat(state: AppState) -> None:
    for store in state.open_stores():
        store.coord.heartbeat(state.instance_id)
    state.finish_removals()  # one begun by another process and cut short: nobody else would finish it


def start_background(state: AppState) -> None:
    """The dream scheduler, with the server's periodic jobs on it; stopped by ``state.dreams.shutdown``."""
    state.dreams = DreamScheduler(state.dreamer, state.settings.dream, state.last_chat, state.backlogs)
    state.dreams.every(HEARTBEAT_S, lambda: heartbeat(state))
    state.dreams.every(OFF_THE_RECORD_CHECK_S, lambda: expire_off_the_record(state))
    state.dreams.every(REEMBED_RETRY_S, lambda: retry_failed_re_embedding(state), at_once=False)
    state.dreams.start()


def start_catch_up(state: AppState, *, after: Models | None = None) -> None:
    """Re-embed in the background what lacks a vector of the configured model (once ``after`` has closed)."""
    threading.Thread(target=_catch_up_embeddings, args=(state, after), name="reembed", daemon=True).start()


def retry_failed_re_embedding(state: AppState) -> None:
    """Start the re-embedding again if the current models' last run failed for anyone (it resumes where it
    stopped)."""
    with state.lease() as generation:
        failed = any(state.runtime_of(p, generation).memory.reembedding.state == "failed"
                     for p in state.household.people())
    if failed:
        start_catch_up(state)


def _catch_up_embeddings(state: AppState, after: Models | None) -> None:
    """Embed turns, gists and digests that lack a vector of the configured model (a new model, a crash mid-turn).

    After a reload, the previous catch-up (on the old models) stops at its next
    batch and its models close first: two catch-ups would race to switch the active model.
    """
    if after is not None and not after.wait_closed(CATCH_UP_WAIT_S):
        log.warning("the previous models are still in use; re-embedding starts anyway")
    try:
        with state.lease() as generation:  # held, so that shutdown waits for it before closing a store under it
            for person in state.household.people():  # one person after another: they share the embedder
                runtime = state.runtime_of(person, generation)
                _build_context_view(runtime.store)
                memory = runtime.memory
                if memory.switching_model or reembedding.any_missing(runtime.store, memory.embedder.name):
                    log.info("re-embedding a memory with %s in the background", memory.embedder.name)
                    catch_up(memory, stop=lambda: generation.models.retired)  # never raises: a failure is recorded
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
