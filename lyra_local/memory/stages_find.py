"""Recall stages that find candidates: nearest vectors, full text, rare words, the days a question names, and
(measured, left off) matching sessions' gists and the query widened by what it finds first. Registered in
``stages.STAGES`` and ``stages.OPTIONAL``."""

from __future__ import annotations

import numpy as np

from ..store.db import to_iso
from ..store.recall_index import FULL_TEXT, Filters, filters
from .dates import Period, days_after, question_periods, spoken_of, year_earlier
from .fusion import fts_match, specificity
from .stage_base import Search, Stage, is_turns, when


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
        return is_turns(s) and s.vector is not None and s.query.mode == "hybrid"

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
        return is_turns(s) and s.query.mode == "hybrid" and s.vector is not None

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



class GistSessions(Stage):
    """The sessions whose gists match: their turns gain. Depends on the gists being faithful."""

    name = "gists"

    def applies(self, s: Search) -> bool:
        return is_turns(s) and s.query.mode == "hybrid" and s.vector is not None

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


class Expansion(Stage):
    """A list or inference question ("what drinks does she like?") is answered by examples that share neither
    its words nor much of its meaning (a soda brand, lemon tea): the query's vector moves towards its nearest
    turns (pseudo-relevance feedback, by the embedding model alone, no list of words), and the turns near
    the moved vector are candidates with their own signal.
    """

    name, scaling = "expand", "range"

    def applies(self, s: Search) -> bool:
        return is_turns(s) and s.query.mode == "hybrid" and s.vector is not None and s.model is not None

    def gather(self, s: Search) -> None:
        assert s.vector is not None and s.model is not None
        query = s.vector
        vectors = s.vectors([i for i, stages in s.pool.items() if "dense" in stages])
        nearest = sorted(vectors, key=lambda i: -float(vectors[i] @ query))[:s.tuning.expand_from]
        if not nearest:
            return
        centre = np.mean([vectors[i] for i in nearest], axis=0)
        moved = query + s.tuning.expand_share * centre / max(float(np.linalg.norm(centre)), 1e-9)
        s.widened = (moved / float(np.linalg.norm(moved))).astype(np.float32)
        s.add(self.name, [i for i, _ in s.index.dense(s.model, s.widened, s.filters, s.tuning.candidates)])

    def score(self, s: Search) -> None:
        if s.widened is not None:
            widened = s.widened
            s.raw[self.name] = {i: float(v @ widened) for i, v in s.vectors(list(s.pool)).items()}
