"""The context view's rows for turns stored before it existed, added in the background.

New turns get their row from a trigger (migration m010). Turns that were
already stored are added here, newest first, in short transactions that let
chat and recall go on meanwhile: recall searches the rows there are.
``meta.context_backfill_upto`` is the highest turn id that may still lack a row.
"""

from __future__ import annotations

from collections.abc import Callable

from .kinds import KINDS
from .store import Store

BACKFILL_KEY = "context_backfill_upto"
BATCH = 2000
Progress = Callable[[int, int], None]
ROW = ("SELECT e.id, coalesce((SELECT p.content || char(10) FROM exchanges p WHERE p.session_id = e.session_id "
       "AND p.id < e.id ORDER BY p.id DESC LIMIT 1), '') || e.content FROM exchanges e "
       f"WHERE e.id > ? AND e.id <= ? AND {KINDS['exchange'].where_current('e')} "
       "AND NOT EXISTS (SELECT 1 FROM exchange_context_fts c WHERE c.rowid = e.id)")


def pending(store: Store) -> int:
    """How many stored turns may still lack their context row."""
    upto = int(store.get_meta(BACKFILL_KEY) or 0)
    if not upto:
        return 0
    return int(store.conn().execute("SELECT count(*) FROM exchanges WHERE id <= ?", (upto,)).fetchone()[0])


def backfill(store: Store, progress: Progress | None = None, stop: Callable[[], bool] | None = None,
             batch: int = BATCH) -> int:
    """Add the missing rows, ``batch`` turn ids per transaction; returns how many were added."""
    total = pending(store)
    added = done = 0
    while True:
        if stop is not None and stop():
            return added
        with store.write() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (BACKFILL_KEY,)).fetchone()
            upto = int(row[0]) if row else 0
            if upto <= 0:
                return added
            low = max(0, upto - batch)
            added += conn.execute(f"INSERT INTO exchange_context_fts(rowid, content) {ROW}", (low, upto)).rowcount
            done += int(conn.execute("SELECT count(*) FROM exchanges WHERE id > ? AND id <= ?",
                                     (low, upto)).fetchone()[0])
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(low), BACKFILL_KEY))
        if progress:
            progress(done, max(total, done))
