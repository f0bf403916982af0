"""Requests that arrive together for a new name get one session, never a UNIQUE failure.

Six OpenAI clients sending their first request for one ``user`` at once, or two
agents' notes for a new agent name: the routes found the session, then created
it, so between the two a second request created it too and the first failed
(``UNIQUE constraint failed: sessions.source, sessions.source_id``, a 500).
``Sessions.find_or_create`` does both in one write transaction; here real
threads hit it, the OpenAI route and the coordinator's ``remember`` at once, on
a real SQLite file.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from lyra_local.config import Settings
from lyra_local.coord import AGENT_SOURCE, Coordinator
from lyra_local.memory import Memory
from lyra_local.store import Store

from .conftest import fake_client
from .fakes import FakeEmbedder

T = TypeVar("T")
THREADS = 12
ROUNDS = 12  # a new name each round: the race is narrow, so one round alone may miss it


def at_once(call: Callable[[int], T], n: int = THREADS) -> list[T]:
    """``call(i)`` for i in range(n), on n threads released together; any exception is raised here."""
    start = threading.Barrier(n)

    def run(i: int) -> T:
        start.wait()
        return call(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


def sessions_of(store: Store, source: str) -> list[tuple[str, str, int]]:
    return [(r[0], r[1], r[2]) for r in store.conn().execute(
        "SELECT source_id, name, remember FROM sessions WHERE source = ? ORDER BY id", (source,))]


def test_threads_asking_for_one_new_source_id_at_once_share_one_session(tmp_path: Path) -> None:
    store = Store(tmp_path / "data")

    def together(name: str) -> set[int]:
        return set(at_once(lambda _: store.sessions.find_or_create("openai", name, name).id))

    try:
        ids = [together(f"client {r}") for r in range(ROUNDS)]
        assert all(len(found) == 1 for found in ids)
        assert sessions_of(store, "openai") == [(f"client {r}", f"client {r}", 1) for r in range(ROUNDS)]
        off = store.sessions.find_or_create("openai-off-the-record", "client 0", "client 0", remember=False)
        assert off.id not in ids[0] and not off.remember
        again = store.sessions.find_or_create("openai", "client 0", "another name")  # found: keeps its own name
        assert ({again.id}, again.name) == (ids[0], "client 0")
    finally:
        store.close()


def test_simultaneous_first_completions_for_a_new_user_all_succeed_in_one_session(
        make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings()) as client:

        def together(user: str) -> list[int]:
            return [answer.status_code for answer in at_once(lambda i: client.post("/v1/chat/completions", json={
                "user": user, "messages": [{"role": "user", "content": f"hello {i}"}]}), 6)]

        assert [together(f"sam {r}") for r in range(ROUNDS)] == [[200] * 6] * ROUNDS
        found = [s for s in client.get("/api/sessions").json()["sessions"] if s["source"] == "openai"]
        assert sorted(s["source_id"] for s in found) == sorted(f"sam {r}" for r in range(ROUNDS))


def test_simultaneous_notes_from_a_new_agent_go_to_one_session(tmp_path: Path,
                                                               make_settings: Callable[..., Settings]) -> None:
    store = Store(tmp_path / "data")
    coordinator = Coordinator(store, make_settings(), Memory(store, FakeEmbedder()))

    def together(agent: str) -> set[int]:
        return {note["session_id"] for note in at_once(lambda i: coordinator.remember(agent, f"note {i}"))}

    try:
        assert all(len(together(f"coder {r}")) == 1 for r in range(ROUNDS))
        assert [s[0] for s in sessions_of(store, AGENT_SOURCE)] == [f"agent:coder {r}" for r in range(ROUNDS)]
    finally:
        store.close()
