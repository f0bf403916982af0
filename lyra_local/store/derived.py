"""Derived memory: session gists, profile facts, temporal digests, narrative, self-state.

These are rebuilt by the dream cycle from the raw turns. Each write names what
it was built from (``provenance``), checked inside its own transaction: a
memory whose sources were forgotten while it was being made is never written,
and forgetting a source later deletes it (``store/forget/erase.py``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import NotFound
from . import provenance
from .blobs import put_vector
from .db import utc_now
from .kinds import KINDS
from .provenance import Ref

if TYPE_CHECKING:
    from .store import Store

# What counts as remembered now, from the registry (alias ``t``): a stale row waits for the dream to write it again.
_GIST = KINDS["gist"].where_current()
_FACT = KINDS["fact"].where_current()
_DIGEST = KINDS["digest"].where_current()
_ARC = KINDS["narrative"].where_current()
PROFILE_SEEN = "profile_seen_at"  # meta: when the person last looked at their facts


@dataclass(frozen=True)
class Made:
    """How a digest was made: ``basis``, the fingerprint of its sources the dream compares to know it is
    current; ``sources``, what it was built from (provenance); ``method``: abstractive (the summary model),
    extractive (the sources' own sentences) or user (the person's words)."""

    basis: str = ""
    sources: Sequence[Ref] = ()
    method: str = "abstractive"


@dataclass(frozen=True)
class Gist:
    id: int
    session_id: int
    content: str
    covers_upto: int
    created_at: str
    updated_at: str
    method: str = "abstractive"  # or "extractive" (the session's own sentences), "user" (the person's words)


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
    observed_at: str | None = None


@dataclass(frozen=True)
class Digest:
    id: int
    granularity: str
    period: str
    content: str
    source_count: int
    updated_at: str
    method: str = "abstractive"


class Derived:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- gists --------------------------------------------------------------------

    def put_gist(self, session_id: int, content: str, covers_upto: int,
                 vector: npt.NDArray[np.float32] | None = None, model: str | None = None, *,
                 read: Sequence[int] = (), previous: Gist | None = None, method: str = "abstractive") -> Gist:
        """Create or replace a session's gist (and its embedding) in one transaction.

        ``read`` are the turns the draft read and ``previous`` the gist it updated:
        if any is gone (forgotten meanwhile), nothing is written (``StaleSources``).
        """
        now = utc_now()
        with self.store.write() as conn:
            provenance.require(conn, [("exchange", i) for i in read])
            if previous is not None:
                _require_version(conn, previous)
            row = conn.execute(
                "INSERT INTO gists (session_id, content, covers_upto, created_at, updated_at, method) "
                "VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET content = excluded.content, covers_upto = excluded.covers_upto,"
                " updated_at = excluded.updated_at, stale = 0, method = excluded.method,"
                " profiled_upto = CASE WHEN gists.stale = 1 THEN 0 ELSE gists.profiled_upto END RETURNING *",
                (session_id, content, covers_upto, now, now, method)).fetchone()
            # built from the path as it is now: edges to turns set aside since the last version go
            conn.execute("DELETE FROM provenance WHERE kind = 'gist' AND item_id = ? AND source_kind = 'exchange'",
                         (row["id"],))
            conn.execute("INSERT OR IGNORE INTO provenance (kind, item_id, source_kind, source_id) "
                         "SELECT 'gist', ?, 'exchange', id FROM exchanges WHERE session_id = ? AND id <= ?",
                         (row["id"], session_id, covers_upto))
            if vector is not None and model is not None:
                put_vector(conn, "gist", model, row["id"], vector)
        return _gist(row)

    def gist(self, session_id: int) -> Gist | None:
        row = self.store.conn().execute(f"SELECT * FROM gists t WHERE session_id = ? AND {_GIST}",
                                        (session_id,)).fetchone()
        return None if row is None else _gist(row)

    def gists(self) -> list[Gist]:
        return [_gist(r) for r in self.store.conn().execute(f"SELECT * FROM gists t WHERE {_GIST} ORDER BY id")]

    # -- profile ------------------------------------------------------------------

    def set_fact(self, key: str, value: str, *, source_session_id: int | None = None,
                 author: str = "dream", observed_at: str | None = None) -> ProfileFact:
        """Record a fact; a different current value for the key is superseded, kept as history."""
        with self.store.write() as conn:
            return _fact(set_fact(conn, key, value, source_session_id, author, observed_at or utc_now()))

    def apply_facts(self, gist: Gist, facts: Sequence[tuple[str, str, int]], observed_at: str) -> list[ProfileFact]:
        """Fold one gist's facts (key, value, the turn that says it) into the profile and mark the gist profiled,
        in one transaction.

        The facts were read from this version of the gist: if it changed or was
        forgotten meanwhile, nothing is written (``StaleSources``).
        """
        with self.store.write() as conn:
            _require_version(conn, gist)
            provenance.require(conn, [("exchange", turn) for _, _, turn in facts])
            rows = [set_fact(conn, k, v, gist.session_id, "dream", observed_at) for k, v, _ in facts]
            for row, (_, _, turn) in zip(rows, facts, strict=True):
                if row["author"] == "dream":  # a statement of the person's is not built from what the dream read
                    provenance.record(conn, "fact", row["id"], [("gist", gist.id), ("exchange", turn)])
            conn.execute("UPDATE gists SET profiled_upto = ? WHERE id = ?", (gist.covers_upto, gist.id))
        return [_fact(r) for r in rows]

    def unprofiled_gists(self) -> list[tuple[Gist, str]]:
        """Gists with content the profile has not seen yet, with their session's last turn time, oldest first."""
        rows = self.store.conn().execute(
            "SELECT g.*, (SELECT max(created_at) FROM exchanges e WHERE e.session_id = g.session_id) AS seen "
            f"FROM gists g WHERE {KINDS['gist'].where_current('g')} AND g.profiled_upto < g.covers_upto "
            "ORDER BY seen, g.id")
        return [(_gist(r), r["seen"] or r["updated_at"]) for r in rows]

    def delete_fact(self, key: str, author: str = "user") -> int:
        """Retire the current value of ``key``: kept in history, superseded by nothing."""
        with self.store.write() as conn:
            return conn.execute("UPDATE profile_facts SET superseded_at = ? WHERE key = ? AND superseded_at IS NULL",
                                (utc_now(), key)).rowcount

    def profile(self) -> list[ProfileFact]:
        rows = self.store.conn().execute(
            f"SELECT * FROM profile_facts t WHERE superseded_at IS NULL AND {_FACT} ORDER BY key")
        return [_fact(r) for r in rows]

    def profile_seen_at(self) -> str | None:
        """When the person last looked at what is known about them (facts learnt later are new to them)."""
        return self.store.get_meta(PROFILE_SEEN)

    def mark_profile_seen(self) -> str:
        now = utc_now()
        self.store.set_meta(PROFILE_SEEN, now)
        return now

    def fact(self, fact_id: int) -> ProfileFact:
        row = self.store.conn().execute(f"SELECT * FROM profile_facts t WHERE id = ? AND {_FACT}",
                                        (fact_id,)).fetchone()
        if row is None:
            raise NotFound(f"no fact {fact_id}")
        return _fact(row)

    def fact_history(self, key: str) -> list[ProfileFact]:
        rows = self.store.conn().execute(f"SELECT * FROM profile_facts t WHERE key = ? AND {_FACT} ORDER BY id",
                                         (key,))
        return [_fact(r) for r in rows]

    def facts_since(self, since: str, *, limit: int = 5) -> list[ProfileFact]:
        """Facts written after ``since`` that no later value superseded, newest first (the sitrep's recent)."""
        rows = self.store.conn().execute(
            "SELECT * FROM profile_facts WHERE created_at > ? AND superseded_at IS NULL ORDER BY id DESC LIMIT ?",
            (since, limit))
        return [_fact(r) for r in rows]

    # -- digests ------------------------------------------------------------------

    def put_digest(self, granularity: str, period: str, content: str, source_count: int,
                   vector: npt.NDArray[np.float32] | None = None, model: str | None = None, *,
                   made: Made = Made()) -> Digest:
        """Create or replace a period's digest, its embedding and what it was built from, atomically."""
        now = utc_now()
        basis, sources, method = made.basis, made.sources, made.method
        with self.store.write() as conn:
            provenance.require(conn, sources)
            row = conn.execute(
                "INSERT INTO digests (granularity, period, content, source_count, created_at, updated_at, basis, "
                "method) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(granularity, period) DO UPDATE SET content = "
                "excluded.content, source_count = excluded.source_count, updated_at = excluded.updated_at, "
                "basis = excluded.basis, method = excluded.method, stale = 0 RETURNING *",
                (granularity, period, content, source_count, now, now, basis, method)).fetchone()
            conn.execute("DELETE FROM provenance WHERE kind = 'digest' AND item_id = ?", (row["id"],))
            provenance.record(conn, "digest", row["id"], sources)
            if vector is not None and model is not None:
                put_vector(conn, "digest", model, row["id"], vector)
        return _digest(row)

    def digests(self, granularity: str | None = None) -> list[Digest]:
        sql = f"SELECT * FROM digests t WHERE {_DIGEST}"
        args: tuple[str, ...] = ()
        if granularity:
            sql += " AND granularity = ?"
            args = (granularity,)
        return [_digest(r) for r in self.store.conn().execute(sql + " ORDER BY period", args)]

    def delete_digests(self, keys: Sequence[tuple[str, str]]) -> int:
        """Remove digests whose sources are all gone (their vectors go with them, by trigger)."""
        with self.store.write() as conn:
            return sum(conn.execute("DELETE FROM digests WHERE granularity = ? AND period = ?", key).rowcount
                       for key in keys)

    # -- narrative and self-state ---------------------------------------------------

    def set_narrative(self, content: str, basis: str = "", sources: Sequence[Ref] = (),
                      method: str = "abstractive") -> int:
        """A new version of the arc, built from ``sources`` (facts, digests, the previous arc)."""
        with self.store.write() as conn:
            provenance.require(conn, sources)
            row = conn.execute("INSERT INTO narrative (content, created_at, basis, method) VALUES (?, ?, ?, ?) "
                               "RETURNING id", (content, utc_now(), basis, method)).fetchone()
            provenance.record(conn, "narrative", row[0], sources)
        return int(row[0])

    def narrative(self) -> str | None:
        current = self.narrative_version()
        return None if current is None else current[1]

    def narrative_version(self) -> tuple[int, str] | None:
        """The current arc's id and text."""
        row = self.store.conn().execute(
            f"SELECT id, content FROM narrative t WHERE {_ARC} ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def current_narrative(self) -> dict[str, Any] | None:
        """The current arc: its version id, text and how it was written."""
        row = self.store.conn().execute(
            f"SELECT id, content, method, created_at FROM narrative t WHERE {_ARC} ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else dict(row)

    def narrative_basis(self) -> str | None:
        row = self.store.conn().execute(
            f"SELECT basis FROM narrative t WHERE {_ARC} ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def set_self_state(self, state: dict[str, Any], sources: Sequence[Ref] = ()) -> int:
        """A new self-state version, built from ``sources`` (gists, the arc, the previous state)."""
        with self.store.write() as conn:
            provenance.require(conn, sources)
            row = conn.execute("INSERT INTO self_state (state, created_at) VALUES (?, ?) RETURNING id",
                               (json.dumps(state), utc_now())).fetchone()
            provenance.record(conn, "self_state", row[0], sources)
        return int(row[0])

    def self_state(self) -> dict[str, Any] | None:
        current = self.self_state_version()
        return None if current is None else current[1]

    def self_state_version(self) -> tuple[int, dict[str, Any]] | None:
        row = self.store.conn().execute("SELECT id, state FROM self_state ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), dict(json.loads(row[1])))


def rejection_target(key: str, session: int | str) -> str:
    """How a fact the person rejected is named in ``dismissed``: its key and the conversation it was learnt from
    (a session id here, its uid in an export), never its value."""
    return f"{key}:{session}"


def rejection_parts(target: str) -> tuple[str, str]:
    """A rejected fact's ``dismissed`` target as (key, session); keys hold no colon (``normalize_key``)."""
    key, _, session = target.partition(":")
    return key, session


def same_value(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(text.split()).strip(" .").casefold()
    return norm(a) == norm(b)


def set_fact(conn: sqlite3.Connection, key: str, value: str, source_session_id: int | None, author: str,
             observed_at: str) -> sqlite3.Row:
    """Inside a transaction: the newer observation wins, the older one is kept as history.

    Observations are ordered by when they were true (the session's date), not by
    when the dream cycle got to them, so an imported old conversation never
    overrides what a newer one said.
    """
    now = utc_now()
    current: sqlite3.Row | None = conn.execute(
        f"SELECT * FROM profile_facts t WHERE key = ? AND superseded_at IS NULL AND {_FACT}", (key,)).fetchone()
    if current is not None and author == "dream" and current["author"] == "user":
        return current  # the person's own statement (written or confirmed): the dream never changes it
    if current is not None and same_value(current["value"], value):
        if author == "user" and current["author"] != "user":  # saying again what the dream learnt confirms it
            confirmed: sqlite3.Row = conn.execute("UPDATE profile_facts SET author = 'user' WHERE id = ? RETURNING *",
                                                  (current["id"],)).fetchone()
            return confirmed
        return current
    row: sqlite3.Row = conn.execute(
        "INSERT INTO profile_facts (key, value, source_session_id, author, created_at, observed_at) "
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING *", (key, value, source_session_id, author, now, observed_at)).fetchone()
    if current is None:
        return row
    if (current["observed_at"] or "") <= observed_at:
        conn.execute("UPDATE profile_facts SET superseded_by = ?, superseded_at = ? WHERE id = ?",
                     (row["id"], now, current["id"]))
        return row
    older: sqlite3.Row = conn.execute(
        "UPDATE profile_facts SET superseded_by = ?, superseded_at = ? WHERE id = ? RETURNING *",
        (current["id"], now, row["id"])).fetchone()
    return older


def _require_version(conn: sqlite3.Connection, gist: Gist) -> None:
    """Inside a transaction: the gist is still there, as it was read (``StaleSources`` otherwise)."""
    now = conn.execute("SELECT updated_at FROM gists WHERE id = ?", (gist.id,)).fetchone()
    if now is None or now[0] != gist.updated_at:
        raise provenance.StaleSources(f"gist {gist.id} changed or was forgotten while it was being read")


def _gist(row: sqlite3.Row) -> Gist:
    return Gist(row["id"], row["session_id"], row["content"], row["covers_upto"], row["created_at"],
                row["updated_at"], row["method"])


def _fact(row: sqlite3.Row) -> ProfileFact:
    return ProfileFact(row["id"], row["key"], row["value"], row["source_session_id"], row["author"],
                       row["created_at"], row["superseded_by"], row["superseded_at"], row["observed_at"])


def _digest(row: sqlite3.Row) -> Digest:
    return Digest(row["id"], row["granularity"], row["period"], row["content"], row["source_count"],
                  row["updated_at"], row["method"])
