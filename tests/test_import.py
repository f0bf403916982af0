"""Importing a ChatGPT export and Lyra's own format: branches, parts, timestamps, idempotence, bad input."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from lyra_local.llm.local import LocalEmbedder
from lyra_local.memory import Memory, RecallQuery
from lyra_local.store import Store
from lyra_local.transfer.chatgpt import parse_conversation, read_chatgpt
from lyra_local.transfer.importer import import_conversations
from lyra_local.transfer.records import ImportFormatError, ImportProblem
from lyra_local.transfer.sources import open_source

from .chatgpt_export import T0, conversation, message, write_export
from .fakes import FakeEmbedder


def branched() -> dict:
    """The user edited their first message: the old branch stays in the tree, the current one is the edit."""
    conv = conversation("c-edit", "Moving plans", [("user", "I might move to Porto"), ("assistant", "Porto is lovely")])
    conv["mapping"]["edit-u"] = {"id": "edit-u", "parent": "sys", "children": ["edit-a"],
                                 "message": message("edit-u", "user", ["I am moving to Lisbon in May"], at=T0 + 500)}
    conv["mapping"]["sys"]["children"].append("edit-u")
    conv["mapping"]["edit-a"] = {"id": "edit-a", "parent": "edit-u", "children": [],
                                 "message": message("edit-a", "assistant", ["Lisbon in May, how exciting!"],
                                                    at=T0 + 560)}
    conv["current_node"] = "edit-a"
    return conv


def rich() -> dict:
    """Multimodal parts, code, a tool call and its output, a hidden message, a missing timestamp, unicode."""
    conv = conversation("c-rich", "Café ☕ and code", [("user", "Grüße aus Köln! 🎉")])
    nodes = [
        message("mm", "user", ["Here is my balcony:", {"content_type": "image_asset_pointer", "asset_pointer": "x"}],
                at=T0 + 100, content_type="multimodal_text"),
        message("code", "assistant", None, at=T0 + 160, content_type="code", language="python",
                text="print('hi')"),
        message("tool", "tool", None, at=T0 + 170, content_type="execution_output", text="hi"),
        message("hidden", "user", ["(memory context)"], at=T0 + 175, hidden=True),
        message("late", "assistant", ["Schöner Balkon — 12 m² is plenty."], at=None),
    ]
    parent = conv["current_node"]
    for m in nodes:
        conv["mapping"][m["id"]] = {"id": m["id"], "message": m, "parent": parent, "children": []}
        conv["mapping"][parent]["children"].append(m["id"])
        parent = m["id"]
    conv["current_node"] = parent
    return conv


def test_the_current_branch_is_imported_not_the_abandoned_edit() -> None:
    c = parse_conversation(branched())
    assert [(m.role, m.content) for m in c.messages] == [("user", "I am moving to Lisbon in May"),
                                                         ("assistant", "Lisbon in May, how exciting!")]
    assert c.source == "chatgpt" and c.source_id == "c-edit" and c.name == "Moving plans"
    assert c.created_at.startswith("2023-05-08T13:36") and c.skipped["instructions to ChatGPT"] == 1


def test_parts_code_tools_hidden_timestamps_and_unicode() -> None:
    c = parse_conversation(rich())
    assert [m.content for m in c.messages] == ["Grüße aus Köln! 🎉",
                                               "Here is my balcony:\n[an image was here; not imported]",
                                               "```python\nprint('hi')\n```", "Schöner Balkon — 12 m² is plenty."]
    assert c.messages[-1].created_at == c.messages[-2].created_at  # no timestamp: the one before it
    assert c.skipped == {"instructions to ChatGPT": 1, "images": 1, "results of ChatGPT's tools": 1,
                         "hidden messages": 1}  # in words a person reads, not ChatGPT's names
    assert c.name == "Café ☕ and code"


def test_import_is_idempotent_and_a_newer_export_adds_only_what_is_new(tmp_path: Path, store: Store) -> None:
    first = write_export(tmp_path / "export.zip", [branched(), rich()])
    report = import_conversations(store, FakeEmbedder(), open_source(first).read())
    assert (report.sessions_new, report.messages) == (2, 6) and report.problems == []
    again = import_conversations(store, FakeEmbedder(), open_source(first).read())
    assert (again.sessions_new, again.sessions_unchanged, again.messages) == (0, 2, 0)

    newer = branched()
    newer["mapping"]["edit-a"]["children"] = ["more"]
    newer["mapping"]["more"] = {"id": "more", "parent": "edit-a", "children": [],
                                "message": message("more", "user", ["We found a flat in Alfama!"], at=T0 + 9000)}
    newer["current_node"] = "more"
    later = conversation("c-new", "Flat hunting", [("user", "The flat has a balcony"), ("assistant", "Great")],
                         start=T0 + 86400 * 30)
    third = import_conversations(store, FakeEmbedder(),
                                 open_source(write_export(tmp_path / "newer.zip", [newer, rich(), later])).read())
    assert (third.sessions_new, third.sessions_updated, third.sessions_unchanged, third.messages) == (1, 1, 1, 3)
    session = store.sessions.find(source="chatgpt", source_id="c-edit")
    assert session is not None
    history = store.exchanges.history(session.id)
    assert [e.content for e in history][-1] == "We found a flat in Alfama!"
    assert history[0].created_at.startswith("2023-05-08T13:45")  # the message's real time
    assert store.sessions.find(source="chatgpt", source_id="c-new").created_at.startswith("2023-06-07")  # type: ignore[union-attr]


def test_a_broken_conversation_is_named_and_the_rest_imports(tmp_path: Path, store: Store) -> None:
    broken = conversation("c-broken", "Lost parent", [("user", "hello"), ("assistant", "hi")])
    broken["mapping"]["c-broken-m1"]["parent"] = "gone"
    looping = conversation("c-loop", "Loop", [("user", "a")])
    looping["mapping"]["root"]["parent"] = "c-loop-m0"
    no_current = conversation("c-nocur", "Nowhere", [("user", "a")], current="missing-node")
    items = list(read_chatgpt(write_export(tmp_path / "e.json", [broken, branched(), looping, no_current, 42],
                                           as_zip=False)))
    problems = [i for i in items if isinstance(i, ImportProblem)]
    assert [p.where for p in problems] == ['conversation 1 “Lost parent” (c-broken)', 'conversation 3 “Loop” (c-loop)',
                                           'conversation 4 “Nowhere” (c-nocur)', "conversation 5"]
    assert "parent gone" in problems[0].what and "loops" in problems[1].what
    assert "missing-node" in problems[2].what and "not a conversation" in problems[3].what
    report = import_conversations(store, FakeEmbedder(), items)
    assert report.sessions_new == 1 and len(report.problems) == 4


def test_bad_files_say_what_is_wrong_and_import_nothing(tmp_path: Path, store: Store) -> None:
    good = write_export(tmp_path / "good.zip", [branched()])
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    not_json = tmp_path / "conversations.json"
    not_json.write_text('[{"title": "x", "mapping": {', encoding="utf-8")
    other = tmp_path / "notes.json"
    other.write_text(json.dumps({"notes": ["a", "b"]}), encoding="utf-8")
    csv = tmp_path / "data.csv"
    csv.write_text("a,b\n1,2\n", encoding="utf-8")
    no_conversations = tmp_path / "other.zip"
    with zipfile.ZipFile(no_conversations, "w") as archive:
        archive.writestr("readme.txt", "hi")
    cases = {truncated: "not a complete zip", not_json: "not valid JSON", other: "not Lyra JSON Lines",
             csv: "neither a ChatGPT export", no_conversations: "without a conversations.json"}
    for path, expected in cases.items():
        with pytest.raises(ImportFormatError) as err:
            import_conversations(store, FakeEmbedder(), open_source(path).read())
        assert expected in err.value.message and str(path.name) in err.value.message and err.value.hint
    assert store.sessions.count() == 0


class Crashing(FakeEmbedder):
    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if len(self.calls) >= self.after:
            raise RuntimeError("power cut")
        return super().embed(texts)


def test_an_interrupted_import_leaves_whole_conversations_and_resumes(tmp_path: Path, store: Store) -> None:
    convs = [conversation(f"c{i}", f"chat {i}", [("user", f"message {i}.{j}") if j % 2 == 0 else
                                                 ("assistant", f"reply {i}.{j}") for j in range(7)],
                          start=T0 + 3600 * i) for i in range(40)]
    export = write_export(tmp_path / "big.zip", convs)
    with pytest.raises(RuntimeError, match="power cut"):
        import_conversations(store, Crashing(after=2), open_source(export).read(), batch_messages=50)
    counts = [r[0] for r in store.conn().execute(
        "SELECT count(e.id) FROM sessions s LEFT JOIN exchanges e ON e.session_id = s.id GROUP BY s.id")]
    assert counts and all(n == 7 for n in counts) and len(counts) < 40  # only whole conversations
    resumed = import_conversations(store, FakeEmbedder(), open_source(export).read(), batch_messages=50)
    assert resumed.sessions_unchanged == len(counts) and resumed.sessions_new == 40 - len(counts)
    assert store.exchanges.count() == 280


def test_lyra_jsonl_keeps_ids_and_reports_bad_lines(tmp_path: Path, store: Store) -> None:
    path = tmp_path / "sessions.jsonl"
    lines = [{"id": "s-1", "name": "Garden", "messages": [
                {"role": "user", "content": "Tomatoes 🍅", "created_at": "2023-05-08T13:56:00+00:00"},
                {"role": "assistant", "content": "Lovely", "created_at": "2023-05-08T13:57:00+00:00"}]},
             {"id": "s-2", "name": "Bad", "messages": [{"role": "robot", "content": "x", "created_at": "2023"}]},
             {"id": "s-3", "name": "Bad date", "messages": [{"role": "user", "content": "x", "created_at": "soon"}]}]
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n{oops\n", encoding="utf-8")
    report = import_conversations(store, FakeEmbedder(), open_source(path).read())
    assert report.sessions_new == 1 and [p.where for p in report.problems] == [
        "sessions.jsonl line 2", "sessions.jsonl line 3", "sessions.jsonl line 4"]
    session = store.sessions.find(uid="s-1")
    assert session is not None and session.created_at == "2023-05-08T13:56:00.000000+00:00"  # the store's UTC form
    again = import_conversations(store, FakeEmbedder(), open_source(path, "lyra").read())
    assert again.messages == 0 and again.sessions_unchanged == 1


def test_imported_history_is_recalled_with_the_real_embedder(
        tmp_path: Path, store: Store, embedder: LocalEmbedder) -> None:
    convs = [branched(), rich(), conversation("c-w", "Don Quixote", [("user", "We talked about windmills and "
                                                                       "Rocinante in La Mancha"),
                                                                      ("assistant", "A fine knight")])]
    report = import_conversations(store, embedder, open_source(write_export(tmp_path / "e.zip", convs)).read())
    assert report.messages == 8 and report.embed_s > 0
    hits = Memory(store, embedder).recall(RecallQuery("Rocinante windmills", k=3, mode="dense"))
    assert "windmills" in hits[0].content


class ForgettingWhileEmbedding(FakeEmbedder):
    """An embedder during whose work the person forgets the session being added to."""

    def __init__(self, store: Store, session_id: int) -> None:
        super().__init__()
        self.store, self.session_id = store, session_id

    def embed(self, texts):  # type: ignore[no-untyped-def]
        from lyra_local.store.forget.erase import forget_sessions

        forget_sessions(self.store, [self.session_id])
        return super().embed(texts)


def test_an_import_adding_to_a_session_forgotten_meanwhile_writes_nothing_to_it(store: Store) -> None:
    from lyra_local.transfer.records import ImportedConversation, ImportedMessage

    first = ImportedConversation("diary", "2024-01-01T00:00:00+00:00",
                                 [ImportedMessage("user", "day one", "2024-01-01T00:00:00+00:00", "m1")],
                                 source="x", source_id="c1")
    import_conversations(store, FakeEmbedder(), [first])
    session = store.conn().execute("SELECT id FROM sessions").fetchone()[0]
    later = ImportedConversation("diary", "2024-01-01T00:00:00+00:00", [
        *first.messages, ImportedMessage("user", "day two, the secret", "2024-01-02T00:00:00+00:00", "m2")],
        source="x", source_id="c1")
    report = import_conversations(store, ForgettingWhileEmbedding(store, session), [later])
    assert store.exchanges.count() == 0 and store.sessions.count() == 0
    assert any("forgotten while importing" in p.what for p in report.problems), report.problems


def test_a_message_an_earlier_import_left_out_is_not_appended_out_of_order(tmp_path: Path, store: Store) -> None:
    import_conversations(store, FakeEmbedder(), open_source(write_export(tmp_path / "a.zip", [rich()])).read())
    before = [m.content for m in store.exchanges.history(store.sessions.list()[0].id)]
    later = rich()  # the same export, now with an image-only message after "mm" (kept now, with its placeholder)
    image = message("img", "user", [{"content_type": "image_asset_pointer", "asset_pointer": "y"}], at=T0 + 120,
                    content_type="multimodal_text")
    later["mapping"]["img"] = {"id": "img", "message": image, "parent": "mm", "children": ["code"]}
    later["mapping"]["mm"]["children"] = ["img"]
    later["mapping"]["code"]["parent"] = "img"
    assert "[an image was here; not imported]" in [m.content for m in parse_conversation(later).messages]
    report = import_conversations(store, FakeEmbedder(), open_source(write_export(tmp_path / "b.zip", [later])).read())
    assert report.messages == 0 and report.skipped["messages older than the ones already imported"] == 1
    assert [m.content for m in store.exchanges.history(store.sessions.list()[0].id)] == before
