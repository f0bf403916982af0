"""Nothing left on disk: what deleted rows leave behind, removed.

SQLite's ``secure_delete`` zeroes the pages rows are deleted from, but three
places keep a deleted row's words a while longer: the full-text indexes'
segments (until they are merged), the FAISS snapshots on disk (until they are
written again), and the WAL (until it is checkpointed and truncated).
``scrub`` removes all three, for the kinds a deletion touched (the registry
says which full-text tables and vector tier each kind has), taking the write
lock only in short steps so chat goes on.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..db import BUSY_TIMEOUT_MS
from ..kinds import KINDS, Kind

if TYPE_CHECKING:
    from ..store import Store

log = logging.getLogger(__name__)
SECURE_DELETE_SQLITE = (3, 44, 0)  # FTS5 'secure-delete' appeared in 3.44
CHECKPOINT_WAIT_MS = 50  # the longest a truncating checkpoint keeps writers waiting, per try


def scrub(store: Store, kinds: Iterable[Kind] | None = None) -> None:
    """Remove what deleted rows (of ``kinds``; default: every kind) leave behind: their full-text segments, their
    vector tiers' index snapshots, and the WAL."""
    conn = store.conn()
    touched = list(KINDS.values()) if kinds is None else list(kinds)
    for fts in (table for kind in touched for table in kind.fts.values()):
        log.info("full-text index %s merged in %.2f s", fts, merge_fts(store, fts))
    tiers = {kind.vector_tier for kind in touched if kind.vector_tier}
    if tiers:
        for index in store.loaded_indexes():
            if index.tier in tiers:
                index.sync()  # the vectors leave the index in memory now (HNSW: filtered, compacted later)
        drop_snapshots(store, tiers)
    truncate_wal(conn)


def truncate_wal(conn: sqlite3.Connection, *, tries: int = 600) -> bool:
    """Checkpoint and truncate the WAL, so no frame with forgotten text stays in it.

    A truncating checkpoint holds the write lock while it waits for readers; it
    waits a short moment at a time, and lets writers in between tries, so chat
    is never held up for long. False if readers never let it finish (the WAL is
    truncated again at the next forget, and removed when the last process closes).
    """
    conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
    try:
        for _ in range(tries):
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return True
            time.sleep(0.02)
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def merge_fts(store: Store, fts: str) -> float:
    """Merge the full-text index into one segment, so the entries of deleted rows are gone from the file.

    FTS5's incremental ``merge`` would hold the write lock for less time, but with
    another process writing meanwhile it corrupted the index on SQLite 3.40
    (reproduced at 100k rows); ``optimize`` does it in one transaction. Where
    SQLite has FTS5's ``secure-delete`` (3.44+), deletes remove their entries at
    once and no merge is needed. Returns the seconds the write lock was held.
    """
    conn = store.conn()
    started = time.monotonic()
    with store.write():
        if sqlite3.sqlite_version_info >= SECURE_DELETE_SQLITE:  # later deletes purge at once
            conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('secure-delete', 1)")
        conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")
    return time.monotonic() - started


def drop_snapshots(store: Store, tiers: set[str] | None = None) -> None:
    """Delete the FAISS snapshots on disk (of ``tiers``; default: all) — caches, rebuilt from SQLite and saved
    again once compacted."""
    if store.index_dir.exists():
        for path in store.index_dir.iterdir():
            if path.suffix in (".faiss", ".json", ".tmp") and (tiers is None or path.name.split("--")[0] in tiers):
                path.unlink(missing_ok=True)
    for index in store.loaded_indexes():
        if tiers is None or index.tier in tiers:
            index.forget_snapshot()
