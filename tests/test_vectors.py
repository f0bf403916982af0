"""The FAISS indexes against SQLite: catch-up, snapshots, crashes, HNSW, forgetting, model switches."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from lyra_local.memory import Memory, RecallQuery
from lyra_local.store import IndexSettings, Store
from lyra_local.store.exchanges import NewExchange
from lyra_local.store.recall_index import RecallIndex

from .conftest import REPO
from .fakes import FakeEmbedder

TOPICS = ["cooking pasta with garlic", "training for a marathon", "the garden tomatoes", "a jazz concert",
          "fixing the bicycle brakes", "learning Portuguese verbs", "the quarterly budget", "my sister's wedding"]


def fill(memory: Memory, n: int, session_name: str = "s") -> list[int]:
    session = memory.store.sessions.create(session_name)
    items = [NewExchange(session.id, "user" if i % 2 == 0 else "assistant",
                         f"note {i}: {TOPICS[i % len(TOPICS)]} and {TOPICS[(i * 3) % len(TOPICS)]}")
             for i in range(n)]
    return [e.id for e in memory.remember_many(items)]


def writer_code(data_dir: Path, count: int, batch: int = 1, delay: float = 0.0) -> list[str]:
    code = f"""
import sys, time
from pathlib import Path
from lyra_local.store import Store
from lyra_local.memory import Memory
from lyra_local.store.exchanges import NewExchange
from lyra_local.store.recall_index import RecallIndex
from tests.fakes import FakeEmbedder
memory = Memory(Store(Path({str(data_dir)!r})), FakeEmbedder())
session = memory.store.sessions.create("writer")
for i in range(0, {count}, {batch}):
    memory.remember_many([NewExchange(session.id, "user", f"writer row {{j}} about zebras") for j in range(i, i + {batch})])
    print(i + {batch}, flush=True)
    time.sleep({delay})
"""
    return [sys.executable, "-c", code]


def test_another_process_writes_and_our_next_recall_sees_it(tmp_path: Path) -> None:
    memory = Memory(Store(tmp_path), FakeEmbedder())
    fill(memory, 20)
    index = memory.store.index("exchange", "fake-embed")
    assert index.size == 20
    subprocess.run(writer_code(tmp_path, 5), cwd=REPO, check=True, capture_output=True)
    hits = memory.recall(RecallQuery("writer row zebras", k=5, mode="dense"))
    assert all("zebras" in h.content for h in hits) and len(hits) == 5
    assert memory.store.index("exchange", "fake-embed") is index and index.size == 25  # caught up, not rebuilt
    memory.store.close()


@pytest.mark.parametrize("damage", ["delete", "truncate", "garble", "stale"])
def test_a_bad_snapshot_is_rebuilt_with_the_same_results(tmp_path: Path, damage: str) -> None:
    memory = Memory(Store(tmp_path), FakeEmbedder())
    fill(memory, 300)
    query = RecallQuery("garden tomatoes and jazz", k=10, mode="dense")
    before = [h.id for h in memory.recall(query)]
    memory.store.close()
    snapshot = tmp_path / "index" / "exchange--fake-embed.faiss"
    assert snapshot.exists()
    if damage == "delete":
        snapshot.unlink()
    elif damage == "truncate":
        snapshot.write_bytes(snapshot.read_bytes()[:1000])
    elif damage == "garble":
        data = bytearray(snapshot.read_bytes())
        data[len(data) // 2:len(data) // 2 + 64] = os.urandom(64)
        snapshot.write_bytes(bytes(data))
    else:  # the database went back in time (restored from a backup): the snapshot is ahead of it
        meta = snapshot.with_suffix(".json")
        meta.write_text(meta.read_text().replace('"hwm": ', '"hwm": 999'))
    reopened = Memory(Store(tmp_path), FakeEmbedder())
    assert [h.id for h in reopened.recall(query)] == before
    assert reopened.store.index("exchange", "fake-embed").last_load.startswith("rebuilt")
    reopened.store.close()


def test_a_good_snapshot_is_loaded_not_rebuilt(tmp_path: Path) -> None:
    memory = Memory(Store(tmp_path), FakeEmbedder())
    fill(memory, 50)
    memory.recall(RecallQuery("x", mode="dense"))
    memory.store.close()
    reopened = Memory(Store(tmp_path), FakeEmbedder())
    reopened.recall(RecallQuery("x", mode="dense"))
    assert reopened.store.index("exchange", "fake-embed").last_load == "snapshot"
    reopened.store.close()


def test_kill_9_during_bulk_insert_loses_no_committed_row(tmp_path: Path) -> None:
    Memory(Store(tmp_path), FakeEmbedder()).store.close()
    proc = subprocess.Popen(writer_code(tmp_path, 100_000, batch=50), cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    committed = 0
    while committed < 1000:
        committed = int(proc.stdout.readline())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()

    store = Store(tmp_path)
    count = store.exchanges.count()
    assert count >= committed and count % 50 == 0  # whole batches only
    orphans = store.conn().execute("SELECT count(*) FROM exchanges e WHERE NOT EXISTS (SELECT 1 FROM embeddings v "
                                   "WHERE v.tier = 'exchange' AND v.item_id = e.id)").fetchone()[0]
    assert orphans == 0
    assert store.conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert store.index("exchange", "fake-embed").size == count
    store.close()


def test_forget_removes_content_everywhere(tmp_path: Path) -> None:
    memory = Memory(Store(tmp_path), FakeEmbedder())
    fill(memory, 30, "keep")
    secret = memory.store.sessions.create("secret")
    for text in ["my bank PIN is Quixotic-7781", "the PIN Quixotic-7781 opens the safe"]:
        memory.remember(secret.id, "user", text)
    memory.store.derived.put_gist(secret.id, "Talked about the Quixotic-7781 PIN.", 0)
    memory.store.derived.set_fact("pin", "Quixotic-7781", source_session_id=secret.id)
    memory.store.derived.put_digest("day", memory.store.exchanges.history(secret.id)[0].created_at[:10],
                                    "Shared the Quixotic-7781 PIN.", 1)
    assert any("Quixotic" in h.content for h in memory.recall(RecallQuery("Quixotic-7781 PIN")))

    forgotten = memory.forget_session(secret.id)
    assert forgotten.exchanges == 2 and forgotten.derived["digest"] == 1 and forgotten.derived["fact"] == 1

    for mode in ("hybrid", "dense", "bm25"):
        assert not any("Quixotic" in h.content for h in memory.recall(RecallQuery("Quixotic-7781 PIN", k=50, mode=mode)))
    for tier in ("gist", "digest"):
        assert not any("Quixotic" in h.content for h in memory.recall(RecallQuery("Quixotic PIN", tier=tier, k=50)))
    assert memory.store.derived.profile() == [] and memory.store.derived.digests() == []
    conn = memory.store.conn()
    assert conn.execute("SELECT count(*) FROM exchanges_fts WHERE exchanges_fts MATCH 'quixotic'").fetchone()[0] == 0
    assert memory.store.index("exchange", "fake-embed").size == 30
    memory.store.close()
    # not even in the file's free pages or the WAL
    for path in tmp_path.glob("lyra.db*"):
        assert b"Quixotic-7781 opens" not in path.read_bytes(), path


def test_hnsw_above_the_threshold_keeps_recall_and_handles_deletes(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(3000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact = Store(tmp_path / "exact")
    approx = Store(tmp_path / "approx", index_settings=IndexSettings(hnsw_threshold=1000))
    for store in (exact, approx):
        session = store.sessions.create("s")
        with store.write() as conn:
            store.exchanges.insert(conn, [NewExchange(session.id, "user", f"t{i}") for i in range(3000)], vectors, "m")
    assert approx.index("exchange", "m").kind == "hnsw" and exact.index("exchange", "m").kind == "flat"
    queries = rng.normal(size=(50, 64)).astype(np.float32)
    found = 0
    for q in queries:
        truth = {i for i, _ in exact.index("exchange", "m").search(q, 10)}
        found += len(truth & {i for i, _ in approx.index("exchange", "m").search(q, 10)})
    assert found / 500 >= 0.95

    top = approx.index("exchange", "m").search(queries[0], 1)[0][0]
    with approx.write() as conn:
        conn.execute("DELETE FROM exchanges WHERE id = ?", (top,))
    assert top not in {i for i, _ in approx.index("exchange", "m").search(queries[0], 10)}
    exact.close()
    approx.close()


@pytest.mark.parametrize("search_between", [False, True])
def test_a_turn_chosen_again_is_found_again_without_rebuilding_the_hnsw_index(tmp_path: Path, monkeypatch,
                                                                               search_between: bool) -> None:
    from lyra_local.store import branches, vectors as vector_module

    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(1500, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = Store(tmp_path, index_settings=IndexSettings(hnsw_threshold=1000))
    session = store.sessions.create("s")
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(session.id, "user" if i % 2 == 0 else "assistant", f"t{i}")
                                      for i in range(1500)], vectors, "m")
    index = store.index("exchange", "m")
    assert index.kind == "hnsw"
    last = int(store.exchanges.history(session.id, limit=1)[0].id)
    rebuilds = []
    monkeypatch.setattr(vector_module.VectorIndex, "rebuild", lambda self: rebuilds.append(1))
    with store.write() as conn:
        branches.set_aside(conn, session.id, last)  # the last reply, regenerated away
    if search_between:  # the index sees it go before it comes back
        assert last not in {i for i, _ in store.index("exchange", "m").search(vectors[-1], 5)}
    store.branches.choose(last)
    assert last in {i for i, _ in store.index("exchange", "m").search(vectors[-1], 5)}
    assert rebuilds == []
    store.close()


def test_changing_the_embedding_model_never_mixes_vectors(tmp_path: Path) -> None:
    old = Memory(Store(tmp_path), FakeEmbedder(name="model-a"))
    fill(old, 40)
    old.store.close()

    new = Memory(Store(tmp_path), FakeEmbedder(dim=32, name="model-b"))
    assert new.switching_model and new.active_model == "model-a"
    during = new.recall(RecallQuery("garden tomatoes", k=5))
    assert during and all("dense" not in h.stages for h in during)  # no vectors of the wrong model

    assert new.reembed() == 40
    assert not new.switching_model and new.active_model == "model-b"
    after = new.recall(RecallQuery("garden tomatoes", k=5, mode="dense"))
    assert len(after) == 5 and new.store.index("exchange", "model-b").size == 40
    new.store.close()


def test_filters_apply_inside_both_searches(memory: Memory) -> None:
    fill(memory, 40, "a")
    other = memory.store.sessions.create("b")
    memory.remember(other.id, "assistant", "garden tomatoes in session b", created_at="2020-01-01T00:00:00+00:00")
    only_b = memory.recall(RecallQuery("garden tomatoes", session_id=other.id))
    assert [h.session_id for h in only_b] == [other.id]
    not_b = memory.recall(RecallQuery("garden tomatoes", exclude_session_id=other.id, k=50))
    assert other.id not in {h.session_id for h in not_b} and not_b
    old = memory.recall(RecallQuery("garden tomatoes", until="2021-01-01"))
    assert [h.content for h in old] == ["garden tomatoes in session b"]
    users = memory.recall(RecallQuery("garden tomatoes", role="user", k=50))
    assert users and all(h.role == "user" for h in users)
    with_context = memory.recall(RecallQuery("note 7", k=1, neighbours=1, mode="bm25"))
    assert [e.content.split(":")[0] for e in with_context[0].context] == ["note 6", "note 8"]


def test_writer_and_reader_processes_run_together_without_errors(tmp_path: Path) -> None:
    Memory(Store(tmp_path), FakeEmbedder()).store.close()
    reader_code = f"""
import time
from pathlib import Path
from lyra_local.store import Store
from lyra_local.memory import Memory, RecallQuery
from tests.fakes import FakeEmbedder
memory = Memory(Store(Path({str(tmp_path)!r})), FakeEmbedder())
seen, end = 0, time.monotonic() + 6
while time.monotonic() < end:
    hits = memory.recall(RecallQuery("writer row zebras", k=5))
    size = memory.store.index("exchange", "fake-embed").size
    assert size >= seen, (size, seen)
    seen = size
print(seen)
"""
    reader = subprocess.Popen([sys.executable, "-c", reader_code], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    writer = subprocess.Popen(writer_code(tmp_path, 400, batch=2, delay=0.01), cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    w_err = writer.communicate(timeout=120)[1]
    r_out, r_err = reader.communicate(timeout=120)
    assert writer.returncode == 0, w_err
    assert reader.returncode == 0, r_err
    assert "locked" not in w_err + r_err
    store = Store(tmp_path)
    assert store.exchanges.count() == 400
    assert int(r_out.strip()) > 0
    store.close()


def test_growing_past_the_threshold_switches_to_hnsw_in_the_background(tmp_path: Path) -> None:
    memory = Memory(Store(tmp_path, index_settings=IndexSettings(hnsw_threshold=100)), FakeEmbedder())
    fill(memory, 80)
    index = memory.store.index("exchange", "fake-embed")
    assert index.kind == "flat"
    fill(memory, 60, "more")
    assert memory.recall(RecallQuery("garden tomatoes", k=5, mode="dense"))  # served while it builds
    index.wait_for_upgrade(timeout=30)
    assert memory.store.index("exchange", "fake-embed").kind == "hnsw" and index.size == 140
    memory.store.close()


@pytest.mark.parametrize("threshold", [10**6, 10])
def test_recall_reads_the_stored_vectors_from_the_index_bit_for_bit(tmp_path: Path, threshold: int) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(40, 16)).astype(np.float32)
    store = Store(tmp_path, index_settings=IndexSettings(hnsw_threshold=threshold))
    session = store.sessions.create("s")
    with store.write() as conn:
        ids = [e.id for e in store.exchanges.insert(conn, [NewExchange(session.id, "user", f"t{i}")
                                                           for i in range(40)], vectors, "m")]
    unembedded = store.exchanges.add(NewExchange(session.id, "user", "no vector yet")).id
    with store.write() as conn:
        conn.execute("DELETE FROM exchanges WHERE id = ?", (ids[3],))
    index = RecallIndex(store)
    asked = [ids[5], ids[3], unembedded, ids[0]]
    found = index.vectors("exchange", "m", asked)
    assert sorted(found) == sorted([ids[5], ids[0]])  # the forgotten and the unembedded have none
    assert np.array_equal(found[ids[5]], vectors[5]) and np.array_equal(found[ids[0]], vectors[0])
    assert store.index("exchange", "m").kind == ("hnsw" if threshold == 10 else "flat")
    store.close()
