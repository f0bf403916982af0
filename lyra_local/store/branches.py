"""Regenerated replies and edited messages: a conversation is a tree, and only its current path is remembered.

``exchanges`` holds each session's current path, in id order (a turn is always
created after the one before it, so ids grow along any path). A turn moved off
the path (a reply regenerated away, or what followed a message that was
edited) goes to ``asides`` with the same id and a pointer to the turn before
it; there it has no full-text entry, its vector waits beside it out of the
index, and the dream never reads it. Choosing it again moves it, and the turns
that followed it last time, back, vector included. Moving a turn off the path
forgets a fact drawn from it and marks the gist, digests and arc over it stale:
the dream writes them again from the path as it is now. What the person wrote
stays.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import BadRequest, NotFound
from . import provenance
from .blobs import put_vector
from .kinds import STALE_KINDS

if TYPE_CHECKING:
    from .store import Store


class TurnNotFound(NotFound):
    """No turn with that id, on the path or aside."""


@dataclass(frozen=True)
class Versions:
    """The versions of one turn of the path: its own id among its siblings' (in the order they were made)."""

    ids: tuple[int, ...]
    chosen: int  # 1-based position of the turn on the path

    @property
    def count(self) -> int:
        return len(self.ids)


def parent_of(conn: sqlite3.Connection, session_id: int, turn_id: int) -> int | None:
    """The turn before ``turn_id`` on the session's current path (``None`` for the first)."""
    row = conn.execute("SELECT max(id) FROM exchanges WHERE session_id = ? AND id < ?",
                       (session_id, turn_id)).fetchone()
    return None if row[0] is None else int(row[0])


def set_aside(conn: sqlite3.Connection, session_id: int, from_id: int) -> list[int]:
    """Inside a write transaction: move the path's turns from ``from_id`` on to ``asides``; their ids.

    Each keeps its trace and its vector (out of the index, for when it comes
    back). What the dream built from them is no longer remembered (``_unbuilt``);
    what other replies' traces say of them stays.
    """
    rows = conn.execute(
        "SELECT e.*, c.trace, c.tokens AS trace_tokens, c.created_at AS trace_created_at, v.vector, "
        "v.model AS vector_model FROM exchanges e LEFT JOIN context_traces c ON c.exchange_id = e.id "
        "LEFT JOIN embeddings v ON v.tier = 'exchange' AND v.item_id = e.id AND v.model = (SELECT min(w.model) "
        "FROM embeddings w WHERE w.tier = 'exchange' AND w.item_id = e.id) "
        "WHERE e.session_id = ? AND e.id >= ? ORDER BY e.id", (session_id, from_id)).fetchall()
    if not rows:
        return []
    seq = int(conn.execute("SELECT coalesce(max(set_aside_seq), 0) + 1 FROM asides").fetchone()[0])
    parent = parent_of(conn, session_id, rows[0]["id"])
    for row in rows:
        conn.execute("INSERT INTO asides (id, session_id, parent_id, role, content, created_at, tokens, source_id, "
                     "ending, author, caption, trace, trace_tokens, trace_created_at, vector, vector_model, "
                     "set_aside_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (row["id"], session_id, parent, row["role"], row["content"], row["created_at"], row["tokens"],
                      row["source_id"], row["ending"], row["author"], row["caption"], row["trace"],
                      row["trace_tokens"], row["trace_created_at"], row["vector"], row["vector_model"], seq))
        parent = row["id"]
    ids = [int(r["id"]) for r in rows]
    _unbuilt(conn, ids)
    conn.execute("DELETE FROM exchanges WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))
    return ids


def _unbuilt(conn: sqlite3.Connection, turn_ids: list[int]) -> None:
    """What the dream built from these turns is no longer remembered: a fact drawn from one of them is forgotten
    (a fact it had replaced is current again); a gist, and the digests and arc over it, are marked stale, for
    the dream to write again from the path as it is now. What the person wrote stays as they wrote it.

    Every memory keeps its edges to these turns until it is written again (``Derived.put_gist`` replaces a
    gist's), so forgetting a turn set aside still reaches all that was built from it: a stale gist, or a
    summary the person edited while the turn was on the path."""
    turns = json.dumps(turn_ids)
    facts = [("fact", int(r[0])) for r in conn.execute(
        "SELECT DISTINCT p.item_id FROM provenance p JOIN profile_facts f ON f.id = p.item_id WHERE p.kind = 'fact' "
        "AND p.source_kind = 'exchange' AND p.source_id IN (SELECT value FROM json_each(?)) AND f.author != 'user'",
        (turns,))]
    if facts:
        provenance.forget(conn, facts, legacy=False)
    built = provenance.dependents(conn, [("exchange", i) for i in turn_ids], legacy=False)
    for kind in STALE_KINDS:  # the dream writes these again (recall, the context and the panels skip stale rows)
        conn.execute(f"UPDATE {kind.table} SET stale = 1 WHERE method != 'user' AND id IN (SELECT value FROM "
                     "json_each(?))", (json.dumps(built.get(kind.name, [])),))


def restore(conn: sqlite3.Connection, session_id: int, chain: list[int]) -> list[int]:
    """Inside a write transaction: move ``chain`` (aside turns, each the child of the one before, the first a
    child of the path's last turn) back onto the path, then the turns that last followed it; their ids."""
    path = list(chain)
    while True:
        row = conn.execute("SELECT id FROM asides WHERE session_id = ? AND parent_id = ? "
                           "ORDER BY set_aside_seq DESC, id DESC LIMIT 1", (session_id, path[-1])).fetchone()
        if row is None:
            break
        path.append(int(row[0]))
    for turn_id in path:
        row = conn.execute("SELECT * FROM asides WHERE id = ?", (turn_id,)).fetchone()
        conn.execute("INSERT INTO exchanges (id, session_id, role, content, created_at, tokens, source_id, ending, "
                     "author, caption, remembered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                     "(SELECT remember FROM sessions WHERE id = ?))",
                     (row["id"], session_id, row["role"], row["content"], row["created_at"], row["tokens"],
                      row["source_id"], row["ending"], row["author"], row["caption"], session_id))
        if row["trace"] is not None:
            conn.execute("INSERT INTO context_traces (exchange_id, trace, tokens, created_at) VALUES (?, ?, ?, ?)",
                         (row["id"], row["trace"], row["trace_tokens"], row["trace_created_at"]))
        if row["vector"] is not None:  # the same vector as before: the index takes it back as it was
            put_vector(conn, "exchange", row["vector_model"], row["id"],
                       np.frombuffer(row["vector"], dtype=np.float32))
        conn.execute("DELETE FROM asides WHERE id = ?", (turn_id,))
    return path


def doomed_asides(conn: sqlite3.Connection, exchange_ids: Sequence[int], aside_ids: Sequence[int] = ()) -> list[int]:
    """The aside turns that go when these turns are forgotten: their other versions (the asides beside a
    path turn), the asides named, and every turn that followed any of them."""
    rows = conn.execute(
        "WITH RECURSIVE gone(id) AS ("
        " SELECT a.id FROM asides a JOIN exchanges e ON e.id IN (SELECT value FROM json_each(?)) "
        "   AND a.session_id = e.session_id AND a.role = e.role "
        "   AND a.parent_id IS (SELECT max(p.id) FROM exchanges p WHERE p.session_id = e.session_id AND p.id < e.id)"
        " UNION SELECT value FROM json_each(?) WHERE value IN (SELECT id FROM asides)"
        " UNION SELECT a.id FROM asides a JOIN json_each(?) f ON a.parent_id = f.value"
        " UNION SELECT a.id FROM asides a JOIN gone g ON a.parent_id = g.id"
        ") SELECT id FROM gone ORDER BY id",
        (json.dumps(list(exchange_ids)), json.dumps(list(aside_ids)), json.dumps(list(exchange_ids)))).fetchall()
    return [int(r[0]) for r in rows]


def forget_asides(conn: sqlite3.Connection, ids: list[int]) -> int:
    """Inside a write transaction: delete aside turns (``provenance.forget`` has taken their edges)."""
    if not ids:
        return 0
    return int(conn.execute("DELETE FROM asides WHERE id IN (SELECT value FROM json_each(?))",
                            (json.dumps(ids),)).rowcount)


class Branches:
    """A session's versions of its turns, and choosing among them."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def versions(self, session_id: int) -> dict[int, Versions]:
        """For each turn of the path that has other versions: all of them, and which one it is."""
        conn = self.store.conn()
        path = conn.execute("SELECT id, role FROM exchanges WHERE session_id = ? ORDER BY id", (session_id,)).fetchall()
        others: dict[tuple[int | None, str], list[int]] = {}
        for row in conn.execute("SELECT id, parent_id, role FROM asides WHERE session_id = ?", (session_id,)):
            others.setdefault((row["parent_id"], row["role"]), []).append(int(row["id"]))
        out = {}
        parent: int | None = None
        for row in path:
            siblings = others.get((parent, row["role"]))
            if siblings:
                ids = tuple(sorted([int(row["id"]), *siblings]))
                out[int(row["id"])] = Versions(ids, ids.index(int(row["id"])) + 1)
            parent = int(row["id"])
        return out

    def session_of(self, turn_id: int) -> tuple[int, bool]:
        """The session of a turn, on the path or aside, and whether it is on the path."""
        found = self.sessions_of([turn_id]).get(turn_id)
        if found is None:
            raise TurnNotFound(f"no turn with id {turn_id}",
                               hint="it may have been forgotten; reload the conversation")
        return found

    def sessions_of(self, turn_ids: Sequence[int]) -> dict[int, tuple[int, bool]]:
        """Turn id -> (its session, whether it is on the path), for those of ``turn_ids`` that are here, on the
        path or aside."""
        rows = self.store.conn().execute(
            "SELECT id, session_id, 1 FROM exchanges WHERE id IN (SELECT value FROM json_each(:ids)) UNION ALL "
            "SELECT id, session_id, 0 FROM asides WHERE id IN (SELECT value FROM json_each(:ids))",
            {"ids": json.dumps(list(turn_ids))})
        return {int(r[0]): (int(r[1]), bool(r[2])) for r in rows}

    def choose(self, turn_id: int) -> list[int]:
        """Make an aside turn current: the path from where it branches off is set aside and it (with what last
        followed it) takes its place. Returns the ids that came back onto the path (to embed any that lack a vector
        of the model in use)."""
        with self.store.write() as conn:
            row = conn.execute("SELECT session_id FROM asides WHERE id = ?", (turn_id,)).fetchone()
            if row is None:
                if conn.execute("SELECT 1 FROM exchanges WHERE id = ?", (turn_id,)).fetchone():
                    return []  # already current
                raise TurnNotFound(f"no turn with id {turn_id}", hint="it may have been forgotten")
            session_id = int(row[0])
            chain = [turn_id]  # up through aside ancestors to the turn of the path it branches from
            while True:
                parent = conn.execute("SELECT parent_id FROM asides WHERE id = ?", (chain[0],)).fetchone()[0]
                if parent is None or conn.execute("SELECT 1 FROM exchanges WHERE id = ?", (parent,)).fetchone():
                    break
                if not conn.execute("SELECT 1 FROM asides WHERE id = ?", (parent,)).fetchone():
                    raise BadRequest(f"turn {turn_id} follows a turn that was forgotten")
                chain.insert(0, int(parent))
            after = conn.execute("SELECT min(id) FROM exchanges WHERE session_id = ? AND id > coalesce(?, 0)",
                                 (session_id, parent)).fetchone()[0]
            if after is not None:
                set_aside(conn, session_id, int(after))
            return restore(conn, session_id, chain)
