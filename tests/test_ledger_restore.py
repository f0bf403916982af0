"""The forget ledger and restores, on the paths where a forget and a restore or an import meet.

Real stores (SQLite files, FAISS indexes) with the scripted fake models: every
forget is one line of ids (never a word) that a restore and an import honour,
without taking back what the person did after the backup was made.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from lyra_local.coord import Coordinator
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange
from lyra_local.store.forget import ledger
from lyra_local.store.forget.erase import forget, forget_sessions
from lyra_local.store.forget.plan import plan_forget
from lyra_local.transfer import backup as backups
from lyra_local.transfer.importer import import_conversations, import_source
from lyra_local.transfer.lyra_format import write_sessions
from lyra_local.transfer.memory_file import memory_json
from lyra_local.transfer.records import ImportedConversation, ImportedMessage
from lyra_local.transfer.sources import open_source

from .fakes import FakeEmbedder
from .test_forget_everywhere import marker_places

AT = "2024-05-01T10:00:00+00:00"


def export(store: Store, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    sessions = io.StringIO()
    write_sessions(store, sessions)
    (folder / "sessions.jsonl").write_text(sessions.getvalue(), encoding="utf-8")
    (folder / "memory.json").write_text(memory_json(store), encoding="utf-8")
    return folder


def ledger_text(data_dir: Path) -> str:
    path = ledger.path(data_dir)
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_an_agents_notes_are_each_known_by_an_id_of_their_own(store: Store, tmp_path: Path, make_settings) -> None:
    """All of an agent's notes shared one portable id (its name): a note added after an export was taken for
    one already there, and forgetting one put the agent's name into the ledger and blocked every other."""
    coordinator = Coordinator(store, make_settings(), memory=None)
    from lyra_local.memory import Memory
    coordinator.memory = Memory(store, FakeEmbedder())
    first = coordinator.remember("agent:scoutwren", "the build is green")
    folder = export(store, tmp_path / "export")
    coordinator.remember("agent:scoutwren", "the deploy is done")
    forget(store, plan_forget(store, exchange_ids=[first["id"]]))
    report, _ = import_source(store, FakeEmbedder(), open_source(folder))
    notes = [e.content for e in store.exchanges.history(first["session_id"])]
    assert notes == ["the deploy is done"], (notes, report.summary())
    assert "scoutwren" not in ledger_text(store.data_dir)


def test_a_conversation_with_the_name_of_a_forgotten_one_is_still_imported(store: Store) -> None:
    old = store.sessions.find_or_create("openai", "default", "default")
    store.exchanges.add(NewExchange(old.id, "user", "hello from before"))
    forget_sessions(store, [old.id])
    new = ImportedConversation("default", AT, [ImportedMessage("user", "hello again", AT, "m1")],
                               source="openai", source_id="default", uid="a-new-uid")
    report = import_conversations(store, FakeEmbedder(), [new])
    assert report.sessions_new == 1 and report.messages == 1, report.summary()
    assert "default" not in ledger_text(store.data_dir)  # names are hashed, never written


def test_forgetting_a_text_clears_it_from_a_client_given_conversation_name(store: Store, tmp_path: Path) -> None:
    session = store.sessions.find_or_create("openai", "Zorblax-bot", "Zorblax-bot")
    store.exchanges.add(NewExchange(session.id, "user", "hi"))
    store.exchanges.add(NewExchange(session.id, "assistant", "hello"))
    forget(store, plan_forget(store, matching="zorblax"))
    renamed = store.sessions.get(session.id)
    assert "zorblax" not in f"{renamed.name} {renamed.source_id}".lower()
    assert marker_places(tmp_path / "data", "zorblax") == []
    # the next request by that name starts a conversation of its own
    assert store.sessions.find_or_create("openai", "Zorblax-bot", "Zorblax-bot").id != session.id


def test_a_restore_does_not_undo_what_the_person_did_after_the_backup_was_made(tmp_path: Path) -> None:
    """A rename noted in the ledger was applied to every backup of the memory, even one made after the person
    had named the conversation again."""
    data = tmp_path / "data"
    store = Store(data)
    session = store.sessions.create("Plans with Quollberry")
    store.exchanges.add(NewExchange(session.id, "user", "we meet on Friday"))
    forget(store, plan_forget(store, matching="quollberry"))
    store.sessions.rename(session.id, "Trip to Rome")
    backups.backup(store, tmp_path / "after.db")
    store.close()
    done = backups.restore(tmp_path / "after.db", data, keep=tmp_path / "kept.db")
    store = Store(data)
    try:
        assert store.sessions.get(session.id).name == "Trip to Rome"
        assert done.again.forgets == 0
    finally:
        store.close()


def test_a_summary_deleted_after_a_backup_stays_deleted_when_it_is_restored(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = Store(data)
    session = store.sessions.create("garden")
    turns = [store.exchanges.add(NewExchange(session.id, "user", "the tomatoes are in")).id]
    store.derived.put_gist(session.id, "Planted the tomatoes by the lilacwall.", turns[-1], read=turns)
    backups.backup(store, tmp_path / "before.db")
    store.corrections.delete_gist(session.id)
    store.close()
    done = backups.restore(tmp_path / "before.db", data, keep=tmp_path / "kept.db")
    store = Store(data)
    try:
        assert store.derived.gist(session.id) is None and done.again.forgets == 1
        assert store.corrections.dismissed("gist") == {str(session.id): str(turns[-1])}
    finally:
        store.close()
    assert marker_places(data, "lilacwall") == []


def test_a_restore_that_fails_leaves_the_memory_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    store = Store(data)
    store.sessions.create("before")
    backups.backup(store, tmp_path / "b.db")
    store.sessions.create("after")
    store.close()

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("the disk is full")

    monkeypatch.setattr(backups, "forget_again", broken)
    with pytest.raises(OSError, match="disk is full"):
        backups.restore(tmp_path / "b.db", data, keep=tmp_path / "kept.db")
    assert not (data / backups.STAGING).exists()
    store = Store(data)
    try:
        assert sorted(s.name for s in store.sessions.list()) == ["after", "before"]
    finally:
        store.close()


def test_an_export_that_holds_what_was_forgotten_does_not_bring_back_its_derived_memory(store: Store,
                                                                                         tmp_path: Path) -> None:
    session = store.sessions.create("secret")
    turns = [store.exchanges.add(NewExchange(session.id, "user", "the vault code is 5521")).id]
    store.derived.put_gist(session.id, "The vault code is 5521.", turns[-1], read=turns)
    folder = export(store, tmp_path / "export")
    forget_sessions(store, [session.id])
    report, note = import_source(store, FakeEmbedder(), open_source(folder))
    assert report.skipped["forgotten conversation"] == 1
    assert note is not None and "not applied" in note
    assert store.derived.gists() == []
