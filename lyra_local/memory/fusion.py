"""Pure ranking helpers: reciprocal-rank fusion, recency, and safe FTS5 queries."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime

RRF_K = 60
_WORD = re.compile(r"[\w][\w'’-]*", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s$")
# Words too common to help BM25 find a turn; kept out of the OR-query so they
# do not flood the candidates (the dense stage still sees the whole question).
STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have how i i'm if in into is it its
me my of on or our she he so than that the their them then there these they this to was we were what when
where which who why will with would you your about just like tell remember know did
""".split())


def rrf(rankings: Mapping[str, Sequence[int]], weights: Mapping[str, float] | None = None,
        k: int = RRF_K) -> dict[int, float]:
    """Reciprocal-rank fusion: ``sum(weight / (k + rank))`` over the rankings an item appears in."""
    scores: dict[int, float] = {}
    for name, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def specificity(document_frequencies: Mapping[str, int], size: int) -> float:
    """How specific a query's words are, on average: 1 when each is in one row, 0 when in every row.

    Each word found scores ``log(size / df) / log(size)``, its IDF on a 0-1
    scale. A question about a named person or place scores high, and full-text
    matches on it are strong evidence; one made of everyday words ("my sister",
    "now", "work") matches many unrelated rows, and its full-text rankings
    deserve less trust than the vectors'.
    """
    found = [df for df in document_frequencies.values() if df > 0]
    if not found or size < 2:
        return 1.0
    return sum(max(0.0, min(1.0, math.log(size / df) / math.log(size))) for df in found) / len(found)


def asks(text: str) -> bool:
    """Whether a turn ends by asking something, so that the next turn answers it."""
    return text.rstrip().rstrip(")\"'”’ ").endswith("?")


def answers_to(chains: Sequence[Sequence[tuple[int, str]]]) -> list[int]:
    """The turns that answer each chain's first turn, in the chains' order.

    A chain is a hit followed by the next turns of its session, as (id, text).
    Conversation comes in question-answer pairs: a hit that asks is answered by
    the turn after it, and a hit that the other side asks about ("We adopted a
    cat!" -> "What did you name him?") is elaborated by the turn after that.
    """
    out: list[int] = []
    for chain in chains:
        for (_, question), (answer, _) in zip(chain[:2], chain[1:3], strict=False):
            if asks(question) and answer not in out:
                out.append(answer)
    return out


def recency_factor(created_at: datetime, now: datetime, half_life_days: float = 30.0) -> float:
    """1.0 for now, 0.5 one half-life ago, tending to 0 for the distant past."""
    age_days = max(0.0, (now - created_at).total_seconds() / 86400)
    return math.pow(0.5, age_days / half_life_days)


def query_words(text: str) -> list[str]:
    """The distinct words of a query worth searching for, stopwords dropped (unless that leaves none).

    A possessive is its name ("Maria's" -> "maria": the turns say "I", not
    "Maria's"), and a hyphenated word its parts ("mid-August" -> "mid", "august").
    """
    words = [part for w in _WORD.findall(text) for part in _POSSESSIVE.sub("", w.lower()).split("-") if part]
    useful = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(useful))[:32]


def fts_match(text: str) -> str | None:
    """An FTS5 MATCH expression for free text: its words OR-ed, each quoted (no operator injection)."""
    words = query_words(text)
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
