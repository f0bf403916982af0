"""World-state updates from the dream cycle: proposed, never written over the user's document.

A proposal is made only when the narrative was rewritten in this pass, and
only if it differs from the current document and from every open proposal.
With ``coordination.world_updates = "auto"`` it is accepted at once.
"""

from __future__ import annotations

from ...store import Store
from ...store.provenance import Ref
from ..dream import prompts
from ..dream.scribe import Scribe
from ..summaries.chunks import split_to

AUTHOR = "dream"


def draft_world(scribe: Scribe, store: Store) -> tuple[str, list[Ref]] | None:
    """The proposed document and what it was drafted from, or ``None`` when the model changes nothing."""
    current = store.coord.world()
    arc = store.derived.narrative_version()
    narrative = arc[1] if arc else ""
    budget = scribe.budget(prompts.WORLD)
    profile = store.derived.profile()
    facts = "\n".join(f"- {f.key}: {f.value}" for f in profile)
    sources: list[Ref] = ([("fact", f.id) for f in profile] + ([("narrative", arc[0])] if arc else [])
                          + ([("world", current.id)] if current is not None and current.author == AUTHOR else []))
    material = "\n\n".join([
        "Core memory:\n" + split_to(current.content if current else "(empty)", budget // 2, scribe.count)[0],
        "The current arc:\n" + split_to(narrative, budget // 4, scribe.count)[0],
        "Standing facts:\n" + split_to(facts or "(none)", budget // 5, scribe.count)[0]])
    text = scribe.write(prompts.WORLD, material).strip()
    pending = {p.content.strip() for p in store.coord.proposals()}
    if not text or (current is not None and text == current.content.strip()) or text in pending:
        return None
    return text, sources
