"""What recall reads from the store: vector and full-text candidates, rows, neighbours, periods.

Recall's stages (``memory/stages.py``) decide what to ask; every SQL statement
they need lives here, next to the tables it reads. Filters (a session only or
excluded, a time range, a role) are applied inside every query, so a filter
never empties a result that a wider search would have filled. Off-the-record
turns (m013) have no vector and no full-text entry, so no candidate is one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .kinds import of_tier
from .records import TIERS
from .store import Store

TABLES: dict[str, str] = {tier: of_tier(tier).table for tier in TIERS}
# Full-text tables by tier and view: the turn alone, and the turn read after the one before it (m010).
FULL_TEXT: dict[tuple[str, str], str] = {(tier, view): table for tier in TIERS
                                         for view, table in of_tier(tier).fts.items()}


@dataclass(frozen=True)
class Filters:
    """SQL conditions on one tier's rows (alias ``t``)."""

    tier: str
    where: str = ""
    args: tuple[object, ...] = ()

    def narrowed(self, since: str | None, until: str | None) -> Filters:
        """The same conditions within ``[since, until)`` as well: a turn said then, a summary or a digest whose
        sources speak of some moment then (not the day the dream wrote it)."""
        clauses = [self.where] if self.where else []
        args = list(self.args)
        kind = of_tier(self.tier)
        first, last = kind.covers or (f"t.{kind.time_column}",) * 2
        for bound, column, op in ((since, last, ">="), (until, first, "<")):
            if bound:
                clauses.append(f"{column} {op} ?")
                args.append(bound)
        return Filters(self.tier, " AND ".join(clauses), tuple(args))

    def said_by(self, role: str, authors: Sequence[str | None]) -> Filters:
        """The same conditions on turns of ``role`` written by one of ``authors`` (``None``: no author; none
        given: anyone) as well: one speaker's turns (``memory/speakers.py``)."""
        named = [a for a in authors if a is not None]
        who = ["t.author IN (SELECT value FROM json_each(?))"] if named else []
        if None in authors:
            who.append("t.author IS NULL")
        clauses = [c for c in (self.where, "t.role = ?", f"({' OR '.join(who)})" if who else "") if c]
        args = [*self.args, role, *([json.dumps(named)] if named else [])]
        return Filters(self.tier, " AND ".join(clauses), tuple(args))


def filters(tier: str, *, session_id: int | None = None, exclude_session_id: int | None = None,
            since: str | None = None, until: str | None = None, role: str | None = None) -> Filters:
    clauses: list[str] = []
    args: list[object] = []
    kind = of_tier(tier)
    session_col = kind.session_column and f"t.{kind.session_column}"
    if tier != "exchange":  # a turn not remembered has no vector and no full text: no candidate needs the check
        clauses.append(kind.where_current())
    if session_col and session_id is not None:
        clauses.append(f"{session_col} = ?")
        args.append(session_id)
    if session_col and exclude_session_id is not None:
        clauses.append(f"{session_col} != ?")
        args.append(exclude_session_id)
    if role:
        clauses.append("t.role = ?")
        args.append(role)
    return Filters(tier, " AND ".join(clauses), tuple(args)).narrowed(since, until)


class RecallIndex:
    """Read-only queries over one store for recall."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def size(self, tier: str) -> int:
        row = self.store.conn().execute(f"SELECT max(id) FROM {TABLES[tier]}").fetchone()
        return int(row[0] or 0)

    def document_frequency(self, table: str, match: str, cap: int) -> int:
        """Rows of a full-text table matching ``match``, counted up to ``cap`` (cheap for common words)."""
        return int(self.store.conn().execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT {int(cap)})", (match,)
        ).fetchone()[0])

    def full_text(self, table: str, match: str, flt: Filters, n: int) -> list[tuple[int, float]]:
        """The ``n`` best BM25 matches passing ``flt``, as (id, score), higher is better."""
        conn = self.store.conn()
        if not flt.where:
            sql = f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?"
            return [(int(r[0]), float(r[1])) for r in conn.execute(sql, (match, n))]
        sql = (f"SELECT t.id, -bm25({table}) FROM {table} JOIN {TABLES[flt.tier]} t ON t.id = {table}.rowid "
               f"WHERE {table} MATCH ? AND {flt.where} ORDER BY rank LIMIT ?")
        return [(int(r[0]), float(r[1])) for r in conn.execute(sql, [match, *flt.args, n])]

    def dense(self, model: str, vector: npt.NDArray[np.float32], flt: Filters, n: int) -> list[tuple[int, float]]:
        """The ``n`` nearest rows passing ``flt``, as (id, inner product)."""
        index = self.store.index(flt.tier, model)
        if not flt.where:
            return index.search(vector, n)
        # Most filters (another session, a long time range) keep most rows: search wider and
        # drop what does not pass. Only a narrow filter needs the exact id selector.
        wide = index.search(vector, n * 4)
        kept = set(self.passing(flt, [i for i, _ in wide]))
        found = [(i, s) for i, s in wide if i in kept]
        if len(found) >= n or len(wide) < n * 4:
            return found[:n]
        return index.search(vector, n, self.allowed(flt))

    def passing(self, flt: Filters, ids: Sequence[int]) -> list[int]:
        """``ids`` that pass ``flt``, in their order."""
        if not ids:
            return []
        if not flt.where:
            return list(ids)
        rows = self.store.conn().execute(
            f"SELECT t.id FROM {TABLES[flt.tier]} t WHERE t.id IN (SELECT value FROM json_each(?)) AND {flt.where}",
            [_json_ids(ids), *flt.args])
        passing = {r[0] for r in rows}
        return [i for i in ids if i in passing]

    def allowed(self, flt: Filters) -> npt.NDArray[np.int64]:
        sql = f"SELECT t.id FROM {TABLES[flt.tier]} t" + (f" WHERE {flt.where}" if flt.where else "")
        return np.asarray([r[0] for r in self.store.conn().execute(sql, flt.args)], dtype=np.int64)

    def any_between(self, flt: Filters, since: str, until: str) -> bool:
        narrowed = flt.narrowed(since, until)
        remembered = f" AND {of_tier(flt.tier).where_current()}" if flt.tier == "exchange" else ""
        return self.store.conn().execute(
            f"SELECT 1 FROM {TABLES[flt.tier]} t WHERE {narrowed.where}{remembered} LIMIT 1",
            narrowed.args).fetchone() is not None

    def rows(self, tier: str, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Rows by id, with ``session_id``, ``role``, ``author``, ``content`` and ``created_at`` for every tier (a
        turn's ``caption``, a digest's ``granularity`` and ``period`` too)."""
        if not ids:
            return {}
        if tier == "exchange":
            sql = "SELECT id, session_id, role, author, content, caption, created_at FROM exchanges"
        elif tier == "gist":
            sql = ("SELECT id, session_id, NULL AS role, NULL AS author, content, updated_at AS created_at "
                   f"FROM gists t WHERE {of_tier(tier).where_current()}")
        else:
            sql = ("SELECT id, NULL AS session_id, NULL AS role, NULL AS author, content, updated_at AS created_at, "
                   f"granularity, period FROM digests t WHERE {of_tier(tier).where_current()}")
        sql += (" AND" if "WHERE" in sql else " WHERE") + " id IN (SELECT value FROM json_each(?))"
        return {r["id"]: dict(r) for r in self.store.conn().execute(sql, (_json_ids(ids),))}

    def covers(self, tier: str, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """The first and last moment the sources of each row speak of (a turn: when it was said), by id; a row
        whose sources are all gone is left out."""
        if not ids:
            return {}
        kind = of_tier(tier)
        first, last = kind.covers or (f"t.{kind.time_column}",) * 2
        rows = self.store.conn().execute(
            f"SELECT t.id, {first}, {last} FROM {kind.table} t WHERE t.id IN (SELECT value FROM json_each(?))",
            (_json_ids(ids),))
        return {int(r[0]): (r[1], r[2]) for r in rows if r[1] is not None and r[2] is not None}

    def neighbours(self, ids: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
        """Each turn's previous and next turn in its session (``None`` at either end)."""
        if not ids:
            return {}
        rows = self.store.conn().execute(
            "SELECT e.id, (SELECT max(p.id) FROM exchanges p WHERE p.session_id = e.session_id AND p.id < e.id), "
            "(SELECT min(n.id) FROM exchanges n WHERE n.session_id = e.session_id AND n.id > e.id) "
            "FROM exchanges e WHERE e.id IN (SELECT value FROM json_each(?))", (_json_ids(ids),))
        return {int(r[0]): (r[1], r[2]) for r in rows}

    def burst_starts(self, ids: Sequence[int], gap_s: float, most: int) -> dict[int, int]:
        """Each turn's burst, named by its first turn: walking back (at most ``most`` turns) while the turn
        before in its session is the same side's, said within ``gap_s`` seconds."""
        if not ids:
            return {}
        rows = self.store.conn().execute(
            "WITH RECURSIVE walk(id, cur, depth) AS ("
            " SELECT value, value, 0 FROM json_each(?)"
            " UNION ALL"
            " SELECT w.id, p.id, w.depth + 1 FROM walk w JOIN exchanges c ON c.id = w.cur"
            " JOIN exchanges p ON p.id = (SELECT max(x.id) FROM exchanges x"
            "                             WHERE x.session_id = c.session_id AND x.id < c.id)"
            " WHERE w.depth < ? AND p.role = c.role"
            " AND (julianday(c.created_at) - julianday(p.created_at)) * 86400.0 <= ?)"
            " SELECT id, min(cur) FROM walk GROUP BY id", (_json_ids(ids), most, gap_s))
        return {int(r[0]): int(r[1]) for r in rows}

    def latest_turns(self, n: int) -> list[tuple[int, str, str | None, str]]:
        """The ``n`` latest remembered turns as (session id, role, author, content), oldest first: where recall
        learns who is called what."""
        rows = self.store.conn().execute(
            f"SELECT session_id, role, author, content FROM exchanges t WHERE {of_tier('exchange').where_current()} "
            "ORDER BY id DESC LIMIT ?", (n,))
        return [(int(r[0]), str(r[1]), r[2], str(r[3])) for r in rows][::-1]

    def authors(self) -> list[str]:
        """The names an import gave the writers of its turns (``exchanges.author``)."""
        rows = self.store.conn().execute("SELECT DISTINCT author FROM exchanges WHERE author IS NOT NULL")
        return [str(r[0]) for r in rows]

    def vectors(self, tier: str, model: str, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The stored vectors of ``ids`` by id, from the vector index (caught up with SQLite); SQLite is read only
        for ids the index lacks (an id without a vector)."""
        if not ids:
            return {}
        found = self.store.index(tier, model).vectors(ids)
        missing = [i for i in ids if i not in found]
        if not missing:
            return found
        rows = self.store.conn().execute(
            "SELECT item_id, vector FROM embeddings WHERE tier = ? AND model = ? "
            "AND item_id IN (SELECT value FROM json_each(?))", (tier, model, _json_ids(missing)))
        return {**found, **{int(r[0]): np.frombuffer(r[1], dtype=np.float32) for r in rows}}

    def gist_sessions(self, gist_ids: Sequence[int]) -> list[int]:
        """The sessions of these gists, in the gists' order."""
        rows = dict(self.store.conn().execute(
            "SELECT id, session_id FROM gists WHERE id IN (SELECT value FROM json_each(?))", (_json_ids(gist_ids),)))
        return [rows[i] for i in gist_ids if i in rows]


def _json_ids(ids: Sequence[int]) -> str:
    return "[" + ",".join(str(int(i)) for i in ids) + "]"
