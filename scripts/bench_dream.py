#!/usr/bin/env python3
"""Benchmark the dream cycle's summarization: sessions gisted per minute against a llama.cpp server.

The same sessions are summarized twice by the real ``Dreamer`` (leases, token
budgets, embedding and storing each gist included), against one llama.cpp
``llama-server`` with several parallel slots (continuous batching): first one
request at a time (``dream.concurrency = 1``, the baseline), then as many at
once as the server has slots. Each run starts from a copy of the same store.
Prints a markdown table; writes only to a temp dir.

    scripts/build_llama_server.sh        # once: llama-server from the pinned llama.cpp sources
    python scripts/bench_dream.py [--sessions 24] [--slots 4] [--turns 10]
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from lyra_local.config import DEFAULT_CHAT_FILE, load_settings
from lyra_local.llm.local import available_cpus
from lyra_local.llm.registry import Models
from lyra_local.mind import Dreamer
from lyra_local.mind.dream.backlog import sense
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SERVER = REPO / ".venv" / "llama-server" / "bin" / "llama-server"
PEOPLE = ["Ana", "Tomás", "Mia", "Jonas", "Leila", "the landlord", "Dr. Weber"]
THINGS = ["the move to Lisbon", "the garden", "the knee physio", "the piano lessons", "the budget for the flat",
          "the marathon training", "the new job", "Miso's vet visit"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed_store(data_dir: Path, sessions: int, turns: int, *, seed: int = 7, months_later: int = 0) -> None:
    """``sessions`` conversations of ``turns`` turns, on different days, not yet summarized (as an import leaves);
    ``seed`` and ``months_later`` vary them (bench_household.py seeds one memory per person)."""
    rng = random.Random(seed)
    store = Store(data_dir)
    for s in range(sessions):
        day = f"2024-{1 + (s + months_later) % 12:02d}-{1 + s % 27:02d}"
        session = store.sessions.create(f"chat {s}", created_at=f"{day}T09:00:00+00:00")
        items = []
        for t in range(turns):
            who, what = rng.choice(PEOPLE), rng.choice(THINGS)
            text = (f"I talked with {who} about {what}; it cost {rng.randint(20, 900)} euros and took "
                    f"{rng.randint(1, 9)} days." if t % 2 == 0 else f"How did {who} feel about {what}?")
            items.append(NewExchange(session.id, "user" if t % 2 == 0 else "assistant", text,
                                     f"{day}T09:{t:02d}:00+00:00"))
        with store.write() as conn:
            store.exchanges.insert(conn, items, None, None)
    store.close()


def start_server(binary: Path, model: Path, slots: int, ctx_per_slot: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen([str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
                                 "-np", str(slots), "-c", str(ctx_per_slot * slots), "-t", str(available_cpus()),
                                 "--no-webui"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise SystemExit("llama-server did not become healthy")


def run(template: Path, work: Path, url: str, ctx: int, concurrency: int, summary_tokens: int) -> tuple[float, int]:
    data = work / f"c{concurrency}"
    shutil.copytree(template, data)
    config = work / f"c{concurrency}.toml"
    config.write_text(f"""
data_dir = "{data}"
[companion]
user_name = "Sam"
[dream]
session_idle_s = 0
concurrency = {concurrency}
summary_tokens = {summary_tokens}
[models.summary]
backend = "server"
base_url = "{url}"
n_ctx = {ctx}
[models.summary.sampling]
seed = 42
""")
    settings = load_settings(config, env={})
    models = Models(settings)
    store = Store(data)
    try:
        dreamer = Dreamer(store, models.summary, models.embed, settings)
        models.embed.embed(["warm up"])
        backlog = sense(store, settings.dream, force=True)
        start = time.perf_counter()
        dreamer.summarize(backlog)
        elapsed = time.perf_counter() - start
        done = len(store.derived.gists())
    finally:
        store.close()
        models.close()
    return elapsed, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--ctx-per-slot", type=int, default=2048)
    parser.add_argument("--summary-tokens", type=int, default=96)
    parser.add_argument("--server", type=Path, default=DEFAULT_SERVER, help="llama-server binary")
    parser.add_argument("--model", type=Path, default=REPO / "models" / DEFAULT_CHAT_FILE)
    args = parser.parse_args()
    if not args.server.is_file():
        raise SystemExit(f"{args.server} not found: run scripts/build_llama_server.sh first")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        template = work / "template"
        seed_store(template, args.sessions, args.turns)
        proc, url = start_server(args.server, args.model, args.slots, args.ctx_per_slot, work / "server.log")
        try:
            rows = []
            for concurrency in (1, args.slots):
                elapsed, done = run(template, work, url, args.ctx_per_slot, concurrency, args.summary_tokens)
                assert done == args.sessions, f"only {done} of {args.sessions} sessions were summarized"
                rows.append((concurrency, elapsed, done))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    base = rows[0][1]
    print(f"Dream summarization: {args.sessions} sessions x {args.turns} turns, {args.model.name}, llama-server "
          f"-np {args.slots}, {available_cpus()} CPU threads, summary_tokens {args.summary_tokens}\n")
    print("| requests at once | seconds | sessions/min | speed-up vs sequential |")
    print("|---:|---:|---:|---:|")
    for concurrency, elapsed, done in rows:
        print(f"| {concurrency} | {elapsed:.1f} | {done / elapsed * 60:.1f} | {base / elapsed:.2f}x |")


if __name__ == "__main__":
    main()
