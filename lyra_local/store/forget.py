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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .db import from_iso
from .periods import period_keys
from .sessions import SessionNotFound

if TYPE_CHECKING:
    from .store import Store

CHUNK = 5000  # ids per statement (SQLite allows 32766 parameters)


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


@dataclass(frozen=True)
class ForgetPlan:
    """What a forget would remove: whole sessions, and single turns of other sessions."""

    session_ids: list[int]
    exchange_ids: list[int]

    @property
    def empty(self) -> bool:
        return not self.session_ids and not self.exchange_ids


def plan_forget(store: Store, *, sessions: Sequence[str] = (), before: str | None = None,
                matching: str | None = None) -> ForgetPlan:
    """Select by session (id or uid), by date (turns before it), or by text (turns containing it)."""
    conn = store.conn()
    whole: set[int] = set()
    for ref in sessions:
        row = conn.execute("SELECT id FROM sessions WHERE uid = ? OR CAST(id AS TEXT) = ?", (ref, ref)).fetchone()
        if row is None:
            raise SessionNotFound(f"no session {ref!r}", hint="`lyra recall` and the web UI show session ids")
        whole.add(int(row[0]))
    clauses, args = [], []
    if before:
        clauses.append("created_at < ?")
        args.append(before)
    if matching:
        clauses.append("content LIKE ? ESCAPE '\\'")
        args.append("%" + matching.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
    turns: set[int] = set()
    if clauses:
        rows = conn.execute(f"SELECT id, session_id FROM exchanges WHERE {' OR '.join(clauses)}", args).fetchall()
        by_session: dict[int, set[int]] = {}
        for turn, sid in rows:
            by_session.setdefault(sid, set()).add(turn)
        for sid, ids in by_session.items():
            if sid in whole:
                continue
            total = conn.execute("SELECT count(*) FROM exchanges WHERE session_id = ?", (sid,)).fetchone()[0]
            if total == len(ids):  # a session left with no turn goes whole
                whole.add(sid)
            else:
                turns |= ids
    return ForgetPlan(sorted(whole), sorted(turns))


def forget(store: Store, plan: ForgetPlan) -> Forgotten:
    """Carry out a plan, in chunks that stay within SQLite's limit on query parameters."""
    total = Forgotten(0, 0, 0, 0)
    for ids, forget_some in ((plan.session_ids, forget_sessions), (plan.exchange_ids, forget_exchanges)):
        for start in range(0, len(ids), CHUNK):
            done = forget_some(store, ids[start:start + CHUNK])
            total = Forgotten(total.sessions + done.sessions, total.exchanges + done.exchanges,
                              total.stale_digests + done.stale_digests, total.forgotten_facts + done.forgotten_facts)
    return total
