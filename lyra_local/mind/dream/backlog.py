"""Sensing the backlog: what in the store the dream cycle has not consolidated yet."""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo

from ...config import DreamSettings
from ...store import Store
from ...store import dream_sources as dreamwork
from ..reflection.reflect import novelty
from ..summaries import digests
from ..summaries.narrative import narrative_due
from .drives import Backlog, PendingSession, is_ripe


def pending_sessions(store: Store, min_turns: int) -> list[PendingSession]:
    """Sessions with turns their gist does not cover; not one the person summarized themselves, nor one whose
    gist they deleted and that has said nothing new since, nor one off the record."""
    out = []
    for r in dreamwork.unsummarized_sessions(store):
        if r.new_turns == 0 or r.last_at is None or (not r.has_gist and r.total_turns < min_turns):
            continue
        out.append(PendingSession(r.session_id, r.new_turns, r.total_turns, r.last_at, r.has_gist, r.stale))
    return out


def sense(store: Store, settings: DreamSettings, *, force: bool = False, now: datetime | None = None,
          zone: tzinfo = timezone.utc) -> Backlog:
    now = now or datetime.now(timezone.utc)
    pending = pending_sessions(store, settings.min_turns)
    plan = digests.plan(store, zone)
    stale = dreamwork.stale_count(store, ("digest", "narrative"))
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
