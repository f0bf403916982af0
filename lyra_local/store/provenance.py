"""Provenance: what every derived memory was built from, and forgetting that follows it.

Every derived row (a gist, a profile fact, a digest, a narrative or self-state
version, a world-state version the dream wrote, a reply's context trace)
records its sources in ``provenance``: raw turns, or the derived rows it was
built from. The kinds, what each may be built from and how a row of each is
forgotten are the registry's (``store/kinds.py``); an edge the registry does
not allow is refused, and the deletion order is derived from it.

Forgetting turns follows the edges transitively and deletes every dependent
row in the caller's transaction (vectors and full-text entries go by trigger);
a trace is not deleted (its reply stays) but its entries that pointed at
forgotten memories are marked ``forgotten``. Rows written before provenance
existed depend on ``ANY``: any forget removes them, and the dream rebuilds.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence

from .kinds import KINDS, NODES, ORDER

Ref = tuple[str, int]  # (kind, id)
ANY: Ref = ("any", 0)


class StaleSources(Exception):
    """What a derived memory was built from changed or vanished while it was being made: it is not written."""


def record(conn: sqlite3.Connection, kind: str, item_id: int, sources: Iterable[Ref]) -> None:
    """Inside the writer's transaction: ``kind:item_id`` was built from ``sources``."""
    if kind not in NODES:
        raise KeyError(f"unknown memory kind {kind!r}")
    sources = set(sources)
    allowed = KINDS[kind].built_from
    wrong = sorted({s_kind for s_kind, _ in sources if s_kind not in allowed})
    if wrong:
        raise KeyError(f"a {kind} is not built from {', '.join(wrong)} (store/kinds.py: built_from)")
    if not sources and KINDS[kind].unknown_means_any:
        sources = {ANY}  # built from who knows what: any forget removes it
    rows = [(kind, item_id, s_kind, int(s_id)) for s_kind, s_id in sources]
    conn.executemany("INSERT OR IGNORE INTO provenance (kind, item_id, source_kind, source_id) VALUES (?, ?, ?, ?)",
                     rows)


def require(conn: sqlite3.Connection, sources: Sequence[Ref]) -> None:
    """Inside the writer's transaction: every source still exists, or ``StaleSources``.

    Ids are never reused, so a source that exists is the one that was read.
    """
    by_kind: dict[str, set[int]] = {}
    for kind, item_id in sources:
        by_kind.setdefault(kind, set()).add(int(item_id))
    for kind, ids in by_kind.items():
        table, key = KINDS[kind].table, KINDS[kind].key
        found = conn.execute(f"SELECT count(*) FROM {table} WHERE {key} IN (SELECT value FROM json_each(?))",
                             (json.dumps(sorted(ids)),)).fetchone()[0]
        if found != len(ids):
            raise StaleSources(f"{len(ids) - found} {kind} source(s) were forgotten or replaced meanwhile")


def dependents(conn: sqlite3.Connection, seeds: Sequence[Ref], *, legacy: bool = True) -> dict[str, list[int]]:
    """Every memory built, directly or not, from ``seeds`` (with ``legacy``: rows on ``ANY`` too), by kind."""
    rows = conn.execute(
        "WITH RECURSIVE doomed(kind, id) AS ("
        " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
        " UNION SELECT p.kind, p.item_id FROM provenance p JOIN doomed d"
        "   ON p.source_kind = d.kind AND p.source_id = d.id WHERE p.kind != 'trace'"
        ") SELECT kind, id FROM doomed", (json.dumps([list(s) for s in [*seeds, *([ANY] if legacy else [])]]),)
    ).fetchall()
    out: dict[str, list[int]] = {}
    for kind, item_id in rows:
        if kind in NODES:
            out.setdefault(kind, []).append(int(item_id))
    return out


def turns_behind(conn: sqlite3.Connection, kind: str, item_id: int) -> list[int]:
    """The turns a memory was built from, however indirectly, oldest first.

    A memory that names turns of its own (a fact: the turn that says it) is
    shown with those; others with every turn under their sources.
    """
    direct = [r[0] for r in conn.execute("SELECT source_id FROM provenance WHERE kind = ? AND item_id = ? "
                                         "AND source_kind = 'exchange' ORDER BY source_id", (kind, item_id))]
    if direct or kind == "exchange":
        return direct or [item_id]
    rows = conn.execute(
        "WITH RECURSIVE behind(kind, id) AS (SELECT ?, ? UNION SELECT p.source_kind, p.source_id "
        "FROM provenance p JOIN behind b ON p.kind = b.kind AND p.item_id = b.id) "
        "SELECT id FROM behind WHERE kind = 'exchange' ORDER BY id", (kind, item_id))
    return [int(r[0]) for r in rows]


def forget(conn: sqlite3.Connection, seeds: Sequence[Ref], *, legacy: bool = True) -> dict[str, int]:
    """Inside a write transaction: delete these memories and everything built from them (with ``legacy``: the
    rows of unknown provenance too, which any forget removes); counts by kind."""
    doomed = dependents(conn, seeds, legacy=legacy)
    doomed.setdefault("exchange", [])
    refs = json.dumps([[k, i] for k, ids in doomed.items() for i in ids] + ([list(ANY)] if legacy else [])
                      + [["trace", i] for i in doomed["exchange"]])  # a forgotten reply's own trace
    traces = [r[0] for r in conn.execute(
        "SELECT DISTINCT p.item_id FROM provenance p JOIN json_each(?) d ON p.kind = 'trace' "
        "AND p.source_kind = json_extract(d.value, '$[0]') AND p.source_id = json_extract(d.value, '$[1]')", (refs,))]
    _mark_traces(conn, traces, {(k, i) for k, ids in doomed.items() for i in ids})
    counts = {}
    for kind in ORDER:
        ids = doomed.get(kind, [])
        remove = KINDS[kind].remove
        assert remove is not None, kind
        counts[kind] = remove(conn, ids) if ids else 0
    for columns in ("kind, item_id", "source_kind, source_id"):  # two statements: each uses its index
        conn.execute(f"DELETE FROM provenance WHERE ({columns}) IN (SELECT json_extract(value, '$[0]'), "
                     f"json_extract(value, '$[1]') FROM json_each(?))", (refs,))
    counts["trace"] = len(traces)
    return counts


def _mark_traces(conn: sqlite3.Connection, exchange_ids: list[int], doomed: set[Ref]) -> None:
    """Mark the doomed memories "forgotten" in these replies' traces, on the path or set aside with their reply
    (store/branches.py)."""
    for table, key in (("context_traces", "exchange_id"), ("asides", "id")):
        for exchange_id in exchange_ids:
            row = conn.execute(f"SELECT trace FROM {table} WHERE {key} = ? AND trace IS NOT NULL",
                               (exchange_id,)).fetchone()
            if row is None:
                continue
            entries = [{**e, "forgotten": True} if (e.get("kind"), e.get("id")) in doomed else e
                       for e in json.loads(row[0])]
            conn.execute(f"UPDATE {table} SET trace = ? WHERE {key} = ?", (json.dumps(entries), exchange_id))


def backfill(conn: sqlite3.Connection) -> None:
    """Provenance for rows written before it was kept (a migration, or a restored ``memory.json``).

    A gist was built from its session's turns up to ``covers_upto``; a dream fact
    from its session's gist. For digests, narrative, self-state and the dream's
    world versions the sources are unknown: they depend on ``ANY``.
    """
    conn.execute("INSERT OR IGNORE INTO provenance (kind, item_id, source_kind, source_id) "
                 "SELECT 'gist', g.id, 'exchange', e.id FROM gists g JOIN exchanges e "
                 "ON e.session_id = g.session_id AND e.id <= g.covers_upto "
                 "WHERE NOT EXISTS (SELECT 1 FROM provenance p WHERE p.kind = 'gist' AND p.item_id = g.id)")
    conn.execute("INSERT OR IGNORE INTO provenance (kind, item_id, source_kind, source_id) "
                 "SELECT 'fact', f.id, 'gist', g.id FROM profile_facts f JOIN gists g "
                 "ON g.session_id = f.source_session_id WHERE f.author = 'dream' "
                 "AND NOT EXISTS (SELECT 1 FROM provenance p WHERE p.kind = 'fact' AND p.item_id = f.id)")
    for kind, sql in (("digest", "SELECT id FROM digests"), ("narrative", "SELECT id FROM narrative"),
                      ("self_state", "SELECT id FROM self_state"),
                      ("world", "SELECT id FROM world_state WHERE author = 'dream'")):
        conn.execute(f"INSERT OR IGNORE INTO provenance (kind, item_id, source_kind, source_id) "
                     f"SELECT ?, id, ?, ? FROM ({sql}) AS t WHERE NOT EXISTS (SELECT 1 FROM provenance p "
                     f"WHERE p.kind = ? AND p.item_id = t.id)", (kind, *ANY, kind))


# What the dream's log and pass records may say: ids, counts, states, never a memory's text.
LOG_TEXT_KEYS = ("text", "self_narrative", "mood", "facts", "reflections", "reason", "error", "hint")


def strip_text(detail: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in detail.items() if k not in LOG_TEXT_KEYS}


def scrub_logs(conn: sqlite3.Connection) -> None:
    """Remove texts from log entries written before the log kept only ids and counts."""
    for row_id, detail in conn.execute("SELECT id, detail FROM consolidation_log WHERE detail IS NOT NULL").fetchall():
        data = json.loads(detail)
        if isinstance(data, dict) and any(k in data for k in LOG_TEXT_KEYS):
            conn.execute("UPDATE consolidation_log SET detail = ? WHERE id = ?", (json.dumps(strip_text(data)), row_id))
    for row_id, actions in conn.execute("SELECT id, actions FROM dream_passes WHERE actions IS NOT NULL").fetchall():
        data = json.loads(actions)
        if isinstance(data, list):
            clean = [strip_text(a) if isinstance(a, dict) else a for a in data]
            if clean != data:
                conn.execute("UPDATE dream_passes SET actions = ? WHERE id = ?", (json.dumps(clean), row_id))
    conn.execute("UPDATE world_state SET reason = 'the dream cycle saw the arc change' "
                 "WHERE author = 'dream' AND reason IS NOT NULL")
