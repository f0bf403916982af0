"""Exchanges (raw turns) and their embeddings, written together in one transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..errors import BadRequest, Conflict
from . import provenance
from .blobs import put_vector
from .branches import set_aside
from .db import canonical, utc_now
from .kinds import KINDS, Kind
from .records import Ending, Exchange

if TYPE_CHECKING:
    from .store import Store

ROLES = ("user", "assistant", "system")


@dataclass(frozen=True)
class NewExchange:
    session_id: int
    role: str
    content: str
    created_at: str | None = None
    tokens: int | None = None
    source_id: str | None = None
    ending: Ending | None = None
    author: str | None = None  # an imported reply's assistant (``authors``); None: the person's or the companion's
    caption: str | None = None  # a photo's caption, kept apart from the words (a photo with no text: empty words)

    @property
    def embedded(self) -> str:
        """The text its vector is made of: its words, then its photo's caption (``embedded_text``)."""
        return embedded_text(self.content, self.caption)


def embedded_text(content: str, caption: str | None) -> str:
    """A turn's words and its photo's caption, as its vector and full text read them: the exchange kind's
    ``indexed`` (``kinds.py``) says the same in SQL, so a photo with no text is found by what it shows."""
    return content if caption is None else f"{content}\n{caption}"


def _dated(kind: Kind) -> str:
    """A recalled memory's text, date and conversation, for the trace ("Why?" dates and opens each one).

    Dated as Search dates it (``RecallIndex.covers``): by the first and last moment its sources speak of (a
    summary's first and last turn, a digest's period), never by the day the dream wrote it."""
    session = f"t.{kind.session_column}" if kind.session_column else "NULL"
    began, ended = kind.covers or (f"t.{kind.time_column}",) * 2
    caption = "t.caption" if "caption" in kind.words else "NULL"  # a turn's photo: shown as one, not as words
    return (f"SELECT t.{kind.text} AS content, {caption} AS caption, t.{kind.time_column} AS at, "
            f"{began} AS began_at, "
            f"{ended} AS ended_at, {session} AS session_id, s.name "
            f"FROM {kind.table} t LEFT JOIN sessions s ON s.id = {session} WHERE t.{kind.key} = ?")


def row_to_exchange(row: sqlite3.Row) -> Exchange:
    return Exchange(row["id"], row["session_id"], row["role"], row["content"], row["created_at"], row["tokens"],
                    row["source_id"], row["ending"], row["author"], row["caption"])


class Exchanges:
    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, new: NewExchange, *, vector: npt.NDArray[np.float32] | None = None,
            model: str | None = None, replacing: int | None = None) -> Exchange:
        """Insert one exchange and (optionally) its embedding atomically; ``replacing``: a turn of the path that
        this one takes the place of, set aside with what followed it in the same transaction."""
        with self.store.write() as conn:
            if replacing is not None:
                self._make_room(conn, new.session_id, replacing)
            return self.insert(conn, [new], None if vector is None else vector[None, :], model)[0]

    def _make_room(self, conn: sqlite3.Connection, session_id: int, replacing: int) -> None:
        if not conn.execute("SELECT 1 FROM exchanges WHERE id = ? AND session_id = ?",
                            (replacing, session_id)).fetchone():
            raise Conflict(f"turn {replacing} is no longer on the conversation's path (it was forgotten or another "
                           "version was chosen meanwhile)", hint="reload the conversation and try again")
        set_aside(conn, session_id, replacing)

    def insert(self, conn: sqlite3.Connection, items: Sequence[NewExchange],
               vectors: npt.NDArray[np.float32] | None, model: str | None) -> list[Exchange]:
        """Insert inside the caller's transaction (bulk imports: one transaction per batch)."""
        if vectors is not None and (model is None or len(vectors) != len(items)):
            raise ValueError("vectors need a model name and one row per exchange")
        out = []
        latest: dict[int, str] = {}
        for i, item in enumerate(items):
            if item.role not in ROLES:
                raise BadRequest(f"role must be one of {', '.join(ROLES)}, not {item.role!r}")
            at = canonical(item.created_at) if item.created_at else utc_now()
            row = conn.execute(  # an off-the-record session's turns are not remembered (m013)
                "INSERT INTO exchanges (session_id, role, content, created_at, tokens, source_id, ending, author, "
                "caption, remembered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT remember FROM sessions WHERE id = ?)) "
                "RETURNING *", (item.session_id, item.role, item.content, at, item.tokens, item.source_id, item.ending,
                                item.author, item.caption, item.session_id)).fetchone()
            if vectors is not None and model is not None:
                put_vector(conn, "exchange", model, row["id"], vectors[i])
            latest[item.session_id] = max(at, latest.get(item.session_id, at))
            out.append(row_to_exchange(row))
        for session_id, at in latest.items():
            self.store.sessions.touch(conn, session_id, at)
        return out

    def add_reply(self, session_id: int, text: str, trace: list[dict[str, Any]], context_tokens: int, *,
                  answering: int | None = None, replacing: int | None = None,
                  ending: Ending | None = None) -> Exchange:
        """Store a reply with the trace of the memories its context used (each a source of the trace).

        ``ending``: how it ended, when it did not end by itself (``records.ENDINGS``).

        ``replacing``: the reply it was regenerated from, set aside in the same transaction. ``answering``: the
        message it answers, which must still end the conversation's path (not forgotten, not set aside by
        another tab's choice meanwhile), else ``Conflict`` and nothing is stored.
        """
        with self.store.write() as conn:
            if replacing is not None:
                self._make_room(conn, session_id, replacing)
            if answering is not None:
                last = conn.execute("SELECT max(id) FROM exchanges WHERE session_id = ?", (session_id,)).fetchone()[0]
                if last != answering:
                    raise Conflict("the conversation changed while the reply was written (the message it answers "
                                   "was forgotten, edited or set aside, or another message came first)",
                                   hint="reload the conversation; the reply was not kept")
            reply = self.insert(conn, [NewExchange(session_id, "assistant", text, ending=ending)], None, None)[0]
            conn.execute("INSERT INTO context_traces (exchange_id, trace, tokens, created_at) VALUES (?, ?, ?, ?)",
                         (reply.id, json.dumps(trace), context_tokens, utc_now()))
            provenance.record(conn, "trace", reply.id, [(t["kind"], int(t["id"])) for t in trace
                                                        if t.get("kind") in KINDS["trace"].built_from])
        return reply

    def trace(self, exchange_id: int) -> dict[str, Any] | None:
        """A reply's trace, each memory with its current content, its date and its conversation (to open it);
        a forgotten one says so, with no content."""
        conn = self.store.conn()
        row = conn.execute("SELECT trace, tokens, created_at FROM context_traces WHERE exchange_id = ?",
                           (exchange_id,)).fetchone()
        if row is None:
            return None
        entries = json.loads(row["trace"])
        for entry in entries:
            kind = KINDS.get(entry["kind"])
            found = None
            if kind is not None and kind.vector_tier and not entry.get("forgotten"):
                found = conn.execute(_dated(kind), (entry["id"],)).fetchone()
            entry["content"] = None if found is None else str(found["content"])
            entry["caption"] = None if found is None else found["caption"]
            if found is not None:
                entry.update(created_at=found["at"], began_at=found["began_at"], ended_at=found["ended_at"],
                             session_id=found["session_id"], session_name=found["name"])
            aside = (found is None and entry["kind"] == "exchange" and not entry.get("forgotten") and conn.execute(
                "SELECT 1 FROM asides WHERE id = ?", (entry["id"],)).fetchone() is not None)
            entry["set_aside"] = aside  # a version not chosen now (store/branches.py): it may come back
            entry["forgotten"] = bool(entry.get("forgotten")) or (kind is not None and kind.vector_tier is not None
                                                                  and found is None and not aside)
        return {"exchange_id": exchange_id, "context_tokens": row["tokens"], "created_at": row["created_at"],
                "memories": [e for e in entries if e["content"] is not None or e["forgotten"] or e["set_aside"]]}

    def set_vector(self, exchange_id: int, vector: npt.NDArray[np.float32], model: str) -> None:
        """Attach (or replace) an exchange's embedding, e.g. after the reply was streamed."""
        with self.store.write() as conn:
            put_vector(conn, "exchange", model, exchange_id, vector)

    def get(self, exchange_id: int) -> Exchange | None:
        row = self.store.conn().execute("SELECT * FROM exchanges WHERE id = ?", (exchange_id,)).fetchone()
        return None if row is None else row_to_exchange(row)

    def get_many(self, ids: Sequence[int]) -> dict[int, Exchange]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.store.conn().execute(f"SELECT * FROM exchanges WHERE id IN ({marks})", list(ids))
        return {r["id"]: row_to_exchange(r) for r in rows}

    def history(self, session_id: int, *, limit: int | None = None, before_id: int | None = None) -> list[Exchange]:
        """A session's turns in order; the last ``limit`` of them (before ``before_id``) if given."""
        sql = "SELECT * FROM exchanges WHERE session_id = ?"
        args: list[object] = [session_id]
        if before_id is not None:
            sql += " AND id < ?"
            args.append(before_id)
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY id DESC LIMIT ?) ORDER BY id"
            args.append(limit)
        else:
            sql += " ORDER BY id"
        return [row_to_exchange(r) for r in self.store.conn().execute(sql, args)]

    def neighbours(self, exchange: Exchange, radius: int = 1) -> tuple[Exchange, ...]:
        """The turns just before and after ``exchange`` in its session, in order."""
        conn = self.store.conn()
        before = conn.execute("SELECT * FROM exchanges WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
                              (exchange.session_id, exchange.id, radius)).fetchall()
        after = conn.execute("SELECT * FROM exchanges WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?",
                             (exchange.session_id, exchange.id, radius)).fetchall()
        return tuple(row_to_exchange(r) for r in [*reversed(before), *after])

    def count(self) -> int:
        return int(self.store.conn().execute("SELECT count(*) FROM exchanges").fetchone()[0])

    def present(self, ids: Sequence[int]) -> list[int]:
        """Which of these turn ids are here, on a path or set aside."""
        rows = self.store.conn().execute(
            "SELECT id FROM exchanges WHERE id IN (SELECT value FROM json_each(:ids)) UNION "
            "SELECT id FROM asides WHERE id IN (SELECT value FROM json_each(:ids))", {"ids": json.dumps(list(ids))})
        return sorted(int(r[0]) for r in rows)

    def replies_to(self, ids: Sequence[int]) -> list[int]:
        """The companion's reply to each of the person's turns among ``ids`` on a path: the next turn of that
        session, when it is the companion's. A reply is written from the turn it answers and mostly restates it, so
        it goes where that turn goes (a path's order is its ids' order: ``store/branches.py``)."""
        rows = self.store.conn().execute(
            "SELECT r.id FROM exchanges u JOIN exchanges r ON r.session_id = u.session_id AND r.id = "
            "(SELECT min(n.id) FROM exchanges n WHERE n.session_id = u.session_id AND n.id > u.id) "
            "WHERE u.id IN (SELECT value FROM json_each(?)) AND u.role = 'user' AND r.role = 'assistant'",
            (json.dumps(list(ids)),))
        return sorted(int(r[0]) for r in rows)

    def count_in(self, session_id: int) -> int:
        """How many turns a session's current path has."""
        return int(self.store.conn().execute("SELECT count(*) FROM exchanges WHERE session_id = ?",
                                             (session_id,)).fetchone()[0])

    def ids_by_source(self) -> dict[str, int]:
        """Imported turns by the id their source gave them (a ChatGPT node, a Lyra export's ``source_id``)."""
        rows = self.store.conn().execute("SELECT source_id, id FROM exchanges WHERE source_id IS NOT NULL")
        return {str(r[0]): int(r[1]) for r in rows}

    def missing_vectors(self, model: str, limit: int = 1000) -> list[Exchange]:
        """Exchanges with no embedding for ``model`` (a crash before embedding, or a new model)."""
        rows = self.store.conn().execute(
            f"SELECT e.* FROM exchanges e WHERE {KINDS['exchange'].where_current('e')} AND NOT EXISTS "
            "(SELECT 1 FROM embeddings v WHERE v.tier = 'exchange' AND v.model = ? AND v.item_id = e.id) "
            "ORDER BY e.id LIMIT ?", (model, limit))
        return [row_to_exchange(r) for r in rows]
