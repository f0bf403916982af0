"""Upgrading a person's data directory to the household keeps all of it, and asks no login until a second person.

The fixture (tests/data/upgrade/single-person-v37.tar.gz) was written by the release before the household, with
its own code, through its own app (scripts/make_upgrade_fixture.py); its manifest holds what that release's API
answered for every conversation and memory. Here a copy is opened with today's app: every conversation, message,
version, gist, fact, digest, narrative, self-state and core-memory version must still read the same through the
API, recall and search must still find the old turns, and nothing of the directory may move (the memory stays the
owner's, at ``data_dir/lyra.db``). Alone on loopback the person is the owner and no login is asked; to add a
second person the owner first sets a password (the browser that sets it stays logged in), and then a browser
without a login cookie is refused, the owner's login shows every old conversation, and the second person sees
none of them.
"""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings

from .conftest import fake_client

FIXTURE = Path(__file__).parent / "data" / "upgrade"
MANIFEST: dict[str, Any] = json.loads((FIXTURE / "single-person-v37.json").read_text(encoding="utf-8"))
CONFIG = f'[companion]\nuser_name = "{MANIFEST["user_name"]}"\n'
OWNER_SECRET = "old-memory-kept-safe"
SECOND = {"name": "Alex", "kind": "adult", "secret": "a-partner-of-sams"}


@pytest.fixture
def upgraded(tmp_path: Path, make_settings: Callable[..., Settings]) -> Settings:
    """Settings whose data directory is a fresh copy of the previous release's directory."""
    settings = make_settings(CONFIG)
    with tarfile.open(FIXTURE / "single-person-v37.tar.gz") as tar:
        tar.extractall(settings.data_dir, filter="data")
    return settings


@pytest.fixture
def client(upgraded: Settings) -> Iterator[TestClient]:
    with fake_client(upgraded) as opened:
        yield opened


def ok(client: TestClient, method: str, path: str, **kw: Any) -> Any:
    response = client.request(method, path, **kw)
    assert response.status_code < 300, (method, path, response.status_code, response.text[:500])
    return response.json() if response.headers.get("content-type", "").startswith("application/json") else response


def export_text(client: TestClient) -> str:
    """Every file of the person's export (a zip), as one text."""
    with zipfile.ZipFile(io.BytesIO(ok(client, "GET", "/api/export").content)) as archive:
        return " ".join(archive.read(n).decode("utf-8") for n in archive.namelist())


def other_browser(client: TestClient) -> TestClient:
    """Another browser on the same running app: no cookie of the first (the app's lifespan is already up)."""
    return TestClient(client.app, base_url="http://127.0.0.1")


def test_the_fixture_is_the_previous_release_with_something_of_everything() -> None:
    """The fixture holds what the rest checks: several conversations, a version set aside, dream output of each
    kind, corrections and the core memory, written on the previous schema (its last migration is recorded)."""
    assert MANIFEST["last_migration"] == "m016_reply_authors"
    rows = MANIFEST["rows"]
    assert len(MANIFEST["sessions"]) == rows["sessions"] >= 4
    assert rows["asides"] >= 1 and rows["gists"] >= 4 and rows["digests"] >= 3 and rows["profile_facts"] >= 2
    assert any(len(m["versions"]) > 1 for s in MANIFEST["sessions"] for m in s["messages"])
    assert {f["path"] for f in MANIFEST["files"]} >= {"lyra.db"} and any(
        f["path"].startswith("index/") for f in MANIFEST["files"])
    assert (FIXTURE / "single-person-v37.tar.gz").stat().st_size < 300_000


def test_every_conversation_and_memory_reads_as_the_previous_release_wrote_it(client: TestClient) -> None:
    listed = {s["id"]: s["name"] for s in ok(client, "GET", "/api/sessions")["sessions"]}
    assert listed == {s["id"]: s["name"] for s in MANIFEST["sessions"]}
    for session in MANIFEST["sessions"]:
        messages = ok(client, "GET", f"/api/sessions/{session['id']}/messages")["messages"]
        assert [{k: m[k] for k in ("id", "role", "content", "versions")} for m in messages] == session["messages"]
        gist = ok(client, "GET", f"/api/sessions/{session['id']}/gist")["gist"]
        assert (gist and gist["content"]) == session["gist"]
    facts = sorted(({"key": f["key"], "value": f["value"]} for f in ok(client, "GET", "/api/profile")["facts"]),
                   key=lambda f: (f["key"], f["value"]))
    assert facts == MANIFEST["facts"]
    digests = sorted(({k: d[k] for k in ("granularity", "period", "content")}
                      for d in ok(client, "GET", "/api/digests")["digests"]),
                     key=lambda d: (d["granularity"], d["period"]))
    assert digests == MANIFEST["digests"]
    assert ok(client, "GET", "/api/world")["world"]["content"] == MANIFEST["world"]
    assert len(ok(client, "GET", "/api/world/history")["versions"]) == MANIFEST["world_versions"]
    assert ok(client, "GET", "/api/narrative")["narrative"] == MANIFEST["narrative"]
    assert ok(client, "GET", "/api/self")["self_state"]["self_narrative"] == MANIFEST["self_narrative"]


def test_recall_search_and_export_still_find_the_old_turns(client: TestClient) -> None:
    """The old FAISS index files and full-text tables serve the upgraded memory (or are rebuilt from it)."""
    for session in MANIFEST["sessions"]:
        said = next(m for m in session["messages"] if m["role"] == "user")
        word = next(w for w in said["content"].rstrip(".").split() if w.startswith("upg"))
        hits = ok(client, "GET", "/api/recall", params={"q": said["content"], "k": 5})["hits"]
        assert said["id"] in {h["id"] for h in hits if h["kind"] == "exchange"}, (word, hits)
        results = ok(client, "GET", "/api/search", params={"q": word})["results"]
        assert said["id"] in {r["turn_id"] for r in results}, (word, results)
    text = export_text(client)
    said_words = {w for s in MANIFEST["sessions"] for m in s["messages"] for w in m["content"].rstrip(".").split()
                  if w.startswith("upg")}
    assert said_words and not [w for w in said_words if w not in text]


def test_alone_on_loopback_the_person_is_the_owner_and_nothing_moved(upgraded: Settings) -> None:
    data = upgraded.data_dir
    for _ in range(2):  # the first open makes the household; the second finds it, and asks no more
        with fake_client(upgraded) as client:
            state = ok(client, "GET", "/api/auth/state")
            assert state["login_required"] is False and state["people_count"] == 1
            assert state["person"]["owner"] is True
            me = ok(client, "GET", "/api/me")
            assert me["name"] == MANIFEST["user_name"]  # the person keeps the name their Lyra called them by
            assert me["owner"] is True and me["login_free"] is True and me["has_secret"] is False
            assert len(ok(client, "GET", "/api/sessions")["sessions"]) == len(MANIFEST["sessions"])
        missing = [f["path"] for f in MANIFEST["files"] if not (data / f["path"]).is_file()]
        assert not missing, f"moved or lost on upgrade: {missing}"
        assert not list(data.glob("people/*/lyra.db")), "the owner's memory was moved"
        assert (data / "household.db").is_file()


def test_a_second_person_brings_login_and_sees_none_of_the_old_memory(client: TestClient) -> None:
    owner = ok(client, "GET", "/api/me")
    refused = client.post("/api/people", json=SECOND)  # a login-free owner cannot open the door to others
    assert refused.status_code == 409 and "password" in refused.json()["error"]["message"], refused.text
    assert ok(client, "GET", "/api/auth/state")["people_count"] == 1
    ok(client, "PUT", "/api/me/secret", json={"secret": OWNER_SECRET})
    # The browser that chose the password stays logged in (web/auth.py: from then on a login is asked of others)
    assert len(ok(client, "GET", "/api/sessions")["sessions"]) == len(MANIFEST["sessions"])
    ok(client, "POST", "/api/people", json=SECOND)

    stranger = other_browser(client)
    assert ok(stranger, "GET", "/api/auth/state")["login_required"] is True
    for path in ("/api/sessions", f"/api/sessions/{MANIFEST['sessions'][0]['id']}/messages", "/api/profile"):
        refused = stranger.get(path)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "login_required", (path, refused.text)
        assert "upg" not in refused.text

    sam = other_browser(client)
    assert ok(sam, "POST", "/api/auth/login", json={"name": owner["name"], "secret": OWNER_SECRET})["person"][
        "id"] == owner["id"]
    assert {s["id"] for s in ok(sam, "GET", "/api/sessions")["sessions"]} == {s["id"] for s in MANIFEST["sessions"]}
    first = MANIFEST["sessions"][0]
    assert [m["content"] for m in ok(sam, "GET", f"/api/sessions/{first['id']}/messages")["messages"]] == [
        m["content"] for m in first["messages"]]
    assert ok(sam, "GET", "/api/world")["world"]["content"] == MANIFEST["world"]

    alex = other_browser(client)
    assert ok(alex, "POST", "/api/auth/login", json={"name": SECOND["name"], "secret": SECOND["secret"]})[
        "person"]["owner"] is False
    assert ok(alex, "GET", "/api/sessions")["sessions"] == []
    assert alex.get(f"/api/sessions/{first['id']}/messages").status_code == 404
    seen = " ".join(alex.get(p).text for p in ("/api/profile", "/api/digests", "/api/narrative", "/api/self",
                                                "/api/world", "/api/world/history")) + export_text(alex)
    for marker in ("upgtomato1", "upgglacier4"):  # the hits only: a response may echo the query
        assert ok(alex, "GET", "/api/search", params={"q": marker})["results"] == []
        assert ok(alex, "GET", "/api/recall", params={"q": marker})["hits"] == []
    assert not [m for m in MANIFEST["markers"] if m in seen], "the second person sees the owner's memory"
