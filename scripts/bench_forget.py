#!/usr/bin/env python3
"""Benchmark forgetting at scale: what a large forget costs the chat path while it runs.

A store of N exchanges (synthetic vectors, as in bench_chat.py; sessions of
100 turns) is loaded as a running server holds it. Then, in this process, a
"chat" loop times what a turn does against the store, first with nothing else
running (baseline), then while `lyra forget --session ...` (another process, as a
person would run it) forgets a large share of the sessions:
- recall (hybrid: dense over the FAISS index + full text) p50/p95/max;
- storing one turn (a write transaction) p50/p95/max: the longest wait for the
  write lock the forget leaves the chat;
and reports each during/baseline ratio, and how long the forget took.
With ``--matching N``, the forget is by text instead: a word is planted in N
turns (in the case and Unicode form a person may not have typed) and
``lyra forget --matching`` folds and scans every column that holds words.
Prints a markdown table; writes only to a temp dir.
Usage: ``python scripts/bench_forget.py [--exchanges N] [--forget-sessions S | --matching N]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from bench_chat import QUESTIONS, fill, pct

from lyra_local.memory.recall import Recall, RecallQuery
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

MODEL = "synthetic-384"
DIM = 384


def chat_loop(store: Store, recall: Recall, stop: threading.Event, session_id: int) -> dict[str, list[float]]:
    """Recall then store a turn, over and over, timing each, until ``stop``."""
    rng = np.random.default_rng(7)
    times: dict[str, list[float]] = {"recall": [], "write": []}
    i = 0
    while not stop.is_set():
        vector = rng.normal(size=DIM).astype(np.float32)
        vector /= np.linalg.norm(vector)
        start = time.perf_counter()
        recall.search(RecallQuery(QUESTIONS[i % len(QUESTIONS)], k=10), vector, MODEL)
        times["recall"].append(time.perf_counter() - start)
        start = time.perf_counter()
        store.exchanges.add(NewExchange(session_id, "user", f"a quick note number {i}"), vector=vector, model=MODEL)
        times["write"].append(time.perf_counter() - start)
        i += 1
        time.sleep(0.02)
    return times


def measure(store: Store, recall: Recall, session_id: int, during: subprocess.Popen[str] | None,
            seconds: float) -> tuple[dict[str, list[float]], float]:
    stop = threading.Event()
    out: dict[str, dict[str, list[float]]] = {}
    worker = threading.Thread(target=lambda: out.setdefault("t", chat_loop(store, recall, stop, session_id)))
    start = time.monotonic()
    worker.start()
    if during is not None:
        during.wait()
        took = time.monotonic() - start
        if during.returncode != 0:
            stop.set()
            worker.join()
            raise SystemExit(f"lyra forget failed: {during.stdout.read() if during.stdout else ''}")
    else:
        time.sleep(seconds)
        took = seconds
    stop.set()
    worker.join()
    return out["t"], took


def plant(store: Store, n: int) -> int:
    """Put a rare word, written as zörblax (composed), into ``n`` turns spread over the store; how many."""
    with store.write() as conn:
        return int(conn.execute("UPDATE exchanges SET content = content || ' zörblax' WHERE id IN (SELECT id FROM "
                                "exchanges ORDER BY (id * 2654435761) % 1000003 LIMIT ?)", (n,)).rowcount)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=100_000)
    parser.add_argument("--forget-sessions", type=int, default=50, help="sessions (of 100 turns) to forget")
    parser.add_argument("--matching", type=int, default=0, metavar="N",
                        help="forget by text instead: a word planted in N turns")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        store = Store(data)
        t0 = time.monotonic()
        fill(store, MODEL, args.exchanges, DIM)
        store.index("exchange", MODEL).wait_for_upgrade()
        store.index("exchange", MODEL).sync()
        store.save_indexes(wait=True)
        print(f"filled {args.exchanges:,} exchanges in {time.monotonic() - t0:.0f} s "
              f"({store.index('exchange', MODEL).kind} index)", file=sys.stderr)
        recall = Recall(store)
        chat_session = store.sessions.create("chat").id
        baseline, _ = measure(store, recall, chat_session, None, 10.0)
        if args.matching:
            turns = plant(store, args.matching)
            what = f"every turn holding a word, in {turns:,} turns,"
            command = [sys.executable, "-m", "lyra_local", "forget", "--yes", "--matching", "ZÖRBLAX"]
        else:
            ids = [str(r[0]) for r in store.conn().execute("SELECT id FROM sessions ORDER BY id LIMIT ?",
                                                           (args.forget_sessions,))]
            turns = store.conn().execute(f"SELECT count(*) FROM exchanges WHERE session_id IN ({','.join(ids)})"
                                         ).fetchone()[0]
            what = f"{len(ids)} sessions ({turns:,} turns)"
            command = [sys.executable, "-m", "lyra_local", "forget", "--yes"] + [a for i in ids
                                                                                 for a in ("--session", f"#{i}")]
        env = {**os.environ, "LYRA_DATA_DIR": str(data)}
        forget = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        during, took = measure(store, recall, chat_session, forget, 0)
        store.close()

    print(f"\n{args.exchanges:,} exchanges; forgetting {what} with `lyra forget` "
          f"took {took:.1f} s (in another process, as a person runs it)\n")
    print("| chat step | baseline p50 / p95 / max (ms) | during the forget p50 / p95 / max (ms) | p95 ratio | max |")
    print("|---|---|---|---|---|")
    for step in ("recall", "write"):
        b, d = baseline[step], during[step]
        print(f"| {step} | {pct(b, .5) * 1e3:.1f} / {pct(b, .95) * 1e3:.1f} / {max(b) * 1e3:.1f} "
              f"| {pct(d, .5) * 1e3:.1f} / {pct(d, .95) * 1e3:.1f} / {max(d) * 1e3:.1f} "
              f"| {pct(d, .95) / pct(b, .95):.2f} | {max(d) * 1e3:.0f} ms |")


if __name__ == "__main__":
    main()
