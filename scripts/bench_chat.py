#!/usr/bin/env python3
"""Benchmark the chat path: context assembly at 100k stored exchanges, and Lyra's overhead.

- context assembly (gather: recall over three tiers, profile, world, history; then
  assemble under token budgets with the chat model's tokenizer) p50/p95, with the
  query already embedded as in a real turn (the user's message is embedded once,
  when it is stored);
- time to first token through Lyra (store, embed, gather, assemble, generate) vs
  the model called directly with the same prompt;
- streaming tokens/s through Lyra vs raw llama-cpp-python, in the same run.

The 100k exchanges carry synthetic vectors (embedding them for real would take
this CPU a quarter of an hour and does not change what is timed). Prints markdown
tables; writes only to a temp dir. Usage: ``python scripts/bench_chat.py [--exchanges N]``

``--people N`` measures a household instead: the same exchanges split
across N people, each in a Store of their own (the owner's in the data directory,
the others' in ``people/<id>/``), against one person holding them all, in the same
run. Each layout is opened in a fresh process (so its RSS is its own) twice,
alternating; every query goes to one person's memory, round-robin.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from lyra_local.companion import Companion
from lyra_local.config import load_settings
from lyra_local.llm.base import ChatDelta, GenerationOptions, Message, request_params
from lyra_local.llm.local import LocalChatModel, LocalEmbedder, available_cpus
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.context import assemble
from lyra_local.memory.gather import gather
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

REPO = Path(__file__).resolve().parents[1]
WORDS = ("garden sister Lisbon coffee rain project deadline birthday guitar train mountain letter doctor "
         "recipe river festival promise morning library bicycle harbour winter Ana Miso tomatoes move flat "
         "work boss holiday beach concert marathon knee physio piano lesson budget rent plants").split()
DATED = ["What did I plan for the garden last spring?", "What did Ana say in March 2025?",
         "What happened two weeks ago?", "Where was I last month?"]
QUESTIONS = ["How is Ana doing with the move to Lisbon?", "Do you remember my knee and the physio?",
             "What did I plan for the garden this spring?", "When is the piano lesson again?",
             "What was the budget for the flat?"]


class Recording:
    """The chat model, remembering the last messages it was asked to stream."""

    def __init__(self, chat: LocalChatModel) -> None:
        self.chat = chat
        self.messages: list[Message] | None = None
        self.spec = chat.spec
        self.name, self.n_ctx = chat.name, chat.n_ctx
        self.count_tokens = chat.count_tokens

    def stream(self, messages: list[Message], options: GenerationOptions | None = None) -> Iterator[ChatDelta]:
        self.messages = list(messages)
        return self.chat.stream(messages, options)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


def streamed(start_stream: Callable[[], Iterable[Any]], is_token: Callable[[Any], bool]) -> tuple[float, float]:
    """Time to the first token (ms) and tokens a second after it, for the stream ``start_stream`` starts, read
    whole: the same measure for a turn through Lyra and for the model called directly."""
    start = time.perf_counter()
    first, tokens = None, 0
    for item in start_stream():
        if is_token(item):
            tokens += 1
            first = first or time.perf_counter()
    end = time.perf_counter()
    assert first is not None, "the stream gave no token"
    return (first - start) * 1000, (tokens - 1) / (end - first)


def fill(store: Store, model: str, n: int, dim: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    sessions = [store.sessions.create(f"session {i}") for i in range(max(1, n // 100))]
    for start in range(0, n, 5000):
        count = min(5000, n - start)
        items = [NewExchange(sessions[(start + i) // 100 % len(sessions)].id, "user" if i % 2 == 0 else "assistant",
                             " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))) for i in range(count)]
        vectors = nrng.normal(size=(count, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with store.write() as conn:
            store.exchanges.insert(conn, items, vectors, model)
    for session in sessions[:2000]:
        vector = nrng.normal(size=dim).astype(np.float32)
        store.derived.put_gist(session.id, " ".join(rng.choice(WORDS) for _ in range(60)), 0,
                               vector / np.linalg.norm(vector), model)
    for month in range(1, 13):
        vector = nrng.normal(size=dim).astype(np.float32)
        store.derived.put_digest("month", f"2025-{month:02d}", " ".join(rng.choice(WORDS) for _ in range(80)), 10,
                                 vector / np.linalg.norm(vector), model)
    for key, value in [("name", "Sam"), ("home", "Berlin"), ("sister", "Ana"), ("cat", "Miso")]:
        store.derived.set_fact(key, value)
    store.coord.write_world("- moving to Lisbon in May\n- knee physio on Tuesdays", "user")
    store.derived.set_narrative("Sam is preparing a move and looking after a sore knee.")


def bench_settings() -> Any:
    return load_settings(None, env={**os.environ, "LYRA_MODELS_DIR": str(REPO / "models")})


def bench_embedder() -> tuple[Any, LocalEmbedder]:
    """The settings and the configured embedding model, loaded in this process."""
    settings = bench_settings()
    spec = settings.models.embed
    return settings, LocalEmbedder(settings.model_path(spec), spec)


def proc_status_mib(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` of this process, MiB (no psutil here: /proc is enough on Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def prepare(data_dir: Path, n: int, seed: int, embedder: LocalEmbedder, settings: Any) -> None:
    """One person's memory of ``n`` exchanges, its indexes built and saved as snapshots (as a server left them)."""
    store = Store(data_dir)
    fill(store, embedder.name, n, embedder.dim, seed)
    memory = Memory(store, embedder)
    store.index("exchange", embedder.name).wait_for_upgrade()
    session = store.sessions.list(limit=1)[0]
    gather(memory, settings.companion, session.id, QUESTIONS[0], embedder.embed(QUESTIONS[:1])[0])  # every tier
    store.close()


def open_layout(dirs: list[str]) -> dict[str, Any]:
    """In a fresh process: the RSS that these people's memories add once open and searched (every index loaded)."""
    settings, embedder = bench_embedder()
    asked = QUESTIONS + DATED
    vectors = embedder.embed(asked)  # the embedding model loaded: shared by everyone, counted before the stores
    before = proc_status_mib("VmRSS")
    stores = [Store(Path(d)) for d in dirs]
    for store in stores:
        memory = Memory(store, embedder)
        session = store.sessions.list(limit=1)[0].id
        for q, v in zip(asked, vectors, strict=True):
            gather(memory, settings.companion, session, q, v)
            memory.recall(RecallQuery(q, k=10), vector=v)
    result = {"before": before, "open": proc_status_mib("VmRSS"), "peak": proc_status_mib("VmHWM"),
              "kinds": [store.index("exchange", embedder.name).kind for store in stores]}
    for store in stores:
        store.close()
    return result


def time_layouts(one: str, people: list[str], repeats: int) -> dict[str, dict[str, list[float]]]:
    """In a fresh process with both layouts open: the same questions to one person and to one of the people
    (round-robin), query by query in rotating order, so the shared VM's load falls on every layout alike; each
    with FAISS's default OpenMP threads and with one (a single query's flat scan gains little from a second
    thread on two shared cores, and its p95 pays for the threads' waiting)."""
    settings, embedder = bench_embedder()
    asked = QUESTIONS + DATED
    vectors = embedder.embed(asked)
    stores = {"one": [Store(Path(one))], "household": [Store(Path(d)) for d in people]}
    memories = {name: [Memory(store, embedder) for store in opened] for name, opened in stores.items()}
    sessions = {name: [store.sessions.list(limit=1)[0].id for store in opened] for name, opened in stores.items()}
    threads = sorted({faiss.omp_get_max_threads(), 1}, reverse=True)
    variants = [(name, n) for n in threads for name in stores]
    times: dict[str, dict[str, list[float]]] = {f"{name} {n}": {"gather": [], "recall": [], "search": []}
                                                for name, n in variants}

    def ask(name: str, n: int, turn: int, q: str, v: Any, record: bool) -> None:
        faiss.omp_set_num_threads(n)
        person = turn % len(memories[name])
        memory = memories[name][person]
        t0 = time.perf_counter()
        gather(memory, settings.companion, sessions[name][person], q, v)
        t1 = time.perf_counter()
        memory.recall(RecallQuery(q, k=10), vector=v)
        t2 = time.perf_counter()
        if record:
            times[f"{name} {n}"]["gather"].append((t1 - t0) * 1000)
            times[f"{name} {n}"]["recall"].append((t2 - t1) * 1000)

    for turn in range(len(memories["household"]) * len(asked)):  # warm-up: every person's indexes loaded
        for name, n in variants:
            ask(name, n, turn, asked[turn % len(asked)], vectors[turn % len(asked)], False)
    turn = 0
    for _ in range(repeats * 4):
        for q, v in zip(asked, vectors, strict=True):
            for name, n in variants[turn % len(variants):] + variants[:turn % len(variants)]:
                ask(name, n, turn, q, v, True)
            turn += 1
    # the vector search alone (VectorIndex.search, k=10, no filter): the one person's and the first person's
    for _ in range(repeats * 4):
        for v in vectors:
            turn += 1
            for name, n in variants[turn % len(variants):] + variants[:turn % len(variants)]:
                index = stores[name][0].index("exchange", embedder.name)
                faiss.omp_set_num_threads(n)
                t0 = time.perf_counter()
                index.search(v, 10)
                times[f"{name} {n}"]["search"].append((time.perf_counter() - t0) * 1000)
    faiss.omp_set_num_threads(threads[0])
    for opened in stores.values():
        for store in opened:
            store.close()
    return times


def in_fresh_process(call: Any, *args: Any) -> Any:
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(call, *args).result()


def household(args: argparse.Namespace) -> None:
    """One person's ``--exchanges`` vs the same split across ``--people`` stores: recall latency and RSS."""
    settings, embedder = bench_embedder()
    n, people = args.exchanges, args.people
    print(f"machine: {available_cpus()} CPUs; embed {embedder.name}; {n:,} stored exchanges: one person, "
          f"then {people} people with {n // people:,} each")
    with tempfile.TemporaryDirectory(prefix="lyra-bench-household-") as tmp:
        one = Path(tmp) / "one"
        home = Path(tmp) / "household"
        dirs = [home] + [home / "people" / secrets.token_hex(6) for _ in range(people - 1)]  # the owner keeps the root
        start = time.perf_counter()
        prepare(one, n, 3, embedder, settings)
        for k, person_dir in enumerate(dirs):
            prepare(person_dir, n // people, 4 + k, embedder, settings)
        print(f"filled and indexed in {time.perf_counter() - start:.0f} s")
        times = in_fresh_process(time_layouts, str(one), [str(d) for d in dirs], args.repeats)
        rss: dict[str, list[dict[str, Any]]] = {"one": [], "household": []}
        for _ in range(2):  # each layout alone in a fresh process, twice, alternating
            for name, layout in (("one", [one]), ("household", dirs)):
                rss[name].append(in_fresh_process(open_layout, [str(d) for d in layout]))

    first = next(iter(times))
    print(f"\n### Recall at {n:,} exchanges: one person vs {people} people, ms "
          f"({len(times[first]['recall'])} queries each, interleaved in one process)\n")
    print(f"| step | FAISS threads | one person p50 | one person p95 | {people} people p50 | {people} people p95 "
          "| p95 ratio |")
    print("|---|---|---|---|---|---|---|")
    for key, label in (("gather", "gather (recall x2, timeline, profile, world, history)"),
                       ("recall", "full recall (one tier, k=10)"),
                       ("search", "the exchange index's search alone (k=10)")):
        for threads in sorted({int(name.split()[1]) for name in times}, reverse=True):
            a, b = times[f"one {threads}"][key], times[f"household {threads}"][key]
            print(f"| {label} | {threads} | {statistics.median(a):.1f} | {pct(a, 0.95):.1f} | "
                  f"{statistics.median(b):.1f} | {pct(b, 0.95):.1f} | {pct(b, 0.95) / pct(a, 0.95):.2f} |")
    print("\n### Memory (RSS, MiB; each layout alone in a fresh process with the embedding model loaded, "
          "median of 2)\n")
    print("| layout | exchange index | process before the stores | stores open and searched | added by the stores "
          "| peak |")
    print("|---|---|---|---|---|---|")
    for name, label in (("one", "one person"), ("household", f"{people} people")):
        rows = rss[name]

        def med(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return float(statistics.median(run[key] for run in rows))

        print(f"| {label} | {', '.join(rows[0]['kinds'])} | {med('before'):.0f} | {med('open'):.0f} | "
              f"{med('open') - med('before'):.0f} | {med('peak'):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--recall-only", action="store_true", help="only context assembly and recall latency")
    parser.add_argument("--people", type=int, default=1,
                        help="split the exchanges across this many people's stores and compare with one person")
    args = parser.parse_args()
    if args.people > 1:
        household(args)
        return

    settings = bench_settings()
    chat_spec, embed_spec = settings.models.chat, settings.models.embed
    chat = LocalChatModel(settings.model_path(chat_spec), chat_spec)
    embedder = LocalEmbedder(settings.model_path(embed_spec), embed_spec)
    print(f"machine: {available_cpus()} CPUs; chat {chat.name} (n_ctx {chat.n_ctx}); embed {embedder.name}; "
          f"{args.exchanges:,} stored exchanges")

    with tempfile.TemporaryDirectory(prefix="lyra-bench-chat-") as tmp:
        store = Store(Path(tmp))
        fill(store, embedder.name, args.exchanges, embedder.dim)
        memory = Memory(store, embedder)
        store.index("exchange", embedder.name).wait_for_upgrade()
        recorder = Recording(chat)
        companion = Companion(memory, recorder, settings.companion)
        session = store.sessions.list(limit=1)[0]

        # -- context assembly ----------------------------------------------------------
        vectors = embedder.embed(QUESTIONS)
        for q, v in zip(QUESTIONS, vectors, strict=True):  # warm-up: indexes loaded, caches warm
            assemble(gather(memory, settings.companion, session.id, q, v), count=companion.count_tokens,
                     n_ctx=chat.n_ctx, reply_tokens=512)
        gather_ms, assemble_ms, total_ms = [], [], []
        for _ in range(args.repeats * 4):
            for q, v in zip(QUESTIONS, vectors, strict=True):
                t0 = time.perf_counter()
                inputs = gather(memory, settings.companion, session.id, q, v)
                t1 = time.perf_counter()
                assemble(inputs, count=companion.count_tokens, n_ctx=chat.n_ctx, reply_tokens=512)
                t2 = time.perf_counter()
                gather_ms.append((t1 - t0) * 1000)
                assemble_ms.append((t2 - t1) * 1000)
                total_ms.append((t2 - t0) * 1000)
        print(f"\n### Context assembly at {args.exchanges:,} exchanges, ms\n")
        print("| step | p50 | p95 |\n|---|---|---|")
        for name, values in (("gather (recall x2, timeline, profile, world, history)", gather_ms),
                             ("assemble (budgets, chat-model tokenizer)", assemble_ms),
                             ("total", total_ms)):
            print(f"| {name} | {statistics.median(values):.1f} | {pct(values, 0.95):.1f} |")

        # -- the full recall pipeline alone (hybrid, rare words, diversity; dates when asked) --
        asked = QUESTIONS + DATED
        asked_vectors = embedder.embed(asked)
        recall_ms: dict[str, list[float]] = {"plain questions": [], "questions naming a date": []}
        for _ in range(args.repeats * 4):
            for q, v in zip(asked, asked_vectors, strict=True):
                t0 = time.perf_counter()
                memory.recall(RecallQuery(q, k=10), vector=v)
                recall_ms["questions naming a date" if q in DATED else "plain questions"].append(
                    (time.perf_counter() - t0) * 1000)
        print(f"\n### Full recall (one tier, k=10) at {args.exchanges:,} exchanges, ms\n")
        print("| questions | p50 | p95 |\n|---|---|---|")
        for name, values in recall_ms.items():
            print(f"| {name} | {statistics.median(values):.1f} | {pct(values, 0.95):.1f} |")
        if args.recall_only:
            store.close()
            return

        # -- first token and streaming rate ----------------------------------------------
        # Both paths start from an empty KV cache (llm.reset()), so neither profits from the
        # other's prompt prefix, and the raw call gets exactly the messages Lyra built.
        options = GenerationOptions(max_tokens=96, temperature=0.0, seed=1)
        llm = chat._model.llm()
        lyra_ttft, raw_ttft, lyra_rate, raw_rate = [], [], [], []
        for i in range(args.repeats):
            question = QUESTIONS[i % len(QUESTIONS)]
            recorder.messages = None
            llm.reset()
            ttft, rate = streamed(lambda asked=question: companion.turn(session.id, asked, options),
                                  lambda event: event.type == "delta")
            lyra_ttft.append(ttft)
            lyra_rate.append(rate)
            companion.wait_for_embeddings()

            llm.reset()
            ttft, rate = streamed(lambda: llm.create_chat_completion(
                messages=recorder.messages, stream=True, **request_params(chat.spec.sampling, options)),
                lambda chunk: bool(chunk["choices"][0]["delta"].get("content")))
            raw_ttft.append(ttft)
            raw_rate.append(rate)
        companion.close()
        store.close()

    print("\n### Chat through Lyra vs the model called directly with the same prompt\n")
    print("| measure | raw llama-cpp-python | through Lyra | ratio |\n|---|---|---|---|")
    print(f"| time to first token, ms (median) | {statistics.median(raw_ttft):.0f} | "
          f"{statistics.median(lyra_ttft):.0f} | {statistics.median(lyra_ttft) / statistics.median(raw_ttft):.2f} |")
    print(f"| streaming tokens/s (median) | {statistics.median(raw_rate):.1f} | {statistics.median(lyra_rate):.1f} | "
          f"{statistics.median(lyra_rate) / statistics.median(raw_rate):.3f} |")


if __name__ == "__main__":
    main()
