"""Memory search: what Lyra remembers that matches a query, by meaning and by words, across kinds of memory.

Turns, gists and digests come from recall (dense and full-text stages fused);
profile facts are few, so they are matched here: their words against the
query's, and their meaning (embedded now) against the query's vector. Unlike a
reply's recall, which always takes its nearest memories, a search keeps only
what is found by words (a word of the query is in its own text: the words
shown marked) or by meaning (its own vector at least the embedding model's
floor close to the query's, or, for a question about the person such as
"what is my job?", a turn of theirs that states it: recall's statement stage,
since a question and the statement answering it are far apart by meaning).
Being near a matching turn (the turn after a question, a turn whose previous
one matched) is no match: a word nobody said, or one forgotten, finds
nothing, so a person can check that a forget worked.
The floor is measured by ``scripts/search_floor.py`` (docs/benchmarks.md). Each
result says where it came from (a conversation, a turn to open), so the
search page can open it, and forget it through the same forget as everywhere.
Results are interleaved best-first across kinds, so no kind crowds out the rest.

What a person reads must be trustworthy: a summary or a digest is dated by
the days its sources speak of (never the day the dream wrote it), a text
found in several kinds is shown once, each result carries a snippet with the
words that matched, and what the person said in this conversation minutes ago
(the question they are searching for, likely) never outranks older memories.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from itertools import zip_longest
from typing import Literal

import numpy as np

from ..authors import imported_author
from ..errors import BadRequest
from ..store import kinds, provenance
from ..store.db import to_iso
from ..store.recall_index import RecallIndex
from ..store.records import Hit
from ..store.sessions import SessionNotFound
from ..transfer.timestamps import time_bound
from .fusion import query_words
from .memory import Memory
from .recall import RecallQuery
from .snippet import Piece, matched_spans, snippet

SearchTier = Literal["exchange", "gist", "fact", "digest"]
Order = Literal["best", "newest", "oldest"]
Match = Literal["words", "date", "meaning", "reply"]
SEARCH_TIERS: tuple[str, ...] = kinds.SEARCH_TIERS  # the registry's searchable kinds
SHORT_QUERY = 2  # a query of at most this many words (stopwords aside) is a word or two: its cosines run noisy


@dataclass(frozen=True)
class Floor:
    """From which cosine with the query a memory found by meaning alone is shown (found by words: always), for
    a sentence and for a word or two, per embedding model. Chosen with ``scripts/search_floor.py`` (its table is
    in docs/benchmarks.md): recall@10 on LoCoMo's dev half and MemoryBank does not drop at any of them, but on
    messages as people type them (LoCoMo-messy) each step up costs recall: ``sentence`` is 0.30 (-0.020 R@10
    there, -0.038 at 0.40), where made-up words already find nothing 9 times in 10; ``words`` where about 2 in 100
    forgotten words and 1 in 100 never said still show something."""

    sentence: float
    words: float


MEANING_FLOORS: dict[str, Floor] = {"all-MiniLM-L6-v2": Floor(sentence=0.3, words=0.5)}
MEANING = MEANING_FLOORS["all-MiniLM-L6-v2"]  # a model not measured: the default's (MiniLM)
FACT_MEANING = 0.55  # a fact (a few words: its cosines run high) matches by meaning from this cosine
FRESH_S = 600.0  # turns of the current conversation this recent come after every older memory


@dataclass(frozen=True)
class SearchQuery:
    text: str
    k: int = 20
    tier: SearchTier | None = None  # None: every kind
    session_id: int | None = None
    since: str | None = None
    until: str | None = None
    current_session_id: int | None = None  # the conversation the person is in: its last minutes rank last
    order: Order = "best"  # or by the days a memory speaks of

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise BadRequest("a search needs some words")
        if self.tier is not None and self.tier not in SEARCH_TIERS:
            raise BadRequest(f"tier must be one of {', '.join(SEARCH_TIERS)}")
        if self.order not in ("best", "newest", "oldest"):
            raise BadRequest("order must be one of best, newest, oldest")
        time_bound(self.since, "since")
        time_bound(self.until, "until")


@dataclass(frozen=True)
class Found:
    """One memory found: its kind (``tier``) and id, its text, when it was written, the days it speaks of
    (``began_at`` to ``ended_at``; a digest's ``granularity`` and ``period``), the conversation and turn to open,
    and ``snippet``: its text cut around what matched, in pieces that did or did not match."""

    tier: str
    id: int
    content: str
    created_at: str
    session_id: int | None
    session_name: str | None
    turn_id: int | None
    score: float
    began_at: str = ""
    ended_at: str = ""
    granularity: str | None = None
    period: str | None = None
    snippet: tuple[Piece, ...] = ()
    matched: str = "words"  # how it matches (``matches``): "words" (marked in the snippet), "date", "meaning", "reply"
    role: str | None = None  # a turn's: "user" (the person) or "assistant"
    author: str | None = None  # ... an imported reply's assistant ("ChatGPT"); None: the companion's, or the person's
    caption: str | None = None  # ... its photo's caption: what the photo shows, shown apart from the words
    caption_snippet: tuple[Piece, ...] = ()  # the caption in pieces that did or did not match, as ``snippet``


def search(memory: Memory, query: SearchQuery, now: datetime | None = None) -> list[Found]:
    since, until = time_bound(query.since, "since"), time_bound(query.until, "until")
    tiers = [query.tier] if query.tier else list(SEARCH_TIERS)
    vector = np.asarray(memory.embedder.embed([query.text])[0], dtype=np.float32)
    found: list[list[Found]] = []
    for tier in tiers:
        if tier == "fact":
            found.append(_facts(memory, query, vector, since, until))
        elif tier != "digest" or query.session_id is None:  # a digest belongs to a period, not to one conversation
            found.append(_recalled(memory, query, tier, vector, since, until))
    merged = [f for rank in zip_longest(*found) for f in rank if f is not None]
    shown = demote_fresh(dedupe(merged), query.current_session_id, now or datetime.now(timezone.utc))
    return [replace(f, snippet=tuple(snippet(f.content, query.text)),
                    caption_snippet=tuple(snippet(f.caption, query.text)) if f.caption else ())
            for f in ordered(shown, query.order)[:query.k]]


def _recalled(memory: Memory, query: SearchQuery, tier: str, vector: np.ndarray, since: str | None,
              until: str | None) -> list[Found]:
    """One kind's matches through recall, each dated by the days its sources speak of."""
    hits = memory.recall(RecallQuery(query.text, k=query.k, tier=tier, session_id=query.session_id,
                                     since=since, until=until), vector=vector)
    # Recall always fills its k (a reply wants its nearest memories); a search shows only what matches.
    how = shown(memory, tier, hits, query.text, vector, meaning_floor(memory.active_model, query.text))
    hits = [h for h in hits if h.id in how]
    index = RecallIndex(memory.store)
    covers = index.covers(tier, [h.id for h in hits])
    periods = index.rows(tier, [h.id for h in hits]) if tier == "digest" else {}  # the found ones' only
    out = []
    for h in hits:
        began, ended = covers.get(h.id, (h.created_at, h.created_at))
        digest = periods.get(h.id)
        found = Found(h.kind, h.id, h.content, h.created_at, h.session_id, None, None, h.score)
        out.append(replace(_placed(memory, found), began_at=began, ended_at=ended,
                           granularity=digest["granularity"] if digest else None,
                           period=digest["period"] if digest else None, matched=how[h.id],
                           role=h.role if h.kind == "exchange" else None, author=_imported_author(memory, h),
                           caption=h.caption))
    return out


def _imported_author(memory: Memory, hit: Hit) -> str | None:
    """The assistant a found reply was imported from ("ChatGPT"; ``authors``), else ``None``."""
    turn = memory.store.exchanges.get(hit.id) if hit.kind == "exchange" and hit.role == "assistant" else None
    return imported_author(turn) if turn else None


def shown(memory: Memory, tier: str, hits: Sequence[Hit], text: str, vector: np.ndarray,
          floor: float) -> dict[int, Match]:
    """How each of recall's ``hits`` of ``tier`` matches a search for ``text`` (its ``vector``), with meaning
    from ``floor``; a hit that does not is left out."""
    index = RecallIndex(memory.store)
    vectors = index.vectors(tier, memory.active_model, [h.id for h in hits])
    before = {i: pair[0] for i, pair in index.neighbours([h.id for h in hits]).items()} if tier == "exchange" else {}
    return matches([Candidate(h.id, bool(matched_spans(h.content, text) or matched_spans(h.caption or "", text)),
                              float(vectors[h.id] @ vector) if h.id in vectors else None, before.get(h.id),
                              dated="date" in h.stages, stated="statement" in h.stages) for h in hits], floor)


def meaning_floor(model: str, query: str) -> float:
    """The cosine from which a memory found by meaning alone is shown, for embedding model ``model`` (by its
    file's name) and ``query``."""
    name = model.rsplit("/", 1)[-1]
    floor = next((f for prefix, f in MEANING_FLOORS.items() if name.startswith(prefix)), MEANING)
    return floor.words if len(query_words(query)) <= SHORT_QUERY else floor.sentence


@dataclass(frozen=True)
class Candidate:
    """What a search knows of a memory recall found: whether a word of the query is in its own text, whether it
    was said in the period the query names ("on April 27th"), its own vector's cosine with the query's
    (``None`` without a vector), the turn before it in its conversation (a turn's only), and whether it states
    what the query asks of the person ("what is my job?": ``stages.Statements``)."""

    id: int
    words: bool
    cosine: float | None
    previous: int | None = None
    dated: bool = False
    stated: bool = False


def matches(candidates: Sequence[Candidate], floor: float) -> dict[int, Match]:
    """How each candidate matches the query; one that does not is left out. A turn that matches nothing itself
    but comes right after one that does ("Any film for tonight?" -> "Try Paddington") is shown as its ``reply``
    (without it, recall@10 on MemoryBank drops: its evidence is often the answer). A word nobody said matches
    nothing, so it brings no reply either."""
    out: dict[int, Match] = {}
    for c in candidates:
        how = matched_by(c.words, c.cosine, floor, dated=c.dated, stated=c.stated)
        if how is not None:
            out[c.id] = how
    for c in candidates:
        if c.id not in out and c.previous is not None and out.get(c.previous, "reply") != "reply":
            out[c.id] = "reply"
    return out


def matched_by(words: bool, cosine: float | None, floor: float, *, dated: bool = False,
               stated: bool = False) -> Match | None:
    """How a memory matches a query by itself: by ``words`` (one of the query's is in its text), by ``date`` (said
    in the period the query names), by meaning (its ``cosine`` with the query at least ``floor``, or it
    ``stated`` what the question asks: a question and its answer are not near each other), or not."""
    if words:
        return "words"
    if dated:
        return "date"
    if stated or (cosine is not None and cosine >= floor):
        return "meaning"
    return None


def normalized(text: str) -> str:
    """A text as compared for sameness: its words, lower case, whatever the spacing and punctuation."""
    return " ".join(re.findall(r"\w+", text.lower()))


def dedupe(found: Sequence[Found]) -> list[Found]:
    """Each text once (the same words in two kinds: a day's digest that is its one conversation's summary), at
    its best rank; ``found`` is best first."""
    seen: set[str] = set()
    out = []
    for f in found:
        key = normalized(f.content)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def demote_fresh(found: Sequence[Found], session_id: int | None, now: datetime,
                 window_s: float = FRESH_S) -> list[Found]:
    """The turns of conversation ``session_id`` said in the last ``window_s`` seconds after everything else,
    in their order: the question the person just asked is what they search for, not a memory of it."""
    if session_id is None:
        return list(found)
    since = to_iso(now - timedelta(seconds=window_s))
    fresh = [f for f in found if f.tier == "exchange" and f.session_id == session_id and f.created_at >= since]
    return [f for f in found if f not in fresh] + fresh


def ordered(found: Sequence[Found], order: Order) -> list[Found]:
    """Best first as found, or by the days each memory speaks of: ``newest`` by its last, ``oldest`` by its first."""
    if order == "newest":
        return sorted(found, key=lambda f: f.ended_at or f.created_at, reverse=True)
    if order == "oldest":
        return sorted(found, key=lambda f: f.began_at or f.created_at)
    return list(found)


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
    scored = []
    for fact, text, cosine in zip(facts, texts, meaning, strict=True):
        words = len(matched_spans(text, query.text))
        how = matched_by(words > 0, float(cosine), FACT_MEANING)
        if how is not None:
            scored.append((words + float(cosine), how, fact))
    scored.sort(key=lambda found: -found[0])
    return [replace(_placed(memory, Found("fact", f.id, f"{f.key}: {f.value}", f.observed_at or f.created_at,
                                          f.source_session_id, None, None, score)),
                    began_at=f.observed_at or f.created_at, ended_at=f.observed_at or f.created_at, matched=how)
            for score, how, f in scored[:query.k]]


def _placed(memory: Memory, found: Found) -> Found:
    """Where to open a memory ``found`` (its name and turn not yet known): a turn opens at itself; another memory
    at the first turn it was built from."""
    store = memory.store
    tier, session_id = found.tier, found.session_id
    turn_id = found.id if tier == "exchange" else None
    if turn_id is None:
        behind = provenance.turns_behind(store.conn(), tier, found.id)
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
    return replace(found, session_id=session_id, session_name=name, turn_id=turn_id,
                   score=round(float(found.score), 4), began_at=found.created_at, ended_at=found.created_at)
