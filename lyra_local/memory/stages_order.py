"""Recall stages that change the fused scores and the final order: a session's strength, the answer after a
matching question, what is current, a re-ranking model, bursts and repeats. Registered in ``stages.STAGES``."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from ..errors import LyraError
from ..store.records import Hit
from .fusion import asks, recency_factor
from .stage_base import Search, Stage, is_turns, scale, when

log = logging.getLogger(__name__)
T = TypeVar("T")


class Sessions(Stage):
    """Evidence clusters: a turn gains with the strength of its session's best turns (multi-turn stories)."""

    name = "session"

    def applies(self, s: Search) -> bool:
        return is_turns(s) and s.query.mode == "hybrid"

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
        return is_turns(s) and s.query.mode == "hybrid"

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
    ``session``) must not push the answer itself behind every other burst (on real messages an answer first by
    vectors and by words alone was sent 35th).

    A burst: consecutive turns of one side in a session, each within ``burst_gap_s`` of the one before.
    """

    name = "bursts"

    def applies(self, s: Search) -> bool:
        return is_turns(s) and s.query.mode == "hybrid"

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
        first, repeats = split_repeats(hits, lambda hit: hit.content, enough=s.query.k)
        return first + repeats


def split_repeats(items: list[T], text: Callable[[T], str], enough: int | None = None) -> tuple[list[T], list[T]]:
    """The items whose text does not repeat an earlier one's, and the repeats, each in order. With ``enough``:
    once that many distinct items are found, the rest count as repeats unread (recall returns its first k of
    ~300 ranked: reading the other texts would not change them)."""
    seen: set[str] = set()
    first: list[T] = []
    repeats: list[T] = []
    for at, item in enumerate(items):
        if enough is not None and len(first) >= enough:
            return first, repeats + items[at:]
        key = repeat_key(text(item))
        (repeats if key in seen else first).append(item)
        seen.add(key)
    return first, repeats


REPEAT_NORMAL = re.compile(r"[\W\d_]+")


def repeat_key(text: str) -> str:
    """What two texts share when one repeats the other: their words, without digits or punctuation."""
    return " ".join(REPEAT_NORMAL.sub(" ", text.lower()).split())


