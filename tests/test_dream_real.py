"""The dream cycle with the real tiny model, against a real llama.cpp server that dies mid-pass,
and as two `lyra dream` processes on one store."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from lyra_local.config import Settings
from lyra_local.llm.local import LocalChatModel, LocalEmbedder
from lyra_local.llm.registry import Models
from lyra_local.mind import Dreamer, PassReport
from lyra_local.mind.dream.backlog import sense
from lyra_local.store import Store
from lyra_local.store.db import to_iso

from .conftest import MODELS_DIR, LlamaServer, base_env
from .test_dream import add_session

LYRA = [sys.executable, "-m", "lyra_local"]
PLACES = ["the river", "the old mill", "Miso's vet", "the bakery on Oderberger", "the lake at Krumme Lanke"]
WORK_KINDS = {"gist", "profile", "digest", "narrative", "reflect"}


def long_turns(n: int) -> list[str]:
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(f"On day {i // 2 + 1} of the walking plan I did {3 + i % 5} kilometres past "
                       f"{PLACES[i % len(PLACES)]} with Ana, and my knee felt {'fine' if i % 3 else 'sore'}.")
        else:
            out.append(f"That is {3 + i % 5} km more. How did Ana like {PLACES[i % len(PLACES)]}?")
    return out


def seed(store: Store) -> list[int]:
    return [add_session(store, "moving", "2024-03-05", ["I live in Berlin with my cat Miso", "How lovely!"]),
            add_session(store, "work", "2024-03-05", ["I work as a nurse at the Charité", "Demanding!"]),
            add_session(store, "news", "2024-04-20", ["I moved to Lisbon last week!", "Exciting, how is it?"])]


def work_units(events: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """Each unit of work with what it was built from: a repeat is work done twice."""
    units: Counter[tuple[Any, ...]] = Counter()
    for e in events:
        if e["kind"] in WORK_KINDS:
            d = e["detail"] or {}
            units[(e["kind"], e["target"], d.get("covers_upto"), str(d.get("basis")))] += 1
    return units


def server_toml(url: str, extra: str = "") -> str:
    return f"""
[companion]
user_name = "Sam"
[dream]
session_idle_s = 0
summary_tokens = 64
[dream.retry]
max_attempts = 30
initial_delay_s = 0.5
max_delay_s = 2.0
[models.summary]
backend = "server"
base_url = "{url}"
model = "smollm2"
n_ctx = 2048
read_timeout_s = 120
[models.summary.retry]
max_attempts = 2
initial_delay_s = 0.2
{extra}"""


@pytest.mark.slow
def test_real_model_chunks_a_long_session_and_builds_every_memory(
        store: Store, make_settings: Callable[..., Settings], chat_model: LocalChatModel,
        embedder: LocalEmbedder) -> None:
    settings = make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\nsummary_tokens = 96\n')
    turns = long_turns(120)
    assert sum(chat_model.count_tokens(t) for t in turns) > chat_model.n_ctx  # longer than the model's context
    long_id = add_session(store, "the long walk", "2024-03-04", turns)
    sessions = [long_id, *seed(store)]

    report = Dreamer(store, chat_model, embedder, settings).run_pass(force=True)
    assert report.status == "done", report.error
    long_gist = next(a for a in report.actions if a["kind"] == "gist" and a["target"] == f"session:{long_id}")
    assert long_gist["chunks"] >= 2 and long_gist["calls"] > long_gist["chunks"]  # chunked, then merged

    conn = store.conn()
    gists = {g.session_id: g for g in store.derived.gists()}
    assert set(gists) == set(sessions) and all(g.content.strip() for g in gists.values())
    for sid, gist in gists.items():
        assert gist.covers_upto == conn.execute("SELECT max(id) FROM exchanges WHERE session_id = ?",
                                                (sid,)).fetchone()[0]
    vectors = dict(conn.execute("SELECT tier, count(*) FROM embeddings WHERE model = ? GROUP BY tier",
                                (embedder.name,)).fetchall())
    assert vectors["gist"] == len(sessions) and vectors["digest"] == len(store.derived.digests())
    assert conn.execute("SELECT count(*) FROM gists WHERE profiled_upto < covers_upto").fetchone()[0] == 0
    assert store.derived.profile(), "the real model stated no fact at all"
    assert {(d.granularity, d.period) for d in store.derived.digests()} == {
        ("day", "2024-03-04"), ("day", "2024-03-05"), ("day", "2024-04-20"), ("week", "2024-W10"),
        ("week", "2024-W16"), ("month", "2024-03"), ("month", "2024-04")}
    assert len((store.derived.narrative() or "").split()) > 5
    state = store.derived.self_state()
    assert state is not None and state["mood"] and 0.0 <= state["energy"] <= 1.0 and state["basis"]["exchange"]

    assert report.drives_before["continuity"] > 0.5 and report.drives_before["stability"] < 0.5
    assert report.drives_after == {"continuity": 0, "coherence": 0, "curiosity": 0, "stability": 1}
    assert sense(store, settings.dream).empty

    second = Dreamer(store, chat_model, embedder, settings).run_pass(force=True)
    assert second.actions == [] and {g.session_id: g for g in store.derived.gists()} == gists


@pytest.mark.slow
def test_dream_survives_the_model_server_dying_mid_pass(
        store: Store, make_settings: Callable[..., Settings], chat_server: LlamaServer,
        embedder: LocalEmbedder) -> None:
    settings = make_settings(server_toml(chat_server.url))
    sessions = seed(store) + [add_session(store, f"day {d}", f"2024-05-{d:02d}",
                                          [f"I baked {d} loaves of rye today", "Smells good!"]) for d in (1, 2, 3)]
    models = Models(settings, embed=embedder)
    result: list[PassReport] = []
    runner = threading.Thread(target=lambda: result.append(
        Dreamer(store, models.summary, embedder, settings).run_pass(force=True)))
    try:
        runner.start()
        deadline = time.monotonic() + 300
        while not any(e["kind"] == "gist" for e in store.coord.events()):
            assert time.monotonic() < deadline and runner.is_alive(), "no gist was written"
            time.sleep(0.05)
        chat_server.kill()  # mid-pass: the other sessions still need the server
        time.sleep(3)
        chat_server.start()
        runner.join(600)
    finally:
        chat_server.ensure_running()
        models.close()  # its HTTP client held a connection to the server that was killed
    assert result and result[0].status == "done", result and result[0].error
    events = store.coord.events(limit=5000)
    assert any(e["kind"] == "backoff" for e in events)
    units = work_units(events)
    assert max(units.values()) == 1  # nothing done twice
    assert sorted(t for k, t, *_ in units if k == "gist") == sorted(f"session:{s}" for s in sessions)
    conn = store.conn()
    for sid in sessions:  # nothing lost: every gist covers its session's last turn
        gist = store.derived.gist(sid)
        assert gist is not None and gist.covers_upto == conn.execute(
            "SELECT max(id) FROM exchanges WHERE session_id = ?", (sid,)).fetchone()[0]
    assert sense(store, settings.dream).empty


@pytest.mark.slow
def test_two_dream_processes_do_each_unit_exactly_once(
        tmp_path: Path, make_settings: Callable[..., Settings], chat_server: LlamaServer) -> None:
    chat_server.ensure_running()
    settings = make_settings(server_toml(chat_server.url))
    store = Store(settings.data_dir)
    sessions = seed(store) + [add_session(store, f"day {d}", f"2024-05-{d:02d}",
                                          [f"I planted {d} rows of beans", "Lovely!"]) for d in (1, 2, 3, 4)]
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(settings.data_dir), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    config = tmp_path / "lyra.toml"
    procs = [subprocess.Popen([*LYRA, "--config", str(config), "dream", "--force", "--quiet"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert all("dream pass" in out and "done:" in out for out in outputs)

    events = store.coord.events(limit=5000)
    starts = {e["instance_id"] for e in events if e["kind"] == "pass.start"}
    assert len(starts) == 2
    units = work_units(events)
    assert max(units.values()) == 1, [u for u, n in units.items() if n > 1]
    assert sorted(t for k, t, *_ in units if k == "gist") == sorted(f"session:{s}" for s in sessions), outputs
    doers = {e["instance_id"] for e in events if e["kind"] == "gist"}
    assert len(doers) == 2, "one process did every gist: the test did not exercise contention"
    assert store.coord.leases() == []
    store.close()


@pytest.mark.slow
def test_the_dream_yields_the_shared_model_to_a_chat_turn(
        store: Store, make_settings: Callable[..., Settings], chat_model: LocalChatModel,
        embedder: LocalEmbedder) -> None:
    settings = make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\nsummary_tokens = 200\n')
    sid = add_session(store, "the long walk", "2024-03-04", long_turns(40))
    dreamer = Dreamer(store, chat_model, embedder, settings)
    runner = threading.Thread(target=dreamer.summarize, args=(sense(store, settings.dream, force=True),))
    runner.start()
    deadline = time.monotonic() + 120
    while not chat_model._model._lock.locked():  # the dream is generating now
        assert time.monotonic() < deadline
        time.sleep(0.01)
    reply = chat_model.complete([{"role": "user", "content": "Say hello."}])
    answered_at = to_iso(datetime.now(timezone.utc))
    runner.join(300)
    assert reply.text
    gist = next(e for e in store.coord.events() if e["kind"] == "gist")
    # the dream stopped at its next token and started its summary again after the turn
    assert gist["detail"]["preempted"] >= 1 and gist["at"] > answered_at
    assert store.derived.gist(sid) is not None
