#!/usr/bin/env python3
"""How high the search's meaning floor can go: recall@10 kept on real conversations, nothing shown for a word
nobody said.

A search (``lyra_local/memory/search.py``) shows a memory found by words (a word of the query is in it: the
highlight) or by meaning (its cosine with the query at least the floor). This script measures both sides of
that floor, with the configured embedding model, on each set's memories imported as ``eval_recall.py`` does:

- **relevant**: each question of the set, through Lyra's full recall (25 deep); evidence recall@10 of the
  hits as ranked (``before``) and of those the floor keeps (``after``: the first 10 kept);
- **nothing to find**, for each memory: words never said in it (taken from the other set), words said in
  exactly one turn with that turn taken away (a forget), and made-up words. Each is one query; it "shows
  something" when any other turn shares none of its words and is at least the floor close to it in meaning.

For each floor in the sweep it prints one table row: recall@10 before and after per set, and the share of
those null queries that would still show something. The questions are sentences (the sentence floor applies);
the null queries are single words (the floor for a word or two applies).

    python scripts/search_floor.py                                 # locomo-dev and memorybank
    python scripts/search_floor.py --dataset memorybank --cache /tmp/eval
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.memory import RecallQuery
from lyra_local.memory.fusion import STOPWORDS
from lyra_local.memory.search import Candidate, matches, meaning_floor
from lyra_local.memory.snippet import matched_spans
from lyra_local.store.recall_index import RecallIndex

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_recall import open_memory  # noqa: E402
from messy_sets import origin  # noqa: E402
from recall_sets import load  # noqa: E402

FLOORS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55)
DEPTH = 25
NULLS_PER_KIND = 40  # per memory
WORD = re.compile(r"[a-z]{5,}")
# a hit: its id, the evidence turn it is a message of (-1: none), words?, cosine, the turn before it, dated?,
# stated? (it states what the question asks of the person: the statement stage)
Scored = tuple[int, int, bool, float | None, int | None, bool, bool]


def made_up(rng: random.Random) -> str:
    """A pronounceable word that is in no dictionary ("zorblat")."""
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    return "".join(rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(2, 4))) + rng.choice("ktrx")


def words_of(texts: list[str]) -> Counter[str]:
    """In how many texts each word (five letters or more, not a stopword) is."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update({w for w in WORD.findall(text.lower()) if w not in STOPWORDS})
    return counts


def null_cosines(texts: list[str], matrix: np.ndarray, queries: list[str], vectors: np.ndarray,
                 away: list[int | None]) -> list[float]:
    """For each query: the best cosine of a turn that shares none of its words (turn ``away`` forgotten)."""
    out = []
    for query, vector, gone in zip(queries, vectors, away, strict=True):
        sims = matrix @ vector
        best = -1.0
        for i in np.argsort(-sims)[:50]:
            if i != gone and not matched_spans(texts[i], query):
                best = float(sims[i])
                break
        out.append(best)
    return out


def vocabulary(dataset: str) -> list[str]:
    """The words said at least three times in a set: never-said words for the memories of another set."""
    counts = words_of([m["content"] for s in load(dataset) for session in s.sessions for m in session["messages"]])
    return sorted(w for w, n in counts.items() if n >= 3)


def measure(dataset: str, models: Models, base: Path, other_words: list[str], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    rows: list[tuple[list[Scored], int]] = []  # per question: its hits, its evidence count
    nulls: dict[str, list[float]] = defaultdict(list)
    for memory_set in load(dataset):
        store, memory, _ = open_memory(base, memory_set, models.embed)
        model = memory.active_model
        index = RecallIndex(store)
        turns = [t for s in store.sessions.list() for t in store.exchanges.history(s.id)]
        texts = [t.content for t in turns]
        stored = index.vectors("exchange", model, [t.id for t in turns])
        matrix = np.stack([stored[t.id] for t in turns])
        messages_of: dict[str, set[int]] = defaultdict(set)
        for source, exchange in store.exchanges.ids_by_source().items():
            messages_of[origin(source)].add(exchange)
        question_vectors = models.embed.embed([q.text for q in memory_set.questions])
        for question, vector in zip(memory_set.questions, question_vectors, strict=True):
            v = np.asarray(vector, dtype=np.float32)
            hits = memory.recall(RecallQuery(question.text, k=DEPTH), vector=v)
            own = index.vectors("exchange", model, [h.id for h in hits])
            evidence = [messages_of[e] for e in question.evidence]
            around = index.neighbours([h.id for h in hits])
            scored = [(h.id, next((n for n, m in enumerate(evidence) if h.id in m), -1),
                       bool(matched_spans(h.content, question.text)),
                       float(own[h.id] @ v) if h.id in own else None, around.get(h.id, (None, None))[0],
                       "date" in h.stages, "statement" in h.stages) for h in hits]
            rows.append((scored, len(evidence)))
            nulls["relevant, by meaning only"].extend(c for _, turn, words, c, _, dated, _ in scored
                                                      if turn >= 0 and not words and not dated and c is not None)
        counts = words_of(texts)
        said_once = sorted(w for w, n in counts.items() if n == 1)
        forgotten = rng.sample(said_once, min(NULLS_PER_KIND, len(said_once)))
        where = [next(i for i, t in enumerate(texts) if w in WORD.findall(t.lower())) for w in forgotten]
        never = [w for w in rng.sample(other_words, min(len(other_words), 4 * NULLS_PER_KIND))
                 if not any(matched_spans(t, w) for t in texts)][:NULLS_PER_KIND]
        invented = [made_up(rng) for _ in range(NULLS_PER_KIND)]
        for kind, queries, away in (("forgotten word", forgotten, where),
                                    ("word never said", never, [None] * len(never)),
                                    ("made-up word", invented, [None] * len(invented))):
            if queries:
                vectors = np.asarray(models.embed.embed(queries), dtype=np.float32)
                nulls[kind].extend(null_cosines(texts, matrix, queries, vectors, away))
        store.close()
    return {"dataset": dataset, "rows": rows, "nulls": dict(nulls)}


def recall_at_10(rows: list[tuple[list[Scored], int]], floor: float | None) -> float:
    """Evidence recall@10 of the hits the search shows: the share of a question's evidence turns with a message
    among its first 10 (as eval_recall.py counts it)."""
    shares = []
    for hits, n in rows:
        how = matches([Candidate(i, words, cos, previous, dated, stated)
                       for i, _, words, cos, previous, dated, stated in hits], -2.0 if floor is None else floor)
        kept = [turn for i, turn, *_ in hits if i in how][:10]
        shares.append(len({t for t in kept if t >= 0}) / n)
    return statistics.mean(shares)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", action="append", choices=("locomo-dev", "memorybank", "locomo-messy",
                                                               "memorybank-messy"))
    parser.add_argument("--cache", type=Path, help="keep the imported data directories here and reuse them")
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--dump", type=Path, help="also write what was measured as JSON, to try other floors")
    args = parser.parse_args()
    datasets = args.dataset or ["locomo-dev", "memorybank"]
    with tempfile.TemporaryDirectory() as tmp:
        base = args.cache or Path(tmp)
        settings = load_settings(None, env={**os.environ, "LYRA_DATA_DIR": str(base)})
        models = Models(settings)
        model = models.embed.name
        sentence, words = meaning_floor(model, "a question of several words"), meaning_floor(model, "word")
        print(f"Search floor with {model}; in use: {sentence} for a sentence, {words} for a word or two")
        results = []
        for dataset in datasets:  # the other set's words are this one's never-said words
            other = "memorybank" if dataset.startswith("locomo") else "locomo-dev"
            results.append(measure(dataset, models, base / dataset, vocabulary(other), args.seed))
            if args.dump:
                args.dump.write_text(json.dumps(results), encoding="utf-8")
        models.close()
    print("\n### cosine of the best turn sharing no word (nulls), and of evidence found by meaning only\n")
    print("| set | kind | n | p50 | p90 | p99 | max |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        for kind, values in r["nulls"].items():
            q = np.quantile(values, [0.5, 0.9, 0.99]) if values else [0, 0, 0]
            print(f"| {r['dataset']} | {kind} | {len(values)} | {q[0]:.3f} | {q[1]:.3f} | {q[2]:.3f} | "
                  f"{max(values, default=0):.3f} |")
    print("\n### recall@10 of what the search shows, and the share of nothing-to-find queries that show something\n")
    kinds = ("forgotten word", "word never said", "made-up word")
    print("| floor | " + " | ".join(f"{r['dataset']} R@10" for r in results) + " | "
          + " | ".join(kinds) + " |")
    print("|---|" + "---:|" * (len(results) + len(kinds)))
    print("| none | " + " | ".join(f"{recall_at_10(r['rows'], None):.3f}" for r in results) + " |"
          + " |" * len(kinds))
    for floor in sorted({*FLOORS, sentence, words}):
        shown = []
        for kind in kinds:
            values = [v for r in results for v in r["nulls"].get(kind, [])]
            shown.append(f"{sum(v >= floor for v in values) / max(1, len(values)):.3f}")
        print(f"| {floor:.2f} | " + " | ".join(f"{recall_at_10(r['rows'], floor):.3f}" for r in results) + " | "
              + " | ".join(shown) + " |")


if __name__ == "__main__":
    main()
