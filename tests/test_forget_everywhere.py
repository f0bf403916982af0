"""Forgetting reaches every place a memory can be: every derived memory, the log, the trace, every file.

A distinct marker is planted in a turn; a real dream pass builds a gist, facts,
digests, a narrative, a self-state and a world proposal from it (the summary
model here is scripted to carry the marker into each, so every path holds it
for sure; ``test_forget_real.py`` does the same with the real tiny models and
processes); a reply's context uses it. After forgetting, the marker is in no
byte of any file of the data directory, no API response, no export or backup.
"""

from __future__ import annotations

import io
import json
import re
import secrets
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.local import LocalEmbedder
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .fakes import FakeChatModel
from .sse import sse_events

MARK = re.compile(r"zq[0-9a-f]{12}")


def carry_marker(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A summary model that writes every marker it read into whatever it is asked to write (all of them: which
    comes first in a prompt depends on the order of gists updated in the same second)."""
    if messages[0]["role"] == "system":  # a chat turn, not a dream task
        return "I remember what you told me."
    found = list(dict.fromkeys(MARK.findall("\n".join(m["content"] for m in messages))))
    word = " and ".join(found) if found else "nothing new"
    if options is not None and options.json_schema is not None:
        if "facts" in options.json_schema.get("properties", {}):  # one session's turns: "my sport is ..."
            value = found[0] if found else word  # quoted as the person said it, for the profile's gate
            return json.dumps({"facts": [{"key": "sport", "value": value, "quote": f"My sport is {value}"}]})
        said = f"Sam and Lyra talked about the locker code {word} at length."  # grounded in the gist it read
        return json.dumps({"mood": "curious", "energy": 0.6, "self_narrative": said, "reflections": [said]})
    return f"Sam and Lyra talked about the locker code {word} at length."


def marker_places(data_dir: Path, marker: str) -> list[str]:
    """Every file under ``data_dir`` whose bytes hold ``marker`` (case-insensitive)."""
    needle = marker.lower().encode()
    return [str(p.relative_to(data_dir)) for p in sorted(data_dir.rglob("*"))
            if p.is_file() and needle in p.read_bytes().lower()]


def responses(get: Callable[[str], httpx.Response]) -> dict[str, bytes]:
    """The body of every read-only API route, for every session and reply."""
    paths = ["/api/sessions", "/api/profile", "/api/digests", "/api/narrative", "/api/self", "/api/world",
             "/api/world/history", "/api/world/proposals", "/api/sitrep", "/api/sitrep?format=text", "/api/dream",
             "/api/dream/events?after=0&follow=false&limit=1000", "/api/instances", "/api/locks", "/api/settings",
             "/api/profile/history?key=locker%20code"]
    sessions = get("/api/sessions").json()["sessions"]
    for s in sessions:
        paths += [f"/api/sessions/{s['id']}/messages", f"/api/sessions/{s['id']}/gist"]
        for m in get(f"/api/sessions/{s['id']}/messages").json()["messages"]:
            if m["role"] == "assistant":
                paths.append(f"/api/exchanges/{m['id']}/trace")
    out = {}
    for path in paths:
        response = get(path)
        assert response.status_code in (200, 404), (path, response.text)
        out[path] = response.content
    return out


def recall_bodies(get: Callable[[str], httpx.Response], marker: str) -> dict[str, bytes]:
    """The hits of every recall for ``marker`` (the response echoes the query itself; that is not memory)."""
    return {f"recall:{tier}:{mode}": json.dumps(get(f"/api/recall?q={marker}&tier={tier}&mode={mode}&k=50")
                                                .json()["hits"]).encode()
            for tier in ("exchange", "gist", "digest") for mode in ("hybrid", "bm25", "dense")}


def zip_holds(data: bytes, marker: str) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return [n for n in z.namelist() if marker.lower().encode() in z.read(n).lower()]


def dream(client: TestClient, timeout: float = 120) -> dict[str, Any]:
    """A forced pass through the API, waited for."""
    before = (client.get("/api/dream").json().get("last_pass") or {}).get("id", 0)
    assert client.post("/api/dream?force=true").status_code == 202
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get("/api/dream").json()
        last = status.get("last_pass") or {}
        if last.get("id", 0) > before and not status["running"]:
            return dict(last)
        time.sleep(0.2)
    raise AssertionError("the dream pass did not finish")


@pytest.fixture()
def client(make_settings: Callable[..., Settings], embedder: LocalEmbedder) -> Iterator[TestClient]:
    settings = make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\nmin_turns = 1\n'
                             '[coordination]\nworld_updates = "propose"\n')
    model = FakeChatModel(respond=carry_marker)
    models = Models(settings, chat=model, summary=model, embed=embedder)  # type: ignore[arg-type]
    with TestClient(create_app(settings, models=models), base_url="http://127.0.0.1") as test_client:
        test_client.app_state_settings = settings  # type: ignore[attr-defined]
        yield test_client


def chat(client: TestClient, session_id: int, text: str) -> list[tuple[str, dict[str, Any]]]:
    with client.stream("POST", f"/api/sessions/{session_id}/chat", json={"message": text}) as response:
        assert response.status_code == 200
        events = sse_events(response.iter_lines())
    assert events[-1][0] == "done", events
    return events


def test_forgetting_from_the_api_leaves_the_marker_nowhere(client: TestClient) -> None:
    settings: Settings = client.app_state_settings  # type: ignore[attr-defined]
    data_dir = settings.data_dir
    marker = "zq" + secrets.token_hex(6)
    kept = "zq" + secrets.token_hex(6)
    secret = client.post("/api/sessions", json={"name": "locker"}).json()["id"]
    other = client.post("/api/sessions", json={"name": "errands"}).json()["id"]
    chat(client, secret, f"My sport is {marker}, it is my gym locker code too, please keep it for me.")
    chat(client, secret, "Also, I moved the bike to the basement.")
    chat(client, other, f"Remember the word {kept} for the crossword.")
    events = chat(client, other, f"What was my locker code? I think it was {marker[:6]}")
    reply_id = events[-1][1]["exchange_id"]

    assert dream(client)["status"] == "done"
    store_text = {path: body for path, body in responses(client.get).items() if marker.encode() in body}
    # a real pass carried the marker into every kind of memory
    for path in ("/api/profile", "/api/digests", "/api/narrative", "/api/self", "/api/world/proposals",
                 f"/api/sessions/{secret}/gist"):
        assert path in store_text, path
    trace = client.get(f"/api/exchanges/{reply_id}/trace").json()
    assert any(marker in (m["content"] or "") for m in trace["memories"]), trace

    done = client.post("/api/forget", json={"matching": marker}).json()
    assert done["forgotten"]["exchanges"] >= 1 and done["forgotten"]["derived"]["gist"] >= 1

    found = {path for path, body in {**responses(client.get), **recall_bodies(client.get, marker)}.items()
             if marker.lower().encode() in body.lower()}
    assert not found, found
    assert zip_holds(client.get("/api/export").content, marker) == []
    assert marker.encode() not in client.get("/api/backup").content.lower()
    assert marker_places(data_dir, marker) == []
    trace = client.get(f"/api/exchanges/{reply_id}/trace").json()
    assert any(m["forgotten"] and m["content"] is None for m in trace["memories"]), trace
    # what was not forgotten is still there, so the searches above could have found a marker
    assert any(kept in h["content"] for h in client.get(f"/api/recall?q={kept}").json()["hits"])
    assert marker_places(data_dir, kept) != []

    # the next pass rebuilds from what remains, without the marker
    assert dream(client)["status"] == "done"
    assert client.get(f"/api/sessions/{secret}/gist").json()["gist"] is not None
    assert not {p for p, b in responses(client.get).items() if marker.encode() in b.lower()}
