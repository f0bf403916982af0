"""Sensing the backlog: what in the store the dream cycle has not consolidated yet."""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo

from ..config import DreamSettings
from ..store import Store
from . import digests
from .drives import Backlog, PendingSession, is_ripe
from .narrative import narrative_due
from .reflect import novelty


def pending_sessions(store: Store, min_turns: int) -> list[PendingSession]:
    """Sessions with turns their gist does not cover; not one the person summarized themselves, nor one whose
    gist they deleted and that has said nothing new since, nor one off the record."""
    rows = store.conn().execute(
        "SELECT s.id, g.id IS NOT NULL AS has_gist, coalesce(g.stale, 0) AS stale, "
        "(SELECT count(*) FROM exchanges e WHERE e.session_id = s.id "
        "   AND (g.stale = 1 OR e.id > coalesce(g.covers_upto, CAST(d.basis AS INTEGER), 0))) AS new_turns, "
        "(SELECT count(*) FROM exchanges e WHERE e.session_id = s.id) AS total_turns, "
        "(SELECT max(created_at) FROM exchanges e WHERE e.session_id = s.id) AS last_at "
        "FROM sessions s LEFT JOIN gists g ON g.session_id = s.id "
        "LEFT JOIN dismissed d ON d.kind = 'gist' AND d.target = CAST(s.id AS TEXT) "
        "WHERE coalesce(g.method, '') != 'user' AND s.remember = 1 ORDER BY last_at, s.id")
    out = []
    for r in rows:
        if r["new_turns"] == 0 or (not r["has_gist"] and r["total_turns"] < min_turns):
            continue
        out.append(PendingSession(r["id"], r["new_turns"], r["total_turns"], r["last_at"], bool(r["has_gist"]),
                                  bool(r["stale"])))
    return out


def sense(store: Store, settings: DreamSettings, *, force: bool = False, now: datetime | None = None,
          zone: tzinfo = timezone.utc) -> Backlog:
    now = now or datetime.now(timezone.utc)
    pending = pending_sessions(store, settings.min_turns)
    plan = digests.plan(store, zone)
    conn = store.conn()
    stale = sum(int(conn.execute(f"SELECT count(*) FROM {table} WHERE stale = 1").fetchone()[0])
                for table in ("digests", "narrative"))
    turns, gists = novelty(store)
    return Backlog(
        pending=tuple(pending),
        ripe=tuple(p.session_id for p in pending if is_ripe(p, now, settings, force=force)),
        unprofiled=len(store.derived.unprofiled_gists()),
        digest_jobs=len(plan.jobs),
        obsolete_digests=len(plan.obsolete),
        narrative_due=narrative_due(store),
        stale=stale,
        novel_turns=turns,
        novel_gists=gists,
    )
