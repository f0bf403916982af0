"""The backlog the dream cycle senses, and the four drives computed from it. Pure functions.

Each drive rises with a real signal and saturates towards 1:
continuity (ripe sessions with turns no gist covers) -> summarize;
coherence (gists the profile has not read, digests to roll up, a stale
narrative, memories left stale by forgetting) -> consolidate;
curiosity (turns and gists since the last reflection) -> reflect;
stability is the readout: 1 when everything is caught up.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from ...config import DreamSettings
from ...store.db import from_iso


@dataclass(frozen=True)
class PendingSession:
    """A session with turns its gist does not cover (or a gist left stale by forgetting)."""

    session_id: int
    new_turns: int
    total_turns: int
    last_at: str
    has_gist: bool
    stale: bool


@dataclass(frozen=True)
class Backlog:
    pending: tuple[PendingSession, ...] = ()
    ripe: tuple[int, ...] = ()
    unprofiled: int = 0
    digest_jobs: int = 0
    obsolete_digests: int = 0
    narrative_due: bool = False
    stale: int = 0
    novel_turns: int = 0
    novel_gists: int = 0

    def summary(self) -> dict[str, Any]:
        """What the log, the API and the web UI show (no per-session list)."""
        out = asdict(self)
        out.pop("pending")
        out["ripe"] = len(self.ripe)
        out["sessions_pending"] = len(self.pending)
        out["turns_pending"] = sum(p.new_turns for p in self.pending)
        return out

    @property
    def empty(self) -> bool:
        return not (self.pending or self.unprofiled or self.digest_jobs or self.obsolete_digests
                    or self.narrative_due or self.stale or self.novel_turns or self.novel_gists)


def backlog_size(backlog: Backlog) -> int:
    """How much work a memory waits for, in rough units (a new turn, a fact to draw, a digest to write): the
    scheduler visits the person with more first, and skips one with none."""
    return (sum(p.new_turns for p in backlog.pending if p.session_id in backlog.ripe) + backlog.unprofiled
            + backlog.digest_jobs + backlog.obsolete_digests + backlog.stale + int(backlog.narrative_due))


def is_ripe(session: PendingSession, now: datetime, settings: DreamSettings, *, force: bool = False) -> bool:
    """Ready to (re)summarize: quiet long enough, or enough new turns, or stale, or forced."""
    if force or session.stale or session.new_turns >= settings.resummarize_after:
        return True
    return (now - from_iso(session.last_at)).total_seconds() >= settings.session_idle_s


def _saturate(x: float) -> float:
    return round(1.0 - math.exp(-max(0.0, x)), 3)


def compute_drives(backlog: Backlog) -> dict[str, float]:
    ripe = set(backlog.ripe)
    waiting_turns = sum(p.new_turns for p in backlog.pending if p.session_id not in ripe)
    continuity = _saturate(0.5 * len(ripe) + waiting_turns / 100)
    coherence = _saturate(0.5 * (backlog.unprofiled + backlog.digest_jobs + backlog.obsolete_digests + backlog.stale)
                          + (0.5 if backlog.narrative_due else 0.0))
    curiosity = _saturate(backlog.novel_turns / 40 + backlog.novel_gists / 2)
    stability = round((1 - continuity) * (1 - coherence) * (1 - curiosity), 3)
    return {"continuity": continuity, "coherence": coherence, "curiosity": curiosity, "stability": stability}
