"""LoCoMo's gold observations, and the judge of what the dream wrote against them.

LoCoMo's ``observation`` field lists, per session and per speaker, the facts a
careful reader took from the conversation, each with the turns (``dia_id``)
that say it. A written fact is *correct* when the turn it was learnt from is
among the evidence turns of a gold observation of the same person and every
content word of its value is in that observation (in some plain form); a fact
whose value is a speaker's name (for a key other than ``name``) is wrong
whatever the gold says. A sentence of a summary is *supported* when the turn it
stands on is the evidence of some gold observation of its session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from lyra_local.mind.facts.statement import content_words, names_someone
from lyra_local.mind.grounding.checks import forms, vocabulary


@dataclass(frozen=True)
class Observation:
    speaker: str
    text: str
    evidence: frozenset[str]  # dia_ids such as "D3:12"


def observations(path: Path) -> dict[str, list[Observation]]:
    """sample_id -> its gold observations, every session's, every speaker's."""
    out: dict[str, list[Observation]] = {}
    for item in json.loads(path.read_text(encoding="utf-8")):
        found = out.setdefault(item["sample_id"], [])
        for per_speaker in item.get("observation", {}).values():
            for speaker, listed in per_speaker.items():
                for text, evidence in listed:
                    ids = evidence if isinstance(evidence, list) else re.split(r"[;,\s]+", evidence)
                    found.append(Observation(speaker, text, frozenset(i for i in ids if i)))
    return out


def is_a_name(key: str, value: str, names: Collection[str]) -> bool:
    return key != "name" and names_someone(value, {n.casefold() for n in names if n})


def fact_supported(key: str, value: str, source: str, person: str, names: Collection[str],
                   gold: Iterable[Observation]) -> Observation | None:
    """The gold observation that makes a fact correct, or ``None`` (wrong, or unsupported by the gold)."""
    if is_a_name(key, value, names):
        return None
    wanted = content_words(value)
    for obs in gold:
        if obs.speaker == person and source in obs.evidence and all(forms(w) & vocabulary([obs.text]) for w in wanted):
            return obs
    return None
