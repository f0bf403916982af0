"""Conversations in portable terms: what ``sessions.jsonl`` holds, and what of it a store already has.

A turn is known everywhere by its **portable id**: the id its source gave it
(a ChatGPT node, a Lyra export's ``source_id``), else ``<session uid>:<turn
id>`` for a turn written here. An export writes it for every turn, on the path
and set aside, so importing an export again (even after an edit, a regenerate
or a forget) recognises every turn by id instead of by position, and adds
nothing it has. The versions set aside travel with their parent's portable id
and their ``set_aside_seq``, so the branches come back as they were; what
goes out and how is the registry's (``kinds.KINDS``: ``session``,
``exchange``, ``aside``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .db import canonical

if TYPE_CHECKING:
    from .store import Store


def portable_id(uid: str, turn_id: int, source_id: str | None) -> str:
    return source_id or f"{uid}:{turn_id}"


@dataclass(frozen=True)
class PortableConversation:
    """One remembered session as an export writes it: the session row, its path and its versions set aside."""

    session: sqlite3.Row
    messages: list[dict[str, Any]]
    asides: list[dict[str, Any]]


@dataclass(frozen=True)
class NewAside:
    """A version set aside, as an import brings it: its parent is a portable id (``None``: the first turn)."""

    role: str
    content: str
    created_at: str
    source_id: str
    parent: str | None
    set_aside_seq: int


def conversations(store: Store) -> Iterator[PortableConversation]:
    """Every remembered session (never one off the record), oldest first, with portable ids throughout."""
    conn = store.conn()
    for s in conn.execute("SELECT * FROM sessions WHERE remember = 1 ORDER BY created_at, uid").fetchall():
        path = conn.execute("SELECT id, role, content, created_at, source_id FROM exchanges WHERE session_id = ? "
                            "AND role IN ('user', 'assistant') ORDER BY id", (s["id"],)).fetchall()
        asides = conn.execute("SELECT id, parent_id, role, content, created_at, source_id, set_aside_seq FROM asides "
                              "WHERE session_id = ? AND role IN ('user', 'assistant') ORDER BY id",
                              (s["id"],)).fetchall()
        ids = {int(r["id"]): portable_id(s["uid"], r["id"], r["source_id"]) for r in [*path, *asides]}
        messages = [{"role": r["role"], "content": r["content"], "created_at": r["created_at"],
                     "source_id": ids[r["id"]]} for r in path]
        versions = [{"role": r["role"], "content": r["content"], "created_at": r["created_at"],
                     "source_id": ids[r["id"]], "parent": ids.get(r["parent_id"]) if r["parent_id"] else None,
                     "set_aside_seq": r["set_aside_seq"]} for r in asides]
        yield PortableConversation(s, messages, versions)


def session_keys(uid: str | None, source: str, source_id: str | None) -> list[str]:
    """The portable ids of a conversation: its uid, and where it was imported from."""
    return [*([f"session:{uid}"] if uid else []), *([f"source:{source}:{source_id}"] if source_id else [])]


def forgotten_keys(store: Store, session_ids: Sequence[int] = (), turn_ids: Sequence[int] = ()) -> list[str]:
    """The portable ids of these sessions and turns (on a path or set aside), read before they are forgotten."""
    conn = store.conn()
    keys = [k for r in conn.execute("SELECT uid, source, source_id FROM sessions WHERE id IN (SELECT value FROM "
                                    "json_each(?))", (json.dumps(list(session_ids)),))
            for k in session_keys(r[0], r[1], r[2])]
    rows = conn.execute("SELECT t.id, t.source_id, s.uid FROM (SELECT id, session_id, source_id FROM exchanges "
                        "UNION ALL SELECT id, session_id, source_id FROM asides) t JOIN sessions s "
                        "ON s.id = t.session_id WHERE t.id IN (SELECT value FROM json_each(?))",
                        (json.dumps(list(turn_ids)),))
    return keys + [portable_id(r[2], r[0], r[1]) for r in rows]


def known_ids(store: Store, session_id: int) -> set[str]:
    """The portable ids of a session's turns, on its path and set aside."""
    conn = store.conn()
    uid = conn.execute("SELECT uid FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
    rows = conn.execute("SELECT id, source_id FROM exchanges WHERE session_id = :s UNION ALL "
                        "SELECT id, source_id FROM asides WHERE session_id = :s", {"s": session_id})
    return {portable_id(uid, r[0], r[1]) for r in rows}


def path_length(store: Store, session_id: int) -> int:
    return int(store.conn().execute("SELECT count(*) FROM exchanges WHERE session_id = ?",
                                    (session_id,)).fetchone()[0])


def add_asides(conn: sqlite3.Connection, session_id: int, asides: Sequence[NewAside]) -> int:
    """Inside the import's transaction: versions set aside, each after its parent (already stored, or earlier in
    ``asides``); one whose parent is nowhere is skipped. Each takes a fresh turn id, above every id handed out
    (ids grow along any path). How many were stored."""
    uid = conn.execute("SELECT uid FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
    local = {portable_id(uid, r[0], r[1]): int(r[0]) for r in conn.execute(
        "SELECT id, source_id FROM exchanges WHERE session_id = :s UNION ALL "
        "SELECT id, source_id FROM asides WHERE session_id = :s", {"s": session_id})}
    stored = 0
    for aside in asides:
        parent = local.get(aside.parent) if aside.parent is not None else None
        if aside.parent is not None and parent is None:
            continue
        turn_id = _next_turn_id(conn)
        conn.execute("INSERT INTO asides (id, session_id, parent_id, role, content, created_at, source_id, "
                     "set_aside_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (turn_id, session_id, parent, aside.role, aside.content, canonical(aside.created_at),
                      aside.source_id, aside.set_aside_seq))
        local[aside.source_id] = turn_id
        stored += 1
    return stored


def _next_turn_id(conn: sqlite3.Connection) -> int:
    """A turn id never handed out before: turns on a path and set aside share the ``exchanges`` sequence."""
    top = max(int(conn.execute("SELECT coalesce(max(id), 0) FROM asides").fetchone()[0]),
              int(conn.execute("SELECT coalesce(max(id), 0) FROM exchanges").fetchone()[0]))
    row = conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) + 1 WHERE name = 'exchanges' RETURNING seq",
                       (top,)).fetchone()
    if row is None:
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('exchanges', ?)", (top + 1,))
        return top + 1
    return int(row[0])
