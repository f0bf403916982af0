"""Sessions: create, find, list newest first, rename, delete (which forgets)."""

from __future__ import annotations

import builtins
import json
import sqlite3
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import BadRequest, LyraError
from .db import canonical, utc_now
from .forget.folding import fold
from .kinds import KINDS
from .records import Session

if TYPE_CHECKING:
    from .store import Store


class SessionNotFound(LyraError):
    status_code = 404


class AmbiguousSession(BadRequest):
    """A reference that names more than one conversation: nothing is done to any of them."""


_CURRENT = KINDS["session"].where_current()  # remembered, not off the record (alias ``t``)
UNNAMED = "Conversation of "  # + the day it began: the name of one whose own name was forgotten


def unname(conn: sqlite3.Connection, session_ids: Sequence[int]) -> list[str]:
    """Inside a write transaction: these conversations are named only by the day they began; the uids of those
    whose name changed."""
    rows = conn.execute("UPDATE sessions SET name = ? || substr(created_at, 1, 10) WHERE id IN "
                        "(SELECT value FROM json_each(?)) AND name IS NOT ? || substr(created_at, 1, 10) RETURNING uid",
                        (UNNAMED, json.dumps(list(session_ids)), UNNAMED))
    return [str(r[0]) for r in rows]


def unsource(conn: sqlite3.Connection, session_ids: Sequence[int]) -> list[str]:
    """Inside a write transaction: these conversations forget the name a client gave them (an OpenAI ``user``, an
    agent's name: their ``source_id``), so the next request by that name starts a new one; their uids."""
    rows = conn.execute("UPDATE sessions SET source_id = NULL WHERE source_id IS NOT NULL AND id IN "
                        "(SELECT value FROM json_each(?)) RETURNING uid", (json.dumps(list(session_ids)),))
    return [str(r[0]) for r in rows]


def row_to_session(row: sqlite3.Row) -> Session:
    return Session(row["id"], row["uid"], row["name"], row["created_at"], row["updated_at"], row["source"],
                   row["source_id"], bool(row["remember"]))


class Sessions:
    def __init__(self, store: Store) -> None:
        self.store = store

    def create(self, name: str, *, created_at: str | None = None, source: str = "lyra",
               source_id: str | None = None, uid: str | None = None, remember: bool = True,
               conn: sqlite3.Connection | None = None) -> Session:
        """A new session (``remember=False``: off the record); pass ``conn`` to join a larger transaction."""
        name = name.strip() or "New chat"
        now = canonical(created_at) if created_at else utc_now()
        values = (uid or uuid.uuid4().hex, name, now, now, source, source_id, int(remember))
        sql = ("INSERT INTO sessions (uid, name, created_at, updated_at, source, source_id, remember) "
               "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *")
        if conn is not None:
            return row_to_session(conn.execute(sql, values).fetchone())
        with self.store.write() as c:
            return row_to_session(c.execute(sql, values).fetchone())

    def find_or_create(self, source: str, source_id: str, name: str, *, remember: bool = True) -> Session:
        """The session ``(source, source_id)`` names, made now (named ``name``) when there is none.

        One write transaction that inserts unless the pair is taken, then reads: requests that arrive
        together for a new name (six OpenAI clients, two agents) all get the one session. Finding first
        and creating after let the slower of two fail on the UNIQUE constraint, answering 500.
        """
        now = utc_now()
        values = (uuid.uuid4().hex, name.strip() or "New chat", now, now, source, source_id, int(remember))
        with self.store.write() as conn:
            conn.execute("INSERT INTO sessions (uid, name, created_at, updated_at, source, source_id, remember) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, source_id) DO NOTHING", values)
            row = conn.execute("SELECT * FROM sessions WHERE source = ? AND source_id = ?",
                               (source, source_id)).fetchone()
        return row_to_session(row)

    def exists(self, session_id: int, *, conn: sqlite3.Connection | None = None) -> bool:
        """Whether the session is there (pass ``conn`` to ask inside a transaction)."""
        return (conn or self.store.conn()).execute("SELECT 1 FROM sessions WHERE id = ?",
                                                   (session_id,)).fetchone() is not None

    def get(self, session_id: int) -> Session:
        row = self.store.conn().execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise SessionNotFound(f"no session with id {session_id}", hint="`lyra sessions` lists them")
        return row_to_session(row)

    def find(self, *, name: str | None = None, uid: str | None = None, source: str | None = None,
             source_id: str | None = None) -> Session | None:
        conn = self.store.conn()
        if uid is not None:
            row = conn.execute("SELECT * FROM sessions WHERE uid = ?", (uid,)).fetchone()
        elif source is not None and source_id is not None:
            row = conn.execute("SELECT * FROM sessions WHERE source = ? AND source_id = ?",
                               (source, source_id)).fetchone()
        elif name is not None:  # a remembered one: an off-the-record session is never taken up again by name
            row = conn.execute(f"SELECT * FROM sessions t WHERE name = ? AND {_CURRENT} "
                               "ORDER BY updated_at DESC LIMIT 1", (name,)).fetchone()
        else:
            raise BadRequest("find a session by uid, by source and source_id, or by name")
        return None if row is None else row_to_session(row)

    def list(self, *, limit: int = 100, offset: int = 0) -> list[Session]:
        """Newest activity first."""
        rows = self.store.conn().execute(
            "SELECT * FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ? OFFSET ?", (limit, offset))
        return [row_to_session(r) for r in rows]

    def ids(self) -> "builtins.list[int]":
        """Every conversation's id (a removed person's memory is forgotten by them)."""
        return [r[0] for r in self.store.conn().execute("SELECT id FROM sessions ORDER BY id")]

    def count(self) -> int:
        return int(self.store.conn().execute("SELECT count(*) FROM sessions").fetchone()[0])

    def active_since(self, since: str, *, limit: int = 5) -> "builtins.list[Session]":
        """Remembered sessions with a turn after ``since``, most recently active first (the sitrep's recent)."""
        rows = self.store.conn().execute(
            f"SELECT * FROM sessions t WHERE t.updated_at > ? AND {_CURRENT} ORDER BY t.updated_at DESC LIMIT ?",
            (since, limit))
        return [row_to_session(r) for r in rows]

    def rename(self, session_id: int, name: str) -> Session:
        if not name.strip():
            raise BadRequest("a session name cannot be empty")
        with self.store.write() as conn:
            row = conn.execute("UPDATE sessions SET name = ? WHERE id = ? RETURNING *",
                               (name.strip(), session_id)).fetchone()
        if row is None:
            raise SessionNotFound(f"no session with id {session_id}")
        return row_to_session(row)

    def resolve(self, ref: str) -> Session:
        """The one conversation a person's reference names, never a guess: ``#12`` is the id 12; a bare reference is
        an id or a name, as `lyra sessions` and the web UI show them, and is refused when it names more than one
        (``AmbiguousSession``, listing them); only when it names none is it taken for an export's id (a uid)."""
        ref = ref.strip()
        conn = self.store.conn()
        if ref.startswith("#"):
            digits = ref[1:]
            if not (digits.isascii() and digits.isdigit() and int(digits) < 2**63):
                raise SessionNotFound(f"no conversation {ref!r}", hint="#ID takes an id as `lyra sessions` shows it")
            return self.get(int(digits))
        rows = (conn.execute("SELECT * FROM sessions WHERE CAST(id AS TEXT) = :ref OR name = :ref ORDER BY id",
                             {"ref": ref}).fetchall()
                or conn.execute("SELECT * FROM sessions WHERE uid = :ref", {"ref": ref}).fetchall())
        if not rows:
            raise SessionNotFound(f"no conversation {ref!r}", hint="`lyra sessions` lists them with their ids")
        if len(rows) > 1:
            named = "; ".join(f"#{r['id']} \u201c{r['name']}\u201d" for r in rows[:10])
            raise AmbiguousSession(f"{ref!r} names {len(rows)} conversations: {named}",
                                   hint="give the one you mean as #ID (`lyra sessions` shows the ids)")
        return row_to_session(rows[0])

    def uids(self, session_ids: Sequence[int]) -> "builtins.list[str]":
        """The uids of these sessions."""
        rows = self.store.conn().execute("SELECT uid FROM sessions WHERE id IN (SELECT value FROM json_each(?))",
                                         (json.dumps(list(session_ids)),))
        return [str(r[0]) for r in rows]

    def ids_of(self, uids: Sequence[str]) -> "builtins.list[int]":
        """The ids of the sessions with these uids that are here."""
        rows = self.store.conn().execute("SELECT id FROM sessions WHERE uid IN (SELECT value FROM json_each(?))",
                                         (json.dumps(list(uids)),))
        return [int(r[0]) for r in rows]

    def remembered(self, session_ids: Sequence[int]) -> "builtins.list[int]":
        """Those of these sessions that are remembered (not off the record)."""
        rows = self.store.conn().execute(
            f"SELECT id FROM sessions t WHERE id IN (SELECT value FROM json_each(?)) AND "
            f"{KINDS['session'].where_current()}", (json.dumps(list(session_ids)),))
        return [int(r[0]) for r in rows]

    def holding_source(self, session_ids: Sequence[int], text: str) -> "builtins.list[int]":
        """Those of these sessions whose client-given name (``source_id``) holds ``text``, folded."""
        rows = self.store.conn().execute(
            "SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?)) AND "
            "instr(lyra_fold(source_id), ?) > 0", (json.dumps(list(session_ids)), fold(text)))
        return [int(r[0]) for r in rows]

    def off_the_record_idle(self, before: str) -> "builtins.list[int]":
        """Off-the-record sessions with no turn since ``before``: they are due to be deleted."""
        rows = self.store.conn().execute("SELECT id FROM sessions WHERE remember = 0 AND updated_at < ? ORDER BY id",
                                         (before,))
        return [int(r[0]) for r in rows]

    def touch(self, conn: sqlite3.Connection, session_id: int, at: str) -> None:
        conn.execute("UPDATE sessions SET updated_at = max(updated_at, ?) WHERE id = ?", (at, session_id))
