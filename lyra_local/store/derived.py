"""Derived memory: session gists, profile facts, temporal digests, narrative, self-state.

These are rebuilt by the dream cycle from the raw turns. Anything marked
``stale`` (because a source it was built from was forgotten) is never handed
out until it has been rebuilt without that source.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .db import utc_now
from .blobs import put_vector

if TYPE_CHECKING:
    from .store import Store


@dataclass(frozen=True)
class Gist:
    id: int
    session_id: int
    content: str
    covers_upto: int
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class ProfileFact:
    id: int
    key: str
    value: str
    source_session_id: int | None
    author: str
    created_at: str
    superseded_by: int | None
    superseded_at: str | None


@dataclass(frozen=True)
class Digest:
    id: int
    granularity: str
    period: str
    content: str
    source_count: int
    updated_at: str


class Derived:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- gists --------------------------------------------------------------------

    def put_gist(self, session_id: int, content: str, covers_upto: int,
                 vector: npt.NDArray[np.float32] | None = None, model: str | None = None) -> Gist:
        """Create or replace a session's gist (and its embedding) in one transaction."""
        now = utc_now()
        with self.store.write() as conn:
            row = conn.execute(
                "INSERT INTO gists (session_id, content, covers_upto, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET content = excluded.content, covers_upto = excluded.covers_upto,"
                " updated_at = excluded.updated_at, stale = 0 RETURNING *",
                (session_id, content, covers_upto, now, now)).fetchone()
            if vector is not None and model is not None:
                put_vector(conn, "gist", model, row["id"], vector)
        return _gist(row)

    def gist(self, session_id: int) -> Gist | None:
        row = self.store.conn().execute("SELECT * FROM gists WHERE session_id = ? AND stale = 0",
                                        (session_id,)).fetchone()
        return None if row is None else _gist(row)

    def gists(self) -> list[Gist]:
        return [_gist(r) for r in self.store.conn().execute("SELECT * FROM gists WHERE stale = 0 ORDER BY id")]

    # -- profile ------------------------------------------------------------------

    def set_fact(self, key: str, value: str, *, source_session_id: int | None = None,
                 author: str = "dream") -> ProfileFact:
        """Record a fact; a different current value for the key is superseded, kept as history."""
        now = utc_now()
        with self.store.write() as conn:
            current = conn.execute("SELECT * FROM profile_facts WHERE key = ? AND superseded_by IS NULL AND stale = 0",
                                   (key,)).fetchone()
            if current is not None and current["value"] == value:
                return _fact(current)
            row = conn.execute(
                "INSERT INTO profile_facts (key, value, source_session_id, author, created_at) VALUES (?, ?, ?, ?, ?) "
                "RETURNING *", (key, value, source_session_id, author, now)).fetchone()
            if current is not None:
                conn.execute("UPDATE profile_facts SET superseded_by = ?, superseded_at = ? WHERE id = ?",
                             (row["id"], now, current["id"]))
        return _fact(row)

    def profile(self) -> list[ProfileFact]:
        rows = self.store.conn().execute(
            "SELECT * FROM profile_facts WHERE superseded_by IS NULL AND stale = 0 ORDER BY key")
        return [_fact(r) for r in rows]

    def fact_history(self, key: str) -> list[ProfileFact]:
        rows = self.store.conn().execute("SELECT * FROM profile_facts WHERE key = ? AND stale = 0 ORDER BY id",
                                         (key,))
        return [_fact(r) for r in rows]

    # -- digests ------------------------------------------------------------------

    def put_digest(self, granularity: str, period: str, content: str, source_count: int,
                   vector: npt.NDArray[np.float32] | None = None, model: str | None = None) -> Digest:
        now = utc_now()
        with self.store.write() as conn:
            row = conn.execute(
                "INSERT INTO digests (granularity, period, content, source_count, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(granularity, period) DO UPDATE SET content = excluded.content,"
                " source_count = excluded.source_count, updated_at = excluded.updated_at, stale = 0 RETURNING *",
                (granularity, period, content, source_count, now, now)).fetchone()
            if vector is not None and model is not None:
                put_vector(conn, "digest", model, row["id"], vector)
        return _digest(row)

    def digests(self, granularity: str | None = None) -> list[Digest]:
        sql = "SELECT * FROM digests WHERE stale = 0"
        args: tuple[str, ...] = ()
        if granularity:
            sql += " AND granularity = ?"
            args = (granularity,)
        return [_digest(r) for r in self.store.conn().execute(sql + " ORDER BY period", args)]

    # -- narrative and self-state ---------------------------------------------------

    def set_narrative(self, content: str) -> None:
        with self.store.write() as conn:
            conn.execute("INSERT INTO narrative (content, created_at) VALUES (?, ?)", (content, utc_now()))

    def narrative(self) -> str | None:
        row = self.store.conn().execute(
            "SELECT content FROM narrative WHERE stale = 0 ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def set_self_state(self, state: dict[str, Any]) -> None:
        with self.store.write() as conn:
            conn.execute("INSERT INTO self_state (state, created_at) VALUES (?, ?)", (json.dumps(state), utc_now()))

    def self_state(self) -> dict[str, Any] | None:
        row = self.store.conn().execute("SELECT state FROM self_state ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else dict(json.loads(row[0]))


def _gist(row: sqlite3.Row) -> Gist:
    return Gist(row["id"], row["session_id"], row["content"], row["covers_upto"], row["created_at"],
                row["updated_at"])


def _fact(row: sqlite3.Row) -> ProfileFact:
    return ProfileFact(row["id"], row["key"], row["value"], row["source_session_id"], row["author"],
                       row["created_at"], row["superseded_by"], row["superseded_at"])


def _digest(row: sqlite3.Row) -> Digest:
    return Digest(row["id"], row["granularity"], row["period"], row["content"], row["source_count"],
                  row["updated_at"])
