#!/usr/bin/env python3
"""Recall quality on our own evaluation set: strategies side by side, per question type, in one run.

Each person's year of conversations (``eval/recall_set.json``, written by
``scripts/make_eval_set.py``) goes into its own fresh store with real
all-MiniLM-L6-v2 embeddings, dated so the last session was yesterday. Every
question is asked of each strategy; the score is the share of its evidence
turns found in the top k (recall@5/10/25), per question type, plus latency.
Strategies: dense only, BM25 only, a plain reciprocal-rank fusion of the two,
and Lyra's full recall, with each of its techniques switched off in turn.

    python scripts/eval_recall.py [--set eval/recall_set.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.fusion import rrf
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

REPO = Path(__file__).resolve().parents[1]
KS = (5, 10, 25)
TYPES = ("single", "preference", "multi", "temporal", "changed")
Strategy = Callable[[Memory, str, Any], list[int]]


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


def strategies() -> dict[str, Strategy]:
    def plain(mode: str) -> Strategy:
        return lambda m, q, v: [h.id for h in m.recall(RecallQuery(q, k=25, mode=mode), vector=v)]  # type: ignore[arg-type]

    def fused(m: Memory, q: str, v: Any) -> list[int]:
        dense = [h.id for h in m.recall(RecallQuery(q, k=50, mode="dense"), vector=v)]
        bm25 = [h.id for h in m.recall(RecallQuery(q, k=50, mode="bm25"), vector=v)]
        ranked = rrf({"dense": dense, "bm25": bm25})
        return sorted(ranked, key=lambda i: ranked[i], reverse=True)[:25]

    def lyra(**off: bool) -> Strategy:
        return lambda m, q, v: [h.id for h in m.recall(RecallQuery(q, k=25, **off), vector=v)]

    out: dict[str, Strategy] = {"dense only": plain("dense"), "BM25 only": plain("bm25"), "RRF (dense+BM25)": fused,
                                "Lyra full recall": lyra()}
    for technique in ("rare_words", "dates", "diversity"):  # on in Lyra's recall: each switched off
        out[f"Lyra without {technique.replace('_', ' ')}"] = lyra(**{technique: False})
    for technique in ("neighbours_rank", "currentness"):  # tried and measured, off by default: each switched on
        out[f"Lyra with {technique.replace('_', ' ')}"] = lyra(**{technique: True})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=REPO / "eval" / "recall_set.json")
    args = parser.parse_args()
    data = json.loads(args.set.read_text(encoding="utf-8"))
    today = datetime.now(timezone.utc).replace(hour=9, minute=0, second=0, microsecond=0)
    found: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    latency: dict[str, list[float]] = defaultdict(list)
    count: dict[str, int] = defaultdict(int)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(None, env={"LYRA_DATA_DIR": tmp})
        models = Models(settings)
        for person in data["people"]:
            store = Store(Path(tmp) / person["person"])
            memory = Memory(store, models.embed)
            ids = load_person(memory, person, today)
            for q in [*person["questions"], month_question(person, today)]:
                evidence = {ids[(s, t)] for s, t in q["evidence"]}
                vector = models.embed.embed([q["question"]])[0]
                count[q["type"]] += 1
                for name, strategy in strategies().items():
                    t0 = time.perf_counter()
                    ranked = strategy(memory, q["question"], vector)
                    latency[name].append((time.perf_counter() - t0) * 1000)
                    for k in KS:
                        found[name][q["type"]][k].append(len(evidence & set(ranked[:k])) / len(evidence))
            store.close()
        models.close()
    turns = sum(len(s["turns"]) for p in data["people"] for s in p["sessions"])
    print(f"Recall evaluation: {len(data['people'])} people, {turns} turns, {sum(count.values())} questions "
          f"({', '.join(f'{t} {count[t]}' for t in TYPES)}); all-MiniLM-L6-v2 over raw turns\n")
    print("| strategy | " + " | ".join(f"{t} @10" for t in TYPES) + " | all @5 | all @10 | all @25 | p50 ms |")
    print("|---|" + "---:|" * (len(TYPES) + 4))
    for name in strategies():
        per_type = [statistics.mean(found[name][t][10]) for t in TYPES]
        overall = {k: statistics.mean(v for t in TYPES for v in found[name][t][k]) for k in KS}
        print(f"| {name} | " + " | ".join(f"{x:.2f}" for x in per_type) + " | " +
              " | ".join(f"{overall[k]:.2f}" for k in KS) + f" | {statistics.median(latency[name]):.1f} |")


if __name__ == "__main__":
    main()
