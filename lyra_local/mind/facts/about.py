""""About you": what Lyra knows about the person, as they see and correct it.

Each fact is a card: its key and value, when and in which conversation it was
said (the person's own turn it was learnt from), whether the person confirmed
it ("That's right": their statement, which the dream never changes), and
whether it is new to them (learnt since they last looked), and for a plan, when
it was for and whether that date has passed (``memory/plans.py``). The web UI,
the API and ``lyra memory facts`` show the same cards.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from ...memory.plans import of_fact
from ...store import Store
from ...store.derived import ProfileFact

SAID_CHARS = 300  # of the turn a fact was learnt from: enough to recognise it, "Open" shows the rest


@dataclass(frozen=True)
class Said:
    turn_id: int
    session_id: int
    session_name: str
    created_at: str
    content: str


@dataclass(frozen=True)
class Card:
    id: int
    key: str
    value: str
    author: str
    created_at: str
    observed_at: str | None
    source_session_id: int | None
    confirmed: bool
    new: bool
    said: Said | None
    planned_for: str | None = None  # a plan's date, as a person says it ("September 2024")
    plan_past: bool = False  # ... which has passed: the plan is shown as past


def said_in(store: Store, fact: ProfileFact) -> Said | None:
    """The person's own turn a fact was learnt from (the first, if several say it)."""
    turns = store.corrections.sources("fact", fact.id)
    own = [t for t in turns if t["role"] == "user"] or turns
    if not own:
        return None
    t = own[0]
    return Said(t["id"], t["session_id"], t["session_name"], t["created_at"], t["content"][:SAID_CHARS])


def cards(store: Store) -> tuple[list[Card], str | None]:
    """The current facts as cards, and when the person last looked (``None``: never, so all are new)."""
    seen = store.derived.profile_seen_at()
    now = datetime.now(timezone.utc)
    out = []
    for f in store.derived.profile():
        plan = of_fact(store, f, now)
        out.append(Card(f.id, f.key, f.value, f.author, f.created_at, f.observed_at, f.source_session_id,
                        confirmed=f.author == "user", new=f.author == "dream" and (seen is None or f.created_at > seen),
                        said=said_in(store, f), planned_for=plan.label if plan else None,
                        plan_past=bool(plan and plan.past)))
    return out, seen
