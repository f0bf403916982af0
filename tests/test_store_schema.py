"""Migrations from every earlier schema version, and a round trip of every table."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from lyra_local.store import Store
from lyra_local.store import migrations
from lyra_local.store.db import connect
from lyra_local.store.exchanges import NewExchange

from .conftest import REPO

SEED = {
    # data that is valid at each version, written with plain SQL as an old release would have
    1: ["INSERT INTO sessions (id, uid, name, created_at, updated_at) VALUES (1, 'u1', 'old chat', "
        "'2023-05-08T13:56:00+00:00', '2023-05-08T13:57:00+00:00')",
        "INSERT INTO exchanges (id, session_id, role, content, created_at) VALUES "
        "(1, 1, 'user', 'I keep bees on my balcony', '2023-05-08T13:56:00+00:00')"],
    2: ["INSERT INTO embeddings (tier, model, item_id, vector) VALUES ('exchange', 'm', 1, zeroblob(16))"],
    3: ["INSERT INTO gists (session_id, content, covers_upto, created_at, updated_at) VALUES "
        "(1, 'bees on the balcony', 1, '2023-05-09T00:00:00+00:00', '2023-05-09T00:00:00+00:00')"],
    4: ["INSERT INTO world_state (content, author, created_at) VALUES ('# Now', 'user', '2023-05-09T00:00:00+00:00')"],
    5: ["INSERT INTO context_traces (exchange_id, trace, tokens, created_at) VALUES "
        "(1, '[]', 10, '2023-05-09T00:00:00+00:00')"],
    6: [],
    7: ["INSERT INTO dream_passes (instance_id, started_at, status, drives_after) VALUES "
        "('dream-1', '2023-05-09T00:00:00+00:00', 'done', '{\"continuity\": 0.0}')"],
    8: ["INSERT INTO world_state (content, author, status, created_at, decided_at, decided_by) VALUES "
        "('# Later', 'agent:coder', 'accepted', '2023-05-10T00:00:00+00:00', '2023-05-11T00:00:00+00:00', 'user')"],
    9: ["INSERT INTO provenance (kind, item_id, source_kind, source_id) VALUES ('gist', 1, 'exchange', 1)"],
    10: ["INSERT INTO exchanges (session_id, role, content, created_at) VALUES "
         "(1, 'assistant', 'How many hives?', '2023-05-08T13:57:00+00:00')"],
    11: ["UPDATE gists SET method = 'extractive' WHERE session_id = 1"],
    12: ["INSERT INTO dismissed (kind, target, basis, dismissed_at) VALUES ('gist', '1', '1', "
         "'2023-05-10T00:00:00+00:00')"],
    13: ["INSERT INTO sessions (id, uid, name, created_at, updated_at, remember) VALUES (2, 'u2', 'aside', "
         "'2023-05-12T00:00:00+00:00', '2023-05-12T00:00:00+00:00', 0)",
         "INSERT INTO asides (id, session_id, parent_id, role, content, created_at, set_aside_seq) VALUES "
         "(99, 1, 1, 'assistant', 'How many bees?', '2023-05-08T13:57:00+00:00', 1)"],
    14: ["INSERT INTO dismissed (kind, target, basis, dismissed_at) VALUES ('fact', 'pet:1', '1', "
         "'2023-05-13T00:00:00+00:00')"],
    15: ["UPDATE exchanges SET ending = 'length' WHERE id = 2"],
    16: ["UPDATE exchanges SET author = 'ChatGPT' WHERE id = 2"],
    17: ["UPDATE exchanges SET caption = 'a photo of a lake at dusk' WHERE id = 1"],
}


def schema(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return sorted((r[0], r[1] or "") for r in conn.execute("SELECT name, sql FROM sqlite_master "
                                                            "WHERE name NOT LIKE 'sqlite_%'"))


def test_seed_covers_every_migration() -> None:
    assert sorted(SEED) == list(range(1, len(migrations.MIGRATIONS) + 1))


@pytest.mark.parametrize("version", range(len(migrations.MIGRATIONS)))
def test_migrates_from_every_earlier_version(tmp_path: Path, version: int) -> None:
    old = tmp_path / "old"
    old.mkdir()
    conn = connect(old / "lyra.db")
    migrations.migrate(conn, upto=version)
    for step in range(1, version + 1):
        for sql in SEED[step]:
            conn.execute(sql)
    conn.close()

    store = Store(old)
    assert migrations.applied(store.conn()) == [m.__name__ for m in migrations.MIGRATIONS]
    fresh = Store(tmp_path / "fresh")
    assert schema(store.conn()) == schema(fresh.conn())
    if version >= 1:
        assert store.exchanges.history(1)[0].content == "I keep bees on my balcony"
        # the full-text index covers rows written before later migrations
        assert store.conn().execute("SELECT rowid FROM exchanges_fts WHERE exchanges_fts MATCH 'bees'").fetchone()
    if version >= 12:  # the deletions a person made survive the table's rebuild (migration 14)
        assert store.conn().execute("SELECT basis FROM dismissed WHERE kind = 'gist' AND target = '1'").fetchone()
    store.close()
    fresh.close()


def test_two_processes_opening_a_new_store_migrate_once(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from lyra_local.store import Store; "
            "Store(Path(sys.argv[1])).close()")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=REPO, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in results]
    store = Store(tmp_path)
    names = [r[0] for r in store.conn().execute("SELECT name FROM _migrations")]
    assert names == [m.__name__ for m in migrations.MIGRATIONS]
    store.close()


def test_round_trip_of_every_table(store: Store) -> None:
    session = store.sessions.create("Trip planning", created_at="2024-03-01T10:00:00+00:00",
                                    source="chatgpt", source_id="conv-1")
    assert store.sessions.get(session.id) == session
    assert store.sessions.find(source="chatgpt", source_id="conv-1") == session
    renamed = store.sessions.rename(session.id, "Lisbon trip")
    assert store.sessions.list()[0] == renamed

    vector = np.arange(4, dtype=np.float32) / 4
    exchange = store.exchanges.add(NewExchange(session.id, "user", "We fly on 4 May", "2024-03-01T10:01:00+00:00", 6),
                                   vector=vector, model="m")
    assert store.exchanges.get(exchange.id) == exchange
    blob = store.conn().execute("SELECT vector FROM embeddings WHERE item_id = ?", (exchange.id,)).fetchone()[0]
    assert np.array_equal(np.frombuffer(blob, dtype=np.float32), vector)

    gist = store.derived.put_gist(session.id, "Flying to Lisbon on 4 May.", exchange.id, vector, "m")
    assert store.derived.gist(session.id) == gist
    fact = store.derived.set_fact("home_city", "Berlin", source_session_id=session.id)
    assert store.derived.profile() == [fact]
    digest = store.derived.put_digest("month", "2024-03", "Planned the Lisbon trip.", 1, vector, "m")
    assert store.derived.digests("month") == [digest]
    store.derived.set_narrative("Getting ready for a move.")
    assert store.derived.narrative() == "Getting ready for a move."
    store.derived.set_self_state({"mood": "curious", "energy": 0.7})
    assert store.derived.self_state() == {"mood": "curious", "energy": 0.7}

    version = store.coord.write_world("# World\n- trip in May", "user", "planning")
    assert store.coord.world() == version and store.coord.world_history() == [version]
    store.coord.register("web-1", "web", "serving chat")
    store.coord.heartbeat("web-1", "started")
    store.coord.complete("web-1", "stopped cleanly")
    instance = store.coord.instance("web-1")
    assert instance is not None and instance["status"] == "done" and instance["log"][0]["message"] == "started"
    lease = store.coord.acquire("dream:session:1", "worker-a", ttl_s=30, note="summarizing")
    assert lease.ok and store.coord.lease("dream:session:1") == lease.lease
    event = store.coord.log_event("gist", "session:1", {"turns": 1})
    assert store.coord.events()[0]["id"] == event and store.coord.events()[0]["detail"] == {"turns": 1}
    store.set_meta("k", "v")
    assert store.get_meta("k") == "v"


def test_a_newer_fact_supersedes_and_keeps_history(store: Store) -> None:
    berlin = store.derived.set_fact("home_city", "Berlin")
    lisbon = store.derived.set_fact("home_city", "Lisbon")
    assert [f.value for f in store.derived.profile()] == ["Lisbon"]
    history = store.derived.fact_history("home_city")
    assert [f.value for f in history] == ["Berlin", "Lisbon"] and history[0].superseded_by == lisbon.id
    assert store.derived.set_fact("home_city", "Lisbon") == lisbon  # no duplicate
    assert berlin.id != lisbon.id


def test_a_lease_is_refused_while_held_and_free_after_expiry(store: Store) -> None:
    assert store.coord.acquire("r", "a", ttl_s=0.2).ok
    refused = store.coord.acquire("r", "b", ttl_s=10)
    assert not refused.ok and refused.lease.holder == "a"
    time.sleep(0.3)
    assert store.coord.acquire("r", "b", ttl_s=10).ok
