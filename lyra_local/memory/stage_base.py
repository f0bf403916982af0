"""What every recall stage shares: the knobs (``Tuning``), one query's search state (``Search``), the
``Stage`` base class with its four steps, and how signals are scaled.

The stages themselves live by what they look at (``stages_find``: where
candidates come from; ``stages_who``: who said it and what it states;
``stages_order``: how the fused scores and the final order change); their one
registry, in pipeline order, is ``stages.STAGES``. Nothing here decides a
ranking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from ..llm.base import Reranker
from ..store.db import from_iso
from ..store.recall_index import Filters, RecallIndex
from ..store.records import Hit
from .questions import Asked, KeyVectors

if TYPE_CHECKING:
    from .recall import RecallQuery

Scaling = Literal["range", "peak"]


@dataclass(frozen=True)
class Tuning:
    """The knobs of recall, apart from what a query asks for; measured by ``scripts/eval_recall.py``."""

    candidates: int = 100  # per gathering stage; at least 3 x k
    weights: tuple[tuple[str, float], ...] = (
        ("dense", 1.0), ("bm25", 0.4), ("context", 0.4), ("rare", 0.2), ("date", 1.0), ("speaker", 0.3),
        ("gists", 1.0), ("statement", 2.0), ("expand", 0.5))
    neighbour_share: float = 0.8  # a turn's similarity gains this share of its closer neighbour's (sum, mean: less)
    session_weight: float = 0.3  # a turn gains this much of its session's strength (its best turn's score)
    session_top: int = 1
    answer_share: float = 0.8  # the turn after a matching question rises this far towards it
    elaboration_share: float = 0.6  # the turn after the other side's question about a matching turn
    lexical_power: float = 0.75
    rare_share: float = 0.002  # a word in at most this share of rows (and at most rare_max) is rare
    rare_max: int = 25
    common_min: int = 1000  # a word in more rows than max(common_min, rows/20) is left to the vectors
    gist_sessions: int = 3
    past_years: int = 30  # how far back a period named without its year is looked for
    current_weight: float = 0.6  # "now", "these days": the newest matching turns gain up to this share
    current_half_life_days: float = 120.0
    rerank_top: int = 50  # the candidates a configured re-ranker reads (a cross-encoder's cost grows with each)
    burst_gap_s: float = 60.0  # a side's next message within this is the same burst
    burst_max: int = 8  # messages walked back to find a burst's start
    burst_keep: int = 1  # messages of one burst kept in place; the rest go after the other bursts' hits
    asked_min: float = 0.55  # a question this close to a profile key's asks is searched with the key's statements
    stated_min: float = 0.25  # a turn this close to the asked key's statements says it (a search shows it): a
    # tenth of LoCoMo's turns are this close to a given key's statements
    statement_candidates: int = 30  # per statement of the asked key
    expand_from: int = 5  # the nearest turns whose meaning widens the query (``Expansion``)
    expand_share: float = 0.5  # how far the query's vector moves towards theirs

    def weight(self, stage: str) -> float:
        return dict(self.weights).get(stage, 1.0)


@dataclass
class Search:
    """One query's search: what every stage sees, and what the stages built so far."""

    query: RecallQuery
    vector: npt.NDArray[np.float32] | None
    model: str | None
    index: RecallIndex
    tuning: Tuning
    filters: Filters
    now: datetime
    df: dict[str, int] = field(default_factory=dict)  # the query's words: rows containing each (capped)
    size: int = 0
    pool: dict[int, set[str]] = field(default_factory=dict)  # candidate -> stages that brought it
    raw: dict[str, dict[int, float]] = field(default_factory=dict)
    scaling: dict[str, Scaling] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    scores: dict[int, float] = field(default_factory=dict)
    speakers: set[str] = field(default_factory=set)  # the words of the speakers' names the query names
    named: dict[str, str] = field(default_factory=dict)  # the query's words naming a speaker -> its key (speakers.py)
    reranker: Reranker | None = None  # the optional re-ranking model (Rerank)
    keys: KeyVectors | None = None  # the profile keys' sentences, embedded (Statements)
    key_question: KeyQuestion | None = None  # the profile key the question asks about (Statements)
    widened: npt.NDArray[np.float32] | None = None  # the query's vector moved towards its nearest turns (Expansion)
    _rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    _vectors: dict[int, npt.NDArray[np.float32]] = field(default_factory=dict)
    _neighbours: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)

    @property
    def tier(self) -> str:
        return self.query.tier

    def add(self, stage: str, ids: Sequence[int]) -> None:
        for i in ids:
            self.pool.setdefault(i, set()).add(stage)

    def rows(self, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        missing = [i for i in ids if i not in self._rows]
        self._rows.update(self.index.rows(self.tier, missing))
        return {i: self._rows[i] for i in ids if i in self._rows}

    def vectors(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        assert self.model is not None
        missing = [i for i in ids if i not in self._vectors]
        self._vectors.update(self.index.vectors(self.tier, self.model, missing))
        return {i: self._vectors[i] for i in ids if i in self._vectors}

    def neighbours(self, ids: Sequence[int]) -> dict[int, tuple[int | None, int | None]]:
        missing = [i for i in ids if i not in self._neighbours]
        self._neighbours.update(self.index.neighbours(missing))
        return {i: self._neighbours[i] for i in ids if i in self._neighbours}

    def useful_words(self) -> list[str]:
        """The query's words rare enough for full text to be worth its cost; common ones are left to vectors."""
        limit = max(self.tuning.common_min, self.size // 20)
        return [w for w, count in self.df.items() if 0 < count <= limit and w not in self.speakers]


class Stage:
    """One recall stage. ``applies`` says whether it takes part in a search; the steps default to nothing."""

    name: str = ""
    scaling: Scaling = "peak"

    def applies(self, s: Search) -> bool:
        return True

    def gather(self, s: Search) -> None:
        pass

    def score(self, s: Search) -> None:
        pass

    def adjust(self, s: Search) -> None:
        pass

    def reorder(self, s: Search, hits: list[Hit]) -> list[Hit]:
        return hits



def is_turns(s: Search) -> bool:
    return s.tier == "exchange"


@dataclass(frozen=True)
class KeyQuestion:
    """A question about a profile key: the key, whose turns answer it (``Statements.subject``), and the turns
    that say the profile's fact of that key."""

    asked: Asked
    names: frozenset[str]
    role: str | None
    told: frozenset[int]


def scale(values: Mapping[int, float], how: Scaling) -> dict[int, float]:
    """Scores on 0-1: by the range over the pool (``range``), or relative to the best (``peak``)."""
    if not values:
        return {}
    top = max(values.values())
    if how == "peak":
        return {i: v / top for i, v in values.items()} if top > 0 else {i: 0.0 for i in values}
    low = min(values.values())
    return {i: (v - low) / (top - low) for i, v in values.items()} if top > low else {i: 1.0 for i in values}



def when(row: dict[str, Any]) -> datetime:
    return from_iso(str(row["created_at"]))
