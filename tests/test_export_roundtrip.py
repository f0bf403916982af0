"""An export is the memory, whole: importing it elsewhere gives the same export, and importing it again here
adds nothing, whatever was edited, regenerated, corrected or forgotten in between.

The real store (SQLite file, FAISS index) with the scripted fake models; the dream is ``test_dream.py``'s
scripted summary model, so a pass that could overwrite the person's words really runs.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from lyra_local.config import Settings
from lyra_local.store import Store
from lyra_local.store.branches import set_aside
from lyra_local.store.exchanges import NewExchange
from lyra_local.store.forget.erase import forget_exchanges, forget_sessions
from lyra_local.transfer.importer import import_conversations, import_source
from lyra_local.transfer.lyra_format import read_lyra_lines, write_sessions
from lyra_local.transfer.memory_file import memory_json, restore_memory
from lyra_local.transfer.records import ImportProblem
from lyra_local.transfer.sources import open_source

from .fakes import FakeEmbedder
from .test_dream import add_session, dreamer


@pytest.fixture()
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\n')


def export(store: Store, folder: Path) -> tuple[str, str]:
    """``lyra export``'s two files, as text."""
    sessions = io.StringIO()
    write_sessions(store, sessions)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sessions.jsonl").write_text(sessions.getvalue(), encoding="utf-8")
    (folder / "memory.json").write_text(memory_json(store), encoding="utf-8")
    return sessions.getvalue(), memory_json(store)


def import_into(store: Store, folder: Path) -> dict[str, object]:
    report, note = import_source(store, FakeEmbedder(), open_source(folder))
    return {**report.summary(), "memory": note}


def path_of(store: Store, session_id: int) -> list[str]:
    return [e.content for e in store.exchanges.history(session_id)]


def edit(store: Store, session_id: int, turn_id: int, text: str) -> None:
    """What an Edit does to the store: the turn and what followed it set aside, the new version on the path."""
    store.exchanges.add(NewExchange(session_id, "user", text), replacing=turn_id)


def test_every_portable_column_of_the_memory_file_has_a_translator() -> None:
    from lyra_local.store.kinds import KINDS, MEMORY_FILE
    from lyra_local.store.memory_dump import PORTABLE_OUT
    for kind in KINDS.values():
        if kind.export is not None and kind.export.file == MEMORY_FILE:
            for column in kind.export.portable:
                assert (kind.name, column) in PORTABLE_OUT, (kind.name, column)


def test_importing_your_own_export_after_an_edit_adds_nothing(store: Store, tmp_path: Path) -> None:
    sid = add_session(store, "trip", "2024-05-01", ["We went to Porto", "Nice!", "The food was great", "Yum"])
    export(store, tmp_path / "before")
    turns = [e.id for e in store.exchanges.history(sid)]
    edit(store, sid, turns[2], "The wine was great")  # the reply that followed is set aside with it
    report = import_into(store, tmp_path / "before")
    assert report["messages"] == 0 and report["sessions_unchanged"] == 1, report
    assert path_of(store, sid) == ["We went to Porto", "Nice!", "The wine was great"]


def test_importing_an_export_made_before_a_forget_does_not_bring_it_back(store: Store, tmp_path: Path) -> None:
    sid = add_session(store, "codes", "2024-05-01", ["Hi", "Hello", "My code is 7741", "Noted"])
    other = add_session(store, "gone", "2024-05-02", ["The alarm is lynx", "ok"])
    export(store, tmp_path / "before")
    forget_exchanges(store, [e.id for e in store.exchanges.history(sid)][2:])
    forget_sessions(store, [other])
    report = import_into(store, tmp_path / "before")
    assert report["messages"] == 0, report
    assert report["skipped"] == {"forgotten message": 2, "forgotten conversation": 1}, report
    assert path_of(store, sid) == ["Hi", "Hello"]
    assert [s.name for s in store.sessions.list()] == ["codes"]


def test_export_import_elsewhere_export_is_identical_with_branches_and_corrections(
        tmp_path: Path, settings: Settings) -> None:
    store = Store(tmp_path / "one")
    try:
        moving = add_session(store, "moving", "2024-03-04", ["I live in Berlin with my cat Miso", "How lovely!"])
        plans = add_session(store, "plans", "2024-03-05", ["Thinking about the summer", "Tell me more",
                                                           "Maybe Lisbon", "Sounds good"])
        later = add_session(store, "later", "2024-04-20", ["Work was long today", "Rest well"])
        assert dreamer(store, settings).run_pass(force=True).status == "done"
        store.corrections.edit_gist(moving, "My move to Berlin, in my words.")
        store.corrections.delete_gist(plans)
        store.derived.delete_fact("pet")
        reply = store.exchanges.history(later)[-1].id
        with store.write() as conn:  # a regenerate: the reply set aside, another on the path
            set_aside(conn, later, reply)
        store.exchanges.add(NewExchange(later, "assistant", "Sleep well"))
        sessions_one, memory_one = export(store, tmp_path / "export")
        lines = [json.loads(line) for line in sessions_one.splitlines()]
        assert [len(line.get("asides", [])) for line in lines] == [0, 0, 1]
        assert all(m["source_id"] for line in lines for m in line["messages"])
        memory = json.loads(memory_one)
        assert [g["method"] for g in memory["gists"] if "my words" in g["content"]] == ["user"]
        assert [d["kind"] for d in memory["dismissed"]] == ["gist"]
    finally:
        store.close()

    two = Store(tmp_path / "two")
    try:
        report = import_into(two, tmp_path / "export")
        assert report["memory"] and "memory restored" in str(report["memory"]), report
        sessions_two, memory_two = export(two, tmp_path / "export-two")
        assert sessions_two == sessions_one
        assert memory_two == memory_one
        again = import_into(two, tmp_path / "export-two")
        assert again["messages"] == 0 and again["sessions_new"] == 0, again
        assert export(two, tmp_path / "export-three") == (sessions_one, memory_one)

        # the person's summary is theirs, and the one they deleted stays deleted, after a dream pass here too
        assert dreamer(two, settings).run_pass(force=True).status == "done"
        by_name = {s.name: s.id for s in two.sessions.list()}
        gist = two.derived.gist(by_name["moving"])
        assert gist is not None and gist.content == "My move to Berlin, in my words." and gist.method == "user"
        assert two.derived.gist(by_name["plans"]) is None
        # the version set aside came back as a version of its own, and can be chosen again
        versions = two.branches.versions(by_name["later"])
        assert [v.count for v in versions.values()] == [2]
        aside = next(i for v in versions.values() for i in v.ids if i not in
                     {e.id for e in two.exchanges.history(by_name["later"])})
        two.branches.choose(aside)
        assert path_of(two, by_name["later"])[-1] == "Rest well"
    finally:
        two.close()


def test_an_older_memory_file_without_methods_or_deletions_still_imports(store: Store) -> None:
    lines = list(read_lyra_lines(['{"id": "s1", "name": "n", "messages": [{"role": "user", "content": "hi", '
                                  '"created_at": "2024-01-01T00:00:00Z"}]}'], "x"))
    import_conversations(store, FakeEmbedder(), lines)  # type: ignore[arg-type]
    restored = restore_memory(store, FakeEmbedder(), {
        "format": "lyra-memory", "version": 1, "profile": [], "digests": [], "narrative": None,
        "self_state": None, "world": [], "gists": [{"session": "s1", "content": "Said hi.", "covers_turns": 1,
                                                   "created_at": "2024-01-01T00:00:00+00:00",
                                                   "updated_at": "2024-01-01T00:00:00+00:00"}]})
    assert restored["gists"] == 1 and store.derived.gists()[0].method == "abstractive"


def test_a_summary_the_person_edited_or_deleted_stays_so_after_export_and_import(
        tmp_path: Path, settings: Settings) -> None:
    store = Store(tmp_path / "one")
    try:
        moving = add_session(store, "moving", "2024-03-04", ["I live in Berlin with my cat Miso", "How lovely!"])
        plans = add_session(store, "plans", "2024-03-05", ["Thinking about the summer", "Tell me more"])
        assert dreamer(store, settings).run_pass(force=True).status == "done"
        store.corrections.edit_gist(moving, "My move, in my own words.")
        store.corrections.delete_gist(plans)
        export(store, tmp_path / "export")
    finally:
        store.close()
    two = Store(tmp_path / "two")
    try:
        import_into(two, tmp_path / "export")
        assert dreamer(two, settings).run_pass(force=True).status == "done"
        by_name = {s.name: s.id for s in two.sessions.list()}
        gist = two.derived.gist(by_name["moving"])
        assert gist is not None and (gist.content, gist.method) == ("My move, in my own words.", "user")
        assert two.derived.gist(by_name["plans"]) is None
    finally:
        two.close()


# -- who wrote a reply, and how it ended ---------------------------------------------------


def chatgpt_then_lyra(store: Store, tmp_path: Path) -> int:
    """A ChatGPT conversation imported, then gone on with here: a reply of Lyra's cut at the length limit, and
    a version of it set aside that Stop cut short."""
    from lyra_local.transfer.chatgpt import read_chatgpt

    from .chatgpt_export import conversation, write_export
    export_file = write_export(tmp_path / "chatgpt.zip", [conversation("c1", "Interview prep", [
        ("user", "Hi! I'm Maya. I have an interview on 2 May, can you help me prepare?"),
        ("assistant", "Of course. Start by listing the three things you are proudest of.")])])
    import_conversations(store, FakeEmbedder(), read_chatgpt(export_file))
    session = store.sessions.list()[0].id
    asked = store.exchanges.add(NewExchange(session, "user", "Thanks! What should I wear?"))
    stopped = store.exchanges.add_reply(session, "Something you feel", [], 0, answering=asked.id, ending="stopped")
    store.exchanges.add_reply(session, "A plain dark suit and", [], 0, replacing=stopped.id, ending="length")
    return session


def test_who_wrote_a_reply_and_how_it_ended_survive_export_and_import(tmp_path: Path) -> None:
    one = Store(tmp_path / "one")
    try:
        session = chatgpt_then_lyra(one, tmp_path)
        assert [(e.role, e.author, e.ending) for e in one.exchanges.history(session)] == [
            ("user", None, None), ("assistant", "ChatGPT", None), ("user", None, None), ("assistant", None, "length")]
        sessions_one, _ = export(one, tmp_path / "export")
    finally:
        one.close()
    line = json.loads(sessions_one)
    assert [(m["author"], m["ending"]) for m in line["messages"]] == [
        (None, None), ("ChatGPT", None), (None, None), (None, "length")]
    assert [(a["author"], a["ending"]) for a in line["asides"]] == [(None, "stopped")]

    two = Store(tmp_path / "two")
    try:
        import_into(two, tmp_path / "export")
        here = two.sessions.list()[0].id
        assert [(e.author, e.ending) for e in two.exchanges.history(here)] == [
            (None, None), ("ChatGPT", None), (None, None), (None, "length")]
        aside = next(i for v in two.branches.versions(here).values() for i in v.ids
                     if i not in {e.id for e in two.exchanges.history(here)})
        two.branches.choose(aside)  # the version Stop cut short is still marked, and still Lyra's
        assert [(e.content, e.author, e.ending) for e in two.exchanges.history(here)][-1] == (
            "Something you feel", None, "stopped")
    finally:
        two.close()

    three = Store(tmp_path / "three")
    try:  # imported elsewhere, the export is the same, every author and ending in place
        import_into(three, tmp_path / "export")
        assert export(three, tmp_path / "export-three")[0] == sessions_one
    finally:
        three.close()


def test_an_export_from_before_authors_were_stored_credits_only_imported_replies_to_chatgpt(
        tmp_path: Path) -> None:
    """Before authors were stored an export wrote no ``author``: a reply that kept ChatGPT's id is ChatGPT's; one
    with a Lyra portable id (``<origin>:<turn id>``) was written in Lyra, after the import."""
    line = {"id": "s-1", "name": "Interview prep", "created_at": "2023-05-08T13:36:40+00:00", "source": "chatgpt",
            "source_id": "c1", "messages": [
                {"role": "user", "content": "Hi! I'm Maya.", "created_at": "2023-05-08T13:36:40+00:00",
                 "source_id": "c1-m0"},
                {"role": "assistant", "content": "Hello Maya.", "created_at": "2023-05-08T13:37:40+00:00",
                 "source_id": "0f3c2a9e-5b1d-4c7e-9a2f-1d2e3f4a5b6c"},
                {"role": "user", "content": "Thanks!", "created_at": "2024-01-02T10:00:00+00:00",
                 "source_id": "a1b2c3d4e5f6:12"},
                {"role": "assistant", "content": "Any time.", "created_at": "2024-01-02T10:00:05+00:00",
                 "source_id": "a1b2c3d4e5f6:13"}]}
    conversation = next(read_lyra_lines([json.dumps(line)], "old.jsonl"))
    assert not isinstance(conversation, ImportProblem)
    assert [m.author for m in conversation.messages] == [None, "ChatGPT", None, None]
    store = Store(tmp_path / "data")
    try:
        import_conversations(store, FakeEmbedder(), [conversation])
        assert [e.author for e in store.exchanges.history(store.sessions.list()[0].id)] == [
            None, "ChatGPT", None, None]
    finally:
        store.close()


@pytest.mark.parametrize(("field", "value"), [("ending", "cut"), ("author", 3), ("author", " ")])
def test_an_author_or_ending_no_export_writes_is_a_problem_naming_the_line(field: str, value: object) -> None:
    line = {"id": "s-1", "name": "x", "messages": [
        {"role": "assistant", "content": "Hi", "created_at": "2024-01-02T10:00:00+00:00", field: value}]}
    found = list(read_lyra_lines(["{\"id\": \"s-0\", \"name\": \"ok\", \"messages\": []}", json.dumps(line)],
                                 "x.jsonl"))
    assert isinstance(found[1], ImportProblem) and field in found[1].what and found[1].where == "x.jsonl line 2"
