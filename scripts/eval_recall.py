#!/usr/bin/env python3
"""Recall quality on our own evaluation set: strategies side by side, per question type, in one run.

Each person's year of conversations (``eval/recall_set.json``, written by
``scripts/make_eval_set.py``) goes into its own fresh store with real
all-MiniLM-L6-v2 embeddings, dated so the last session was yesterday. Every
question is asked of each strategy; the score is the share of its evidence
turns found in the top k (recall@5/10/25), per question type, plus latency.
Strategies: dense only, BM25 only, a plain reciprocal-rank fusion of the two,
and Lyra's full recall, with each of its techniques switched off in turn (or on,
for those measured and left off), other fusion weights, and query rewriting by
the local chat model (the configured one: SmolLM2-135M by default), whose time
counts in that row's latency.

    python scripts/eval_recall.py [--set eval/recall_set.json] [--no-rewrite]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from lyra_local.config import load_settings
from lyra_local.llm.base import ChatModel, GenerationOptions
from lyra_local.llm.registry import Models
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.fusion import rrf
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

REPO = Path(__file__).resolve().parents[1]
KS = (5, 10, 25)
TYPES = ("single", "preference", "multi", "temporal", "changed")
REWRITE_PROMPT = ("Rewrite this question as a short list of search keywords that the answer would contain. "
                  "Reply with the keywords only.\n\nQuestion: {q}")


@dataclass
class Question:
    """One question as each strategy sees it: text and vector, and the local model's rewrite of it."""

    text: str
    vector: Any
    rewritten: str = ""
    rewritten_vector: Any = None
    rewrite_ms: float = 0.0


Strategy = Callable[[Memory, Question], list[int]]


def load_person(memory: Memory, person: dict[str, Any], today: datetime) -> dict[tuple[int, int], int]:
    """Store one person's sessions; returns (session index, turn index) -> exchange id."""
    ids: dict[tuple[int, int], int] = {}
    for si, s in enumerate(person["sessions"]):
        day = today + timedelta(days=s["day"] - 1)
        session = memory.store.sessions.create(s["name"], created_at=day.isoformat())
        items = [NewExchange(session.id, role, text, (day + timedelta(minutes=2 * ti)).isoformat())
                 for ti, (role, text) in enumerate(s["turns"])]
        for ti, e in enumerate(memory.remember_many(items)):
            ids[(si, ti)] = e.id
    return ids


def month_question(person: dict[str, Any], today: datetime) -> dict[str, Any]:
    """'What was I up to in <Month YYYY>?': the holiday turns dated in that month are the evidence."""
    holiday = next(q for q in person["questions"] if "holiday" in q["question"])
    first = holiday["evidence"][0][0]
    day = today + timedelta(days=person["sessions"][first]["day"] - 1)
    evidence = [e for e in holiday["evidence"]
                if (today + timedelta(days=person["sessions"][e[0]]["day"] - 1)).month == day.month]
    return {"type": "temporal", "question": f"What was I up to in {day:%B %Y}?", "evidence": evidence}


def store_gists(memory: Memory, ids: dict[tuple[int, int], int], texts: list[str]) -> None:
    """Each session's gist, embedded, as the dream cycle would have stored it."""
    vectors = memory.embedder.embed(texts)
    for si, (text, vector) in enumerate(zip(texts, vectors)):
        last = max(ids[key] for key in ids if key[0] == si)
        session_id = memory.store.exchanges.get(last).session_id  # type: ignore[union-attr]
        memory.store.derived.put_gist(session_id, text, last, vector, memory.embedder.name)


def strategies(rewrite: bool, gists: bool = False) -> dict[str, Strategy]:
    def ids(m: Memory, q: RecallQuery, v: Any) -> list[int]:
        return [h.id for h in m.recall(q, vector=v)]

    def plain(mode: Any) -> Strategy:
        return lambda m, q: ids(m, RecallQuery(q.text, k=25, mode=mode), q.vector)

    def fused(m: Memory, q: Question) -> list[int]:
        dense = ids(m, RecallQuery(q.text, k=50, mode="dense"), q.vector)
        bm25 = ids(m, RecallQuery(q.text, k=50, mode="bm25"), q.vector)
        ranked = rrf({"dense": dense, "bm25": bm25})
        return sorted(ranked, key=lambda i: ranked[i], reverse=True)[:25]

    def lyra(**options: Any) -> Strategy:
        return lambda m, q: ids(m, RecallQuery(q.text, k=25, **options), q.vector)

    def rewritten(m: Memory, q: Question) -> list[int]:
        return ids(m, RecallQuery(f"{q.text} {q.rewritten}", k=25), q.rewritten_vector)

    out: dict[str, Strategy] = {"dense only": plain("dense"), "BM25 only": plain("bm25"), "RRF (dense+BM25)": fused,
                                "Lyra full recall": lyra()}
    for technique in ("lexical_trust", "answers", "rare_words", "dates", "diversity"):  # on: each switched off
        out[f"Lyra without {technique.replace('_', ' ')}"] = lyra(**{technique: False})
    for technique in ("currentness",):  # tried and measured, off by default: switched on
        out[f"Lyra with {technique.replace('_', ' ')}"] = lyra(**{technique: True})
    # fusion weights fixed for every question, instead of the lexical trust
    for weight in (0.5, 0.3):
        out[f"Lyra, BM25 weighted {weight} (fixed)"] = lyra(lexical_trust=False, weights=(("bm25", weight),))
    out["Lyra, answers weighted 0.5"] = lyra(weights=(("answer", 0.5),))
    if gists:
        out["Lyra with gists (session stage)"] = lyra(gists=True)
    if rewrite:
        out["Lyra + query rewriting (local model)"] = rewritten
    return out


def rewrite_question(chat: ChatModel, question: str) -> str:
    """The local chat model's keywords for a question (greedy, short)."""
    reply = chat.complete([{"role": "user", "content": REWRITE_PROMPT.format(q=question)}],
                          GenerationOptions(max_tokens=24, temperature=0.0))
    return " ".join(reply.text.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=REPO / "eval" / "recall_set.json")
    parser.add_argument("--no-rewrite", action="store_true", help="leave out the query-rewriting row (no chat model)")
    parser.add_argument("--gists", type=Path, default=REPO / "eval" / "recall_gists.json",
                        help="the sessions' gists, written by make_eval_gists.py (the gist-stage row needs them)")
    args = parser.parse_args()
    rewrite = not args.no_rewrite
    gists = json.loads(args.gists.read_text(encoding="utf-8")) if args.gists.exists() else None
    examples: list[tuple[str, str]] = []
    data = json.loads(args.set.read_text(encoding="utf-8"))
    today = datetime.now(timezone.utc).replace(hour=9, minute=0, second=0, microsecond=0)
    found: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    latency: dict[str, list[float]] = defaultdict(list)
    count: dict[str, int] = defaultdict(int)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(None, env={**os.environ, "LYRA_DATA_DIR": tmp})
        models = Models(settings)
        embed_model = models.embed.name
        for person in data["people"]:
            store = Store(Path(tmp) / person["person"])
            memory = Memory(store, models.embed)
            ids = load_person(memory, person, today)
            if gists is not None:
                store_gists(memory, ids, gists["people"][person["person"]])
            for q in [*person["questions"], month_question(person, today)]:
                evidence = {ids[(s, t)] for s, t in q["evidence"]}
                question = Question(q["question"], models.embed.embed([q["question"]])[0])
                if rewrite:
                    t0 = time.perf_counter()
                    question.rewritten = rewrite_question(models.chat, question.text)
                    question.rewritten_vector = models.embed.embed([f"{question.text} {question.rewritten}"])[0]
                    question.rewrite_ms = (time.perf_counter() - t0) * 1000
                    examples.append((question.text, question.rewritten))
                count[q["type"]] += 1
                for name, strategy in strategies(rewrite, gists is not None).items():
                    t0 = time.perf_counter()
                    ranked = strategy(memory, question)
                    spent = (time.perf_counter() - t0) * 1000
                    latency[name].append(spent + (question.rewrite_ms if "rewriting" in name else 0.0))
                    for k in KS:
                        found[name][q["type"]][k].append(len(evidence & set(ranked[:k])) / len(evidence))
            store.close()
        models.close()
    turns = sum(len(s["turns"]) for p in data["people"] for s in p["sessions"])
    if gists is not None:
        print(f"gists by {gists['model']} from {args.gists.name}")
    print(f"Recall evaluation: {len(data['people'])} people, {turns} turns, {sum(count.values())} questions "
          f"({', '.join(f'{t} {count[t]}' for t in TYPES)}); {embed_model} over raw turns\n")
    print("| strategy | " + " | ".join(f"{t} @10" for t in TYPES) + " | all @5 | all @10 | all @25 | p50 ms |")
    print("|---|" + "---:|" * (len(TYPES) + 4))
    for name in strategies(rewrite, gists is not None):
        per_type = [statistics.mean(found[name][t][10]) for t in TYPES]
        overall = {k: statistics.mean(v for t in TYPES for v in found[name][t][k]) for k in KS}
        print(f"| {name} | " + " | ".join(f"{x:.2f}" for x in per_type) + " | " +
              " | ".join(f"{overall[k]:.2f}" for k in KS) + f" | {statistics.median(latency[name]):.1f} |")
    if examples:
        print("\nThe local model's rewrites, first five:")
        for asked, keywords in examples[:5]:
            print(f"- {asked} -> {keywords}")


if __name__ == "__main__":
    main()
