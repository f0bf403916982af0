#!/usr/bin/env python3
"""Benchmark the model backends against their raw baselines, measured in the same run.

- chat tokens/s streamed through our backend vs the raw library/HTTP call (overhead ratio);
- embeddings/s at several batch sizes vs a naive one-text-per-call loop;
- the embedding micro-batch size (n_ubatch) and why 256 is the default;

for the in-process backend and for a llama.cpp server on loopback. Prints
markdown tables and writes nothing. Usage: ``python scripts/bench_models.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import llama_cpp

from lyra_local.config import LocalModel, ServerModel, load_settings
from lyra_local.llm.base import GenerationOptions, request_params
from lyra_local.llm.local import LocalChatModel, LocalEmbedder, available_cpus
from lyra_local.llm.registry import offload_plan
from lyra_local.llm.server import ServerBackend

REPO = Path(__file__).resolve().parents[1]
PROMPT = [{"role": "user", "content": "Write a long, detailed story about a lighthouse keeper and her cat."}]
WORDS = ("memory garden sister Lisbon coffee rain project deadline birthday guitar train mountain "
         "letter doctor recipe river festival promise morning library bicycle harbour winter").split()


def sentences(n: int, seed: int = 7, words: tuple[int, int] = (6, 40)) -> list[str]:
    """Chat-like texts of ``words`` words, deterministic."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(*words))).capitalize() + "." for _ in range(n)]


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    count = fn()
    return time.perf_counter() - start, count


# -- chat ---------------------------------------------------------------------

def bench_local_chat(model: LocalChatModel, max_tokens: int, repeats: int) -> list[list[str]]:
    llm = model._model.llm()
    opts = GenerationOptions(max_tokens=max_tokens, temperature=0.0, seed=1)
    kwargs = request_params(model.spec.sampling, opts)

    def raw() -> int:
        return sum(1 for chunk in llm.create_chat_completion(messages=PROMPT, stream=True, **kwargs)
                   if chunk["choices"][0]["delta"].get("content"))

    def ours() -> int:
        return sum(1 for delta in model.stream(PROMPT, opts) if delta.text)

    rates = interleaved_rates({"raw": raw, "ours": ours}, repeats)
    return [["local (in-process)", f"{rates['raw']:.1f}", f"{rates['ours']:.1f}", f"{rates['ours'] / rates['raw']:.3f}"]]


def bench_server_chat(backend: ServerBackend, url: str, alias: str, max_tokens: int,
                      repeats: int) -> list[list[str]]:
    opts = GenerationOptions(max_tokens=max_tokens, temperature=0.0, seed=1)
    body = backend._chat_body(PROMPT, opts, stream=True)

    def raw() -> int:
        count = 0
        with httpx.stream("POST", f"{url}/v1/chat/completions", json={**body, "model": alias}, timeout=120) as r:
            for line in r.iter_lines():
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    choices = json.loads(line[5:])["choices"]
                    count += bool(choices and (choices[0].get("delta") or {}).get("content"))
        return count

    def ours() -> int:
        return sum(1 for delta in backend.stream(PROMPT, opts) if delta.text)

    rates = interleaved_rates({"raw": raw, "ours": ours}, repeats)
    return [["server (llama.cpp on loopback)", f"{rates['raw']:.1f}", f"{rates['ours']:.1f}",
             f"{rates['ours'] / rates['raw']:.3f}"]]


# -- embeddings ---------------------------------------------------------------

def bench_local_embed(embedder: LocalEmbedder, path: Path, texts: list[str], repeats: int) -> list[list[str]]:
    """Lyra's batched path vs the naive loop: llama-cpp-python with its defaults, one text per call."""
    from llama_cpp import Llama

    naive_llm = Llama(str(path), embedding=True, verbose=False)

    def naive() -> int:
        for text in texts:
            naive_llm.embed(text, normalize=True)
        return len(texts)

    cases: dict[str, Callable[[], int]] = {"one text per call, llama-cpp-python defaults (naive)": naive}
    for size in (1, 8, 32, len(texts)):
        def batched(size: int = size) -> int:
            for start in range(0, len(texts), size):
                embedder.embed(texts[start:start + size])
            return len(texts)

        cases[f"Lyra, {size} text{'s' if size > 1 else ''} per call"] = batched
    rates = interleaved_rates(cases, repeats)
    naive_llm.close()
    base = rates["one text per call, llama-cpp-python defaults (naive)"]
    return [[name, f"{rate:.0f}", f"{rate / base:.2f}"] for name, rate in rates.items()]


def interleaved_rates(cases: dict[str, Callable[[], int]], repeats: int) -> dict[str, float]:
    """Median items/s of each case, the cases run in turn each round so drift hits all alike."""
    for fn in cases.values():
        fn()  # warm-up
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            seconds, count = timed(fn)
            samples[name].append(count / seconds)
    return {name: statistics.median(values) for name, values in samples.items()}


def bench_ubatch(path: Path, spec: LocalModel, texts: list[str], repeats: int) -> list[list[str]]:
    """All texts in one call: the micro-batch bounds how far attention spans."""
    models = {ubatch: LocalEmbedder(path, spec.model_copy(update={"n_batch": ubatch, "n_ubatch": ubatch}))
              for ubatch in (64, 128, 256, 512)}
    rates = interleaved_rates({str(u): (lambda m=m: len(m.embed(texts))) for u, m in models.items()}, repeats)
    for model in models.values():
        model.close()
    return [[name, f"{rate:.0f}"] for name, rate in rates.items()]


def bench_server_embed(backend: ServerBackend, url: str, alias: str, texts: list[str],
                       repeats: int) -> list[list[str]]:
    def naive() -> int:
        with httpx.Client(timeout=60) as client:
            for text in texts:
                client.post(f"{url}/v1/embeddings", json={"model": alias, "input": text}).raise_for_status()
        return len(texts)

    rates = interleaved_rates({"naive": naive, "ours": lambda: len(backend.embed(texts))}, repeats)
    return [["one text per request (naive)", f"{rates['naive']:.0f}", "1.00"],
            ["Lyra, 64 texts per request", f"{rates['ours']:.0f}", f"{rates['ours'] / rates['naive']:.2f}"]]


# -- servers --------------------------------------------------------------------

@contextmanager
def llama_server(model: Path, alias: str, **settings: object) -> Iterator[str]:
    """A llama.cpp server (llama-cpp-python's) on a free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "server.json"
        config.write_text(json.dumps({"host": "127.0.0.1", "port": port, "models": [
            {"model": str(model), "model_alias": alias, "verbose": False, **settings}]}))
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--config_file", str(config)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"{url}/v1/models", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            yield url
        finally:
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and texts (a smoke run)")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    texts = sentences(64 if args.quick else 512)
    short_texts = sentences(64 if args.quick else 512, seed=3, words=(3, 15))
    max_tokens = 32 if args.quick else 128

    settings = load_settings(None, env={**os.environ, "LYRA_MODELS_DIR": str(REPO / "models")})
    chat_spec, embed_spec = settings.models.chat, settings.models.embed
    assert isinstance(chat_spec, LocalModel) and isinstance(embed_spec, LocalModel), "bench the local defaults"
    chat_path, embed_path = settings.model_path(chat_spec), settings.model_path(embed_spec)
    layers = {role: offload.n_gpu_layers for role, offload in offload_plan(settings).items()}  # "auto" resolved

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    print(f"machine: {cpu}, {available_cpus()} CPUs; llama-cpp-python {llama_cpp.__version__}; "
          f"GPU offload: {llama_cpp.llama_supports_gpu_offload()}")
    print(f"models: {chat_path.name}, {embed_path.name}; {len(texts)} texts, {max_tokens} tokens per reply, "
          f"median of {repeats}")

    chat = LocalChatModel(chat_path, chat_spec)
    chat_rows = bench_local_chat(chat, max_tokens, repeats)
    chat.close()
    with llama_server(chat_path, "chat", n_ctx=chat_spec.n_ctx, n_gpu_layers=layers["chat"]) as url:
        backend = ServerBackend(ServerModel(backend="server", base_url=url, model="chat"), "chat")
        chat_rows += bench_server_chat(backend, url, "chat", max_tokens, repeats)
        backend.close()
    table("Chat streaming, tokens/s", ["backend", "raw", "through Lyra", "ratio"], chat_rows)

    embedder = LocalEmbedder(embed_path, embed_spec)
    for label, sample in (("chat messages of 3-15 words", short_texts), ("turns of 6-40 words", texts)):
        table(f"Local embeddings/s, {len(sample)} {label} (n_ubatch {embed_spec.n_ubatch}, flash attention)",
              ["calls", "texts/s", "x naive"], bench_local_embed(embedder, embed_path, sample, repeats))
    embedder.close()
    table(f"Local embeddings/s by micro-batch, all {len(texts)} texts in one call", ["n_ubatch", "texts/s"],
          bench_ubatch(embed_path, embed_spec, texts, repeats))

    with llama_server(embed_path, "embed", embedding=True, n_ctx=512, n_batch=256, n_ubatch=256,
                      n_gpu_layers=layers["embed"]) as url:
        backend = ServerBackend(ServerModel(backend="server", base_url=url, model="embed"), "embed")
        table("Server embeddings/s", ["calls", "texts/s", "x naive"],
              bench_server_embed(backend, url, "embed", texts, repeats))
        backend.close()


if __name__ == "__main__":
    main()
