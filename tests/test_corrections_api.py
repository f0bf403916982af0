"""Sources in view and corrections that stick, through the HTTP API (the real app on scripted models)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from lyra_local.llm.local import LocalEmbedder
from lyra_local.mind import Dreamer

from .fakes import FakeChatModel
from .test_dream import add_session, respond
from .web_fixtures import SAM, AppParts

TURNS = ["I live in Berlin with my cat Miso, we moved here in spring.", "How lovely!",
         "The flat has a balcony where Miso sleeps all afternoon.", "Sounds perfect."]


@pytest.fixture
def app_parts(embedder: LocalEmbedder) -> AppParts:
    """The scripted chat model and the real embedder: the profile's gate fits keys by meaning."""
    return AppParts(SAM + "[dream]\nsession_idle_s = 0\n", FakeChatModel(respond=respond), embedder)


def dream(client: TestClient) -> None:
    state = client.app.state.lyra  # type: ignore[attr-defined]
    Dreamer(state.owner_runtime().store, FakeChatModel(respond=respond), state.models.embed, state.settings).run_pass(force=True)


@pytest.fixture
def dreamt(client: TestClient) -> tuple[TestClient, int]:
    session = add_session(client.app.state.lyra.owner_runtime().store, "moving", "2024-03-04", TURNS)  # type: ignore[attr-defined]
    dream(client)
    return client, session


def test_a_fact_shows_the_turn_that_says_it(dreamt: tuple[TestClient, int]) -> None:
    client, session = dreamt
    fact = next(f for f in client.get("/api/profile").json()["facts"] if f["key"] == "home city")
    shown = client.get(f"/api/sources/fact/{fact['id']}").json()
    assert [t["content"] for t in shown["turns"]] == [TURNS[0]]
    turn = shown["turns"][0]
    assert turn["session_id"] == session and turn["session_name"] == "moving"
    assert turn["created_at"][:10] == "2024-03-04"
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
    store = client.app.state.lyra.owner_runtime().store  # type: ignore[attr-defined]
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


def add_turn(client: TestClient, session: int, text: str, at: str) -> None:
    """A later turn of the person's in a session: its gist is redrafted and read for facts again."""
    from lyra_local.store.exchanges import NewExchange

    store = client.app.state.lyra.owner_runtime().store  # type: ignore[attr-defined]
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(session, "user", text, at)], None, None)


def facts(client: TestClient) -> dict[str, dict[str, object]]:
    return {f["key"]: f for f in client.get("/api/profile").json()["facts"]}


def test_a_fact_is_a_card_with_where_it_was_said_and_new_until_the_person_looks(
        dreamt: tuple[TestClient, int]) -> None:
    client, session = dreamt
    card = facts(client)["home city"]
    assert card["value"] == "Berlin" and card["new"] is True and card["confirmed"] is False
    assert card["said"] == {"turn_id": card["said"]["turn_id"], "session_id": session,  # type: ignore[index]
                            "session_name": "moving", "created_at": "2024-03-04T09:00:00.000000+00:00",
                            "content": TURNS[0]}
    seen = client.post("/api/profile/seen").json()["seen_at"]
    assert client.get("/api/profile").json()["seen_at"] == seen
    assert not any(f["new"] for f in facts(client).values())
    add_turn(client, session, "I play the violin most evenings now.", "2024-03-04T10:00:00+00:00")
    dream(client)
    assert facts(client)["hobbies"]["new"] is True and facts(client)["home city"]["new"] is False


def test_a_confirmed_fact_is_the_persons_and_a_dream_does_not_change_it(dreamt: tuple[TestClient, int]) -> None:
    client, session = dreamt
    card = facts(client)["home city"]
    confirmed = client.post(f"/api/profile/facts/{card['id']}/confirm").json()["fact"]
    assert confirmed["author"] == "user" and facts(client)["home city"]["confirmed"] is True
    later = add_session(client.app.state.lyra.owner_runtime().store, "later", "2024-05-01",  # type: ignore[attr-defined]
                        ["I live in Hamburg now, since May.", "Oh, nice!"])
    dream(client)
    now = facts(client)["home city"]
    assert (now["id"], now["value"], now["author"]) == (card["id"], "Berlin", "user")  # unchanged, not superseded
    assert client.get(f"/api/sources/fact/{card['id']}").json()["turns"][0]["content"] == TURNS[0]
    assert later  # the newer session was dreamt over: it simply may not change the person's statement
    assert client.post("/api/profile/facts/999/confirm").status_code == 404


def test_a_rejected_fact_is_not_learnt_again_from_what_was_said_but_may_be_from_what_is_said_later(
        dreamt: tuple[TestClient, int]) -> None:
    client, session = dreamt
    card = facts(client)["home city"]
    assert client.post(f"/api/profile/facts/{card['id']}/reject").json()["deleted"] >= 1
    assert "home city" not in facts(client)
    add_turn(client, session, "Miso found a sunny spot on the balcony again.", "2024-03-04T10:00:00+00:00")
    dream(client)  # the gist is redrafted and read again: the old turn still says Berlin
    assert "home city" not in facts(client)
    add_turn(client, session, "To be clear: I live in Berlin, really.", "2024-03-04T11:00:00+00:00")
    dream(client)  # said anew after "that's wrong": learnt again, from the new turn
    again = facts(client)["home city"]
    assert again["said"]["content"] == "To be clear: I live in Berlin, really."  # type: ignore[index]
    assert client.post("/api/profile/facts/999/reject").status_code == 404


def test_the_arc_and_digests_corrected_by_the_person_stay(dreamt: tuple[TestClient, int]) -> None:
    client, _ = dreamt
    client.put("/api/narrative", json={"content": "Sam is settling into Berlin."})
    digest = client.get("/api/digests").json()["digests"][0]
    client.put(f"/api/digests/{digest['id']}", json={"content": "Moved to Berlin."})
    client.patch("/api/self", json={"self_narrative": "I am learning about Sam's new home."})
    store = client.app.state.lyra.owner_runtime().store  # type: ignore[attr-defined]
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
