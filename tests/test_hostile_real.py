"""The issue's hostile cases against the real components: a real `lyra serve` with the real tiny models,
a real `lyra mcp` process, and a real llama.cpp embedding server.

The property-based tests (tests/test_hostile_input.py, tests/test_hostile_imports.py)
run the same inputs on the fakes by the hundred; these prove that the real
model, tokenizer and embedder take them too, over real HTTP and stdio.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from lyra_local.config import ServerModel
from lyra_local.llm.local import LocalEmbedder
from lyra_local.llm.server import ServerBackend
from lyra_local.store import Store
from lyra_local.textsafe import well_formed
from lyra_local.transfer.chatgpt import read_chatgpt
from lyra_local.transfer.importer import import_conversations

from .chatgpt_export import T0, conversation, message, write_export
from .conftest import MODELS_DIR, LlamaServer, base_env, serve_lyra
from .sse import sse_events

pytestmark = [pytest.mark.slow, pytest.mark.models]
CONFIG = "[dream]\nenabled = false\n[models.chat.sampling]\nmax_tokens = 12\nseed = 42\n"
CASES = ["Rome, 2000 years ago", "march 0000", "December 9999", "What did we say in march 0000?",
         "a\x00b \x1b[31m \u202e", "half an emoji \ud83d", "Rome, 2000 years ago " * 9_000]


def post_json(client: httpx.Client, url: str, payload: Any) -> httpx.Response:
    return client.post(url, content=json.dumps(payload).encode(), headers={"content-type": "application/json"})


def test_the_issues_cases_stream_to_done_and_store_both_messages_on_a_real_server(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    with serve_lyra(tmp_path, env, CONFIG) as served, httpx.Client(base_url=served.url, timeout=300) as client:
        session = client.post("/api/sessions", json={"name": "Rome"}).json()["id"]
        for text in CASES:
            recalled = client.get("/api/recall", params={"q": well_formed(text)[:4000]})
            assert recalled.status_code == 200, recalled.text  # "Rome, 2000 years ago" was a 500
            resp = post_json(client, f"/api/sessions/{session}/chat", {"message": text})
            assert resp.status_code == 200
            got = sse_events(resp.text.splitlines())
            kinds = [k for k, _ in got]
            assert kinds[0] == "stored" and kinds[-1] == "done" and "error" not in kinds, (text[:40], got[-2:])
            reply = "".join(d["text"] for k, d in got if k == "delta")
            assert reply.strip()
            history = client.get(f"/api/sessions/{session}/messages", params={"limit": 2}).json()["messages"]
            assert [(m["role"], m["content"]) for m in history] == [("user", well_formed(text)),
                                                                   ("assistant", reply)]
            completion = post_json(client, "/v1/chat/completions",
                                   {"messages": [{"role": "user", "content": text}], "user": "rome"})
            assert completion.status_code == 200 and completion.json()["choices"][0]["message"]["content"]
        assert client.get("/health").status_code == 200
    assert "Traceback" not in served.log.read_text()


def rpc(proc: subprocess.Popen[str], message: dict[str, Any] | str) -> None:
    assert proc.stdin is not None
    proc.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
    proc.stdin.flush()


def reader(proc: subprocess.Popen[str]) -> tuple[queue.Queue[str], threading.Thread]:
    """The server's stdout lines, read in a thread so a missing answer fails the test instead of hanging it."""
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    thread = threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True)
    thread.start()
    return lines, thread


def answers(lines: queue.Queue[str], ids: set[int], timeout: float = 120) -> dict[int, dict[str, Any]]:
    """The responses to ``ids``, as they come."""
    got: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while not ids <= set(got):
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no answer to {sorted(ids - set(got))} in {timeout} s") from None
        msg = json.loads(line)
        if msg.get("id") in ids:
            got[msg["id"]] = msg
    return got


def test_a_real_mcp_server_answers_every_hostile_call_and_keeps_serving(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    proc = subprocess.Popen([sys.executable, "-m", "lyra_local", "mcp", "--agent", "tester"], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines, reading = reader(proc)
    try:
        rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        answers(lines, {1})
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        calls = {
            2: ("remember", {"content": "Rome, 2000 years ago \ud800 the forum"}),  # a lone surrogate, as JSON allows
            3: ("recall", {"query": "Rome, 2000 years ago"}),
            4: ("recall", {"query": "march 0000 " * 20_000, "k": 10**30}),
            5: ("recall", {"query": 42}),  # the wrong type
            6: ("no_such_tool", {}),
            7: ("lock_release", {"resource": "nothing held"}),
        }
        rpc(proc, "{this is not json")
        for i, (name, args) in calls.items():
            rpc(proc, {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}})
        got = answers(lines, set(calls))
        assert not got[2]["result"]["isError"] and not got[3]["result"]["isError"], (got[2], got[3])
        assert "Rome" in json.dumps(got[3]["result"]) and "\\ufffd" in json.dumps(got[3]["result"])
        assert not got[4]["result"]["isError"]
        for refused in (5, 6):  # a wrong type, an unknown tool: an error answer, not silence
            assert got[refused].get("error") or got[refused]["result"]["isError"], got[refused]
        rpc(proc, {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "sitrep", "arguments": {}}})
        assert not answers(lines, {8})[8]["result"]["isError"]  # still serving
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(timeout=10)
        reading.join(timeout=10)  # it ends at the end of the output
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def test_embedding_nothing_gives_an_empty_array_locally_and_from_a_server(
        embedder: LocalEmbedder, embed_server: LlamaServer) -> None:
    assert embedder.embed([]).shape == (0, 384)
    embed_server.ensure_running()
    backend = ServerBackend(ServerModel(backend="server", base_url=embed_server.url, model=embed_server.alias), "embed")
    try:
        empty = backend.embed([])
        assert empty.shape == (0, 384) and empty.dtype == np.float32
        assert backend.embed(["the forum"]).shape == (1, 384)  # and the backend still works
    finally:
        backend.close()


def test_an_import_whose_last_batch_is_images_only_through_a_server_embedder(
        tmp_path: Path, store: Store, embed_server: LlamaServer) -> None:
    text = conversation("t", "words", [("user", "The forum was busy"), ("assistant", "It was")])
    image = conversation("img", "a picture", [])
    image["mapping"]["img-m0"] = {"id": "img-m0", "parent": "sys", "children": [], "message": message(
        "img-m0", "user", [{"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"}],
        at=T0, content_type="multimodal_text")}
    image["current_node"] = "img-m0"
    nothing = conversation("none", "only a system message", [])  # last: a batch with no text to embed
    embed_server.ensure_running()
    backend = ServerBackend(ServerModel(backend="server", base_url=embed_server.url, model=embed_server.alias), "embed")
    try:
        export = write_export(tmp_path / "e.zip", [text, image, nothing])
        report = import_conversations(store, backend, read_chatgpt(export), batch_messages=1)
        # the image-only message is kept as its placeholder; the last conversation brings nothing to embed
        assert report.sessions_new == 3 and report.messages == 3 and not report.problems
    finally:
        backend.close()
