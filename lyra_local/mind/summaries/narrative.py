"""The narrative: the current arc of the user's life, from the profile and the timeline.

Rebuilt only when what it is built from changed (its ``basis``: the current
profile and the digests' own bases), with the previous arc in view so threads
carry on and callbacks survive.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone, tzinfo

from ...memory.gather import timeline_entries
from ...memory.timeline import Entry, render_timeline
from ...store import Store
from ...store import dream_sources as dreamwork
from ...store.provenance import Ref
from ..dream import prompts
from ..dream.scribe import Scribe
from ..grounding.checks import day_of
from .chunks import split_to
from .digests import period_words


class Dated(Entry):
    """A timeline entry as the arc's model reads it: dated in words ("5 March 2024", "the week of 4 March 2024"),
    so a relative time in it ("next April") can be read from when it was said."""

    def line(self) -> str:
        return f"- {period_words(self.granularity, self.period)}: {self.text}"


def narrative_basis(store: Store) -> str:
    fact_ids, digest_bases = dreamwork.arc_sources(store)
    facts = [f"{i}" for i in fact_ids]
    digests = [f"{granularity}:{period}:{basis}" for granularity, period, basis in digest_bases]
    if not facts and not digests:
        return ""
    return hashlib.sha1("\n".join(sorted(facts) + sorted(digests)).encode()).hexdigest()[:16]


def narrative_due(store: Store) -> bool:
    """A new arc is due when what it is built from changed; never over the person's own, nor over one they deleted
    while that has not changed."""
    basis = narrative_basis(store)
    if not basis or store.corrections.their_arc() or \
            store.corrections.dismissed("narrative", adopt={"narrative": basis}).get("narrative") == basis:
        return False
    return store.derived.narrative_basis() != basis


def narrative_material(scribe: Scribe, store: Store, timeline_days: int, zone: tzinfo = timezone.utc,
                       now: datetime | None = None) -> tuple[str, list[tuple[str, str]], list[str], str, list[Ref]]:
    """What the arc is written from: the prompt's material (today's date, the profile, the dated timeline, the
    previous arc), the timeline's digests as (text, how each was written, each dated), the standing facts, its
    basis, and the refs it read (facts, digests, the previous arc)."""
    basis = narrative_basis(store)
    budget = scribe.budget(prompts.NARRATIVE)
    facts = store.derived.profile()
    profile = "\n".join(f"- {f.key}: {f.value}" for f in facts) or "(nothing yet)"
    profile = split_to(profile, budget // 3, scribe.count)[0]
    version = store.derived.narrative_version()
    previous = version[1] if version else None
    sources: list[Ref] = [("fact", f.id) for f in facts] + ([("narrative", version[0])] if version else [])
    before = f"\n\nThe arc as you last saw it:\n{split_to(previous, budget // 6, scribe.count)[0]}" if previous else ""
    moment = now or datetime.now(zone)
    today = f"Today is {day_of(moment)}.\n\n"  # what "next April" is now
    room = budget - scribe.count(today) - scribe.count(profile) - scribe.count(before) - 16
    found = timeline_entries(store, timeline_days, today=moment.date(), zone=zone)
    entries = render_timeline([Dated(e.granularity, e.period, e.text, e.id) for e in found], max(room, 0),
                              scribe.count)
    timeline = "\n".join(e.line() for e in entries) or "(nothing yet)"
    sources += [("digest", e.id) for e in entries if e.id]
    methods = {d.id: d.method for d in store.derived.digests()}
    # The checks read each piece with its date as the model does, so a draft may date what it says; an extract's
    # quotes carry their own days.
    pieces = [(e.text if methods.get(e.id) == "extractive" else e.line()[2:], methods.get(e.id, "abstractive"))
              for e in entries]
    material = f"{today}What you know about {scribe.names['user']}:\n{profile}\n\nTimeline:\n{timeline}{before}"
    return material, pieces, [f"{f.key} {f.value}" for f in facts], basis, sources
