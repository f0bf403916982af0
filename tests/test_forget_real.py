"""Forgetting with the real tiny models and real processes.

Once through the API of a running `lyra serve` after a real dream pass, and
once with `lyra forget` while a `lyra dream` process is in the middle of
drafting the very session being forgotten. Afterwards the marker is in no byte
of any file of the data directory, no API response, no export and no backup.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from .conftest import MODELS_DIR, base_env, serve_lyra
from .sse import sse_events
from .test_forget_everywhere import marker_places, recall_bodies, responses, zip_holds

LYRA = [sys.executable, "-m", "lyra_local"]

pytestmark = pytest.mark.models  # a real dream in both: `lyra serve` and `lyra dream`

TOPICS = ["the garden", "my sister's wedding", "the new job", "a long bike ride", "the dentist", "cooking dal",
          "the train strike", "a film about whales", "my running shoes", "the landlord"]


def history(path: Path, marker: str, turns: int) -> None:
    """A Lyra JSONL file: a long session with the marker in one of its turns, and a short one without."""
    messages = []
    for i in range(turns):
        topic = TOPICS[i % len(TOPICS)]
        text = (f"My storage unit number is {marker}, write it down." if i == 4 else
                f"Let me tell you about {topic}; it has been on my mind all week, turn {i}." if i % 2 == 0 else
                f"That sounds important. What else happened with {topic}?")
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text,
                         "created_at": f"2024-03-04T09:{i // 60:02d}:{i % 60:02d}+00:00"})
    other = [{"role": "user", "content": "The weather was grey all day.", "created_at": "2024-03-05T10:00:00+00:00"},
             {"role": "assistant", "content": "Grey days can be restful.", "created_at": "2024-03-05T10:00:01+00:00"}]
    path.write_text(json.dumps({"id": "s1", "name": "storage", "messages": messages}) + "\n"
                    + json.dumps({"id": "s2", "name": "weather", "messages": other}) + "\n")


def lyra(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*LYRA, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def exported(tmp_path: Path, env: dict[str, str], marker: str) -> list[str]:
    """Where a fresh `lyra export` and `lyra backup` hold the marker."""
    out = tmp_path / f"export-{secrets.token_hex(3)}"
    lyra("export", str(out), env=env)
    backup = tmp_path / f"backup-{secrets.token_hex(3)}.db"
    lyra("backup", str(backup), env=env)
    needle = marker.lower().encode()
    return [str(p) for p in [*out.rglob("*"), backup] if p.is_file() and needle in p.read_bytes().lower()]


@pytest.mark.slow
def test_forget_through_the_api_of_a_running_server_after_a_real_dream(tmp_path: Path) -> None:
    marker = "zq" + secrets.token_hex(6)
    data = tmp_path / "data"
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR),
           "LYRA_DREAM__ENABLED": "false"}
    history(tmp_path / "history.jsonl", marker, 12)
    lyra("import", str(tmp_path / "history.jsonl"), env=env)
    toml = ('[models.chat.sampling]\nmax_tokens = 24\n[dream]\nsession_idle_s = 0\nmin_turns = 1\n'
            '[coordination]\nworld_updates = "propose"\n')
    with serve_lyra(tmp_path, env, toml) as served:
        with httpx.Client(base_url=served.url, timeout=300) as client:
            session = client.post("/api/sessions", json={"name": "today"}).json()["id"]
            with client.stream("POST", f"/api/sessions/{session}/chat",
                               json={"message": "What was my storage unit number?"}) as response:
                events = sse_events(response.iter_lines())
            assert events[-1][0] == "done", events
            reply = events[-1][1]["exchange_id"]
            trace = client.get(f"/api/exchanges/{reply}/trace").json()
            assert any(marker in (m["content"] or "") for m in trace["memories"]), trace  # the reply used it

            before = (client.get("/api/dream").json().get("last_pass") or {}).get("id", 0)
            assert client.post("/api/dream?force=true").status_code == 202
            deadline = time.monotonic() + 600
            while (client.get("/api/dream").json().get("last_pass") or {}).get("id", 0) <= before:
                assert time.monotonic() < deadline, "the dream pass did not finish"
                time.sleep(1)
            assert client.get("/api/sessions/1/gist").json()["gist"] is not None

            done = client.post("/api/forget", json={"matching": marker}).json()
            assert done["forgotten"]["exchanges"] >= 1

            found = {p for p, b in {**responses(client.get), **recall_bodies(client.get, marker)}.items()
                     if marker.lower().encode() in b.lower()}
            assert not found, found
            assert zip_holds(client.get("/api/export").content, marker) == []
            assert marker.encode() not in client.get("/api/backup").content.lower()
            trace = client.get(f"/api/exchanges/{reply}/trace").json()
            assert any(m["forgotten"] for m in trace["memories"]), trace
            assert marker_places(data, marker) == []
    assert marker_places(data, marker) == []
    assert exported(tmp_path, env, marker) == []


def lease_held(db: Path, resource: str) -> bool:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute("SELECT 1 FROM locks WHERE resource = ?", (resource,)).fetchone() is not None
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


@pytest.mark.slow
def test_forget_from_the_cli_while_another_process_drafts_that_session(tmp_path: Path) -> None:
    marker = "zq" + secrets.token_hex(6)
    data = tmp_path / "data"
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR),
           "LYRA_DREAM__ENABLED": "false", "LYRA_DREAM__SESSION_IDLE_S": "0", "LYRA_DREAM__MIN_TURNS": "1"}
    history(tmp_path / "history.jsonl", marker, 160)  # longer than the summary model's context: several calls
    lyra("import", str(tmp_path / "history.jsonl"), env=env)
    assert marker_places(data, marker) != []

    dreaming = subprocess.Popen([*LYRA, "dream", "--force", "--quiet"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not lease_held(data / "lyra.db", "gist:1"):
        assert dreaming.poll() is None and time.monotonic() < deadline, "the dream never started on session 1"
        time.sleep(0.05)
    forgot = lyra("forget", "--matching", marker, "--yes", env=env)
    assert "forgot 0 session(s) and 2 turn(s)" in forgot.stdout, forgot.stdout  # the message and its reply
    assert dreaming.poll() is None, "the dream finished before the forget: the race was not exercised"
    output, _ = dreaming.communicate(timeout=900)
    assert dreaming.returncode == 0, output

    conn = sqlite3.connect(data / "lyra.db")
    remaining = {r[0] for r in conn.execute("SELECT id FROM exchanges WHERE session_id = 1")}
    # a gist written from before the forget would cover a turn that is gone: there is none
    for gist_id, covers in conn.execute("SELECT id, covers_upto FROM gists WHERE session_id = 1"):
        built_from = {r[0] for r in conn.execute(
            "SELECT source_id FROM provenance WHERE kind = 'gist' AND item_id = ? AND source_kind = 'exchange'",
            (gist_id,))}
        assert built_from <= remaining, built_from - remaining
    events = [r[0] for r in conn.execute("SELECT kind FROM consolidation_log WHERE target = 'gist:1'")]
    # the draft read the turn before it was forgotten: its write was refused (and redone by a later pass)
    conn.close()
    assert marker_places(data, marker) == []
    assert exported(tmp_path, env, marker) == []
    assert "stale" in events, events
