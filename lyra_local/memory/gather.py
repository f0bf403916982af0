"""Collect what context assembly needs for one turn: the I/O around the pure ``assemble``."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone, tzinfo

import numpy as np
import numpy.typing as npt

from ..config import CompanionSettings
from ..prompts import DEFAULT_PERSONA, persona
from ..store import Hit, Store
from ..store.db import local_day
from ..store.derived import ProfileFact
from ..store.periods import period_keys
from .context import ContextInputs, Item, Turn
from .memory import Memory
from .plans import described, of_fact
from .recall import RecallQuery
from .timeline import Entry


def _as_planned(store: Store, fact: ProfileFact) -> str:
    """A plan's value with its date, and said as past once that has gone by: the model is not to speak of a
    move "in September" a year and a half on."""
    plan = of_fact(store, fact, datetime.now(timezone.utc))
    return described(fact.value, plan.label if plan else None, bool(plan and plan.past))


def with_caption(content: str, caption: str | None) -> str:
    """A turn's words with its photo's caption after them, bracketed as what the photo shows: the model reads
    a photo sent with no text, and never reads the caption as its sender's words."""
    return content if not caption else f"{content}\n[a photo: {caption}]".lstrip("\n")


def _item(hit: Hit, zone: tzinfo) -> Item:
    """A recalled memory for the context, dated by the person's calendar ("in March you told me...")."""
    return Item(hit.kind, hit.id, with_caption(hit.content, hit.caption), hit.score, "+".join(hit.stages),
                local_day(hit.created_at, zone))


def user_name(profile: list[ProfileFact], settings: CompanionSettings) -> str | None:
    if settings.user_name:
        return settings.user_name
    for fact in profile:
        if fact.key.lower() in ("name", "user_name"):
            return fact.value
    return None


def timeline_entries(store: Store, days: int, *, today: date | None = None,
                     zone: tzinfo = timezone.utc) -> list[Entry]:
    """The digests the timeline ladder may use: recent days, the last year's weeks, every month."""
    today = today or datetime.now(zone).date()
    since = {"day": (today - timedelta(days=days)).isoformat(),
             "week": period_keys(datetime.combine(today - timedelta(days=366), time()))["week"],
             "month": ""}
    return [Entry(d.granularity, d.period, d.content, d.id) for d in store.derived.digests()
            if d.period >= since[d.granularity] and (days or d.granularity != "day")]


def gather(memory: Memory, settings: CompanionSettings, session_id: int, message: str,
           query_vector: npt.NDArray[np.float32] | None, *, before_id: int | None = None) -> ContextInputs:
    """Everything the companion may put in the prompt for ``message`` in ``session_id``."""
    store = memory.store

    def recall(tier: str, k: int) -> list[Item]:
        if k <= 0:
            return []
        query = RecallQuery(message, k=k, tier=tier, exclude_session_id=session_id if tier != "digest" else None)
        return [_item(h, memory.zone) for h in memory.recall(query, vector=query_vector)]

    template = settings.persona_file.read_text(encoding="utf-8") if settings.persona_file else DEFAULT_PERSONA
    profile = store.derived.profile()
    name = user_name(profile, settings)
    state = store.derived.self_state() or {}
    drives = store.dreams.drives()
    world = store.coord.world()
    gist = store.derived.gist(session_id)
    return ContextInputs(
        message=message,
        persona=persona(template, name=settings.name, user=name or "the user"),
        user_name=name,
        self_state=state,
        drives=drives,
        household=memory.household(),
        world=world.content if world else None,
        profile=[(f.key, _as_planned(store, f)) for f in profile],
        narrative=store.derived.narrative(),
        timeline=timeline_entries(store, settings.timeline_days, zone=memory.zone),
        gists=recall("gist", settings.recalled_gists),
        recalled=recall("exchange", settings.recalled_turns),
        session_gist=Item("gist", gist.id, gist.content) if gist else None,
        recent=[Turn(e.id, e.role, with_caption(e.content, e.caption)) for e in
                store.exchanges.history(session_id, limit=settings.recent_turns, before_id=before_id)],
    )
