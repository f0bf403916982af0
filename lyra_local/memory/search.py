"""Memory search: what Lyra remembers that matches a query, by meaning and by words, across kinds of memory.

Turns, gists and digests come from recall (dense and full-text stages fused);
profile facts are few, so they are matched here: their words against the
query's, and their meaning (embedded now) against the query's vector. Unlike a
reply's recall, which always takes its nearest memories, a search keeps only
what shares a word with the query or is close to it in meaning. Each
result says where it came from (a conversation, a turn to open), so the
search page can open it, and forget it through the same forget as everywhere.
Results are interleaved best-first across kinds, so no kind crowds out the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import zip_longest
from typing import Literal

import numpy as np

from ..errors import BadRequest
from ..store import kinds, provenance
from ..store.recall_index import RecallIndex
from ..store.sessions import SessionNotFound
from ..transfer.timestamps import time_bound
from .memory import Memory
from .recall import RecallQuery

SearchTier = Literal["exchange", "gist", "fact", "digest"]
SEARCH_TIERS: tuple[str, ...] = kinds.SEARCH_TIERS  # the registry's searchable kinds
MEANING = 0.35  # found by meaning alone, a memory is shown from this cosine with the query (found by words: always)
FACT_MEANING = 0.55  # a fact matches by meaning from this cosine with the query (by words, at any)
BY_MEANING_ONLY = {"dense", "neighbours"}  # recall's stages that find without a shared word


@dataclass(frozen=True)
class SearchQuery:
    text: str
    k: int = 20
    tier: SearchTier | None = None  # None: every kind
    session_id: int | None = None
    since: str | None = None
    until: str | None = None

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise BadRequest("a search needs some words")
        if self.tier is not None and self.tier not in SEARCH_TIERS:
            raise BadRequest(f"tier must be one of {', '.join(SEARCH_TIERS)}")
        time_bound(self.since, "since")
        time_bound(self.until, "until")


@dataclass(frozen=True)
class Found:
    """One memory found: its kind (``tier``) and id, its text, when, and the conversation and turn to open."""

    tier: str
    id: int
    content: str
    created_at: str
    session_id: int | None
    session_name: str | None
    turn_id: int | None
    score: float


def search(memory: Memory, query: SearchQuery) -> list[Found]:
    since, until = time_bound(query.since, "since"), time_bound(query.until, "until")
    tiers = [query.tier] if query.tier else list(SEARCH_TIERS)
    vector = np.asarray(memory.embedder.embed([query.text])[0], dtype=np.float32)
    found: list[list[Found]] = []
    for tier in tiers:
        if tier == "fact":
            found.append(_facts(memory, query, vector, since, until))
            continue
        if tier == "digest" and query.session_id is not None:
            continue  # a digest belongs to a period, not to one conversation
        hits = memory.recall(RecallQuery(query.text, k=query.k, tier=tier, session_id=query.session_id,
                                         since=since, until=until), vector=vector)
        # Recall always fills its k (a reply wants its nearest memories); a search shows only what matches.
        vectors = RecallIndex(memory.store).vectors(tier, memory.active_model, [h.id for h in hits])
        hits = [h for h in hits if set(h.stages) - BY_MEANING_ONLY
                or (h.id in vectors and float(vectors[h.id] @ vector) >= MEANING)]
        found.append([_placed(memory, h.kind, h.id, h.content, h.created_at, h.session_id, h.score) for h in hits])
    merged = [f for rank in zip_longest(*found) for f in rank if f is not None]
    return merged[:query.k]


def _facts(memory: Memory, query: SearchQuery, vector: np.ndarray, since: str | None,
           until: str | None) -> list[Found]:
    facts = [f for f in memory.store.derived.profile()
             if (query.session_id is None or f.source_session_id == query.session_id)
             and (since is None or (f.observed_at or f.created_at) >= since)
             and (until is None or (f.observed_at or f.created_at) < until)]
    if not facts:
        return []
    texts = [f"{f.key}: {f.value}" for f in facts]
    meaning = np.asarray(memory.embedder.embed(texts), dtype=np.float32) @ vector
    asked = set(re.findall(r"\w{3,}", query.text.lower()))
    scored = []
    for fact, text, cosine in zip(facts, texts, meaning, strict=True):
        words = len(asked & set(re.findall(r"\w{3,}", text.lower())))
        if words or cosine >= FACT_MEANING:
            scored.append((words + float(cosine), fact))
    scored.sort(key=lambda pair: -pair[0])
    return [_placed(memory, "fact", f.id, f"{f.key}: {f.value}", f.observed_at or f.created_at,
                    f.source_session_id, score) for score, f in scored[:query.k]]


def _placed(memory: Memory, tier: str, item_id: int, content: str, created_at: str, session_id: int | None,
            score: float) -> Found:
    """Where to open a memory: a turn opens at itself; another memory at the first turn it was built from."""
    store = memory.store
    turn_id = item_id if tier == "exchange" else None
    if turn_id is None:
        behind = provenance.turns_behind(store.conn(), tier, item_id)
        turn_id = behind[0] if behind else None
    if turn_id is not None and session_id is None:
        turn = store.exchanges.get(turn_id)
        session_id = turn.session_id if turn else None
    name = None
    if session_id is not None:
        try:
            name = store.sessions.get(session_id).name
        except SessionNotFound:  # forgotten meanwhile
            session_id = None
    return Found(tier, item_id, content, created_at, session_id, name, turn_id, round(float(score), 4))
