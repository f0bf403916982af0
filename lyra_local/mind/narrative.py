"""The narrative: the current arc of the user's life, from the profile and the timeline.

Rebuilt only when what it is built from changed (its ``basis``: the current
profile and the digests' own bases), with the previous arc in view so threads
carry on and callbacks survive.
"""

from __future__ import annotations

import hashlib

from ..memory.gather import timeline_entries
from ..memory.timeline import render_timeline
from ..store import Store
from . import prompts
from .chunks import split_to
from .scribe import Scribe


def narrative_basis(store: Store) -> str:
    conn = store.conn()
    facts = [f"{r[0]}" for r in conn.execute("SELECT id FROM profile_facts WHERE superseded_at IS NULL AND stale = 0")]
    digests = [f"{r[0]}:{r[1]}:{r[2]}" for r in conn.execute(
        "SELECT granularity, period, basis FROM digests WHERE stale = 0")]
    if not facts and not digests:
        return ""
    return hashlib.sha1("\n".join(sorted(facts) + sorted(digests)).encode()).hexdigest()[:16]


def narrative_due(store: Store) -> bool:
    basis = narrative_basis(store)
    return bool(basis) and store.derived.narrative_basis() != basis


def write_narrative(scribe: Scribe, store: Store, timeline_days: int) -> tuple[str, str]:
    """The new arc and its basis."""
    basis = narrative_basis(store)
    budget = scribe.budget(prompts.NARRATIVE)
    profile = "\n".join(f"- {f.key}: {f.value}" for f in store.derived.profile()) or "(nothing yet)"
    profile = split_to(profile, budget // 3, scribe.count)[0]
    previous = store.derived.narrative()
    before = f"\n\nThe arc as you last saw it:\n{split_to(previous, budget // 6, scribe.count)[0]}" if previous else ""
    room = budget - scribe.count(profile) - scribe.count(before) - 16
    entries = render_timeline(timeline_entries(store, timeline_days), max(room, 0), scribe.count)
    timeline = "\n".join(e.line() for e in entries) or "(nothing yet)"
    material = f"What you know about {scribe.names['user']}:\n{profile}\n\nTimeline:\n{timeline}{before}"
    return scribe.write(prompts.NARRATIVE, material), basis
