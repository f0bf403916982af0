"""The profile: standing facts about the person, proposed with their own words and kept when those words say so.

The summary model reads the person's own turns of a conversation (never the
replies: what the companion or an imported assistant said is not the person's)
with the facts known so far, and proposes each fact with the exact words it
drew on (a quote). The gate (``facts.gate``) keeps what the quote holds; the
parse floor (``floor.proposals``) proposes the plainest self-statements too, so
a model too small to extract still leaves the profile true and not empty. The
store keeps every superseded value as history; the newer observation wins.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from ...memory.keys import normalize_key
from ...store.derived import ProfileFact
from ..dream import prompts
from ..dream.scribe import Scribe
from ..summaries.chunks import pack, split_to
from .gate import Proposal

MOST_CALLS = 4  # of a long conversation, the model reads this many packs of the person's turns


class Fact(BaseModel):
    key: str = Field(min_length=1, max_length=40)
    value: str = Field(min_length=1, max_length=80)
    quote: str = Field(min_length=1, max_length=300)


class Facts(BaseModel):
    facts: list[Fact] = Field(max_length=8)


def proposals_of(facts: Facts) -> list[Proposal]:
    """The model's facts as proposals, keys in one spelling, empty ones dropped."""
    out = []
    for fact in facts.facts:
        key, value = normalize_key(fact.key), " ".join(fact.value.split()).strip(" .")
        if key and value and value.casefold() != key:
            out.append(Proposal(key, value, fact.quote.strip()))
    return out


def extract_facts(scribe: Scribe, own_turns: Sequence[str], profile: list[ProfileFact]) -> list[Proposal] | None:
    """What the model proposes from the person's own turns, each with its quote; ``None`` when no answer of the
    model's was valid JSON of the schema."""
    if not own_turns:
        return []
    known = "\n".join(f"- {f.key}: {f.value}" for f in profile) or "(none yet)"
    budget = scribe.budget(prompts.PROFILE)
    known = split_to(known, budget // 4, scribe.count)[0]
    room = max(budget - scribe.count(known) - 16, budget // 2)
    lines = [f"- {' '.join(t.split())}" for t in own_turns]
    writer = scribe.names.get("user") or "The person"
    out: list[Proposal] = []
    valid = False
    for group in pack(lines, room, scribe.count)[:MOST_CALLS]:
        said = split_to("\n".join(group), room, scribe.count)[0]
        facts = scribe.ask_json(prompts.PROFILE, f"Known facts:\n{known}\n\n{writer} wrote:\n{said}", Facts)
        if facts is not None:
            valid = True
            out.extend(proposals_of(facts))
    return out if valid else None
