"""Reflection: the companion's mood, energy, self-narrative and reflections evolve from what happened.

The model answers in JSON under a schema (llama.cpp constrains generation to
it, so even a tiny model returns parseable JSON); the answer is validated and
clamped, and when it still is not usable the previous state carries on with
its energy easing towards the middle, marked as a fallback.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator

from ...store import Store
from ...store import dream_sources as dreamwork
from ...store.db import utc_now
from ...store.provenance import Ref
from ..dream import prompts
from ..dream.scribe import Scribe
from ..summaries.chunks import split_to

NEUTRAL_ENERGY = 0.5
# The longest each text may be: generation is constrained to it, so a text that long may have been cut there.
LIMITS = {"self_narrative": 200, "reflections": 100}


class Reflection(BaseModel):
    mood: str = Field(min_length=1, max_length=30)
    energy: float
    self_narrative: str = Field(min_length=1, max_length=LIMITS["self_narrative"])
    reflections: list[Annotated[str, Field(max_length=LIMITS["reflections"])]] = Field(max_length=3)

    @field_validator("energy")
    @classmethod
    def _clamp(cls, value: float) -> float:
        return min(1.0, max(0.0, value))

    @field_validator("mood", "self_narrative")
    @classmethod
    def _strip(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("empty")
        return value


def novelty_basis(store: Store) -> dict[str, Any]:
    """Where the memory stands: reflection is due once it moved past the last reflection's basis."""
    last_exchange, last_gist = dreamwork.latest_marks(store)
    return {"exchange": last_exchange, "gist": last_gist}


def novelty(store: Store) -> tuple[int, int]:
    """New turns and new or updated gists since the last reflection."""
    basis = (store.derived.self_state() or {}).get("basis") or {"exchange": 0, "gist": ""}
    return dreamwork.count_since(store, int(basis.get("exchange", 0)), str(basis.get("gist", "")))


def reflect(scribe: Scribe, store: Store, drives: dict[str, float]) -> tuple[dict[str, Any], list[Ref]]:
    """The next self-state (not stored yet) and what it was built from."""
    version = store.derived.self_state_version()
    previous = version[1] if version else {}
    basis = novelty_basis(store)
    since = str((previous.get("basis") or {}).get("gist", ""))
    budget = scribe.budget(prompts.REFLECT)
    rows = dreamwork.gists_updated_since(store, since, limit=8)
    gists = [r[1] for r in rows]
    arc = store.derived.narrative_version()
    sources: list[Ref] = ([("gist", int(r[0])) for r in rows] + ([("narrative", arc[0])] if arc else [])
                          + ([("self_state", version[0])] if version else []))
    parts = [f"Your last mood: {previous.get('mood', 'calm')}; energy {float(previous.get('energy', 0.5)):.1f}.",
             f"How you saw yourself: {previous.get('self_narrative', 'I am new here.')}",
             f"The current arc: {arc[1] if arc else '(not written yet)'}",
             "Your drives: " + ", ".join(f"{k} {v:.2f}" for k, v in drives.items()),
             "What happened lately:\n" + ("\n".join(f"- {g}" for g in gists) or "- a few new exchanges")]
    material = split_to("\n".join(parts), budget, scribe.count)[0]
    answer = scribe.ask_json(prompts.REFLECT, material, Reflection)
    if answer is None:
        energy = float(previous.get("energy", NEUTRAL_ENERGY))
        return ({"mood": previous.get("mood", "calm"), "energy": round(energy + (NEUTRAL_ENERGY - energy) * 0.2, 3),
                 "self_narrative": previous.get("self_narrative", ""), "reflections": previous.get("reflections", []),
                 "fallback": True, "basis": basis, "reflected_at": utc_now()}, sources)
    return {**answer.model_dump(), "fallback": False, "basis": basis, "reflected_at": utc_now()}, sources
