#!/usr/bin/env python3
"""Benchmark vector recall at 10k / 100k / 1M stored exchanges of 384-d vectors.

For each size, in the same run: (a) the naive approach — load every embedding
BLOB from SQLite per query and rank with NumPy; (b) Lyra's exact FAISS index;
(c) the approximate (HNSW) index and its recall@10 against exact. Also insert
throughput through the bulk path and cold start (snapshot load + catch-up vs a
full rebuild). Embedding time is excluded: vectors are synthetic, clustered like
real sentence embeddings. Prints markdown tables; writes only to a temp dir.

Usage: ``python scripts/bench_recall.py [--sizes 10000,100000,1000000] [--queries 30]``
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from lyra_local.store import IndexSettings, Store
from lyra_local.store.exchanges import NewExchange

DIM = 384
MODEL = "bench-384"
BATCH = 10_000


def clustered_vectors(n: int, rng: np.random.Generator, centres: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Unit vectors scattered around topic centres, like sentence embeddings of a life's chats."""
    picks = rng.integers(0, len(centres), size=n)
    vectors = centres[picks] + rng.normal(scale=0.6 / np.sqrt(DIM), size=(n, DIM)).astype(np.float32) * 3
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float32)


def fill(store: Store, n: int, rng: np.random.Generator, centres: npt.NDArray[np.float32]) -> float:
    """Insert ``n`` exchanges with vectors through the bulk path; return rows/s."""
    session = store.sessions.create("bench")
    start = time.perf_counter()
    for offset in range(0, n, BATCH):
        count = min(BATCH, n - offset)
        vectors = clustered_vectors(count, rng, centres)
        items = [NewExchange(session.id, "user", f"turn {offset + i}") for i in range(count)]
        with store.write() as conn:
            store.exchanges.insert(conn, items, vectors, MODEL)
    return n / (time.perf_counter() - start)


def naive_search(store: Store, query: npt.NDArray[np.float32], k: int) -> list[int]:
    rows = store.conn().execute("SELECT item_id, vector FROM embeddings WHERE tier = 'exchange' AND model = ?",
                                (MODEL,)).fetchall()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), DIM)
    top = np.argsort(-(matrix @ query))[:k]
    return ids[top].tolist()


def latencies(fn, queries: npt.NDArray[np.float32]) -> tuple[float, float, list[list[int]]]:  # type: ignore[no-untyped-def]
    times, results = [], []
    for q in queries:
        start = time.perf_counter()
        results.append(fn(q))
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))], results


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_size(n: int, n_queries: int, root: Path) -> dict[str, str]:
    rng = np.random.default_rng(n)
    centres = rng.normal(size=(2000, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    data_dir = root / f"n{n}"
    exact_settings = IndexSettings(hnsw_threshold=10**12)
    store = Store(data_dir, index_settings=exact_settings)
    insert_rate = fill(store, n, rng, centres)
    queries = clustered_vectors(n_queries, rng, centres)
    naive_queries = queries[: max(3, n_queries // (10 if n >= 1_000_000 else 1))]

    start = time.perf_counter()
    exact = store.index("exchange", MODEL)  # built from SQLite (no snapshot yet)
    exact_build = time.perf_counter() - start
    naive_p50, naive_p95, naive_res = latencies(lambda q: naive_search(store, q, 10), naive_queries)
    exact_p50, exact_p95, exact_res = latencies(lambda q: [i for i, _ in exact.search(q, 10)], queries)
    agree = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(naive_res, exact_res, strict=True)])
    exact_mb = exact.size * DIM * 4 / 2**20

    # cold start: load the snapshot and catch up on 1% new rows, vs rebuilding from SQLite
    exact.save()
    store.close()
    store = Store(data_dir, index_settings=exact_settings)
    fill(store, max(1, n // 100), rng, centres)
    start = time.perf_counter()
    loaded = store.index("exchange", MODEL)
    load_s = time.perf_counter() - start
    assert loaded.last_load == "snapshot", loaded.last_load
    start = time.perf_counter()
    loaded.rebuild()
    rebuild_s = time.perf_counter() - start
    store.close()

    # approximate: the same rows through an HNSW index
    hnsw_store = Store(data_dir, index_settings=replace(exact_settings, hnsw_threshold=0))
    shutil.rmtree(data_dir / "index", ignore_errors=True)
    start = time.perf_counter()
    hnsw = hnsw_store.index("exchange", MODEL)
    hnsw_build = time.perf_counter() - start
    assert hnsw.kind == "hnsw"
    hnsw_p50, hnsw_p95, hnsw_res = latencies(lambda q: [i for i, _ in hnsw.search(q, 10)], queries)
    reference = Store(data_dir, index_settings=exact_settings)
    shutil.rmtree(data_dir / "index", ignore_errors=True)
    truth = [[i for i, _ in reference.index("exchange", MODEL).search(q, 10)] for q in queries]
    recall10 = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth, hnsw_res, strict=True)])
    hnsw_store.close()
    reference.close()
    shutil.rmtree(data_dir)
    return {
        "n": f"{n:,}", "insert": f"{insert_rate:,.0f}",
        "naive": f"{naive_p50:.1f} / {naive_p95:.1f}", "exact": f"{exact_p50:.2f} / {exact_p95:.2f}",
        "speedup": f"{naive_p50 / exact_p50:,.0f}x", "agree": f"{agree:.2f}",
        "hnsw": f"{hnsw_p50:.2f} / {hnsw_p95:.2f}", "recall10": f"{recall10:.3f}",
        "mem_exact": f"{exact_mb:,.0f}", "rss": f"{rss_mb():,.0f}",
        "build": f"{exact_build:.1f}", "hnsw_build": f"{hnsw_build:.1f}",
        "load": f"{load_s:.2f}", "rebuild": f"{rebuild_s:.2f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="lyra-bench-") as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            rows.append(bench_size(n, args.queries, Path(tmp)))
            print(f"done {n:,}", flush=True)

    print("\n### Query latency, ms (p50 / p95), k = 10, embedding time excluded\n")
    print("| exchanges | naive: BLOBs + NumPy | exact FAISS | exact vs naive (p50) | top-10 agreement | "
          "HNSW | HNSW recall@10 vs exact |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['naive']} | {r['exact']} | {r['speedup']} | {r['agree']} | {r['hnsw']} | "
              f"{r['recall10']} |")
    print("\n### Writes, memory and cold start\n")
    print("| exchanges | bulk insert rows/s | exact index MB | peak RSS MB | build from SQLite s | HNSW build s | "
          "snapshot load + 1% catch-up s | full rebuild s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['insert']} | {r['mem_exact']} | {r['rss']} | {r['build']} | {r['hnsw_build']} | "
              f"{r['load']} | {r['rebuild']} |")


if __name__ == "__main__":
    main()
