"""Regenerate, edit and branch, off the record, memory search and dated "Why?" through the HTTP API.

The real app (SQLite file, FAISS index, routes) on the scripted fake chat model
and the deterministic fake embedder; the same features run against the real
tiny model in ``test_web_chat_features.py`` (Chromium) and
``test_chat_features_real.py``.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lyra_local.store.forget.erase import forget_idle_off_the_record

from .fakes import FakeChatModel
from .sse import sse_events
from .web_fixtures import SAM, AppParts


@pytest.fixture
def app_parts() -> AppParts:
    return AppParts(SAM, FakeChatModel(n_ctx=2048))


def say(client: TestClient, session_id: int, message: str) -> list[tuple[str, dict]]:
    return sse_events(client.post(f"/api/sessions/{session_id}/chat", json={"message": message}).text.splitlines())


def regenerate(client: TestClient, reply_id: int) -> list[tuple[str, dict]]:
    return sse_events(client.post(f"/api/exchanges/{reply_id}/regenerate").text.splitlines())


def messages(client: TestClient, session_id: int) -> list[dict]:
    return client.get(f"/api/sessions/{session_id}/messages").json()["messages"]


def answered_twice(client: TestClient, chat: FakeChatModel, message: str, first: str, second: str) -> int:
    """A new conversation where ``message`` was answered ``first``, then regenerated as ``second``: its id."""
    session = int(client.post("/api/sessions", json={}).json()["id"])
    chat.enqueue(first, second)
    say(client, session, message)
    regenerate(client, messages(client, session)[1]["id"])
    return session


def recalled(client: TestClient, query: str) -> list[str]:
    return [h["content"] for h in client.get("/api/recall", params={"q": query, "k": 50}).json()["hits"]]


def test_regenerate_keeps_alternatives_and_only_the_chosen_one_is_remembered(client, chat) -> None:
    session = client.post("/api/sessions", json={"name": "names"}).json()["id"]
    chat.enqueue("Call the kitten Marmalade.")
    first = current = say(client, session, "What should I call my kitten?")[-1][1]["exchange_id"]
    for reply in ("Call the kitten Pumpernickel.", "Call the kitten Biscotti."):
        chat.enqueue(reply)
        got = regenerate(client, current)
        assert [k for k, _ in got][0] == "stored" and got[-1][0] == "done"
        assert "".join(d["text"] for k, d in got if k == "delta") == reply
        assert got[-1][1]["exchange_id"] > current
        current = got[-1][1]["exchange_id"]
    history = messages(client, session)
    assert [m["content"] for m in history] == ["What should I call my kitten?", "Call the kitten Biscotti."]
    reply = history[1]
    assert reply["alternatives"] == 3 and reply["chosen"] == 3 and reply["versions"][0] == first
    assert history[0]["alternatives"] == 1
    assert "Biscotti" in " ".join(recalled(client, "kitten Biscotti Marmalade Pumpernickel"))
    assert not any("Marmalade" in h or "Pumpernickel" in h for h in recalled(client, "Marmalade Pumpernickel"))

    # page back to the second reply: it is now what the conversation and recall say
    chosen = client.post(f"/api/exchanges/{reply['versions'][1]}/choose").json()["messages"]
    assert [m["content"] for m in chosen][1] == "Call the kitten Pumpernickel." and chosen[1]["chosen"] == 2
    assert messages(client, session)[1]["content"] == "Call the kitten Pumpernickel."
    assert any("Pumpernickel" in h for h in recalled(client, "Pumpernickel"))
    assert not any("Biscotti" in h for h in recalled(client, "Biscotti"))
    export = client.get("/api/export")
    with zipfile.ZipFile(io.BytesIO(export.content)) as archive:  # the chosen one is the conversation's reply;
        line = json.loads(archive.read("sessions.jsonl"))          # the others travel as versions set aside
    assert [m["content"] for m in line["messages"]][1] == "Call the kitten Pumpernickel."
    assert sorted(a["content"] for a in line["asides"]) == ["Call the kitten Biscotti.", "Call the kitten Marmalade."]


def test_regenerating_what_is_not_a_reply_is_refused_clearly(client, chat) -> None:
    session = client.post("/api/sessions", json={}).json()["id"]
    chat.enqueue("Hello.")
    user = say(client, session, "Hi")[0][1]["exchange_id"]
    refused = client.post(f"/api/exchanges/{user}/regenerate")
    assert refused.status_code == 400 and "not a reply" in refused.json()["error"]["message"]
    assert client.post("/api/exchanges/999999/regenerate").status_code == 404
    assert client.post("/api/exchanges/999999/choose").status_code == 404


def test_edit_branches_and_the_old_branch_comes_back(client, chat) -> None:
    session = client.post("/api/sessions", json={"name": "trip"}).json()["id"]
    chat.enqueue("Lisbon is lovely in May.", "Pack light.")
    say(client, session, "I fly to Lisbon on Friday.")
    say(client, session, "What should I pack?")
    before = messages(client, session)
    chat.enqueue("Porto has great bridges.")
    got = sse_events(client.post(f"/api/exchanges/{before[0]['id']}/edit",
                                 json={"content": "I fly to Porto on Friday."}).text.splitlines())
    assert got[-1][0] == "done" and got[-1][1]["exchange_id"]
    after = messages(client, session)
    assert [m["content"] for m in after] == ["I fly to Porto on Friday.", "Porto has great bridges."]
    assert after[0]["alternatives"] == 2 and after[0]["chosen"] == 2
    assert not any("Lisbon" in h for h in recalled(client, "Lisbon"))  # the old branch is not remembered
    assert any("Porto" in h for h in recalled(client, "Porto"))

    back = client.post(f"/api/exchanges/{before[0]['id']}/choose").json()["messages"]
    assert [m["content"] for m in back] == [m["content"] for m in before]  # the whole old branch, in order
    assert back[0]["chosen"] == 1 and back[0]["alternatives"] == 2
    assert any("Lisbon" in h for h in recalled(client, "Lisbon"))
    assert not any("Porto" in h for h in recalled(client, "Porto"))
    assert client.post(f"/api/exchanges/{before[1]['id']}/edit", json={"content": "x"}).status_code == 400


def test_forgetting_a_turn_forgets_its_other_versions(client, chat) -> None:
    session = answered_twice(client, chat, "first", "Keep it.", "Also keep it.")
    current = messages(client, session)[1]
    assert current["alternatives"] == 2
    assert client.post("/api/forget", json={"exchange_ids": [current["id"]]}).status_code == 200
    store_file = Path(client.get("/api/settings").json()["data_dir"]) / "lyra.db"
    assert b"Keep it." not in store_file.read_bytes()
    assert [m["role"] for m in messages(client, session)] == ["user"]


def test_off_the_record_is_never_remembered_and_goes_when_deleted(client, chat) -> None:
    kept = client.post("/api/sessions", json={"name": "kept"}).json()["id"]
    chat.enqueue("Noted.")
    say(client, kept, "My sister lives in Ghent.")
    off = client.post("/api/sessions", json={"name": "secret", "remember": False}).json()
    assert off["remember"] is False
    assert next(s for s in client.get("/api/sessions").json()["sessions"] if s["id"] == off["id"])["remember"] is False
    chat.enqueue("Your sister is in Ghent.")
    say(client, off["id"], "Where does my sister live? Also: zanzibarquokka")
    prompt = chat.history[-1][0]
    assert any("Ghent" in m["content"] for m in prompt[:-1])  # it still uses what it knows
    assert [m["content"] for m in messages(client, off["id"])][0].endswith("zanzibarquokka")
    assert not any("zanzibarquokka" in h for h in recalled(client, "zanzibarquokka"))
    found = client.get("/api/search", params={"q": "zanzibarquokka"}).json()["results"]
    assert not any("zanzibarquokka" in r["content"] for r in found)
    with zipfile.ZipFile(io.BytesIO(client.get("/api/export").content)) as archive:
        assert not any(b"zanzibarquokka" in archive.read(n) for n in archive.namelist())
    data_dir = Path(client.get("/api/settings").json()["data_dir"])
    assert client.delete(f"/api/sessions/{off['id']}").status_code == 200
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert b"zanzibarquokka" not in path.read_bytes(), path


def test_the_openai_route_off_the_record(client, chat) -> None:
    body = {"messages": [{"role": "user", "content": "remember: wallabyzephyr"}]}
    chat.enqueue("Not remembered.")
    resp = client.post("/v1/chat/completions", json=body, headers={"X-Lyra-Remember": "off", "X-Lyra-Session": "a"})
    assert resp.status_code == 200 and resp.json()["choices"][0]["message"]["content"] == "Not remembered."
    sessions = client.get("/api/sessions").json()["sessions"]
    assert [s["remember"] for s in sessions] == [False]
    assert not any("wallabyzephyr" in h for h in recalled(client, "wallabyzephyr"))
    bad = client.post("/v1/chat/completions", json=body, headers={"X-Lyra-Remember": "maybe"})
    assert bad.status_code == 400
    chat.enqueue("Remembered.")
    client.post("/v1/chat/completions", json=body, headers={"X-Lyra-Session": "a"})
    assert sorted(s["remember"] for s in client.get("/api/sessions").json()["sessions"]) == [False, True]
    assert any("wallabyzephyr" in h for h in recalled(client, "wallabyzephyr"))


def test_an_idle_off_the_record_conversation_is_deleted_after_its_hours(client, chat) -> None:
    off = client.post("/api/sessions", json={"remember": False}).json()["id"]
    recent = client.post("/api/sessions", json={"remember": False}).json()["id"]
    kept = client.post("/api/sessions", json={}).json()["id"]
    chat.enqueue("ok", "ok")
    say(client, off, "hello")
    say(client, recent, "hello")
    store = client.app.state.lyra.owner_runtime().store
    with store.write() as conn:
        conn.execute("UPDATE sessions SET updated_at = '2020-01-01T00:00:00+00:00' WHERE id IN (?, ?)", (off, kept))
    gone = forget_idle_off_the_record(store, 24, now=datetime.now(timezone.utc) + timedelta(hours=1))
    assert gone.sessions == 1
    assert sorted(s["id"] for s in client.get("/api/sessions").json()["sessions"]) == sorted([recent, kept])


def test_search_finds_each_kind_with_its_date_and_place(client, chat) -> None:
    session = client.post("/api/sessions", json={"name": "pottery"}).json()["id"]
    chat.enqueue("A kiln sounds fun!")
    say(client, session, "I bought a secondhand kiln for my pottery.")
    store = client.app.state.lyra.owner_runtime().store
    turn = messages(client, session)[0]
    store.derived.set_fact("hobby", "pottery with a kiln", source_session_id=session)
    found = client.get("/api/search", params={"q": "kiln pottery"}).json()["results"]
    tiers = {r["tier"] for r in found}
    assert {"exchange", "fact"} <= tiers
    first = next(r for r in found if r["tier"] == "exchange" and "secondhand kiln" in r["content"])
    assert first["session_id"] == session and first["session_name"] == "pottery" and first["turn_id"] == turn["id"]
    assert first["created_at"] == turn["created_at"]
    fact = next(r for r in found if r["tier"] == "fact")
    assert fact["session_name"] == "pottery"
    only = client.get("/api/search", params={"q": "kiln", "tier": "fact"}).json()["results"]
    assert {r["tier"] for r in only} == {"fact"}
    future = client.get("/api/search", params={"q": "kiln", "since": "2999-01-01"}).json()["results"]
    assert [r for r in future if r["tier"] == "exchange"] == []
    assert client.get("/api/search", params={"q": "kiln", "since": "soon"}).status_code == 400


def test_why_dates_each_recalled_memory(client, chat) -> None:
    old = client.post("/api/sessions", json={"name": "bees"}).json()["id"]
    chat.enqueue("Bees are wonderful.")
    say(client, old, "I keep two beehives on the roof.")
    new = client.post("/api/sessions", json={"name": "later"}).json()["id"]
    chat.enqueue("Your beehives!")
    reply = say(client, new, "How many beehives do I keep?")[-1][1]["exchange_id"]
    memories = client.get(f"/api/exchanges/{reply}/trace").json()["memories"]
    turn = next(m for m in memories if m["kind"] == "exchange" and "beehives" in (m["content"] or ""))
    assert turn["session_id"] == old and turn["session_name"] == "bees" and turn["created_at"][:4].isdigit()
    prompt = " ".join(m["content"] for m in chat.history[-1][0])
    assert f"{turn['created_at'][:10]}: I keep two beehives" in prompt  # the model sees the date too


def test_why_shows_a_recalled_photo_with_its_caption(client, chat) -> None:
    caption = "a golden retriever puppy running on a sandy beach"
    old = client.post("/api/sessions", json={"name": "beach"}).json()["id"]
    client.app.state.lyra.owner_runtime().memory.remember(old, "user", "", caption=caption)
    new = client.post("/api/sessions", json={"name": "later"}).json()["id"]
    chat.enqueue("He looked so happy.")
    reply = say(client, new, "Remember the retriever puppy on the beach?")[-1][1]["exchange_id"]
    memories = client.get(f"/api/exchanges/{reply}/trace").json()["memories"]
    assert [(m["content"], m["caption"]) for m in memories if m.get("caption")] == [("", caption)]


def test_forgetting_by_text_reaches_versions_set_aside(client, chat) -> None:
    session = answered_twice(client, chat, "What was the code?", "The vault code is ocelotprism.",
                             "I would rather not say.")
    assert messages(client, session)[1]["content"] == "I would rather not say."
    done = client.post("/api/forget", json={"matching": "ocelotprism"}).json()
    assert done["turns"] == 1 and done["forgotten"]["exchanges"] == 1
    assert messages(client, session)[1]["alternatives"] == 1  # the current reply stays, alone now
    data_dir = Path(client.get("/api/settings").json()["data_dir"])
    assert b"ocelotprism" not in (data_dir / "lyra.db").read_bytes()


def test_a_backup_leaves_off_the_record_conversations_out(client, chat) -> None:
    kept = client.post("/api/sessions", json={"name": "kept"}).json()["id"]
    off = client.post("/api/sessions", json={"name": "off", "remember": False}).json()["id"]
    chat.enqueue("Fine.", "Fine.")
    say(client, kept, "The plants need water on Sundays.")
    say(client, off, "Between us: pangolinorbit.")
    backup = client.get("/api/backup").content
    assert b"plants need water" in backup and b"pangolinorbit" not in backup
    assert messages(client, off)[0]["content"] == "Between us: pangolinorbit."  # the live one is still there


def test_a_regenerate_drops_the_dreams_summary_but_not_the_persons(client, chat) -> None:
    session = client.post("/api/sessions", json={}).json()["id"]
    chat.enqueue("Take the 8:15 train.", "Take the bus.")
    say(client, session, "How do I get to work tomorrow?")
    store = client.app.state.lyra.owner_runtime().store
    turns = [m["id"] for m in messages(client, session)]
    store.derived.put_gist(session, "Asked how to get to work; told to take the 8:15 train.", turns[-1], read=turns)
    regenerate(client, turns[-1])
    assert client.get(f"/api/sessions/{session}/gist").json()["gist"] is None  # it said what is no longer said
    assert client.put(f"/api/sessions/{session}/gist", json={"content": "My commute question."}).status_code == 200
    reply = messages(client, session)[-1]["id"]
    regenerate(client, reply)
    gist = client.get(f"/api/sessions/{session}/gist").json()["gist"]
    assert gist["content"] == "My commute question." and gist["method"] == "user"


def test_a_reply_to_a_message_forgotten_while_it_was_written_is_not_kept(client, chat) -> None:
    session = client.post("/api/sessions", json={}).json()["id"]
    chat.enqueue("You told me about your secret.")
    companion = client.app.state.lyra.owner_runtime().companion
    turn = companion.turn(session, "my secret is tapirlantern")
    stored = next(turn)
    assert stored.type == "stored"
    assert client.post("/api/forget", json={"exchange_ids": [stored.exchange_id]}).status_code == 200
    rest = list(turn)
    assert [e.type for e in rest][-2:] == ["error", "done"] and rest[-2].status == 409
    assert rest[-1].exchange_id is None
    assert messages(client, session) == []


def test_an_off_the_record_conversation_takes_no_summary(client, chat) -> None:
    off = client.post("/api/sessions", json={"remember": False}).json()["id"]
    refused = client.put(f"/api/sessions/{off}/gist", json={"content": "We talked about nothing."})
    assert refused.status_code == 409 and "off the record" in refused.json()["error"]["message"]


def test_an_edit_of_a_message_that_carried_a_photo_keeps_the_photo(client, chat) -> None:
    """The person changes the words they sent with a photo: the photo stays with the new version, found by it."""
    caption = "a golden retriever puppy running on a sandy beach"
    memory = client.app.state.lyra.owner_runtime().memory
    session = client.post("/api/sessions", json={"name": "beach"}).json()["id"]
    photo = memory.remember(session, "user", "look at him go", caption=caption)
    chat.enqueue("What a happy dog!")
    got = sse_events(client.post(f"/api/exchanges/{photo.id}/edit", json={"content": "look at our new puppy"})
                     .text.splitlines())
    assert got[-1][0] == "done"
    edited = messages(client, session)[0]
    assert (edited["content"], edited["caption"], edited["alternatives"]) == ("look at our new puppy", caption, 2)
    found = client.get("/api/recall", params={"q": "retriever", "k": 5, "mode": "bm25"}).json()["hits"]
    assert [(h["id"], h["caption"]) for h in found] == [(edited["id"], caption)]  # the version set aside is not
