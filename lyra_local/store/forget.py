"""Forgetting that really forgets.

Deleting a session or an exchange removes its rows, its vectors (through the
triggers, which log the deletion for every FAISS index), its full-text entries
and the profile facts learnt from it, and marks every other derived memory
built from it stale, so nothing returns its content until the dream cycle has
rebuilt those memories without it.
``secure_delete`` overwrites the freed pages; a checkpoint empties the WAL.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .db import from_iso
from .periods import period_keys

if TYPE_CHECKING:
    from .store import Store


@dataclass(frozen=True)
class Forgotten:
    sessions: int
    exchanges: int
    stale_digests: int
    forgotten_facts: int


def forget_sessions(store: Store, session_ids: list[int]) -> Forgotten:
    with store.write() as conn:
        exchanges = _count(conn, "SELECT count(*) FROM exchanges WHERE session_id IN ({})", session_ids)
        digests, facts = _mark_stale(conn, session_ids, _times(conn, "session_id", session_ids))
        sessions = conn.execute(f"DELETE FROM sessions WHERE id IN ({_marks(session_ids)})", session_ids).rowcount
    _scrub(store)
    return Forgotten(sessions, exchanges, digests, facts)


def forget_exchanges(store: Store, exchange_ids: list[int]) -> Forgotten:
    with store.write() as conn:
        session_ids = [r[0] for r in conn.execute(
            f"SELECT DISTINCT session_id FROM exchanges WHERE id IN ({_marks(exchange_ids)})", exchange_ids)]
        digests, facts = _mark_stale(conn, session_ids, _times(conn, "id", exchange_ids))
        conn.execute(f"UPDATE gists SET stale = 1 WHERE session_id IN ({_marks(session_ids)})", session_ids)
        count = conn.execute(f"DELETE FROM exchanges WHERE id IN ({_marks(exchange_ids)})", exchange_ids).rowcount
    _scrub(store)
    return Forgotten(0, count, digests, facts)


def _mark_stale(conn: sqlite3.Connection, session_ids: list[int], times: list[str]) -> tuple[int, int]:
    keys = {(g, k) for t in times for g, k in period_keys(from_iso(t)).items()}
    digests = sum(conn.execute("UPDATE digests SET stale = 1 WHERE granularity = ? AND period = ?", key).rowcount
                  for key in keys)
    facts = _delete_facts(conn, session_ids)
    conn.execute("UPDATE narrative SET stale = 1 WHERE stale = 0")
    return digests, facts


def _delete_facts(conn: sqlite3.Connection, session_ids: list[int]) -> int:
    """Delete the facts learnt from these sessions; the history chain skips over them.

    A fact that one of them had superseded becomes current again unless a later
    surviving fact superseded it too.
    """
    doomed = [r[0] for r in conn.execute(
        f"SELECT id FROM profile_facts WHERE source_session_id IN ({_marks(session_ids)}) ORDER BY id DESC",
        session_ids)]
    for fact_id in doomed:
        row = conn.execute("SELECT superseded_by, superseded_at FROM profile_facts WHERE id = ?", (fact_id,)).fetchone()
        conn.execute("UPDATE profile_facts SET superseded_by = ?, superseded_at = ? WHERE superseded_by = ?",
                     (row[0], row[1], fact_id))
        conn.execute("DELETE FROM profile_facts WHERE id = ?", (fact_id,))
    return len(doomed)


def _times(conn: sqlite3.Connection, column: str, ids: list[int]) -> list[str]:
    return [r[0] for r in conn.execute(f"SELECT DISTINCT substr(created_at, 1, 10) || 'T00:00:00+00:00' "
                                       f"FROM exchanges WHERE {column} IN ({_marks(ids)})", ids)]


def _count(conn: sqlite3.Connection, sql: str, ids: list[int]) -> int:
    return int(conn.execute(sql.format(_marks(ids)), ids).fetchone()[0])


def _marks(ids: list[int]) -> str:
    return ",".join("?" * len(ids)) or "NULL"


def _scrub(store: Store) -> None:
    """Drop forgotten text from the WAL and the FTS segments, and the vectors from the snapshots."""
    conn = store.conn()
    conn.execute("INSERT INTO exchanges_fts(exchanges_fts) VALUES ('optimize')")
    conn.execute("INSERT INTO gists_fts(gists_fts) VALUES ('optimize')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for index in store.loaded_indexes():
        index.sync()
        index.save()
