"""Embedding the whole memory with a new embedding model: turns, gists and digests, then switching to it.

Recall searches only the active model's vectors, so the switch waits until
every tier has vectors of the configured model; until then recall is served
by BM25 alone. The work can be stopped between batches (a reload superseded
it) and resumed later: it only ever embeds what still lacks a vector.

A model that cannot embed (the wrong file chosen, a server gone) fails the run
at the batch where it failed: nothing of that batch is stored, the active
model stays what it was, and ``catch_up`` (the server's background run)
records why in ``ReembedStatus`` for GET /api/models/embedding and logs it
once, instead of dying with a traceback. The server tries a failed run again
now and then (a model server that was down may be back).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import LyraError
from ..llm.role_check import vector_problem
from ..store import reembedding
from ..store.records import TIERS

if TYPE_CHECKING:
    from .memory import Memory

log = logging.getLogger(__name__)
EMBED_BATCH = 64
Progress = Callable[[int, int], None]


class Superseded(Exception):
    """The re-embedding was asked to stop (a newer configuration took over); what was done is kept."""


class ReembedFailed(LyraError):
    """The embedding model gave no usable vectors for a batch: nothing of it was stored, recall did not switch."""

    status_code = 502


class ReembedStatus:
    """How the re-embedding of one ``Memory`` went, for GET /api/models/embedding: ``idle`` (never run),
    ``running``, ``done``, ``stopped`` (superseded) or ``failed`` with its reason. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "idle"
        self._reason: str | None = None
        self._done = 0
        self._logged: str | None = None  # the last failure said in the log: a retry failing alike is not said again

    def begin(self) -> bool:
        """Mark a run started; False (and nothing changes) if one is running already: two runs would race to
        switch the active model."""
        with self._lock:
            if self._state == "running":
                return False
            self._state, self._reason, self._done = "running", None, 0
            return True

    def set(self, state: str, reason: str | None = None) -> None:
        with self._lock:
            self._state, self._reason = state, reason

    def fail(self, reason: str) -> bool:
        """Record a failed run; True if the log has not said this reason yet."""
        with self._lock:
            self._state, self._reason = "failed", reason
            new, self._logged = reason != self._logged, reason
            return new

    def progress(self, done: int) -> None:
        with self._lock:
            self._done = done

    @property
    def state(self) -> str:
        return self._state

    def view(self) -> dict[str, Any]:
        """``{"state", "error", "embedded"}``: the API's words (``error`` is None unless it failed)."""
        with self._lock:
            return {"state": self._state, "error": self._reason, "embedded": self._done}


def reembed(memory: Memory, progress: Progress | None = None, stop: Callable[[], bool] | None = None) -> int:
    """Embed every row of every tier lacking a vector of the configured model; switch when complete.

    Returns how many vectors were written; raises ``Superseded`` if ``stop()`` turned true, ``ReembedFailed``
    (or the backend's own error) if the model gave no usable vectors for a batch: that batch stores nothing.
    """
    store, embedder = memory.store, memory.embedder
    model = embedder.name
    total = sum(reembedding.count_missing(store, model).values())
    done = 0
    for tier in TIERS:
        seen: set[int] = set()  # a row whose text changed mid-batch is not retried in this run
        while True:
            batch = [item for item in reembedding.missing(store, tier, model, limit=EMBED_BATCH + len(seen))
                     if item.id not in seen][:EMBED_BATCH]
            if not batch:
                break
            if stop is not None and stop():
                raise Superseded(f"re-embedding with {model} stopped after {done} vectors")
            vectors = embedder.embed([item.text for item in batch])
            problem = vector_problem(vectors, len(batch), embedder.dim)
            if problem is not None:
                raise ReembedFailed(f"the embedding model {model} failed after {done} vector(s): {problem}",
                                    hint="choose an embedding model in Settings → Models (or models.embed in "
                                         "lyra.toml); recall keeps the vectors it has meanwhile")
            done += reembedding.put_current(store, model, batch, vectors)
            seen.update(item.id for item in batch)
            if progress:
                progress(done, max(total, done))
    if memory.switching_model:
        old = memory.active_model
        memory.switch_to(model)
        log.info("embedding model switched from %s to %s after %d vectors", old, model, done)
    return done


def catch_up(memory: Memory, stop: Callable[[], bool] | None = None) -> None:
    """Re-embed what lacks a vector of the configured model, as a background thread's whole work: it never
    raises, and returns at once if a run is already going. A failure is logged once, with its reason (a retry
    failing alike is not said again), and kept in ``memory.reembedding`` (what GET /api/models/embedding
    shows); the active model, and so recall, stays as it was."""
    status = memory.reembedding
    model = memory.embedder.name
    if not status.begin():
        return
    try:
        memory.reembed(progress=lambda done, _total: status.progress(done), stop=stop)
    except Superseded as exc:
        status.set("stopped", str(exc))
        log.info("%s: a newer configuration took over", exc)
    except LyraError as exc:  # the model failed, or a dead model server
        _failed(status, model, exc.message)
    except sqlite3.Error as exc:  # shutdown closing the store under it
        _failed(status, model, f"the database: {exc}")
    except Exception as exc:  # noqa: BLE001 - this thread's last stop: say why, keep the server and the old vectors
        _failed(status, model, f"{type(exc).__name__}: {exc}")
        log.debug("re-embedding with %s failed", model, exc_info=True)
    else:
        status.set("done")


def _failed(status: ReembedStatus, model: str, reason: str) -> None:
    level = logging.ERROR if status.fail(reason) else logging.DEBUG
    log.log(level, "background re-embedding with %s stopped, recall keeps the vectors it has: %s", model, reason)
