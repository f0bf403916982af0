"""Hybrid recall: dense vectors (FAISS) fused with BM25 (SQLite FTS5).

Stages, each a ranking fused by weighted reciprocal rank: ``dense``; ``bm25``
and ``rare`` (full text, weighted by how specific the question's words are);
``date`` (the dense ranking of the period a question names); ``answer`` (the
turns answering the top hits); ``session`` (the turns of the sessions whose
gists match, off by default). Filters (a session only or excluded, a time
range, a role) are applied inside every stage, so a filter never empties a
result that a wider search would have filled. Each hit says which stages found
it. What each stage is worth is measured by ``scripts/eval_recall.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from ..errors import BadRequest
from ..store import Hit, Store
from ..store.db import from_iso, to_iso
from .dates import date_range
from ..store.records import TIERS
from .fusion import answers_to, fts_match, query_words, recency_factor, rrf, specificity

Mode = Literal["hybrid", "dense", "bm25"]
T = TypeVar("T")
CANDIDATES = 50
WEIGHTS = {"dense": 1.0, "bm25": 1.0, "rare": 1.0, "date": 1.0, "answer": 1.0, "session": 1.0}
ANSWER_SOURCES = 10
SESSION_SOURCES = 3
LEXICAL_POWER = 2.0
CURRENT = re.compile(r"\b(now|currently|these days|nowadays|at the moment|anymore|still|today)\b", re.IGNORECASE)
CURRENT_WEIGHT = 1.0
REPEAT_NORMAL = re.compile(r"[\W\d_]+")
CURRENT_HALF_LIFE_DAYS = 120.0
RARE_DF = 25
RARE_SHARE = 0.002
COMMON_DF = 1000


@dataclass(frozen=True)
class RecallQuery:
    text: str
    k: int = 10
    tier: str = "exchange"
    session_id: int | None = None
    exclude_session_id: int | None = None
    since: str | None = None
    until: str | None = None
    role: str | None = None
    recency_weight: float = 0.0
    neighbours: int = 0
    mode: Mode = "hybrid"
    # Techniques of the hybrid mode, each measured by scripts/eval_recall.py (off = ablation):
    rare_words: bool = True  # a rare word (a name, a number) shared with a turn gets a ranking of its own
    lexical_trust: bool = True  # full-text rankings weigh as much as the question's words are specific
    dates: bool = True  # "in March", "last spring": a ranking of the turns from that period
    answers: bool = True  # a hit that asks, or is asked about, brings the turn that answers it
    diversity: bool = True  # a repeated message ("work was busy today") adds no evidence: repeats go last
    currentness: bool = False  # "now", "these days": newer turns rank higher; measured: no gain yet, off
    gists: bool = False  # find the sessions by their gists, then rank those sessions' turns; see eval_recall.py
    weights: tuple[tuple[str, float], ...] = ()  # per-stage fusion weights over WEIGHTS, for measuring

    def __post_init__(self) -> None:
        if self.tier not in TIERS:
            raise BadRequest(f"tier must be one of {', '.join(TIERS)}")
        if not 1 <= self.k <= 1000:
            raise BadRequest("k must be between 1 and 1000")
        if self.role is not None and self.tier != "exchange":
            raise BadRequest("a role filter only applies to the exchange tier")


def _filters(q: RecallQuery) -> tuple[str, list[object]]:
    """SQL conditions on the tier's rows (alias ``t``) for the query's filters."""
    clauses: list[str] = []
    args: list[object] = []
    session_col = {"exchange": "t.session_id", "gist": "t.session_id", "digest": None}[q.tier]
    time_col = {"exchange": "t.created_at", "gist": "t.updated_at", "digest": "t.period"}[q.tier]
    if q.tier != "exchange":
        clauses.append("t.stale = 0")
    if session_col and q.session_id is not None:
        clauses.append(f"{session_col} = ?")
        args.append(q.session_id)
    if session_col and q.exclude_session_id is not None:
        clauses.append(f"{session_col} != ?")
        args.append(q.exclude_session_id)
    if q.since:
        clauses.append(f"{time_col} >= ?")
        args.append(q.since)
    if q.until:
        clauses.append(f"{time_col} < ?")
        args.append(q.until)
    if q.role:
        clauses.append("t.role = ?")
        args.append(q.role)
    return " AND ".join(clauses), args


TABLES = {"exchange": "exchanges", "gist": "gists", "digest": "digests"}
FTS = {"exchange": "exchanges_fts", "gist": "gists_fts"}


class Recall:
    """Recall over one store with one embedding model's vectors."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # (tier, word) -> (rows containing it, capped; table size when counted). Counts only
        # grow, so a word is re-counted when the table has grown a tenth; forgetting clears all.
        self._df: dict[tuple[str, str], tuple[int, int]] = {}

    def forgot(self) -> None:
        self._df.clear()

    def search(self, q: RecallQuery, query_vector: npt.NDArray[np.float32] | None, model: str | None) -> list[Hit]:
        where, args = _filters(q)
        n = max(CANDIDATES, q.k * 3)
        rankings: dict[str, list[int]] = {}
        if q.mode in ("hybrid", "dense") and query_vector is not None and model is not None:
            rankings["dense"] = self._dense(q, query_vector, model, where, args, n)
        lexical = 1.0
        if q.mode in ("hybrid", "bm25") and q.tier in FTS:
            # Words in a large share of all rows say little and cost a scoring pass over
            # every row they are in: BM25 leaves them to the dense stage.
            size = self._size(q.tier)
            limit = common_limit(size)
            df = self._document_frequencies(q.tier, query_words(q.text), size)
            useful = [w for w, count in df.items() if 0 < count <= limit]
            if not useful and q.mode == "bm25":
                useful = list(df)  # full text was asked for explicitly: pay for the common words
            rankings["bm25"] = self._bm25(q, fts_match(" ".join(useful)), where, args, n)
            if q.mode == "hybrid" and q.rare_words:
                # A rare word (a name, a number) that the question shares with a turn is
                # strong evidence that vectors blur: it gets a ranking of its own.
                rare = [w for w, count in df.items() if 0 < count <= rare_limit(size)]
                rankings["rare"] = self._bm25(q, fts_match(" ".join(rare)), where, args, n)
            if q.mode == "hybrid" and q.lexical_trust:
                lexical = specificity(df, size) ** LEXICAL_POWER
        now = datetime.now(timezone.utc)
        period = date_range(q.text, now) if q.mode == "hybrid" and q.dates and q.tier == "exchange" else None
        if period is not None and query_vector is not None and model is not None:
            dated = replace(q, since=to_iso(period[0]) if not q.since else q.since,
                            until=to_iso(period[1]) if not q.until else q.until)
            dated_where, dated_args = _filters(dated)
            rankings["date"] = self._dense(dated, query_vector, model, dated_where, dated_args, n)
        if q.mode == "hybrid" and q.gists and q.tier == "exchange" and query_vector is not None and model:
            rankings["session"] = self._by_session(q, query_vector, model, where, args, n)
        weights = {**WEIGHTS, "bm25": WEIGHTS["bm25"] * lexical, "rare": WEIGHTS["rare"] * lexical,
                   **dict(q.weights)}
        fused = rrf({name: ranking for name, ranking in rankings.items() if ranking}, weights)
        rows = self._rows(q.tier, list(fused))
        if q.mode == "hybrid" and q.answers and q.tier == "exchange":
            # The evidence is often the turn that answers a hit ("What did you name him?" ->
            # "Pixel, the kids chose it"), which shares no word with the question. Sources are
            # distinct texts: a message repeated thirty times is one source, not thirty.
            ranked = sorted((i for i in fused if i in rows), key=lambda i: fused[i], reverse=True)
            top, _ = split_repeats(ranked, lambda i: rows[i]["content"])
            rankings["answer"] = self._answers(top[:ANSWER_SOURCES], rows, where, args)
            fused = rrf({name: ranking for name, ranking in rankings.items() if ranking}, weights)
            rows.update(self._rows(q.tier, [i for i in fused if i not in rows]))
        recency = q.recency_weight or (CURRENT_WEIGHT if q.mode == "hybrid" and q.currentness
                                       and CURRENT.search(q.text) else 0.0)
        hits = []
        for item_id, score in fused.items():
            row = rows.get(item_id)
            if row is None:
                continue  # forgotten since the index was read
            if recency:
                score *= 1.0 + recency * recency_factor(_when(row), now, CURRENT_HALF_LIFE_DAYS)
            stages = tuple(name for name, ranking in rankings.items() if item_id in ranking) or ("neighbour",)
            hits.append(Hit(q.tier, item_id, row.get("session_id"), row.get("role"), row["content"],
                            row["created_at"], score, stages))
        hits.sort(key=lambda h: h.score, reverse=True)
        if q.mode == "hybrid" and q.diversity:
            hits = _repeats_last(hits)
        hits = hits[:q.k]
        if q.neighbours and q.tier == "exchange":
            hits = [self._with_context(h, q.neighbours) for h in hits]
        return hits

    def _answers(self, sources: list[int], rows: dict[int, dict[str, Any]], where: str,
                 args: list[object]) -> list[int]:
        """The turns answering the ``sources`` (in their order) that pass the query's filters."""
        if not sources:
            return []
        first = self._next_turns(sources)
        second = self._next_turns(list(first.values()))
        text = {i: rows[i]["content"] for i in sources}
        wanted = [i for i in (*first.values(), *second.values()) if i not in text]
        text.update((i, row["content"]) for i, row in self._rows("exchange", wanted).items())
        chains = [[(i, text.get(i, "")) for i in (src, first.get(src), second.get(first.get(src, -1)))
                   if i is not None] for src in sources]
        found = answers_to(chains)
        return self._passing("exchange", found, where, args) if where else found

    def _by_session(self, q: RecallQuery, vector: npt.NDArray[np.float32], model: str, where: str,
                    args: list[object], n: int) -> list[int]:
        """The turns of the sessions whose gists match best, by their vectors: first the session, then the turn."""
        gist_query = RecallQuery(q.text, k=SESSION_SOURCES, tier="gist", session_id=q.session_id,
                                 exclude_session_id=q.exclude_session_id)
        gist_where, gist_args = _filters(gist_query)
        gist_ids = self._dense(gist_query, vector, model, gist_where, gist_args, SESSION_SOURCES)
        if not gist_ids:
            return []
        sessions = [r[0] for r in self.store.conn().execute(
            f"SELECT session_id FROM gists WHERE id IN ({','.join('?' * len(gist_ids))})", gist_ids)]
        clauses = " AND ".join(filter(None, [f"t.session_id IN ({','.join('?' * len(sessions))})", where]))
        allowed = self._allowed(q, clauses, [*sessions, *args])
        return [i for i, _ in self.store.index(q.tier, model).search(vector, n, allowed)] if len(allowed) else []

    def _next_turns(self, ids: list[int]) -> dict[int, int]:
        """Each turn's successor in its session, where it has one."""
        if not ids:
            return {}
        rows = self.store.conn().execute(
            "SELECT e.id, (SELECT min(n.id) FROM exchanges n WHERE n.session_id = e.session_id AND n.id > e.id) "
            f"FROM exchanges e WHERE e.id IN ({','.join('?' * len(ids))})", ids)
        return {src: nxt for src, nxt in rows if nxt is not None}

    def _dense(self, q: RecallQuery, vector: npt.NDArray[np.float32], model: str, where: str,
               args: list[object], n: int) -> list[int]:
        index = self.store.index(q.tier, model)
        if not where:
            return [i for i, _ in index.search(vector, n)]
        # Most filters (another session, a long time range) keep most rows: search wider and
        # drop what does not pass. Only a narrow filter needs the exact id selector.
        wide = [i for i, _ in index.search(vector, n * 4)]
        kept = self._passing(q.tier, wide, where, args)
        if len(kept) >= n or len(wide) < n * 4:
            return kept[:n]
        return [i for i, _ in index.search(vector, n, self._allowed(q, where, args))]

    def _passing(self, tier: str, ids: list[int], where: str, args: list[object]) -> list[int]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.store.conn().execute(f"SELECT t.id FROM {TABLES[tier]} t WHERE t.id IN ({marks}) AND {where}",
                                         [*ids, *args])
        passing = {r[0] for r in rows}
        return [i for i in ids if i in passing]

    def _allowed(self, q: RecallQuery, where: str, args: list[object]) -> npt.NDArray[np.int64]:
        sql = f"SELECT t.id FROM {TABLES[q.tier]} t WHERE {where}"
        ids = [r[0] for r in self.store.conn().execute(sql, args)]
        return np.asarray(ids, dtype=np.int64)

    def _size(self, tier: str) -> int:
        row = self.store.conn().execute(f"SELECT max(id) FROM {TABLES[tier]}").fetchone()
        return int(row[0] or 0)

    def _document_frequencies(self, tier: str, words: list[str], size: int) -> dict[str, int]:
        """How many of the tier's ``size`` rows contain each word, counted up to a cap (cheap for common words)."""
        fts = FTS[tier]
        cap = common_limit(size) + 1
        out = {}
        for word in words:
            cached = self._df.get((tier, word))
            if cached is not None and (cached[0] >= cap or size <= cached[1] * 1.1):
                out[word] = cached[0]
                continue
            match = fts_match(word)
            if match is None:
                continue
            count = int(self.store.conn().execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT {cap})", (match,)).fetchone()[0])
            self._df[(tier, word)] = (count, size)
            out[word] = count
        return out

    def _bm25(self, q: RecallQuery, match: str | None, where: str, args: list[object], n: int) -> list[int]:
        if match is None:
            return []
        fts = FTS[q.tier]
        if not where:
            sql = f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY rank LIMIT ?"
            return [r[0] for r in self.store.conn().execute(sql, (match, n))]
        sql = (f"SELECT t.id FROM {fts} JOIN {TABLES[q.tier]} t ON t.id = {fts}.rowid "
               f"WHERE {fts} MATCH ? AND {where} ORDER BY rank LIMIT ?")
        return [r[0] for r in self.store.conn().execute(sql, [match, *args, n])]

    def _rows(self, tier: str, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        conn = self.store.conn()
        if tier == "exchange":
            sql = f"SELECT id, session_id, role, content, created_at FROM exchanges WHERE id IN ({marks})"
        elif tier == "gist":
            sql = (f"SELECT id, session_id, NULL AS role, content, updated_at AS created_at FROM gists "
                   f"WHERE stale = 0 AND id IN ({marks})")
        else:
            sql = (f"SELECT id, NULL AS session_id, NULL AS role, content, updated_at AS created_at, period "
                   f"FROM digests WHERE stale = 0 AND id IN ({marks})")
        return {r["id"]: dict(r) for r in conn.execute(sql, list(ids))}

    def _with_context(self, hit: Hit, radius: int) -> Hit:
        exchange = self.store.exchanges.get(hit.id)
        if exchange is None:
            return hit
        return replace(hit, context=self.store.exchanges.neighbours(exchange, radius))


def _repeats_last(hits: list[Hit]) -> list[Hit]:
    """Keep the best of each repeated text in place and move its repeats after every distinct hit."""
    first, repeats = split_repeats(hits, lambda hit: hit.content)
    return first + repeats


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


def repeat_key(text: str) -> str:
    """What two texts share when one repeats the other: their words, without digits or punctuation."""
    return " ".join(REPEAT_NORMAL.sub(" ", text.lower()).split())


def rare_limit(size: int) -> int:
    """Rows a word may appear in and still count as rare: a name or a number, not a topic."""
    return max(1, min(RARE_DF, int(size * RARE_SHARE)))


def common_limit(size: int) -> int:
    """Rows a word may appear in and still be searched by BM25."""
    return max(COMMON_DF, size // 20)


def _when(row: dict[str, Any]) -> datetime:
    return from_iso(str(row["created_at"]))
