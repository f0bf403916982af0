"""Recall stages: each one idea about where the evidence is, one class each, measured by switching it off.

A search runs in four steps, and a stage takes part in the ones it defines:

1. ``gather``: add candidates to the pool (nearest vectors, full-text matches,
   the turns of a period the question names, ...);
2. ``score``: give every pool member a raw score for this stage (a signal);
   signals are scaled to 0-1 over the pool and summed with the stages' weights;
3. ``adjust``: change the fused scores using what the pool shows (a session
   where many strong turns are, the answer to a question that matched);
4. ``reorder``: the final order of the hits (repeats after distinct hits).

``STAGES`` lists the default recall, in order; ``OPTIONAL`` those measured and
left off. ``scripts/eval_recall.py`` measures each one switched off (or on) on
real conversations (LoCoMo, MemoryBank) and on our own set.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import LyraError
from ..llm.base import Reranker
from ..store import provenance
from ..store.db import from_iso, to_iso
from ..store.recall_index import FULL_TEXT, Filters, RecallIndex, filters
from ..store.records import Hit
from .dates import Period, days_after, question_periods, spoken_of, year_earlier
from .fusion import asks, fts_match, recency_factor, specificity
from .keys import canonical_key
from .questions import Asked, KeyVectors
from .speakers import speaker_of, turns_of

if TYPE_CHECKING:
    from .recall import RecallQuery

log = logging.getLogger(__name__)
T = TypeVar("T")
Scaling = Literal["range", "peak"]


@dataclass(frozen=True)
class Tuning:
    """The knobs of recall, apart from what a query asks for; measured by ``scripts/eval_recall.py``."""

    candidates: int = 100  # per gathering stage; at least 3 x k
    weights: tuple[tuple[str, float], ...] = (
        ("dense", 1.0), ("bm25", 0.4), ("context", 0.4), ("rare", 0.2), ("date", 1.0), ("speaker", 0.3),
        ("gists", 1.0), ("statement", 2.0))
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


def _is_turns(s: Search) -> bool:
    return s.tier == "exchange"


class Dense(Stage):
    """Nearest vectors: meaning without shared words. Its score covers every candidate, whoever found it."""

    name, scaling = "dense", "range"

    def applies(self, s: Search) -> bool:
        return s.vector is not None and s.model is not None and s.query.mode != "bm25"

    def gather(self, s: Search) -> None:
        assert s.vector is not None and s.model is not None
        s.add(self.name, [i for i, _ in s.index.dense(s.model, s.vector, s.filters, s.tuning.candidates)])

    def score(self, s: Search) -> None:
        assert s.vector is not None
        vectors = s.vectors(list(s.pool))
        s.raw[self.name] = {i: float(v @ s.vector) for i, v in vectors.items()}


class DenseContext(Stage):
    """A turn read with its neighbours: its similarity gains a share of the closer one's ("Yes, the one by the lake").

    The closer neighbour, not both: a turn at the end of a session is not worth less.
    """

    name = "neighbours"

    def applies(self, s: Search) -> bool:
        return _is_turns(s) and s.vector is not None and s.query.mode == "hybrid"

    def score(self, s: Search) -> None:
        assert s.vector is not None
        own = s.raw.get("dense")
        if not own:
            return
        around = s.neighbours(list(own))
        wanted = {n for pair in around.values() for n in pair if n is not None}
        sims = {i: float(v @ s.vector) for i, v in s.vectors(list(wanted)).items()}
        share = s.tuning.neighbour_share
        for i, sim in own.items():
            near = [sims[n] for n in around.get(i, (None, None)) if n is not None and n in sims]
            own[i] = sim + share * max(near, default=0.0)


class FullText(Stage):
    """BM25 over one full-text view of the tier: the turn alone, or the turn read after the one before it."""

    def __init__(self, name: str, view: str) -> None:
        self.name, self.view = name, view

    def applies(self, s: Search) -> bool:
        if (s.tier, self.view) not in FULL_TEXT:
            return False
        return s.query.mode == "hybrid" or (s.query.mode == "bm25" and self.view == "turn")

    def words(self, s: Search) -> list[str]:
        useful = s.useful_words()
        if not useful and s.query.mode == "bm25":
            return list(s.df)  # full text was asked for explicitly: pay for the common words
        return useful

    def gather(self, s: Search) -> None:
        match = fts_match(" ".join(self.words(s)))
        table = FULL_TEXT[(s.tier, self.view)]
        found = s.index.full_text(table, match, s.filters, s.tuning.candidates) if match else []
        s.raw[self.name] = dict(found)
        s.add(self.name, [i for i, _ in found])


class RareWords(FullText):
    """A rare word (a name, a number) shared with a turn is strong evidence that vectors blur: its own ranking."""

    def __init__(self) -> None:
        super().__init__("rare", "turn")

    def applies(self, s: Search) -> bool:
        return s.query.mode == "hybrid" and (s.tier, "turn") in FULL_TEXT

    def words(self, s: Search) -> list[str]:
        limit = max(1, min(s.tuning.rare_max, int(s.size * s.tuning.rare_share)))
        return [w for w, count in s.df.items() if 0 < count <= limit]


class LexicalTrust(Stage):
    """Full-text signals weigh as much as the question's words are specific (a name, not "my sister")."""

    name = "lexical_trust"

    def applies(self, s: Search) -> bool:
        return s.query.mode == "hybrid"

    def score(self, s: Search) -> None:
        # A speaker's name is in every turn they said: the speaker stage weighs it, not this one.
        words = {w: n for w, n in s.df.items() if w not in s.speakers} or s.df
        trust = specificity(words, s.size) ** s.tuning.lexical_power
        for name in ("bm25", "context", "rare"):
            if name in s.weights:
                s.weights[name] *= trust


class Dates(Stage):
    """A question naming a period ("in June", "on 7 July, 2023") looks among the turns of that period.

    Also among the turns of the month after it that speak of it ("I got a
    puppy two weeks ago", said on 11 August, answers "before August 11").
    """

    name, scaling = "date", "peak"
    AFTERWARDS_DAYS = 31

    def applies(self, s: Search) -> bool:
        return _is_turns(s) and s.query.mode == "hybrid" and s.vector is not None

    def gather(self, s: Search) -> None:
        period = self.period(s)
        if period is None:
            return
        assert s.vector is not None and s.model is not None
        since = max(to_iso(period.start), s.query.since or "")
        until = min(to_iso(period.end), s.query.until or "\uffff")
        found = [i for i, _ in s.index.dense(s.model, s.vector, s.filters.narrowed(since, until), s.tuning.candidates)]
        later = min(to_iso(days_after(period.end, self.AFTERWARDS_DAYS)), s.query.until or "\uffff")
        told = [i for i, _ in s.index.dense(s.model, s.vector, s.filters.narrowed(until, later), s.tuning.candidates)]
        for i, row in s.rows(told).items():
            spoken = spoken_of(row["content"], when(row).astimezone(s.now.tzinfo))
            if spoken is not None and spoken[0] < period.end and spoken[1] > period.start:
                found.append(i)
        s.add(self.name, found)
        s.raw[self.name] = dict.fromkeys(found, 1.0)

    def period(self, s: Search) -> Period | None:
        """The period named, stepped back a year at a time while its year was left out and it holds nothing; of
        a numeric date's two readings (day or month first), the first that holds turns."""
        readings = question_periods(s.query.text, s.now)
        for reading in readings[:-1]:
            if s.index.any_between(s.filters, to_iso(reading.start), to_iso(reading.end)):
                return reading
        period = readings[-1] if readings else None
        for _ in range(s.tuning.past_years):
            if period is None or not period.implied_year:
                return period
            if s.index.any_between(s.filters, to_iso(period.start), to_iso(period.end)):
                return period
            period = year_earlier(period)
        return None


SPEAKER = re.compile(r"^([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*)?):\s")
WORD = re.compile(r"[\w'’]+")
FIRST_PERSON = frozenset("i i'm i've i'd i'll we we've we're".split())
SECOND_PERSON = frozenset("you you've you're you'd you'll".split())
ASKING_COMPANION = re.compile(r"^\s*(?:do|can|could|would|will)\s+you\s+(?:remember|recall|know|tell me|say)\b",
                              re.IGNORECASE)


def named_speakers(question: str, turns: Sequence[dict[str, Any]],
                   called: Mapping[str, str] | None = None) -> tuple[set[str], str | None]:
    """Who a question is about: transcript speakers it names ("Name: ..."), a speaker by the name or nickname
    it is called (``called``: the question's words naming one, to its key, ``speakers.py``), or else the person
    or the companion by its pronouns.

    "When did Caroline go ..." is about Caroline's own turns; "I recommended a
    film, which?" about the user's; "What did you recommend to me?" about the
    companion's. "Do you remember ..." addresses the companion without being about it.
    """
    words = [w.lower().replace("’", "'") for w in WORD.findall(ASKING_COMPANION.sub("", question))]
    bare = {w[:-2] if w.endswith("'s") else w for w in words}
    names = {m.group(1).lower() for t in turns if (m := SPEAKER.match(t["content"]))}
    named = {n for n in names if n in bare or n.split()[0] in bare}
    if named:
        return named, None
    sides = set((called or {}).values())
    if len(sides) == 1:
        return set(), sides.pop()
    for w in words:  # the first subject pronoun decides
        if w in FIRST_PERSON:
            return set(), "user"
        if w in SECOND_PERSON:
            return set(), "assistant"
    return set(), "user" if {"my", "me", "mine", "myself"} & bare else None


class Speaker(Stage):
    """Turns said by the one the question is about rank higher than turns said to them."""

    name = "speaker"

    def applies(self, s: Search) -> bool:
        return _is_turns(s) and s.query.mode == "hybrid"

    def score(self, s: Search) -> None:
        rows = s.rows(list(s.pool))
        names, role = named_speakers(s.query.text, list(rows.values()), s.named)
        s.speakers |= {part for name in names for part in name.split()}
        if not names and role is None:
            return
        raw = {}
        for i, row in rows.items():
            m = SPEAKER.match(row["content"])
            said_by = m.group(1).lower() if m else None
            by_them = said_by in names if names else role is not None and said(row, role) and said_by is None
            raw[i] = 1.0 if by_them else 0.0
        s.raw[self.name] = raw


@dataclass(frozen=True)
class KeyQuestion:
    """A question about a profile key: the key, whose turns answer it (``Statements.subject``), and the turns
    that say the profile's fact of that key."""

    asked: Asked
    names: frozenset[str]
    role: str | None
    told: frozenset[int]


class Statements(Stage):
    """A question about the person ("what is my job?") is answered by a statement ("i teach chemistry in leeds")
    that shares neither its words nor its vector's neighbourhood: when the question is close to a profile key's
    asks (``questions.py``), the key's statements search the turns of the one it is about, and a turn gains as
    much as it is close to them. The source turn of the profile's fact for that key is a candidate too.

    A turn at least ``stated_min`` close is marked as brought by this stage (a search shows it as a match).
    """

    name, scaling = "statement", "peak"

    def applies(self, s: Search) -> bool:
        return _is_turns(s) and s.query.mode == "hybrid" and s.vector is not None and s.keys is not None

    def gather(self, s: Search) -> None:
        assert s.vector is not None and s.model is not None and s.keys is not None
        asked = s.keys.asked(s.vector, s.tuning.asked_min)
        if asked is None:
            return
        names, role = self.subject(s)
        narrowed = s.filters if role is None else s.filters.said_by(*turns_of(role))
        near = {i for says in asked.says for i, sim in s.index.dense(s.model, says, narrowed,
                                                                    s.tuning.statement_candidates)
                if sim >= s.tuning.stated_min}
        found = [i for i, row in s.rows(sorted(near)).items() if states(row, names, role)]
        told = self.fact_turns(s, asked.key, narrowed)
        s.add(self.name, [*found, *told])
        s.key_question = KeyQuestion(asked, frozenset(names), role, frozenset(told))

    def score(self, s: Search) -> None:
        q = s.key_question
        if q is None:
            return
        rows = s.rows(list(s.pool))
        vectors = s.vectors([i for i, row in rows.items() if states(row, q.names, q.role)])
        ids = list(vectors)
        closeness = q.asked.stated(np.stack([vectors[i] for i in ids])).tolist() if ids else []
        stated = dict(zip(ids, closeness, strict=True))
        top = max(stated.values(), default=1.0)
        for i in q.told:  # the turn the profile's fact was read from: as close as the closest
            stated[i] = max(top, stated.get(i, 0.0))
        for i, value in stated.items():
            if value >= s.tuning.stated_min:
                s.pool.setdefault(i, set()).add(self.name)
        s.raw[self.name] = {i: max(0.0, value) for i, value in stated.items()}

    @staticmethod
    def subject(s: Search) -> tuple[set[str], str | None]:
        """Whose turns answer: the speakers the question names (their side, when they are all on one), the side
        it is about, or else the person's own (a profile key is theirs)."""
        rows = s.rows(list(s.pool))
        names, role = named_speakers(s.query.text, list(rows.values()), s.named)
        if not names:
            return set(), role or "user"
        sides = {speaker_of(row["role"], row.get("author")) for row in rows.values()
                 if (m := SPEAKER.match(row["content"])) and m.group(1).lower() in names}
        return names, sides.pop() if len(sides) == 1 else None

    TOLD_MAX = 3

    @classmethod
    def fact_turns(cls, s: Search, key: str, narrowed: Filters) -> list[int]:
        """The turns that say the profile's current facts of ``key``: a dream's fact names the turn it was read
        from. One older than that record is shown with its whole conversation: no candidate, more than
        ``TOLD_MAX`` turns."""
        store = s.index.store
        turns = []
        for fact in store.derived.profile():
            if canonical_key(fact.key) == key:
                behind = provenance.turns_behind(store.conn(), "fact", fact.id)
                turns.extend(behind if len(behind) <= cls.TOLD_MAX else [])
        return s.index.passing(narrowed, list(dict.fromkeys(turns)))


def states(row: Mapping[str, Any], names: Collection[str], role: str | None) -> bool:
    """Whether a turn may state something of the one a question is about: said by one of ``names`` (a
    transcript's "Name: ..." label) or, naming none, by ``role``, and not asking (a turn that asks "what can
    you do?" states nothing)."""
    if asks(row["content"]):
        return False
    if names:
        m = SPEAKER.match(row["content"])
        return m is not None and m.group(1).lower() in names
    return role is None or said(row, role)


def said(row: Mapping[str, Any], speaker: str) -> bool:
    """Whether a turn's row was said by the speaker of this key (``speakers.py``)."""
    return speaker_of(row["role"], row.get("author")) == speaker


class GistSessions(Stage):
    """The sessions whose gists match: their turns gain. Depends on the gists being faithful."""

    name = "gists"

    def applies(self, s: Search) -> bool:
        return _is_turns(s) and s.query.mode == "hybrid" and s.vector is not None

    def gather(self, s: Search) -> None:
        assert s.vector is not None and s.model is not None
        q = s.query
        gist_filters = filters("gist", session_id=q.session_id, exclude_session_id=q.exclude_session_id)
        gists = [i for i, _ in s.index.dense(s.model, s.vector, gist_filters, s.tuning.gist_sessions)]
        sessions = s.index.gist_sessions(gists)
        if not sessions:
            return
        marks = ",".join(str(int(x)) for x in sessions)
        narrowed = Filters("exchange", " AND ".join(filter(None, [f"t.session_id IN ({marks})", s.filters.where])),
                           s.filters.args)
        found = s.index.dense(s.model, s.vector, narrowed, s.tuning.candidates)
        s.add(self.name, [i for i, _ in found])
        s.raw[self.name] = {i: 1.0 for i, _ in found}


class Sessions(Stage):
    """Evidence clusters: a turn gains with the strength of its session's best turns (multi-turn stories)."""

    name = "session"

    def applies(self, s: Search) -> bool:
        return _is_turns(s) and s.query.mode == "hybrid"

    def adjust(self, s: Search) -> None:
        rows = s.rows(list(s.scores))
        by_session: dict[int, list[float]] = {}
        for i, score in s.scores.items():
            if i in rows:
                by_session.setdefault(rows[i]["session_id"], []).append(score)
        strength = {sid: float(np.mean(sorted(v)[-s.tuning.session_top:])) for sid, v in by_session.items()}
        scaled = scale(strength, "range")
        for i in s.scores:
            if i in rows:
                s.scores[i] += s.tuning.session_weight * scaled[rows[i]["session_id"]]


class Answers(Stage):
    """The evidence is often the reply to a matching question ("What made you pick it?" -> "I chose them...").

    The turn after a matching turn that asks rises towards its score; so does
    the turn after the other side's question about a matching turn ("We adopted
    a cat!" -> "What did you name him?" -> "Pixel").
    """

    name = "answer"

    def applies(self, s: Search) -> bool:
        return _is_turns(s) and s.query.mode == "hybrid"

    def adjust(self, s: Search) -> None:
        ids = list(s.scores)
        around = s.neighbours(ids)
        nexts = [n for _, n in around.values() if n is not None]
        around.update(s.neighbours(nexts))
        rows = s.rows([*ids, *nexts])
        gains: dict[int, float] = {}
        for i in ids:
            first = around.get(i, (None, None))[1]
            if first is None:
                continue
            second = around.get(first, (None, None))[1]
            for asker, answer, share in ((i, first, s.tuning.answer_share),
                                         (first, second, s.tuning.elaboration_share)):
                if answer is None or asker not in rows or not asks(rows[asker]["content"]):
                    continue
                gain = share * (s.scores[i] - s.scores.get(answer, 0.0))
                if gain > gains.get(answer, 0.0):
                    gains[answer] = gain
        passing = set(s.index.passing(s.filters, [a for a in gains if a not in s.scores]))
        for answer, gain in gains.items():
            if answer in s.scores or answer in passing:
                s.scores[answer] = s.scores.get(answer, 0.0) + gain
                s.pool.setdefault(answer, set()).add(self.name)


CURRENT = re.compile(r"\b(now|currently|these days|nowadays|at the moment|anymore|still|today)\b", re.IGNORECASE)


class Currentness(Stage):
    """ "Where do I live now?": of turns that match, the later ones say what is current.

    Ages are counted back from the newest candidate, not from today, so an
    imported history's latest word counts as current.
    """

    name = "current"

    def applies(self, s: Search) -> bool:
        return s.query.mode == "hybrid" and bool(CURRENT.search(s.query.text))

    def adjust(self, s: Search) -> None:
        rows = s.rows(list(s.scores))
        if not rows:
            return
        dates = {i: when(row) for i, row in rows.items()}
        newest = max(dates.values())
        for i, at in dates.items():
            s.scores[i] *= 1.0 + s.tuning.current_weight * recency_factor(at, newest, s.tuning.current_half_life_days)


class Rerank(Stage):
    """A cross-encoder reads the question with each of the best candidates and re-orders them (when the optional
    ``[models.rerank]`` role is configured): it sees the two together, where the other stages compare them apart.

    A re-ranker that fails (its server down) leaves the order as fused: recall still answers, and the log says why.
    """

    name = "rerank"

    def applies(self, s: Search) -> bool:
        return s.reranker is not None and s.query.mode == "hybrid"

    def reorder(self, s: Search, hits: list[Hit]) -> list[Hit]:
        assert s.reranker is not None
        top, rest = hits[:s.tuning.rerank_top], hits[s.tuning.rerank_top:]
        try:
            scores = s.reranker.rerank(s.query.text, [hit.content for hit in top])
        except LyraError as exc:
            log.warning("re-ranking skipped: %s", exc.message)
            return hits
        order = sorted(range(len(top)), key=lambda i: (-scores[i], i))
        return [replace(top[i], stages=(*top[i].stages, self.name)) for i in order] + rest


class Bursts(Stage):
    """People send one thought as a burst of messages ("omg" / "we went to miami" / "art basel was amazing"): a
    message of a burst already among the hits adds little; it goes after the hits of other bursts.

    The burst's place goes to its message that says most itself (its own similarity to the query and its own
    words' match), not to the one ranked highest: a neighbour that borrowed the answer's score (``neighbours``,
    ``session``) must not push the answer itself behind every other burst (issue 44: an answer first by
    vectors and by words alone was sent 35th).

    A burst: consecutive turns of one side in a session, each within ``burst_gap_s`` of the one before.
    """

    name = "bursts"

    def applies(self, s: Search) -> bool:
        return _is_turns(s) and s.query.mode == "hybrid"

    def reorder(self, s: Search, hits: list[Hit]) -> list[Hit]:
        top = hits[:s.tuning.rerank_top]
        starts = s.index.burst_starts([h.id for h in top], s.tuning.burst_gap_s, s.tuning.burst_max)
        own = self.own_evidence(s, [h.id for h in top])
        members: dict[int, list[Hit]] = {}
        for hit in top:
            members.setdefault(starts.get(hit.id, hit.id), []).append(hit)
        kept = {h.id for group in members.values()
                for h in sorted(group, key=lambda h: -own.get(h.id, 0.0))[:s.tuning.burst_keep]}
        order: list[Hit] = []  # each burst's kept messages where its first hit ranked
        seen: set[int] = set()
        for hit in top:
            burst = starts.get(hit.id, hit.id)
            if burst not in seen:
                seen.add(burst)
                order += [h for h in sorted(members[burst], key=lambda h: -own.get(h.id, 0.0)) if h.id in kept]
        return order + [h for h in top if h.id not in kept] + hits[len(top):]

    @staticmethod
    def own_evidence(s: Search, ids: Sequence[int]) -> dict[int, float]:
        """Each message's own match: its vector's similarity to the query plus its full-text score, scaled."""
        out = dict.fromkeys(ids, 0.0)
        if s.vector is not None and s.model is not None:
            for i, v in s.vectors(list(ids)).items():
                out[i] += float(v @ s.vector)
        for i, value in scale(s.raw.get("bm25", {}), "peak").items():
            if i in out:
                out[i] += s.weights.get("bm25", 0.0) * value
        return out


class Diversity(Stage):
    """A repeated message ("work was busy today") adds no evidence: repeats go after every distinct hit."""

    name = "diversity"

    def applies(self, s: Search) -> bool:
        return s.query.mode == "hybrid"

    def reorder(self, s: Search, hits: list[Hit]) -> list[Hit]:
        first, repeats = split_repeats(hits, lambda hit: hit.content)
        return first + repeats


STAGES: tuple[Stage, ...] = (Dense(), FullText("bm25", "turn"), FullText("context", "context"), RareWords(), Dates(),
                             Statements(), DenseContext(), Speaker(), LexicalTrust(), Sessions(), Answers(),
                             Currentness(), Rerank(), Bursts(), Diversity())
OPTIONAL: tuple[Stage, ...] = (GistSessions(),)
ALWAYS = ("dense", "bm25")  # what the plain modes are made of


def stage_names() -> list[str]:
    """The default recall's stages, by name."""
    return [stage.name for stage in STAGES]


def optional_stages() -> list[str]:
    return [stage.name for stage in OPTIONAL]


def chosen(names: Sequence[str] | None) -> list[Stage]:
    """The stages to run, in pipeline order: the default set, or the ones named."""
    if names is None:
        return list(STAGES)
    known = {stage.name: stage for stage in (*STAGES, *OPTIONAL)}
    unknown = set(names) - set(known)
    if unknown:
        raise ValueError(f"unknown recall stage(s): {', '.join(sorted(unknown))}; known: {', '.join(known)}")
    every = (*STAGES, *OPTIONAL)
    gathering = [stage for stage in every if type(stage).gather is not Stage.gather]
    order = [*gathering, *(stage for stage in every if stage not in gathering)]  # gathering stages first
    return [stage for stage in order if stage.name in names]


def scale(values: Mapping[int, float], how: Scaling) -> dict[int, float]:
    """Scores on 0-1: by the range over the pool (``range``), or relative to the best (``peak``)."""
    if not values:
        return {}
    top = max(values.values())
    if how == "peak":
        return {i: v / top for i, v in values.items()} if top > 0 else {i: 0.0 for i in values}
    low = min(values.values())
    return {i: (v - low) / (top - low) for i, v in values.items()} if top > low else {i: 1.0 for i in values}


def split_repeats(items: list[T], text: Callable[[T], str]) -> tuple[list[T], list[T]]:
    """The items whose text does not repeat an earlier one's, and the repeats, each in order."""
    seen: set[str] = set()
    first: list[T] = []
    repeats: list[T] = []
    for item in items:
        key = repeat_key(text(item))
        (repeats if key in seen else first).append(item)
        seen.add(key)
    return first, repeats


REPEAT_NORMAL = re.compile(r"[\W\d_]+")


def repeat_key(text: str) -> str:
    """What two texts share when one repeats the other: their words, without digits or punctuation."""
    return " ".join(REPEAT_NORMAL.sub(" ", text.lower()).split())


def when(row: dict[str, Any]) -> datetime:
    return from_iso(str(row["created_at"]))
