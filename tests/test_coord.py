"""Coordination across processes: leases, stale instances, world-state versions and proposals, sitrep."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.coord import Coordinator, render_sitrep
from lyra_local.mind import Dreamer
from lyra_local.store import Store

from .conftest import REPO
from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session, respond

CONTENDER = """
import sys, time
from pathlib import Path
from lyra_local.store import Store
store = Store(Path(sys.argv[1]))
start_at = float(sys.argv[2])
while time.time() < start_at:
    time.sleep(0.001)
result = store.coord.acquire("printer", sys.argv[3], 30, note="printing")
print("won" if result.ok else f"lost to {result.lease.holder}", flush=True)
if result.ok and len(sys.argv) > 4:  # hold it, renewing, until killed
    while True:
        time.sleep(0.3)
        store.coord.renew("printer", sys.argv[3], float(sys.argv[4]))
"""


def contender(data: Path, start_at: float, holder: str, *hold: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CONTENDER, str(data), str(start_at), holder, *hold],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)


def test_two_processes_contend_for_one_lock_and_exactly_one_wins(tmp_path: Path) -> None:
    Store(tmp_path).close()
    for _ in range(3):
        start_at = time.time() + 1.5
        procs = [contender(tmp_path, start_at, f"proc-{i}") for i in range(2)]
        outputs = {f"proc-{i}": p.communicate(timeout=60)[0].strip() for i, p in enumerate(procs)}
        winners = [holder for holder, out in outputs.items() if out == "won"]
        assert len(winners) == 1, outputs
        loser = next(holder for holder in outputs if holder != winners[0])
        assert outputs[loser] == f"lost to {winners[0]}"  # the other sees who holds it
        store = Store(tmp_path)
        lease = store.coord.lease("printer")
        assert lease is not None and lease.holder == winners[0] and lease.note == "printing"
        assert store.coord.release("printer", winners[0])
        store.close()


def test_a_holder_killed_with_sigkill_loses_its_lease_after_expiry(tmp_path: Path) -> None:
    Store(tmp_path).close()
    holder = contender(tmp_path, time.time(), "worker-1", "1.5")
    assert holder.stdout is not None and holder.stdout.readline().strip() == "won"
    time.sleep(1.0)
    store = Store(tmp_path)
    assert not store.coord.acquire("printer", "me", 30).ok  # renewed: still held
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    holder.stdout.close()
    refused = store.coord.acquire("printer", "me", 30)
    assert not refused.ok and refused.lease.holder == "worker-1"  # not silently overwritten
    time.sleep(1.8)
    assert store.coord.acquire("printer", "me", 30).ok  # expired: free again
    assert not store.coord.renew("printer", "worker-1", 30).ok  # and the old holder cannot renew it


def test_stale_instances_are_reported(make_settings: Callable[..., Settings], store: Store) -> None:
    settings = make_settings("[coordination]\nstale_after_s = 60\n")
    c = Coordinator(store, settings)
    fresh = c.register("agent", "refactoring the importer")["id"]
    quiet = c.register("dream", "nightly consolidation")["id"]
    done = c.register("cli", "lyra import")["id"]
    c.heartbeat(fresh, "tests pass")
    c.complete(done, "imported 120 conversations")
    later = datetime.now(timezone.utc) + timedelta(seconds=90)
    with store.write() as conn:
        conn.execute("UPDATE instances SET heartbeat_at = ? WHERE id = ?",
                     ((later - timedelta(seconds=5)).isoformat(), fresh))
    states = {i["id"]: i["state"] for i in c.sitrep(now=later)["instances"]}
    assert states == {fresh: "running", quiet: "stale", done: "done"}
    text = c.sitrep_text(now=later)
    assert f"[stale] dream {quiet}" in text and "tests pass" in text and "imported 120 conversations" in text
    with pytest.raises(Exception, match="no instance"):
        c.heartbeat("nope")


def test_world_state_keeps_every_version_and_proposals_wait_for_review(
        store: Store, make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    c = Coordinator(store, settings)
    store.coord.write_world("# Now\n- Berlin", "user")
    proposal = c.propose_world("coder", "# Now\n- Lisbon", "the user said they moved")
    assert proposal["status"] == "proposed" and proposal["author"] == "agent:coder"
    assert store.coord.world().content == "# Now\n- Berlin"  # type: ignore[union-attr]  # not before review
    store.coord.write_world("# Now\n- Berlin\n- learning Portuguese", "user")
    store.coord.decide(proposal["id"], True, "user")
    assert store.coord.world().content == "# Now\n- Lisbon"  # type: ignore[union-attr]  # counts from acceptance
    rejected = c.propose_world("coder", "# Now\n- Mars", "a guess")
    store.coord.decide(rejected["id"], False, "user")
    history = store.coord.world_history()
    assert [(v.content.splitlines()[-1], v.status, v.author) for v in history] == [
        ("- Berlin", "accepted", "user"), ("- Lisbon", "accepted", "agent:coder"),
        ("- learning Portuguese", "accepted", "user"), ("- Mars", "rejected", "agent:coder")]
    assert history[1].decided_by == "user" and history[3].decided_at is not None
    with pytest.raises(Exception, match="no open proposal"):
        store.coord.decide(rejected["id"], True, "user")
    with pytest.raises(Exception, match="needs a reason"):
        c.propose_world("coder", "x", "  ")


@pytest.mark.parametrize("mode", ["propose", "auto"])
def test_the_dream_cycle_changes_the_world_state_only_through_review(
        store: Store, make_settings: Callable[..., Settings], mode: str) -> None:
    settings = make_settings(f'[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\n'
                             f'[coordination]\nworld_updates = "{mode}"\n')
    store.coord.write_world("# Now\n- Sam lives in Berlin", "user")
    add_session(store, "news", "2024-06-02", ["I moved to Lisbon last week", "Exciting!"])
    Dreamer(store, FakeChatModel(respond=respond), FakeEmbedder(), settings).run_pass(force=True)
    dream_versions = [v for v in store.coord.world_history() if v.author == "dream"]
    assert len(dream_versions) == 1 and "arc" in (dream_versions[0].reason or "")
    if mode == "propose":
        assert dream_versions[0].status == "proposed"
        assert store.coord.world().content == "# Now\n- Sam lives in Berlin"  # type: ignore[union-attr]
    else:
        assert store.coord.world().id == dream_versions[0].id  # type: ignore[union-attr]


def test_sitrep_is_bounded_so_it_is_safe_in_a_context(store: Store, make_settings: Callable[..., Settings]) -> None:
    settings = make_settings("[coordination]\nsitrep_chars = 600\n")
    store.coord.write_world("# Now\n" + "- a long line about everything\n" * 200, "user")
    for i in range(30):
        store.coord.register(f"agent-{i}", "agent", "a task " * 20)
    text = Coordinator(store, settings).sitrep_text()
    assert len(text) <= 600 and text.startswith("SITREP")
    assert render_sitrep(Coordinator(store, settings).sitrep(), 10_000).count("[running]") == 30


def test_the_http_api_offers_the_same_operations(client: TestClient) -> None:
    got = client.post("/api/locks/acquire", json={"resource": "repo/main", "holder": "coder", "ttl_s": 30})
    assert got.status_code == 200 and got.json()["ok"]
    refused = client.post("/api/locks/acquire", json={"resource": "repo/main", "holder": "other", "ttl_s": 30})
    assert refused.status_code == 409 and refused.json()["held_by"] == "coder"
    assert "held by coder" in refused.json()["error"]["message"]
    assert client.get("/api/locks", params={"resource": "repo/main"}).json()["lease"]["holder"] == "coder"
    assert client.post("/api/locks/renew", json={"resource": "repo/main", "holder": "coder"}).json()["ok"]
    assert client.post("/api/locks/release", json={"resource": "repo/main", "holder": "coder"}).json()["released"]
    instance = client.post("/api/instances", json={"kind": "agent", "summary": "writing docs"}).json()["id"]
    client.post(f"/api/instances/{instance}/heartbeat", json={"message": "half done"})
    client.post("/api/remember", json={"agent": "coder", "content": "Sam prefers tabs over spaces"})
    proposal = client.post("/api/world/proposals", json={"agent": "coder", "content": "# Now", "reason": "init"})
    assert proposal.status_code == 201
    assert client.post(f"/api/world/proposals/{proposal.json()['id']}/accept", json={}).json()["status"] == "accepted"
    sitrep = client.get("/api/sitrep").json()
    assert "[running] agent" in sitrep["text"] and "half done" in sitrep["text"] and sitrep["world"] == "# Now"
    assert client.get("/api/sitrep", params={"format": "text"}).text.startswith("SITREP")
    hits = client.get("/api/recall", params={"q": "tabs spaces"}).json()["hits"]
    assert hits and hits[0]["content"] == "Sam prefers tabs over spaces"
    sessions = client.get("/api/sessions").json()["sessions"]
    assert sessions[0]["name"] == "Notes from agent:coder" and sessions[0]["source"] == "agent"
