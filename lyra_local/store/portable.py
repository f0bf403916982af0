"""Conversations in portable terms: what ``sessions.jsonl`` holds, and what of it a store already has.

A turn is known everywhere by its **portable id**: the id its source gave it
(a ChatGPT node, a Lyra export's ``source_id``), else ``<origin>:<turn id>``
for a turn written here, where the origin names this memory (from its
creation: ``Store.lineage``) and turn ids are never handed out twice in it
(a restore raises the id sequences: ``store/files/backups.py``). An export writes it
for every turn, on the path and set aside, so importing an export again
(even after an edit, a regenerate or a forget) recognises every turn by id
instead of by position, and adds nothing it has. The versions set aside
travel with their parent's portable id and their ``set_aside_seq``, so the
branches come back as they were. Which columns go out is the registry's
(``kinds.KINDS``: the ``Export`` of ``session``, ``exchange`` and ``aside``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .db import canonical
from .kinds import KINDS
from .records import Ending

if TYPE_CHECKING:
    from .store import Store

_TURNS = ("SELECT id, session_id, source_id FROM exchanges WHERE {where} UNION ALL "
          "SELECT id, session_id, source_id FROM asides WHERE {where}")


def origin(store: Store) -> str:
    """This memory's short name in the portable ids of the turns written here."""
    return hashlib.sha1(store.lineage().encode()).hexdigest()[:12]


def portable_id(origin: str, turn_id: int, source_id: str | None) -> str:
    return source_id or f"{origin}:{turn_id}"


def session_keys(uid: str | None, source: str, source_id: str | None) -> list[str]:
    """How an import recognises a conversation: by its uid, else (one with no uid: a ChatGPT conversation) by
    where it came from, hashed, so a name a client chose never goes into the forget ledger."""
    if uid:
        return [f"session:{uid}"]
    if source_id:
        return ["source:" + hashlib.sha1(f"{source}\0{source_id}".encode()).hexdigest()[:20]]
    return []


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
    author: str | None = None  # the assistant an imported reply came from (``authors``); None: the companion's
    ending: Ending | None = None  # how a reply that did not end by itself ended (``records.ENDINGS``)
    caption: str | None = None  # a photo's caption, apart from the words


def conversations(store: Store) -> Iterator[PortableConversation]:
    """Every remembered session (never one off the record), oldest first, with portable ids throughout."""
    conn = store.conn()
    here = origin(store)
    path_spec, aside_spec = KINDS["exchange"].export, KINDS["aside"].export
    assert path_spec is not None and aside_spec is not None
    for s in conn.execute(f"SELECT * FROM sessions t WHERE {KINDS['session'].where_current()} "
                          "ORDER BY created_at, uid").fetchall():
        path = conn.execute("SELECT * FROM exchanges WHERE session_id = ? AND role IN ('user', 'assistant') "
                            "ORDER BY id", (s["id"],)).fetchall()
        asides = conn.execute("SELECT * FROM asides WHERE session_id = ? AND role IN ('user', 'assistant') "
                              "ORDER BY id", (s["id"],)).fetchall()
        ids = {int(r["id"]): portable_id(here, r["id"], r["source_id"]) for r in [*path, *asides]}
        messages = [{**{c: r[c] for c in path_spec.columns}, "source_id": ids[r["id"]]} for r in path]
        versions = [{**{c: r[c] for c in aside_spec.columns}, "source_id": ids[r["id"]],
                     "parent": ids.get(r["parent_id"]) if r["parent_id"] else None} for r in asides]
        yield PortableConversation(s, messages, versions)


def known_ids(store: Store, session_id: int) -> set[str]:
    """The portable ids of a session's turns, on its path and set aside."""
    return set(_portable(store.conn(), origin(store), "session_id = :s", {"s": session_id}))


def forgotten_keys(store: Store, session_ids: Sequence[int] = (), turn_ids: Sequence[int] = ()) -> list[str]:
    """The portable ids of these sessions and turns (on a path or set aside), read before they are forgotten."""
    conn = store.conn()
    keys = [k for r in conn.execute("SELECT uid, source, source_id FROM sessions WHERE id IN (SELECT value FROM "
                                    "json_each(?))", (json.dumps(list(session_ids)),))
            for k in session_keys(None, r[1], r[2]) + session_keys(r[0], r[1], r[2])]
    return keys + list(_portable(conn, origin(store), "id IN (SELECT value FROM json_each(:ids))",
                                 {"ids": json.dumps(list(turn_ids))}))


def _portable(conn: sqlite3.Connection, here: str, where: str, args: dict[str, Any]) -> dict[str, int]:
    """Portable id -> turn id of the turns (on a path or set aside) that ``where`` selects."""
    return {portable_id(here, r[0], r[2]): int(r[0]) for r in conn.execute(_TURNS.format(where=where), args)}


def add_asides(conn: sqlite3.Connection, here: str, session_id: int, asides: Sequence[NewAside]) -> int:
    """Inside the import's transaction: versions set aside, each after its parent (already stored, or earlier in
    ``asides``); one whose parent is nowhere is skipped. Each takes a fresh turn id, above every id handed out
    (ids grow along any path). ``here``: this memory's ``origin``. How many were stored."""
    local = _portable(conn, here, "session_id = :s", {"s": session_id})
    stored = 0
    for aside in asides:
        parent = local.get(aside.parent) if aside.parent is not None else None
        if aside.parent is not None and parent is None:
            continue
        turn_id = _next_turn_id(conn)
        conn.execute("INSERT INTO asides (id, session_id, parent_id, role, content, created_at, source_id, "
                     "author, ending, caption, set_aside_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (turn_id, session_id, parent, aside.role, aside.content, canonical(aside.created_at),
                      aside.source_id, aside.author, aside.ending, aside.caption, aside.set_aside_seq))
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
