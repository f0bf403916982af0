#!/usr/bin/env python3
"""Where a recall's time goes, on real conversations: embedding the query, each stage's steps, the rest, and
serialising the hits as ``/api/recall`` does. Prints one table; writes only to a temporary directory.

Each memory of a set is imported as ``scripts/eval_recall.py`` does (``--cache`` reuses its stores) and every
question is recalled as a request would be (k = 25, the query embedded inside the timing). A stage's time is
the sum of its ``gather``, ``score``, ``adjust`` and ``reorder``; "recall, the rest" is the search's time
outside the stages (reading rows, fusing, ordering, learning names, document frequencies).

    python scripts/bench_recall_breakdown.py --dataset locomo-dev --cache /tmp/eval
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.memory import RecallQuery
from lyra_local.memory.stages import STAGES, Stage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_recall import open_memory  # noqa: E402
from recall_sets import DATASETS, load  # noqa: E402

STEPS = ("gather", "score", "adjust", "reorder")


def timed(spent: dict[str, float], key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            spent[key] += (time.perf_counter() - t0) * 1000
    return run


def instrument(spent: dict[str, float]) -> None:
    """Every stage's steps add their time to ``spent[stage name]`` (on the stage objects recall runs)."""
    for stage in STAGES:
        for step in STEPS:
            if getattr(type(stage), step) is not getattr(Stage, step):
                setattr(stage, step, timed(spent, stage.name, getattr(stage, step)))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[int(p * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=DATASETS, default="locomo-dev")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N memories")
    parser.add_argument("--cache", type=Path, help="eval_recall.py's --cache: reuse its imported stores")
    args = parser.parse_args()
    spent: dict[str, float] = defaultdict(float)
    instrument(spent)
    rows: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.cache or Path(tmp)
        models = Models(load_settings(None, env={**os.environ, "LYRA_DATA_DIR": str(base)}))
        for memory_set in load(args.dataset)[:args.conversations or None]:
            store, memory, _ = open_memory(base / args.dataset, memory_set, models.embed)
            for question in memory_set.questions:
                spent.clear()
                t0 = time.perf_counter()
                vector = models.embed.embed([question.text])[0]
                t1 = time.perf_counter()
                hits = memory.recall(RecallQuery(question.text, k=25), vector=vector)
                t2 = time.perf_counter()
                json.dumps({"query": question.text, "hits": [dataclasses.asdict(h) for h in hits]})
                t3 = time.perf_counter()
                stages = sum(spent.values())
                rows["embedding the query"].append((t1 - t0) * 1000)
                for stage in STAGES:
                    rows[f"stage {stage.name}"].append(spent.get(stage.name, 0.0))
                rows["recall, the rest"].append((t2 - t1) * 1000 - stages)
                rows["serialising the hits"].append((t3 - t2) * 1000)
                rows["total"].append((t3 - t0) * 1000)
            store.close()
        models.close()
    n = len(rows["total"])
    print(f"\n### Recall time by part, {args.dataset}: {n} questions, k = 25, {os.cpu_count()} CPUs\n")
    print("| part | mean ms | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|")
    for name, values in rows.items():
        print(f"| {name} | {statistics.mean(values):.2f} | {pct(values, 0.5):.2f} | {pct(values, 0.95):.2f} |")


if __name__ == "__main__":
    main()
