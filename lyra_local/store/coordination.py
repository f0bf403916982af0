"""Coordination tables: world-state versions, the instance registry, leases, the consolidation log.

A lease is taken in one ``BEGIN IMMEDIATE`` transaction: either the resource is
free (or its lease expired) and we take it, or the current holder is reported.
A lease is never silently overwritten.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..errors import NotFound
from . import provenance
from .db import to_iso, utc_now
from .provenance import Ref, strip_text

if TYPE_CHECKING:
    from .store import Store


@dataclass(frozen=True)
class Lease:
    resource: str
    holder: str
    acquired_at: str
    expires_at: str
    note: str | None


@dataclass(frozen=True)
class LeaseResult:
    """``ok`` when we hold the lease; otherwise ``lease`` says who does."""

    ok: bool
    lease: Lease


@dataclass(frozen=True)
class WorldVersion:
    id: int
    content: str
    author: str
    reason: str | None
    status: str
    created_at: str
    decided_at: str | None = None
    decided_by: str | None = None


def _world(row: sqlite3.Row) -> WorldVersion:
    return WorldVersion(row["id"], row["content"], row["author"], row["reason"], row["status"], row["created_at"],
                        row["decided_at"], row["decided_by"])


class Coordination:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- leases -------------------------------------------------------------------

    def acquire(self, resource: str, holder: str, ttl_s: float, note: str | None = None) -> LeaseResult:
        now = datetime.now(timezone.utc)
        expires = to_iso(now + timedelta(seconds=ttl_s))
        with self.store.write() as conn:
            row = conn.execute("SELECT * FROM locks WHERE resource = ?", (resource,)).fetchone()
            if row is not None and row["holder"] != holder and row["expires_at"] > to_iso(now):
                return LeaseResult(False, Lease(*row))
            conn.execute("INSERT INTO locks (resource, holder, acquired_at, expires_at, note) VALUES (?, ?, ?, ?, ?) "
                         "ON CONFLICT(resource) DO UPDATE SET holder = excluded.holder, acquired_at = "
                         "excluded.acquired_at, expires_at = excluded.expires_at, note = excluded.note",
                         (resource, holder, to_iso(now), expires, note))
            return LeaseResult(True, Lease(resource, holder, to_iso(now), expires, note))

    def renew(self, resource: str, holder: str, ttl_s: float) -> LeaseResult:
        """Extend our lease; refused (with the holder) if it lapsed and someone else took it."""
        now = datetime.now(timezone.utc)
        with self.store.write() as conn:
            row = conn.execute("SELECT * FROM locks WHERE resource = ?", (resource,)).fetchone()
            if row is None or (row["holder"] != holder and row["expires_at"] > to_iso(now)):
                return LeaseResult(False, Lease(*row) if row else Lease(resource, "", "", "", "not held"))
            expires = to_iso(now + timedelta(seconds=ttl_s))
            conn.execute("INSERT INTO locks (resource, holder, acquired_at, expires_at, note) VALUES (?, ?, ?, ?, ?) "
                         "ON CONFLICT(resource) DO UPDATE SET holder = excluded.holder, "
                         "expires_at = excluded.expires_at",
                         (resource, holder, to_iso(now), expires, row["note"] if row else None))
            fresh = conn.execute("SELECT * FROM locks WHERE resource = ?", (resource,)).fetchone()
        return LeaseResult(True, Lease(*fresh))

    def release(self, resource: str, holder: str) -> bool:
        with self.store.write() as conn:
            return conn.execute("DELETE FROM locks WHERE resource = ? AND holder = ?",
                                (resource, holder)).rowcount > 0

    def lease(self, resource: str) -> Lease | None:
        """The live lease on ``resource``, if any (expired leases count as free)."""
        row = self.store.conn().execute("SELECT * FROM locks WHERE resource = ? AND expires_at > ?",
                                        (resource, utc_now())).fetchone()
        return None if row is None else Lease(*row)

    def leases(self) -> list[Lease]:
        rows = self.store.conn().execute("SELECT * FROM locks WHERE expires_at > ? ORDER BY resource", (utc_now(),))
        return [Lease(*r) for r in rows]

    # -- instances ------------------------------------------------------------------

    def register(self, instance_id: str, kind: str, summary: str) -> None:
        now = utc_now()
        with self.store.write() as conn:
            conn.execute("INSERT INTO instances (id, kind, summary, pid, host, started_at, heartbeat_at) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET summary = excluded.summary, "
                         "pid = excluded.pid, heartbeat_at = excluded.heartbeat_at, completed_at = NULL, "
                         "status = 'running', result = NULL",
                         (instance_id, kind, summary, os.getpid(), socket.gethostname(), now, now))

    def heartbeat(self, instance_id: str, message: str | None = None) -> None:
        now = utc_now()
        with self.store.write() as conn:
            conn.execute("UPDATE instances SET heartbeat_at = ? WHERE id = ?", (now, instance_id))
            if message:
                conn.execute("INSERT INTO instance_log (instance_id, at, message) VALUES (?, ?, ?)",
                             (instance_id, now, message))

    def complete(self, instance_id: str, result: str, status: str = "done") -> None:
        now = utc_now()
        with self.store.write() as conn:
            conn.execute("UPDATE instances SET completed_at = ?, heartbeat_at = ?, status = ?, result = ? "
                         "WHERE id = ?", (now, now, status, result, instance_id))

    def log(self, instance_id: str, message: str) -> None:
        """A progress entry (also a heartbeat)."""
        self.heartbeat(instance_id, message)

    def instances(self, *, include_completed_s: float = 3600.0) -> list[dict[str, Any]]:
        """Running instances, and those completed within ``include_completed_s``, newest first."""
        since = to_iso(datetime.now(timezone.utc) - timedelta(seconds=include_completed_s))
        rows = self.store.conn().execute(
            "SELECT i.*, (SELECT message FROM instance_log l WHERE l.instance_id = i.id ORDER BY l.id DESC LIMIT 1) "
            "AS last_message FROM instances i WHERE i.completed_at IS NULL OR i.completed_at > ? "
            "ORDER BY i.heartbeat_at DESC", (since,))
        return [dict(r) for r in rows]

    def instance(self, instance_id: str) -> dict[str, Any] | None:
        row = self.store.conn().execute("SELECT * FROM instances WHERE id = ?", (instance_id,)).fetchone()
        if row is None:
            return None
        log = self.store.conn().execute("SELECT at, message FROM instance_log WHERE instance_id = ? ORDER BY id",
                                        (instance_id,)).fetchall()
        return {**dict(row), "log": [dict(r) for r in log]}

    # -- world state ------------------------------------------------------------------

    def write_world(self, content: str, author: str, reason: str | None = None,
                    status: str = "accepted", sources: Sequence[Ref] = ()) -> WorldVersion:
        """A new version: ``accepted`` (the user's edit) or ``proposed`` (waiting for review).

        A version the dream drafted names its ``sources`` (the arc, facts, the version
        it revised), so forgetting them removes it.
        """
        now = utc_now()
        decided = now if status == "accepted" else None
        with self.store.write() as conn:
            provenance.require(conn, sources)
            row = conn.execute("INSERT INTO world_state (content, author, reason, status, created_at, decided_at, "
                               "decided_by) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *",
                               (content, author, reason, status, now, decided, author if decided else None)
                               ).fetchone()
            if sources or author == "dream":
                provenance.record(conn, "world", row["id"], sources)
        return _world(row)

    def decide(self, version_id: int, accept: bool, author: str) -> WorldVersion:
        """Accept a proposed version (it becomes the world state from now) or reject it; both stay in history."""
        with self.store.write() as conn:
            row = conn.execute("UPDATE world_state SET status = ?, decided_at = ?, decided_by = ? "
                               "WHERE id = ? AND status = 'proposed' RETURNING *",
                               ("accepted" if accept else "rejected", utc_now(), author, version_id)).fetchone()
        if row is None:
            raise NotFound(f"no open proposal {version_id}", hint="`lyra world proposals` lists them")
        return _world(row)

    def proposals(self) -> list[WorldVersion]:
        rows = self.store.conn().execute("SELECT * FROM world_state WHERE status = 'proposed' ORDER BY id")
        return [_world(r) for r in rows]

    def world(self) -> WorldVersion | None:
        """The version accepted last (a proposal counts from when it was accepted)."""
        row = self.store.conn().execute(
            "SELECT * FROM world_state WHERE status = 'accepted' "
            "ORDER BY coalesce(decided_at, created_at) DESC, id DESC LIMIT 1").fetchone()
        return None if row is None else _world(row)

    def world_history(self) -> list[WorldVersion]:
        return [_world(r) for r in self.store.conn().execute("SELECT * FROM world_state ORDER BY id")]

    def world_edits_since(self, since: str) -> int:
        """How many world-state versions (accepted, proposed or declined) were written after ``since``."""
        return int(self.store.conn().execute("SELECT count(*) FROM world_state WHERE created_at > ?",
                                             (since,)).fetchone()[0])

    # -- consolidation log --------------------------------------------------------------

    def log_event(self, kind: str, target: str | None = None, detail: dict[str, Any] | None = None,
                  instance_id: str | None = None) -> int:
        """Log ids, counts and states; a memory's text never goes into the log (forgetting could not reach it)."""
        detail = strip_text(detail) if detail else None
        with self.store.write() as conn:
            row = conn.execute("INSERT INTO consolidation_log (at, kind, target, detail, instance_id) "
                               "VALUES (?, ?, ?, ?, ?) RETURNING id",
                               (utc_now(), kind, target, json.dumps(detail) if detail else None, instance_id)
                               ).fetchone()
        return int(row[0])

    def last_event_id(self) -> int:
        return int(self.store.conn().execute("SELECT coalesce(max(id), 0) FROM consolidation_log").fetchone()[0])

    def events(self, after_id: int = 0, limit: int = 200) -> list[dict[str, Any]]:
        rows = self.store.conn().execute("SELECT * FROM consolidation_log WHERE id > ? ORDER BY id LIMIT ?",
                                         (after_id, limit))
        return [{**dict(r), "detail": json.loads(r["detail"]) if r["detail"] else None} for r in rows]
