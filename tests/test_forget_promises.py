"""Regression tests for ways forgetting, restores and corrections broke their promise.

Each test plants a word, walks the path the probe found, and looks for the
word where a person would find it: the database file, the API, a backup.
The real app (SQLite file, FAISS index, routes) runs on the scripted fake
chat model and the deterministic fake embedder.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import BinaryIO

import pytest
from fastapi.testclient import TestClient

from lyra_local.cli import main
from lyra_local.errors import LyraError
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange
from lyra_local.store.files.registry import unexplained_files
from lyra_local.store.forget.erase import forget
from lyra_local.store.forget.plan import plan_forget
from lyra_local.transfer.backup import backup, backup_file, restore
from lyra_local.transfer.importer import import_conversations
from lyra_local.transfer.records import ImportedConversation, ImportedMessage

from .fakes import FakeChatModel, FakeEmbedder
from .sse import sse_events
from .test_forget_everywhere import marker_places
from .web_fixtures import SAM, AppParts


@pytest.fixture
def app_parts() -> AppParts:
    return AppParts(SAM, FakeChatModel(n_ctx=2048))


def say(client: TestClient, session_id: int, message: str) -> list[tuple[str, dict]]:
    return sse_events(client.post(f"/api/sessions/{session_id}/chat", json={"message": message}).text.splitlines())


def messages(client: TestClient, session_id: int) -> list[dict]:
    return client.get(f"/api/sessions/{session_id}/messages").json()["messages"]


def data_dir(client: TestClient) -> Path:
    return Path(client.app.state.lyra.owner_runtime().store.data_dir)


# -- 2: forgetting a turn set aside reaches what was built from it ---------------------------------------


@pytest.mark.parametrize("edited_by_the_person", [False, True])
def test_forgetting_a_turn_set_aside_forgets_the_summary_built_from_it(client, chat, edited_by_the_person) -> None:
    session = client.post("/api/sessions", json={"name": "trip"}).json()["id"]
    chat.enqueue("Noted.", "Noted again.")
    say(client, session, "We landed in quokkavale at noon.")
    store = client.app.state.lyra.owner_runtime().store
    turns = [m["id"] for m in messages(client, session)]
    if edited_by_the_person:
        client.put(f"/api/sessions/{session}/gist", json={"content": "Our quokkavale landing."})
    else:
        store.derived.put_gist(session, "Landed in quokkavale at noon.", turns[-1], read=turns)
    edit = client.post(f"/api/exchanges/{turns[0]}/edit", json={"content": "We landed at noon."})
    assert edit.status_code == 200
    assert client.post("/api/forget", json={"matching": "quokkavale"}).json()["forgotten"] is not None
    assert client.get(f"/api/sessions/{session}/gist").json()["gist"] is None
    assert b"quokkavale" not in client.get("/api/search", params={"q": "landing noon"}).content
    assert b"quokkavale" not in client.get("/api/export").content
    assert marker_places(data_dir(client), "quokkavale") == []


# -- 3: a conversation's name goes with the text it holds -------------------------------------------------


def test_a_conversation_named_after_its_first_message_loses_the_name_when_it_is_forgotten(client, chat) -> None:
    first = "My locker code is zebrafig and I keep forgetting it"
    session = client.post("/api/sessions", json={"name": first[:48]}).json()["id"]  # as the web UI names one
    chat.enqueue("I'll remember.", "Sure.")
    say(client, session, first)
    say(client, session, "Anything else?")
    assert client.post("/api/forget", json={"exchange_ids": [messages(client, session)[0]["id"]]}).status_code == 200
    name = client.get("/api/sessions").json()["sessions"][0]["name"]
    assert "zebrafig" not in name and name.startswith("Conversation of ")
    assert marker_places(data_dir(client), "zebrafig") == []


def test_forgetting_a_text_renames_every_conversation_whose_name_holds_it(client, chat) -> None:
    kept = client.post("/api/sessions", json={"name": "Plans with Wombatine"}).json()["id"]
    chat.enqueue("Nice.")
    say(client, kept, "We will meet on Friday.")
    plan = client.post("/api/forget", json={"matching": "WOMBATINE", "dry_run": True}).json()
    assert plan["renamed"] == 1 and plan["turns"] == 0
    client.post("/api/forget", json={"matching": "wombatine"})
    assert [m["content"] for m in messages(client, kept)][0] == "We will meet on Friday."  # the turns stay
    assert b"wombatine" not in client.get("/api/sessions").content.lower()
    assert b"wombatine" not in client.get("/api/export").content.lower()
    assert marker_places(data_dir(client), "wombatine") == []


# -- found by the soak: the companion's reply to a forgotten turn, echoing it mangled, stayed ----------------


def test_a_forgotten_turn_takes_the_reply_to_it_and_nothing_else(store: Store, tmp_path: Path) -> None:
    session = store.sessions.create("notes")
    store.exchanges.add(NewExchange(session.id, "user", "the piano recital went well"))
    store.exchanges.add(NewExchange(session.id, "assistant", "lovely"))
    store.exchanges.add(NewExchange(session.id, "user", "the code word is Zqduvopubozapazuk"))
    store.exchanges.add(NewExchange(session.id, "assistant", "Akhimovopubozapazuk, I'm glad"))  # a model's echo
    store.exchanges.add(NewExchange(session.id, "user", "and the train to Porto"))
    later = store.exchanges.add(NewExchange(session.id, "assistant", "safe travels"))
    forget(store, plan_forget(store, matching="zqduvopubozapazuk"))
    said = [e.content for e in store.exchanges.history(session.id)]
    assert said == ["the piano recital went well", "lovely", "and the train to Porto", "safe travels"]
    assert marker_places(tmp_path / "data", "vopubozapazuk") == []
    # the companion's turn forgotten by id leaves the question it answered
    forget(store, plan_forget(store, exchange_ids=[later.id]))
    assert [e.content for e in store.exchanges.history(session.id)][-1] == "and the train to Porto"
    # the person's last turns found by text, with their replies, empty the conversation: it goes whole
    first = [e.id for e in store.exchanges.history(session.id)]
    plan = plan_forget(store, matching="PIANO RECITAL")
    assert plan.exchange_ids == first[:2] and plan.session_ids == []
    plan = plan_forget(store, matching="the")
    assert plan.session_ids == [session.id] and plan.exchange_ids == []


# -- 4: forgetting by text folds case and normalizes, over every kind that holds words -----------------


@pytest.mark.parametrize(("said", "asked"), [
    ("ZÖRBLAX came by", "zörblax"),
    ("Мы были в Москва", "москва"),
    (unicodedata.normalize("NFD", "un café crème"), unicodedata.normalize("NFC", "café")),
    ("the STRASSE was closed", "straße"),
    ("ﬁnally home", "finally"),
])
def test_forgetting_by_text_matches_every_case_and_unicode_form(store: Store, said: str, asked: str) -> None:
    session = store.sessions.create("notes")
    store.exchanges.add(NewExchange(session.id, "user", "hello"))
    store.exchanges.add(NewExchange(session.id, "assistant", "hi"))
    turn = store.exchanges.add(NewExchange(session.id, "user", said))
    reply = store.exchanges.add(NewExchange(session.id, "assistant", "ok"))
    store.derived.set_fact("pet", said)
    plan = plan_forget(store, matching=asked)
    assert plan.exchange_ids == [turn.id, reply.id] and plan.memories.get("fact")
    forget(store, plan)
    assert [e.content for e in store.exchanges.history(session.id)] == ["hello", "hi"]
    assert store.derived.profile() == []


# -- 5: a restore keeps nothing inside the data directory and forgets again what was forgotten -----------


def test_restoring_a_backup_made_before_a_forget_forgets_it_again_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("LYRA_DATA_DIR", str(data))
    monkeypatch.chdir(tmp_path)
    store = Store(data)
    keep = store.sessions.create("kept")
    store.exchanges.add(NewExchange(keep.id, "user", "the plants need water"))
    gone = store.sessions.create("gone")
    store.exchanges.add(NewExchange(gone.id, "user", "my pin is pelicanrust"))
    mixed = store.sessions.create("mixed")
    store.exchanges.add(NewExchange(mixed.id, "user", "we moved house"))
    store.exchanges.add(NewExchange(mixed.id, "assistant", "how exciting"))
    secret = store.exchanges.add(NewExchange(mixed.id, "user", "the alarm word is ocelotmint"))
    store.exchanges.add(NewExchange(mixed.id, "assistant", "noted"))
    store.close()
    assert main(["backup", str(tmp_path / "before.db")]) == 0
    assert main(["forget", "--session", gone.uid, "--yes"]) == 0
    assert main(["forget", "--matching", "OCELOTMINT", "--yes"]) == 0
    assert main(["restore", str(tmp_path / "before.db")]) == 0
    said = capsys.readouterr().out
    assert "forgot again what 2 forget(s) made after this backup had removed" in said, said
    assert not [p for p in data.rglob("*") if "before-restore" in p.name]
    for word in ("pelicanrust", "ocelotmint"):
        assert marker_places(data, word) == [], word
    store = Store(data)
    try:
        assert sorted(s.name for s in store.sessions.list()) == ["kept", "mixed"]
        assert store.exchanges.get(secret.id) is None
        # no id the replaced memory handed out is handed out again: a ledger line names one turn for good
        again = store.exchanges.add(NewExchange(mixed.id, "user", "a new turn"))
        assert again.id > secret.id + 1
        assert [e.content for e in store.exchanges.history(mixed.id)] == ["we moved house", "how exciting",
                                                                          "a new turn"]
    finally:
        store.close()


def test_a_restore_refuses_to_keep_the_replaced_memory_inside_the_data_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = Store(data)
    store.sessions.create("one")
    backup(store, tmp_path / "b.db")
    store.close()
    with pytest.raises(Exception, match="inside the data directory"):
        restore(tmp_path / "b.db", data, keep=data / "old.db")
    done = restore(tmp_path / "b.db", data, keep=tmp_path / "elsewhere.db")
    assert done.kept == (tmp_path / "elsewhere.db").resolve() and done.kept.is_file()


def test_a_backup_downloaded_from_the_server_leaves_no_copy_in_the_data_directory(
        client, chat, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy is written as a declared temporary (``.backup-*``, store/files/registry.py: swept after a crash) and is
    gone from the data directory once the download has it open (in the system's temporary folder, a crash would
    leave it where no recovery step looks)."""
    session = client.post("/api/sessions", json={}).json()["id"]
    chat.enqueue("ok")
    say(client, session, "remember the gannetfold")
    from lyra_local.web.routes import transfer as transfer_api
    written: list[Path] = []

    def watched(store: Store) -> BinaryIO:
        copy = backup_file(store)
        written.append(Path(copy.name))
        return copy

    monkeypatch.setattr(transfer_api, "backup_file", watched)
    assert b"gannetfold" in client.get("/api/backup").content
    assert written and written[0].name.startswith(".backup-") and not written[0].exists()
    assert unexplained_files(data_dir(client)) == []


# -- 7: a correction of the self-state is built from the version it copies ------------------------------


def test_correcting_the_mood_keeps_the_dreams_words_forgettable(client, chat) -> None:
    session = client.post("/api/sessions", json={}).json()["id"]
    chat.enqueue("ok")
    say(client, session, "I adopted a ferret called Lynxquill.")
    store = client.app.state.lyra.owner_runtime().store
    turns = [m["id"] for m in messages(client, session)]
    gist = store.derived.put_gist(session, "Sam adopted a ferret called Lynxquill.", turns[-1], read=turns)
    store.derived.set_self_state({"mood": "curious", "self_narrative": "Thinking about Lynxquill.",
                                  "reflections": ["Lynxquill matters to Sam."]}, sources=[("gist", gist.id)])
    assert client.patch("/api/self", json={"mood": "calm"}).json()["self_state"]["mood"] == "calm"
    client.post("/api/forget", json={"exchange_ids": turns})
    assert b"lynxquill" not in client.get("/api/self").content.lower()
    assert marker_places(data_dir(client), "lynxquill") == []


# -- 8: a session reference names one conversation, or is refused -----------------------------------------


def test_a_session_reference_is_never_taken_for_another_conversation(store: Store) -> None:
    mine = store.sessions.create("my diary")
    import_conversations(store, FakeEmbedder(), [ImportedConversation(
        "imported", "2024-01-01T00:00:00+00:00", [ImportedMessage("user", "hello", "2024-01-01T00:00:00+00:00")],
        uid=str(mine.id))])
    imported = store.sessions.find(uid=str(mine.id))
    assert imported is not None and imported.id != mine.id
    assert plan_forget(store, sessions=[str(mine.id)]).session_ids == [mine.id]  # the id shown, not the uid
    assert plan_forget(store, sessions=[f"#{mine.id}"]).session_ids == [mine.id]
    assert plan_forget(store, sessions=[mine.uid]).session_ids == [mine.id]  # an export's id, matching no other
    store.sessions.create(str(imported.id))  # a conversation named like another's id
    with pytest.raises(LyraError, match="names 2 conversations"):
        plan_forget(store, sessions=[str(imported.id)])
    assert plan_forget(store, sessions=["my diary"]).session_ids == [mine.id]
    store.sessions.create("New chat")
    store.sessions.create("New chat")
    with pytest.raises(LyraError, match="names 2 conversations"):
        plan_forget(store, sessions=["New chat"])


def test_the_forget_route_takes_a_number_as_an_id_and_refuses_an_ambiguous_text(client, chat) -> None:
    store = client.app.state.lyra.owner_runtime().store
    mine = store.sessions.create("diary")
    import_conversations(store, FakeEmbedder(), [ImportedConversation(
        "imported", "2024-01-01T00:00:00+00:00", [ImportedMessage("user", "hello", "2024-01-01T00:00:00+00:00")],
        uid=str(mine.id))])
    store.sessions.create(str(mine.id))  # a conversation named like the id
    refused = client.post("/api/forget", json={"sessions": [str(mine.id)]})
    assert refused.status_code == 400 and "names 2 conversations" in refused.json()["error"]["message"]
    assert client.post("/api/forget", json={"sessions": [mine.id]}).json()["sessions"] == [mine.id]
    assert sorted(s["name"] for s in client.get("/api/sessions").json()["sessions"]) == [str(mine.id), "imported"]


def test_forgetting_the_words_of_a_deleted_summary_leaves_no_trace_of_them(client, chat) -> None:
    """Found by the stateful test: a summary deleted as a correction left its words in the full-text index's
    segments and the WAL, and forgetting them then matched no row and scrubbed nothing."""
    session = client.post("/api/sessions", json={}).json()["id"]
    chat.enqueue("ok")
    say(client, session, "hello there")
    assert client.put(f"/api/sessions/{session}/gist", json={"content": "In my words: marmotquill."}
                      ).status_code == 200
    assert client.delete(f"/api/sessions/{session}/gist").status_code == 200
    assert client.post("/api/forget", json={"matching": "marmotquill", "dry_run": True}).json()["turns"] == 0
    assert client.post("/api/forget", json={"matching": "marmotquill"}).status_code == 200
    assert marker_places(data_dir(client), "marmotquill") == []


@pytest.mark.parametrize("ref", ["#99999999999999999999", "#²", "#", "#1e3"])
def test_a_session_reference_that_is_no_id_is_not_found_never_a_failure(client, ref: str) -> None:
    response = client.post("/api/forget", json={"sessions": [ref]})
    assert response.status_code == 404 and "no conversation" in response.json()["error"]["message"]


def test_forgetting_a_fact_from_search_forgets_it_and_its_history(client) -> None:
    """Search's Forget retired a fact, which keeps it in the profile's history: it was not forgotten. Forgotten,
    it goes from the history too, and the value it had replaced stays in the past."""
    client.put("/api/profile", json={"key": "locker", "value": "code 12"})
    fact = client.put("/api/profile", json={"key": "locker", "value": "code okapiwharf"}).json()
    found = client.get("/api/search", params={"q": "okapiwharf"}).json()["results"]
    assert [r["id"] for r in found if r["tier"] == "fact"] == [fact["id"]]
    assert client.post("/api/forget", json={"memories": {"fact": [fact["id"]]}}).status_code == 200
    assert b"okapiwharf" not in client.get("/api/profile/history", params={"key": "locker"}).content
    assert client.get("/api/profile").json()["facts"] == []  # the value it had replaced does not step back in
    assert [f["value"] for f in client.get("/api/profile/history", params={"key": "locker"}).json()["history"]
            ] == ["code 12"]
    assert marker_places(data_dir(client), "okapiwharf") == []
    refused = client.post("/api/forget", json={"memories": {"exchange": [1]}})
    assert refused.status_code == 400 and "cannot be forgotten by id" in refused.json()["error"]["message"]
