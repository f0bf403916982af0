#!/usr/bin/env python3
"""Where a recall's time goes, on real conversations: embedding the query, each stage's steps, the rest, and
serialising the hits as ``/api/recall`` does. Prints one table; writes only to a temporary directory.

Each memory of a set is imported as ``scripts/eval_recall.py`` does (``--cache`` reuses its stores) and every
question is recalled as ``/api/recall`` does (k = 25, ``Memory.recall`` embedding the query: the question with
the names it calls a speaker by put aside), without the HTTP server around it (``scripts/bench_recall_http.py``
times that). A memory's first question is not timed: it loads the model and the index and learns the names.
A stage's time is the sum of its ``gather``, ``score``, ``adjust`` and ``reorder``; "recall, the rest" is the
search's time outside the stages and the embedding (reading rows, fusing, ordering, document frequencies).
"Serialising" is the route's: each hit as a dict with who said it, then FastAPI's encoder and JSON response.
Below the parts, the kinds of work they contain: FAISS searches and the SQL of ``store/recall_index.py``.

    python scripts/bench_recall_breakdown.py --dataset locomo-dev --cache /tmp/eval
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.responses import JSONResponse

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.memory import RecallQuery
from lyra_local.memory.speakers import who_said
from lyra_local.memory.stages import STAGES, Stage
from lyra_local.store.recall_index import RecallIndex
from lyra_local.store.vectors import VectorIndex
from lyra_local.web.routes.recall import hit_json

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_recall import open_memory  # noqa: E402
from recall_sets import DATASETS, load  # noqa: E402

STEPS = ("gather", "score", "adjust", "reorder")


def timed(spent: dict[str, float], key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[key] += (time.perf_counter() - t0) * 1000
    return run


def instrument(spent: dict[str, float]) -> None:
    """Every stage's steps add their time to ``spent[stage name]`` (on the stage objects recall runs)."""
    for stage in STAGES:
        for step in STEPS:
            if getattr(type(stage), step) is not getattr(Stage, step):
                setattr(stage, step, timed(spent, stage.name, getattr(stage, step)))


def instrument_work(spent: dict[str, float], embedder: Any) -> None:
    """Embedding, FAISS searches and the recall index's SQL add their time to ``spent`` (kinds of work)."""
    embedder.embed = timed(spent, "embedding", embedder.embed)
    VectorIndex.search = timed(spent, "faiss", VectorIndex.search)  # type: ignore[method-assign]
    for name, fn in list(vars(RecallIndex).items()):
        if callable(fn) and not name.startswith("_") and name != "dense":
            setattr(RecallIndex, name, timed(spent, "sql", timed(spent, f"sql: {name}", fn)))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[int(p * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=DATASETS, default="locomo-dev")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N memories")
    parser.add_argument("--cache", type=Path, help="eval_recall.py's --cache: reuse its imported stores")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    spent: dict[str, float] = defaultdict(float)
    instrument(spent)
    rows: dict[str, list[float]] = defaultdict(list)
    kinds: dict[str, list[float]] = defaultdict(list)
    work: dict[str, float] = defaultdict(float)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.cache or Path(tmp)
        models = Models(load_settings(None, env={**os.environ, "LYRA_DATA_DIR": str(base)}))
        instrument_work(work, models.embed)
        for memory_set in load(args.dataset)[:args.conversations or None]:
            store, memory, _ = open_memory(base / args.dataset, memory_set, models.embed)
            for i, question in enumerate(memory_set.questions):
                spent.clear()
                work.clear()
                t0 = time.perf_counter()
                hits = memory.recall(RecallQuery(question.text, k=25))
                t1 = time.perf_counter()
                JSONResponse({"query": question.text,
                              "hits": [hit_json(h, who_said(h.role, h.author, memory.known)) for h in hits]})
                t2 = time.perf_counter()
                if i == 0:
                    continue
                stages = sum(spent.values())
                rows["embedding the query"].append(work["embedding"])
                for stage in STAGES:
                    rows[f"stage {stage.name}"].append(spent.get(stage.name, 0.0))
                rows["recall, the rest"].append((t1 - t0) * 1000 - stages - work["embedding"])
                rows["serialising the hits"].append((t2 - t1) * 1000)
                rows["total"].append((t2 - t0) * 1000)
                kinds["of which FAISS searches"].append(work["faiss"])
                kinds["of which SQL (store/recall_index.py)"].append(work["sql"])
                for key in [k for k in work if k.startswith("sql: ")]:
                    kinds[f"  {key[5:]}"].append(work[key])
            store.close()
        models.close()
    n = len(rows["total"])
    print(f"\n### Recall time by part, {args.dataset}: {n} questions, k = 25, {os.cpu_count()} CPUs, "
          f"load {load_before:.1f} -> {os.getloadavg()[0]:.1f}\n")
    print("| part | mean ms | p50 ms | p95 ms |")
    print("|---|---:|---:|---:|")
    for name, values in {**rows, **kinds}.items():
        print(f"| {name} | {statistics.mean(values):.2f} | {pct(values, 0.5):.2f} | {pct(values, 0.95):.2f} |")


if __name__ == "__main__":
    main()
