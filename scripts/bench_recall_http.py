#!/usr/bin/env python3
"""Recall over HTTP with the query embedded (``GET /api/recall?q=...&k=25`` of ``lyra serve``), this tree beside
a baseline revision, in one run. Prints one table; writes only to a temporary directory (and ``--cache``).

Two stores: LoCoMo's dev half (each conversation its own memory, imported as ``scripts/eval_recall.py`` does,
asked its own questions) and a 10,000-turn store (``scripts/bench_chat.py``'s texts of 8-40 everyday words with
random vectors: the size, not the meaning; asked LoCoMo's questions). Each store is copied twice and served by two
``lyra serve`` processes at once, one from this tree and one from ``git archive BASELINE``, with the dream off;
every question goes to both, in alternating order, one request at a time, so load on a shared machine falls on
both alike: read the ratio, then the milliseconds.

    python scripts/bench_recall_http.py --baseline 750c2fb --cache /tmp/eval
    python scripts/bench_recall_http.py --baseline 750c2fb --current HEAD    # a commit, not the working tree
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_chat import fill  # noqa: E402
from eval_recall import open_memory  # noqa: E402
from recall_sets import load  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
K = 25
WARM = 5  # requests each server answers before timing (model loaded, index read, names learnt)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[int(p * (len(ordered) - 1))]


def baseline_tree(rev: str, into: Path) -> Path:
    """The files of revision ``rev`` (the package only needs its sources)."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


@contextmanager
def served(tree: Path, data_dir: Path, port: int) -> Iterator[int]:
    """``lyra serve`` of the package in ``tree`` over ``data_dir``, the dream off, answering on ``port``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "LYRA_DATA_DIR": str(data_dir),
           "LYRA_MODELS_DIR": str(REPO / "models"), "LYRA_DREAM__ENABLED": "false"}
    log = (data_dir.parent / f"serve-{port}.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "lyra_local", "serve", "--port", str(port)], cwd=tree, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            try:
                conn.request("GET", "/health")
                conn.getresponse().read()
                break
            except OSError:
                if proc.poll() is not None:
                    raise SystemExit(f"lyra serve ({tree}) ended: see {log.name}") from None
                time.sleep(0.2)
            finally:
                conn.close()
        yield port
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def ask(port: int, question: str) -> float:
    """Milliseconds for one recall request on a fresh connection (as a browser's after its keep-alive lapsed),
    the answer read and parsed."""
    path = "/api/recall?" + urllib.parse.urlencode({"q": question, "k": K})
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    if response.status != 200:
        raise SystemExit(f"/api/recall answered {response.status}: {body[:300]!r}")
    json.loads(body)
    return (time.perf_counter() - t0) * 1000


def compare(store_dir: Path, questions: list[str], trees: dict[str, Path], work: Path,
            times: dict[str, list[float]]) -> None:
    """Every question to both trees' servers over copies of ``store_dir``, in alternating order."""
    conns: dict[str, int] = {}
    copies: dict[str, Path] = {}
    for name in trees:
        copies[name] = work / f"{store_dir.name}-{name}"
        shutil.rmtree(copies[name], ignore_errors=True)
        shutil.copytree(store_dir, copies[name], ignore=shutil.ignore_patterns("*.lock", "import.jsonl"))
    ports = {name: 8800 + i + (os.getpid() % 100) * 2 for i, name in enumerate(trees)}
    a, b = list(trees)
    with served(trees[a], copies[a], ports[a]) as conns[a], served(trees[b], copies[b], ports[b]) as conns[b]:
        for question in questions[:WARM]:
            for name in trees:
                ask(conns[name], question)
        for i, question in enumerate(questions):
            for name in ((a, b) if i % 2 else (b, a)):
                times[name].append(ask(conns[name], question))
    for copy in copies.values():
        shutil.rmtree(copy, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default="HEAD", help="the revision to compare with (default: HEAD)")
    parser.add_argument("--current", help="a revision to measure instead of the working tree (others' edits aside)")
    parser.add_argument("--turns", type=int, default=10_000, help="the large store's turns")
    parser.add_argument("--questions", type=int, default=400, help="questions asked of the large store")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N LoCoMo memories")
    parser.add_argument("--cache", type=Path, help="eval_recall.py's --cache: reuse its imported stores")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="lyra-http-") as tmp:
        work = Path(tmp)
        trees = {"baseline": baseline_tree(args.baseline, work / "baseline"),
                 "this tree": baseline_tree(args.current, work / "current") if args.current else REPO}
        base = args.cache or work / "eval"
        models = Models(load_settings(None, env={**os.environ, "LYRA_DATA_DIR": str(base)}))
        sets = load("locomo-dev")[:args.conversations or None]
        dev: dict[str, list[float]] = {name: [] for name in trees}
        asked = 0
        for memory_set in sets:
            store, _, _ = open_memory(base / "locomo-dev", memory_set, models.embed)
            store.close()
            questions = [q.text for q in memory_set.questions]
            compare(base / "locomo-dev" / memory_set.name, questions, trees, work, dev)
            asked += len(questions)
            print(f"done {memory_set.name}", flush=True)
        rows.append((f"LoCoMo dev half ({len(sets)} memories, {asked} questions)", dev))
        big_dir = work / f"turns{args.turns}"
        store = Store(big_dir)
        fill(store, models.embed.name, args.turns, models.embed.dim)
        store.set_meta("embed_model", models.embed.name)
        store.close()
        models.close()
        big: dict[str, list[float]] = {name: [] for name in trees}
        every = [q.text for s in load("locomo-dev") for q in s.questions][:args.questions]
        compare(big_dir, every, trees, work, big)
        rows.append((f"{args.turns:,} turns ({len(every)} questions)", big))
    load_after = os.getloadavg()
    print(f"\n### /api/recall over HTTP, k = {K}, the query embedded: baseline {args.baseline} vs "
          f"{args.current or 'the working tree'}, "
          f"{os.cpu_count()} CPUs, load {load_before[0]:.1f} -> {load_after[0]:.1f}\n")
    print("| store | baseline p50 ms | baseline p95 ms | this tree p50 ms | this tree p95 ms | p50 ratio | p95 ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, times in rows:
        old, new = times["baseline"], times["this tree"]
        print(f"| {label} | {pct(old, .5):.1f} | {pct(old, .95):.1f} | {pct(new, .5):.1f} | {pct(new, .95):.1f} | "
              f"{pct(new, .5) / pct(old, .5):.2f} | {pct(new, .95) / pct(old, .95):.2f} |")


if __name__ == "__main__":
    main()
