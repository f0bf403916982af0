"""The profile: standing facts about the user, learnt incrementally from new gists.

Each gist is read once (and again only when it changes), with the facts known
so far in view so the model reuses a key when a fact changes. The store keeps
every superseded value as history; the newer observation wins.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from ..store.derived import ProfileFact
from . import prompts
from .chunks import split_to
from .scribe import Scribe

KEY_PREFIXES = re.compile(r"^(the\s+)?(user'?s?|his|her|their|my)\s+")


class Fact(BaseModel):
    key: str = Field(min_length=1, max_length=40)
    value: str = Field(min_length=1, max_length=80)


class Facts(BaseModel):
    facts: list[Fact] = Field(max_length=8)


def normalize_key(key: str) -> str:
    """``"User's Home_City:"`` -> ``"home city"``: one spelling per key, so updates find their fact."""
    key = re.sub(r"[_\-]+", " ", key.casefold())
    key = re.sub(r"[^\w\s]", "", key)
    key = KEY_PREFIXES.sub("", " ".join(key.split()))
    return key.strip()


def clean_facts(facts: Facts) -> list[tuple[str, str]]:
    """Normalized, de-duplicated, non-empty facts (the last word on a key wins)."""
    out: dict[str, str] = {}
    for fact in facts.facts:
        key, value = normalize_key(fact.key), " ".join(fact.value.split()).strip(" .")
        if key and value and value.casefold() != key:
            out[key] = value
    return list(out.items())


def extract_facts(scribe: Scribe, gist: str, profile: list[ProfileFact]) -> list[tuple[str, str]] | None:
    """The standing facts a gist states; ``None`` when the model's answer was not valid."""
    known = "\n".join(f"- {f.key}: {f.value}" for f in profile) or "(none yet)"
    budget = scribe.budget(prompts.PROFILE)
    known = split_to(known, budget // 2, scribe.count)[0]
    material = f"Known facts:\n{known}\n\nSummary:\n{gist}"
    facts = scribe.ask_json(prompts.PROFILE, split_to(material, budget, scribe.count)[0], Facts)
    return None if facts is None else clean_facts(facts)
