"""Sources in view and corrections that stick, through the HTTP API (the real app on scripted models)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.mind import Dreamer

from .conftest import fake_client
from .fakes import FakeChatModel, FakeEmbedder
from .test_dream import add_session, respond

TURNS = ["I live in Berlin with my cat Miso, we moved here in spring.", "How lovely!",
         "The flat has a balcony where Miso sleeps all afternoon.", "Sounds perfect."]


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    settings = make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\n')
    with fake_client(settings, chat=FakeChatModel(respond=respond)) as test_client:
        yield test_client


def dream(client: TestClient) -> None:
    state = client.app.state.lyra  # type: ignore[attr-defined]
    Dreamer(state.store, FakeChatModel(respond=respond), FakeEmbedder(), state.settings).run_pass(force=True)


@pytest.fixture
def dreamt(client: TestClient) -> tuple[TestClient, int]:
    session = add_session(client.app.state.lyra.store, "moving", "2024-03-04", TURNS)  # type: ignore[attr-defined]
    dream(client)
    return client, session


def test_a_fact_shows_the_turn_that_says_it(dreamt: tuple[TestClient, int]) -> None:
    client, session = dreamt
    fact = next(f for f in client.get("/api/profile").json()["facts"] if f["key"] == "home city")
    shown = client.get(f"/api/sources/fact/{fact['id']}").json()
    assert [t["content"] for t in shown["turns"]] == [TURNS[0]]
    turn = shown["turns"][0]
    assert turn["session_id"] == session and turn["session_name"] == "moving" and turn["created_at"][:10] == "2024-03-04"
    assert turn["role"] == "user"


def test_a_gist_a_digest_and_the_arc_show_their_turns(dreamt: tuple[TestClient, int]) -> None:
    client, session = dreamt
    gist = client.get(f"/api/sessions/{session}/gist").json()["gist"]
    turns = client.get(f"/api/sources/gist/{gist['id']}").json()["turns"]
    assert turns and all(t["session_id"] == session for t in turns)
    digest = client.get("/api/digests").json()["digests"][0]
    assert client.get(f"/api/sources/digest/{digest['id']}").json()["turns"]
    arc = client.get("/api/narrative").json()
    assert arc["id"] and client.get(f"/api/sources/narrative/{arc['id']}").json()["total"] >= 1


def test_an_edited_gist_survives_a_forced_dream_and_a_deleted_one_stays_deleted(dreamt: tuple[TestClient, int]) -> None:
    client, session = dreamt
    mine = "Sam moved to Berlin; Miso the cat loves the balcony."
    edited = client.put(f"/api/sessions/{session}/gist", json={"content": mine}).json()["gist"]
    assert edited["method"] == "user"
    dream(client)
    assert client.get(f"/api/sessions/{session}/gist").json()["gist"]["content"] == mine

    assert client.delete(f"/api/sessions/{session}/gist").status_code == 200
    dream(client)
    assert client.get(f"/api/sessions/{session}/gist").json()["gist"] is None
    store = client.app.state.lyra.store  # type: ignore[attr-defined]
    with store.write() as conn:  # new turns: the session has changed, a gist is due again
        from lyra_local.store.exchanges import NewExchange
        store.exchanges.insert(conn, [NewExchange(session, "user", "Miso learnt to open the balcony door.",
                                                  "2024-03-04T10:00:00+00:00")], None, None)
    dream(client)
    assert client.get(f"/api/sessions/{session}/gist").json()["gist"] is not None


def test_a_deleted_fact_does_not_come_back(dreamt: tuple[TestClient, int]) -> None:
    client, _ = dreamt
    assert client.delete("/api/profile/home%20city").json()["retired"] == 1
    dream(client)
    assert "home city" not in {f["key"] for f in client.get("/api/profile").json()["facts"]}


def test_the_arc_and_digests_corrected_by_the_person_stay(dreamt: tuple[TestClient, int]) -> None:
    client, _ = dreamt
    client.put("/api/narrative", json={"content": "Sam is settling into Berlin."})
    digest = client.get("/api/digests").json()["digests"][0]
    client.put(f"/api/digests/{digest['id']}", json={"content": "Moved to Berlin."})
    client.patch("/api/self", json={"self_narrative": "I am learning about Sam's new home."})
    store = client.app.state.lyra.store  # type: ignore[attr-defined]
    add_session(store, "later", "2024-03-09", ["We bought a sofa for the balcony room.", "Nice."])
    dream(client)
    assert client.get("/api/narrative").json() | {"id": None} == {"narrative": "Sam is settling into Berlin.",
                                                                   "method": "user", "id": None}
    after = {d["id"]: d for d in client.get("/api/digests").json()["digests"]}
    assert after[digest["id"]]["content"] == "Moved to Berlin." and after[digest["id"]]["method"] == "user"
    assert client.get("/api/self").json()["self_state"]["self_narrative"] == "I am learning about Sam's new home."

    assert client.delete("/api/narrative").status_code == 200
    dream(client)
    assert client.get("/api/narrative").json()["narrative"] is None  # nothing changed since: not rewritten


def test_sources_of_an_unknown_memory_is_a_404(client: TestClient) -> None:
    assert client.get("/api/sources/gist/999").json()["turns"] == []
    assert client.delete("/api/sessions/999/gist").status_code == 404
    assert client.get("/api/sources/nonsense/1").status_code == 422
