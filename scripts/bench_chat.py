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
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from lyra_local.companion import Companion
from lyra_local.config import load_settings
from lyra_local.llm.base import ChatDelta, GenerationOptions, Message, request_params
from lyra_local.llm.local import LocalChatModel, LocalEmbedder, available_cpus
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.gather import gather
from lyra_local.memory.context import assemble
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


def fill(store: Store, model: str, n: int, dim: int) -> None:
    rng = random.Random(3)
    nrng = np.random.default_rng(3)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--recall-only", action="store_true", help="only context assembly and recall latency")
    args = parser.parse_args()

    settings = load_settings(None, env={**os.environ, "LYRA_MODELS_DIR": str(REPO / "models")})
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
        for q, v in zip(QUESTIONS, vectors):  # warm-up: indexes loaded, caches warm
            assemble(gather(memory, settings.companion, session.id, q, v), count=companion.count_tokens,
                     n_ctx=chat.n_ctx, reply_tokens=512)
        gather_ms, assemble_ms, total_ms = [], [], []
        for _ in range(args.repeats * 4):
            for q, v in zip(QUESTIONS, vectors):
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
            for q, v in zip(asked, asked_vectors):
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
            start = time.perf_counter()
            first, tokens = None, 0
            for event in companion.turn(session.id, question, options):
                if event.type == "delta":
                    tokens += 1
                    first = first or time.perf_counter()
            end = time.perf_counter()
            lyra_ttft.append((first - start) * 1000)
            lyra_rate.append((tokens - 1) / (end - first))
            companion.wait_for_embeddings()

            llm.reset()
            start = time.perf_counter()
            first, tokens = None, 0
            for chunk in llm.create_chat_completion(messages=recorder.messages, stream=True,
                                                    **request_params(chat.spec.sampling, options)):
                if chunk["choices"][0]["delta"].get("content"):
                    tokens += 1
                    first = first or time.perf_counter()
            end = time.perf_counter()
            raw_ttft.append((first - start) * 1000)
            raw_rate.append((tokens - 1) / (end - first))
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
