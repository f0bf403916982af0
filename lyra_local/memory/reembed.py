"""Embedding the whole memory with a new embedding model: turns, gists and digests, then switching to it.

Recall searches only the active model's vectors, so the switch waits until
every tier has vectors of the configured model; until then recall is served
by BM25 alone. The work can be stopped between batches (a reload superseded
it) and resumed later: it only ever embeds what still lacks a vector.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..store import reembedding
from ..store.records import TIERS

if TYPE_CHECKING:
    from .memory import Memory

log = logging.getLogger(__name__)
EMBED_BATCH = 64
Progress = Callable[[int, int], None]


class Superseded(Exception):
    """The re-embedding was asked to stop (a newer configuration took over); what was done is kept."""


def reembed(memory: Memory, progress: Progress | None = None, stop: Callable[[], bool] | None = None) -> int:
    """Embed every row of every tier lacking a vector of the configured model; switch when complete.

    Returns how many vectors were written; raises ``Superseded`` if ``stop()`` turned true.
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
            done += reembedding.put_current(store, model, batch, vectors)
            seen.update(item.id for item in batch)
            if progress:
                progress(done, max(total, done))
    if memory.switching_model:
        old = memory.active_model
        memory.switch_to(model)
        log.info("embedding model switched from %s to %s after %d vectors", old, model, done)
    return done
