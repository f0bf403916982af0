"""Whose memory a piece of code reaches is explicit: a thread a route starts reaches only the memory of the
person it is handed (``you: AsPerson``); asking the app for one reaches none instead of the owner's, and
the server's background jobs (the heartbeat that also finishes removals, the off-the-record sweep, the
dream's backlogs, the re-embedding retry and catch-up) run on a thread with no person bound, so each reaches
every store through the person it names. The real app on scripted models, real SQLite and FAISS.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from lyra_local.llm.registry import Models
from lyra_local.web import create_app
from lyra_local.web.background import (
    _catch_up_embeddings,
    expire_off_the_record,
    heartbeat,
    retry_failed_re_embedding,
)
from lyra_local.web.deps import AsPerson, app_state

from .fakes import FakeChatModel, FakeEmbedder

BASE = "http://127.0.0.1"


@pytest.fixture
def app(make_settings: Any) -> Iterator[FastAPI]:
    """Ada (the owner) and Ben, each with a conversation of their own; a route that starts a bare thread."""
    settings = make_settings('[companion]\nuser_name = "Ada"\n')
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(), embed=FakeEmbedder()))  # type: ignore[arg-type]

    @app.get("/test/bare-thread")
    def bare_thread(request: Request, you: AsPerson) -> dict[str, Any]:
        """Whose conversations a thread started here without the request's context reads."""
        seen: dict[str, Any] = {"in_request": [s.name for s in you.store.sessions.list()]}

        def work() -> None:
            try:
                seen["in_thread"] = [s.name for s in app_state(request).store.sessions.list()]
            except Exception as exc:  # noqa: BLE001 - what the thread ran into is the answer
                seen["in_thread"] = type(exc).__name__

        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        return seen

    with TestClient(app, base_url=BASE) as ada:
        assert ada.put("/api/me/secret", json={"secret": "ada-password-1"}).status_code == 200
        assert ada.post("/api/people", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        assert ada.post("/api/sessions", json={"name": "Ada's diary"}).status_code == 201
        app.state.ada = ada
        yield app


def test_a_thread_without_the_requests_context_reaches_no_memory(app: FastAPI) -> None:
    ben = TestClient(app, base_url=BASE)
    assert ben.post("/api/auth/login", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
    assert ben.post("/api/sessions", json={"name": "Ben's notes"}).status_code == 201
    seen = ben.get("/test/bare-thread").json()
    assert seen["in_request"] == ["Ben's notes"]
    assert seen["in_thread"] == "Unbound"  # never Ada's diary


def in_a_thread_of_its_own(job: Callable[[], object]) -> None:
    """Run ``job`` on a thread with no person bound (as the scheduler does), re-raising what it raised."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the test's thread
            failed.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if failed:
        raise failed[0]


def test_the_servers_background_jobs_name_the_person_whose_memory_they_reach(app: FastAPI) -> None:
    state = app.state.lyra
    jobs: dict[str, Callable[[], object]] = {
        "heartbeat (and finishing removals)": lambda: heartbeat(state),
        "off-the-record sweep": lambda: expire_off_the_record(state),
        "the dream's backlogs": state.backlogs,
        "re-embedding retry": lambda: retry_failed_re_embedding(state),
        "re-embedding catch-up": lambda: _catch_up_embeddings(state, None),
        "the held counts of a removal": lambda: [state.held(p) for p in state.household.people()],
    }
    for name, job in jobs.items():
        try:
            in_a_thread_of_its_own(job)
        except Exception as exc:
            raise AssertionError(f"{name} reached a memory without naming its person: {exc}") from exc
    assert set(state.backlogs()) == {p.id for p in state.household.people()}  # everyone's memory was reached
