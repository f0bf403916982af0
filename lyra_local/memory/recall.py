"""Hybrid recall: candidates from several stages, their signals fused by score, then adjusted and ordered.

The stages (``memory/stages.py``) are objects; this module only runs them:
gather candidates, score them, fuse the scaled signals with the stages'
weights, adjust, and order. A query says what is asked (its text, its
filters, which stages); ``Tuning`` holds the knobs. What each stage is worth
is measured by ``scripts/eval_recall.py``, on real conversations first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone, tzinfo
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..errors import BadRequest
from ..llm.base import Reranker
from ..store import Hit, Store
from ..store.recall_index import FULL_TEXT, RecallIndex, filters
from ..store.records import TIERS
from .fusion import fts_match, query_words, recency_factor
from .keys import canonical_key
from .names import roles_named, without_names
from .questions import KeyVectors
from .speakers import KnownNames, speaker_names
from .stages import ALWAYS, STAGES, Scaling, Search, Stage, Tuning, chosen, scale, stage_names, when

Mode = Literal["hybrid", "dense", "bm25"]
NAMES_FROM_TURNS = 20_000  # the latest turns read to learn who is called what (names.py)


@dataclass(frozen=True)
class RecallQuery:
    """What is asked: the text, how many, and the filters; ``stages`` names the stages (default: ``STAGES``)."""

    text: str
    k: int = 10
    tier: str = "exchange"
    session_id: int | None = None
    exclude_session_id: int | None = None
    since: str | None = None
    until: str | None = None
    role: str | None = None
    recency_weight: float = 0.0
    neighbours: int = 0  # neighbouring turns shown with each hit
    mode: Mode = "hybrid"
    stages: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.tier not in TIERS:
            raise BadRequest(f"tier must be one of {', '.join(TIERS)}")
        if not 1 <= self.k <= 1000:
            raise BadRequest("k must be between 1 and 1000")
        if self.role is not None and self.tier != "exchange":
            raise BadRequest("a role filter only applies to the exchange tier")
        if self.stages is not None:
            try:
                chosen(self.stages)
            except ValueError as exc:
                raise BadRequest(str(exc)) from exc


def without(*names: str) -> tuple[str, ...]:
    """The default stages but ``names`` (for measuring what a stage is worth)."""
    return tuple(stage.name for stage in STAGES if stage.name not in names)


def including(*names: str) -> tuple[str, ...]:
    """The default stages and ``names`` (stages measured and left off)."""
    return (*without(*names), *names)


class Recall:
    """Recall over one store with one embedding model's vectors."""

    def __init__(self, store: Store, tuning: Tuning | None = None, *, zone: tzinfo = timezone.utc,
                 known: KnownNames | None = None) -> None:
        """``known``: the names the person and the companion are given outright (settings, the person's edits)."""
        self.index = RecallIndex(store)
        self.known = known or KnownNames()
        self.tuning = tuning or Tuning()
        self.zone = zone
        # (tier, word) -> (rows containing it, capped; table size when counted). Counts only
        # grow, so a word is re-counted when the table has grown a tenth; forgetting clears all.
        self._df: dict[tuple[str, str], tuple[int, int]] = {}
        self._addressed: tuple[int, dict[str, str]] | None = None  # (turns when learnt, name -> speaker key)

    def forgot(self) -> None:
        self._df.clear()
        self._addressed = None

    def search(self, q: RecallQuery, query_vector: npt.NDArray[np.float32] | None, model: str | None,
               reranker: Reranker | None = None, keys: KeyVectors | None = None) -> list[Hit]:
        """``keys``: the profile keys' sentences embedded by ``model`` (a question about a key searches with them)."""
        tuning = self.tuning if q.k * 3 <= self.tuning.candidates else replace(self.tuning, candidates=q.k * 3)
        s = Search(q, query_vector, model, self.index, tuning,
                   filters(q.tier, session_id=q.session_id, exclude_session_id=q.exclude_session_id,
                           since=q.since, until=q.until, role=q.role),
                   datetime.now(self.zone), reranker=reranker, keys=keys)
        stages = [stage for stage in self._stages(q) if stage.applies(s)]
        if (q.tier, "turn") in FULL_TEXT and q.mode != "dense":
            s.size = self.index.size(q.tier)
            words = query_words(q.text)
            s.df = self._document_frequencies(q.tier, words, s.size, tuning.common_min)
            if self._knows_sides(q):  # a name calls someone: not a word to search
                s.named = roles_named(q.text, self._names(s.size), lambda w: s.df.get(w) == 0)
                s.speakers = set(s.named)
        s.weights = {stage.name: tuning.weight(stage.name) for stage in stages}
        s.scaling = {stage.name: stage.scaling for stage in stages}
        for stage in stages:
            stage.gather(s)
        for stage in stages:
            stage.score(s)
        s.scores = fuse(list(s.pool), s.raw, s.scaling, s.weights)
        for stage in stages:
            stage.adjust(s)
        hits = self._hits(s)
        for stage in stages:
            hits = stage.reorder(s, hits)
        hits = hits[:q.k]
        if q.neighbours and q.tier == "exchange":
            hits = [self._with_context(h, q.neighbours) for h in hits]
        return hits

    def _stages(self, q: RecallQuery) -> list[Stage]:
        if q.mode == "dense":
            return chosen(ALWAYS[:1])
        if q.mode == "bm25":
            return chosen(ALWAYS[1:])
        return chosen(q.stages)

    def _hits(self, s: Search) -> list[Hit]:
        q = s.query
        rows = s.rows(list(s.scores))
        hits = []
        for item_id, score in s.scores.items():
            row = rows.get(item_id)
            if row is None:
                continue  # forgotten since the index was read
            if q.recency_weight:
                score *= 1.0 + q.recency_weight * recency_factor(when(row), s.now)
            hits.append(Hit(q.tier, item_id, row.get("session_id"), row.get("role"), row["content"],
                            row["created_at"], score, tuple(sorted(s.pool.get(item_id, ()))),
                            author=row.get("author"), caption=row.get("caption")))
        hits.sort(key=lambda h: (-h.score, -h.id))
        return hits

    def content_of(self, q: RecallQuery) -> str | None:
        """The question with the names it calls the two sides by put aside ("When did Mel go to the museum?" ->
        "When did someone go to the museum?"), or ``None`` when it names neither: the vector to search with.
        A name is in every greeting ("hey Mel!"), so it draws a question's vector to them and away from what
        was said; who said it is the speaker stage's part."""
        if not self._knows_sides(q):
            return None
        named = self.speakers_named(q.text)
        return without_names(q.text, named) if named else None

    def speakers_named(self, text: str) -> dict[str, str]:
        """The words of ``text`` that name a speaker (a name or a nickname no turn uses), each to its key."""
        size = self.index.size("exchange")
        df = self._document_frequencies("exchange", query_words(text), size, self.tuning.common_min)
        return roles_named(text, self._names(size), lambda w: df.get(w) == 0)

    def _knows_sides(self, q: RecallQuery) -> bool:
        stages = stage_names() if q.stages is None else q.stages
        return q.tier == "exchange" and q.mode == "hybrid" and "speaker" in stages

    def _names(self, size: int) -> dict[str, str]:
        """Who is called what (``speakers.py``), learnt again when the store has grown a tenth."""
        if self._addressed is None or size > self._addressed[0] * 1.1:
            store = self.index.store
            profile = [f.value for f in store.derived.profile() if canonical_key(f.key) == "name"]
            self._addressed = (size, speaker_names(self.index.latest_turns(NAMES_FROM_TURNS), self.index.authors(),
                                                   self.known, profile))
        return self._addressed[1]

    def _document_frequencies(self, tier: str, words: list[str], size: int, common_min: int) -> dict[str, int]:
        """How many of the tier's ``size`` rows contain each word, counted up to a cap (cheap for common words)."""
        cap = max(common_min, size // 20) + 1
        out = {}
        for word in words:
            cached = self._df.get((tier, word))
            if cached is not None and (cached[0] >= cap or size <= cached[1] * 1.1):
                out[word] = cached[0]
                continue
            match = fts_match(word)
            if match is None:
                continue
            count = self.index.document_frequency(FULL_TEXT[(tier, "turn")], match, cap)
            self._df[(tier, word)] = (count, size)
            out[word] = count
        return out

    def _with_context(self, hit: Hit, radius: int) -> Hit:
        store = self.index.store
        exchange = store.exchanges.get(hit.id)
        if exchange is None:
            return hit
        return replace(hit, context=store.exchanges.neighbours(exchange, radius))


def fuse(pool: Sequence[int], raw: Mapping[str, Mapping[int, float]], scaling: Mapping[str, Scaling],
         weights: Mapping[str, float]) -> dict[int, float]:
    """Each candidate's weighted sum of its signals, each signal scaled to 0-1 over the pool."""
    scores = dict.fromkeys(pool, 0.0)
    for name, values in raw.items():
        weight = weights.get(name, 0.0)
        if not weight:
            continue
        for item_id, value in scale(values, scaling.get(name, "peak")).items():
            if item_id in scores:
                scores[item_id] += weight * value
    return scores
