"""The four promises, tested as properties of the whole system: a model-based (stateful) test.

One data directory is driven through random sequences of what a person and
the dream do, through the HTTP API of the real app (SQLite file, FAISS
index, routes) on scripted models: chat, regenerate, edit, choose a version,
off-the-record conversations (and leaving them), rename, forget by session /
text / date / ids, a dream pass whose summary model copies its sources' words
into gists, facts, digests, arc, self-state and world proposals, corrections
(edit or delete a gist, a fact, a digest, the arc, the self-state, the core
memory), export and re-import, backup and restore. Every word a person says
is a unique marker, so where it is can be looked for byte by byte.

After every step:
- a forgotten marker (and one of a conversation left off the record, or lost
  to a restore) is in no byte of any file under the data directory (WAL and
  index snapshots included) and in no API response;
- an off-the-record marker never reaches recall, search, what the dream
  wrote, or the context of another conversation;
- recall and search return only remembered turns of current paths;
- no request answers 5xx.
Export → import into an empty directory → export is identical, and
importing one's own export again adds nothing (checked by its own step).

``make test`` runs a bounded number of examples; ``PROMISES_EXAMPLES``
(and ``PROMISES_STEPS``) runs more.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sqlite3
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lyra_local.config import Settings, load_settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.registry import Models
from lyra_local.mind import Dreamer
from lyra_local.store import Store
from lyra_local.transfer.backup import restore
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.sources import open_source
from lyra_local.web import create_app

from .conftest import MODELS_DIR
from .fakes import FakeChatModel, FakeEmbedder
from .sse import sse_events

MARK = re.compile(r"zq[0-9a-f]{10}")
EXAMPLES = int(os.environ.get("PROMISES_EXAMPLES", "12"))
STEPS = int(os.environ.get("PROMISES_STEPS", "30"))
REPLY = "I hear you."


def copy_markers(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A summary model that writes every marker it read into whatever it is asked to write."""
    found = list(dict.fromkeys(MARK.findall("\n".join(m["content"] for m in messages))))[:6]
    said = " ".join(f"Sam spoke of {m}." for m in found) or "Sam and Lyra talked."
    if options is not None and options.json_schema is not None:
        if "facts" in options.json_schema.get("properties", {}):
            return json.dumps({"facts": [{"key": "sport", "value": m} for m in found[:2]]})
        return json.dumps({"mood": "curious", "energy": 0.6, "self_narrative": said, "reflections": [said]})
    return said


@dataclass
class Turn:
    id: int
    marker: str | None  # the reply's words are the scripted model's, never a marker


@dataclass
class Conversation:
    id: int
    remember: bool
    name_marker: str | None = None
    markers: set[str] = field(default_factory=set)  # every marker said in it, on the path or set aside


class Promises(RuleBasedStateMachine):
    """One person's data directory, and what they expect of it."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="lyra-promises-"))
        self.data = self.tmp / "data"
        self.settings = self._settings()
        self.chat_model = FakeChatModel(respond=lambda m, o: REPLY)
        self.summary_model = FakeChatModel(respond=copy_markers)
        self.embedder = FakeEmbedder()
        self.client = self._open()
        self.counter = 0
        self.conversations: dict[int, Conversation] = {}
        self.forgotten: set[str] = set()  # forgotten, or left off the record: nowhere, ever again
        self.lost: set[str] = set()  # said after the backup that was restored: nowhere, until another restore
        self.personal: dict[str, str] = {}  # markers the person wrote into corrections -> where
        self.backups: list[tuple[Path, dict[int, Conversation], set[str]]] = []
        self.exports = 0
        self.restores = 0

    # -- plumbing ---------------------------------------------------------------------------------

    def _settings(self) -> Settings:
        config = self.tmp / "lyra.toml"
        config.write_text('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\nmin_turns = 1\n'
                          '[coordination]\nworld_updates = "propose"\n')
        return load_settings(config, env={"LYRA_DATA_DIR": str(self.data), "LYRA_MODELS_DIR": str(MODELS_DIR),
                                          "LYRA_DREAM__ENABLED": "false"})

    def _open(self) -> TestClient:
        models = Models(self.settings, chat=self.chat_model, summary=self.summary_model,  # type: ignore[arg-type]
                        embed=self.embedder)  # type: ignore[arg-type]
        client = TestClient(create_app(self.settings, models=models), base_url="http://127.0.0.1")
        client.__enter__()
        return client

    def _close(self) -> None:
        self.client.__exit__(None, None, None)

    def teardown(self) -> None:
        self._close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        response = self.client.request(method, path, **kw)
        assert response.status_code < 500, (method, path, response.status_code, response.text[:500])
        return response

    def marker(self) -> str:
        self.counter += 1
        return f"zq{self.counter:010x}"

    @property
    def store(self) -> Store:
        return self.client.app.state.lyra.store  # type: ignore[no-any-return]

    def path(self, conversation: int) -> list[dict[str, Any]]:
        return list(self.call("GET", f"/api/sessions/{conversation}/messages").json()["messages"])

    def live(self, *, remembered: bool | None = None) -> list[Conversation]:
        return sorted((c for c in self.conversations.values() if remembered is None or c.remember == remembered),
                      key=lambda c: c.id)

    @staticmethod
    def streamed(response: httpx.Response) -> None:
        """A streamed turn ends with ``done``; one refused before it starts says why (a reply with no message
        before it any more cannot be regenerated)."""
        if response.status_code >= 400:
            assert response.json()["error"]["message"], response.text
            return
        events = sse_events(response.text.splitlines())
        assert events and events[-1][0] == "done", events

    def said(self, conversation: Conversation, text: str) -> list[tuple[str, dict[str, Any]]]:
        events = sse_events(self.call("POST", f"/api/sessions/{conversation.id}/chat",
                                      json={"message": text}).text.splitlines())
        assert events and events[-1][0] == "done", events
        self._check_context(conversation)
        return events

    def _check_context(self, conversation: Conversation) -> None:
        """The prompt of the turn just taken holds nothing forgotten, and nothing off the record of another."""
        if not self.chat_model.history:
            return
        prompt = "\n".join(m["content"] for m in self.chat_model.history[-1][0]).lower()
        others = {m for c in self.conversations.values() if not c.remember and c.id != conversation.id
                  for m in c.markers}
        assert not [m for m in self.forgotten | others if m in prompt], "a forgotten or off-the-record word in context"

    # -- what a person does ------------------------------------------------------------------------

    @rule(remember=st.booleans(), named=st.sampled_from(["plain", "marker", "first message"]))
    def start_a_conversation(self, remember: bool, named: str) -> None:
        first = f"My sport is {self.marker()}."
        name = {"plain": "Chat", "marker": f"About {self.marker()}", "first message": first[:48]}[named]
        created = self.call("POST", "/api/sessions", json={"name": name, "remember": remember}).json()
        conversation = Conversation(created["id"], remember, MARK.findall(name)[0] if named == "marker" else None)
        self.conversations[conversation.id] = conversation
        if named == "marker":
            conversation.markers.add(conversation.name_marker)  # type: ignore[arg-type]
        if named == "first message":
            conversation.markers.add(MARK.findall(first)[0])
            self.said(conversation, first)

    @precondition(lambda self: self.conversations)
    @rule(data=st.data(), form=st.sampled_from(["My sport is {}.", "We talked about {} yesterday.", "{}"]))
    def say_something(self, data: st.DataObject, form: str) -> None:
        conversation = data.draw(st.sampled_from(self.live()))
        marker = self.marker()
        conversation.markers.add(marker)
        self.said(conversation, form.format(marker))

    @precondition(lambda self: self.conversations)
    @rule(data=st.data())
    def regenerate_a_reply(self, data: st.DataObject) -> None:
        conversation = data.draw(st.sampled_from(self.live()))
        replies = [m for m in self.path(conversation.id) if m["role"] == "assistant"]
        if replies:
            reply = data.draw(st.sampled_from(replies))
            self.streamed(self.call("POST", f"/api/exchanges/{reply['id']}/regenerate"))

    @precondition(lambda self: self.conversations)
    @rule(data=st.data())
    def edit_a_message(self, data: st.DataObject) -> None:
        conversation = data.draw(st.sampled_from(self.live()))
        mine = [m for m in self.path(conversation.id) if m["role"] == "user"]
        if mine:
            message = data.draw(st.sampled_from(mine))
            marker = self.marker()
            conversation.markers.add(marker)
            self.streamed(self.call("POST", f"/api/exchanges/{message['id']}/edit",
                                    json={"content": f"Actually it was {marker}."}))

    @precondition(lambda self: self.conversations)
    @rule(data=st.data())
    def choose_another_version(self, data: st.DataObject) -> None:
        conversation = data.draw(st.sampled_from(self.live()))
        choices = [v for m in self.path(conversation.id) for v in m["versions"] if v != m["id"]]
        if choices:
            self.call("POST", f"/api/exchanges/{data.draw(st.sampled_from(choices))}/choose")

    @precondition(lambda self: self.conversations)
    @rule(data=st.data())
    def rename_a_conversation(self, data: st.DataObject) -> None:
        conversation = data.draw(st.sampled_from(self.live()))
        marker = self.marker()
        self.call("PATCH", f"/api/sessions/{conversation.id}", json={"name": f"Notes on {marker}"})
        if conversation.name_marker:  # the old name is replaced, not forgotten: it is not looked for
            conversation.markers.discard(conversation.name_marker)
        conversation.name_marker = marker
        conversation.markers.add(marker)

    @precondition(lambda self: self.live(remembered=False))
    @rule(data=st.data())
    def leave_an_off_the_record_conversation(self, data: st.DataObject) -> None:
        conversation = data.draw(st.sampled_from(self.live(remembered=False)))
        self.call("DELETE", f"/api/sessions/{conversation.id}")
        self._gone(conversation)

    def _gone(self, conversation: Conversation) -> None:
        self.forgotten |= conversation.markers
        self.personal = {m: w for m, w in self.personal.items() if w != f"gist:{conversation.id}"}
        del self.conversations[conversation.id]

    # -- forgetting ---------------------------------------------------------------------------------

    @precondition(lambda self: self.live(remembered=True))
    @rule(data=st.data(), how=st.sampled_from(["delete", "forget by id", "forget by #id"]))
    def forget_a_conversation(self, data: st.DataObject, how: str) -> None:
        conversation = data.draw(st.sampled_from(self.live(remembered=True)))
        if how == "delete":
            self.call("DELETE", f"/api/sessions/{conversation.id}")
        else:
            ref: int | str = conversation.id if how == "forget by id" else f"#{conversation.id}"
            self.call("POST", "/api/forget", json={"sessions": [ref]})
        self._gone(conversation)

    @precondition(lambda self: any(c.markers for c in self.live()) or self.personal)
    @rule(data=st.data(), case=st.sampled_from(["as said", "upper"]))
    def forget_a_text(self, data: st.DataObject, case: str) -> None:
        markers = sorted({m for c in self.live() for m in c.markers} | set(self.personal))
        marker = data.draw(st.sampled_from(markers))
        self.call("POST", "/api/forget", json={"matching": marker.upper() if case == "upper" else marker})
        self._forgot([marker])

    @precondition(lambda self: self.live(remembered=True))
    @rule(data=st.data())
    def forget_turns(self, data: st.DataObject) -> None:
        """Turns by id, on the path or versions set aside (as Search's Forget, or paging to a version, does)."""
        conversation = data.draw(st.sampled_from(self.live(remembered=True)))
        ids = sorted({v for m in self.path(conversation.id) for v in m["versions"]})
        if not ids:
            return
        chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True))
        said = self._contents(chosen)
        self.call("POST", "/api/forget", json={"exchange_ids": chosen})
        self._forgot([m for text in said for m in MARK.findall(text)])

    def _contents(self, turn_ids: Sequence[int]) -> list[str]:
        """What these turns say, on the path or set aside (read before they are forgotten)."""
        return [r[0] for r in self.store.conn().execute(
            "SELECT content FROM exchanges WHERE id IN (SELECT value FROM json_each(:ids)) UNION ALL "
            "SELECT content FROM asides WHERE id IN (SELECT value FROM json_each(:ids))",
            {"ids": json.dumps(list(turn_ids))})]

    @precondition(lambda self: self.live(remembered=True))
    @rule(data=st.data())
    def forget_before_a_turn(self, data: st.DataObject) -> None:
        turns = [t for c in self.live(remembered=True) for t in self.path(c.id)]
        if not turns:
            return
        cut = data.draw(st.sampled_from(turns))["created_at"]
        doomed = [m for c in self.live() for t in self._all_turns(c.id) if t[1] < cut
                  for m in MARK.findall(t[0])]
        self.call("POST", "/api/forget", json={"before": cut})
        self._forgot(doomed)

    def _all_turns(self, conversation: int) -> list[tuple[str, str]]:
        """Every turn of a conversation, on the path and set aside, as (content, created_at)."""
        conn = self.store.conn()
        return [(r[0], r[1]) for r in conn.execute(
            "SELECT content, created_at FROM exchanges WHERE session_id = :s UNION ALL "
            "SELECT content, created_at FROM asides WHERE session_id = :s", {"s": conversation})]

    def _forgot(self, markers: Sequence[str]) -> None:
        self.forgotten |= set(markers)
        for conversation in list(self.conversations.values()):
            conversation.markers -= set(markers)
            if self.store.sessions.exists(conversation.id):
                continue
            del self.conversations[conversation.id]  # a conversation left with no turn goes whole
        for marker in markers:
            self.personal.pop(marker, None)

    # -- the dream and corrections -------------------------------------------------------------------

    @rule()
    def dream(self) -> None:
        runtime = self.client.app.state.lyra
        dreamer = Dreamer(runtime.store, self.summary_model, self.embedder, self.settings)  # type: ignore[arg-type]
        try:
            assert dreamer.run_pass(force=True).status in ("done", "deferred")
        finally:
            dreamer.close()

    @precondition(lambda self: self.live(remembered=True))
    @rule(data=st.data(), what=st.sampled_from(["edit gist", "delete gist"]))
    def correct_a_summary(self, data: st.DataObject, what: str) -> None:
        conversation = data.draw(st.sampled_from(self.live(remembered=True)))
        if what == "delete gist":
            self.call("DELETE", f"/api/sessions/{conversation.id}/gist")
            return
        marker = self.marker()
        if self.call("PUT", f"/api/sessions/{conversation.id}/gist",
                     json={"content": f"In my words: {marker}."}).status_code == 200:
            self.personal[marker] = f"gist:{conversation.id}"

    @rule(what=st.sampled_from(["fact", "retire fact", "world", "self", "arc"]))
    def correct_a_memory(self, what: str) -> None:
        marker = self.marker()
        if what == "fact":
            self.call("PUT", "/api/profile", json={"key": "favourite word", "value": marker})
        elif what == "retire fact":
            self.call("DELETE", "/api/profile/favourite word")
            return
        elif what == "world":
            self.call("PUT", "/api/world", json={"content": f"# Now\n- the code word is {marker}"})
        elif what == "self":
            self.call("PATCH", "/api/self", json={"mood": "calm", "self_narrative": f"I think of {marker}."})
        else:
            self.call("PUT", "/api/narrative", json={"content": f"Lately: {marker}."})
        self.personal[marker] = what

    @rule(data=st.data(), verdict=st.sampled_from(["confirm", "reject"]))
    def judge_a_fact(self, data: st.DataObject, verdict: str) -> None:
        """"That's right" / "That's wrong" on a card of About you."""
        cards = self.call("GET", "/api/profile").json()["facts"]
        if cards:
            card = data.draw(st.sampled_from(cards))
            assert self.call("POST", f"/api/profile/facts/{card['id']}/{verdict}").status_code == 200
            if verdict == "reject":
                assert card["id"] not in {c["id"] for c in self.call("GET", "/api/profile").json()["facts"]}

    @rule(data=st.data())
    def correct_a_digest(self, data: st.DataObject) -> None:
        digests = self.call("GET", "/api/digests").json()["digests"]
        if digests:
            digest = data.draw(st.sampled_from(digests))
            if data.draw(st.booleans()):
                self.call("DELETE", f"/api/digests/{digest['id']}")
            else:
                marker = self.marker()
                if self.call("PUT", f"/api/digests/{digest['id']}", json={"content": f"My week: {marker}."}
                             ).status_code == 200:
                    self.personal[marker] = "digest"

    # -- export, import, backup, restore ----------------------------------------------------------------

    @rule()
    def export_import_elsewhere_and_again_here(self) -> None:
        first = self.call("GET", "/api/export").content
        self._no_off_the_record_in(first, "an export")
        self.exports += 1
        folder = self.tmp / f"export-{self.exports}"
        with zipfile.ZipFile(io.BytesIO(first)) as archive:
            archive.extractall(folder)
        elsewhere = Store(self.tmp / f"elsewhere-{self.exports}")
        try:
            import_source(elsewhere, self.embedder, open_source(folder))  # type: ignore[arg-type]
            from lyra_local.transfer.lyra_format import write_sessions
            from lyra_local.transfer.memory_file import memory_json
            again = io.StringIO()
            write_sessions(elsewhere, again)
            assert again.getvalue() == (folder / "sessions.jsonl").read_text(encoding="utf-8")
            assert memory_json(elsewhere) == (folder / "memory.json").read_text(encoding="utf-8")
        finally:
            elsewhere.close()
        report, _ = import_source(self.store, self.embedder, open_source(folder))  # type: ignore[arg-type]
        assert report.messages == 0 and report.sessions_new == 0, report.summary()

    @rule()
    def back_up(self) -> None:
        body = self.call("GET", "/api/backup").content
        self._no_off_the_record_in(body, "a backup")
        path = self.tmp / f"backup-{len(self.backups)}.db"
        path.write_bytes(body)
        kept = {i: Conversation(c.id, c.remember, c.name_marker, set(c.markers))
                for i, c in self.conversations.items() if c.remember}
        self.backups.append((path, kept, set(self.personal)))

    @precondition(lambda self: self.backups)
    @rule(data=st.data())
    def restore_a_backup(self, data: st.DataObject) -> None:
        path, kept, personal = data.draw(st.sampled_from(self.backups))
        now = {m for c in self.conversations.values() for m in c.markers} | set(self.personal)
        self._close()
        self.restores += 1
        restore(path, self.data, keep=self.tmp / f"replaced-{self.restores}.db")
        self.client = self._open()
        self.conversations = {i: Conversation(c.id, c.remember, c.name_marker, c.markers - self.forgotten)
                              for i, c in kept.items() if self.store.sessions.exists(c.id)}
        self.personal = {m: "restored" for m in personal - self.forgotten}
        back = {m for c in self.conversations.values() for m in c.markers} | set(self.personal)
        self.lost = (self.lost | now) - back  # what was said after the backup is not in it (a later one may be)

    def _no_off_the_record_in(self, body: bytes, what: str) -> None:
        text = self._text_of(body)
        for conversation in self.live(remembered=False):
            assert not [m for m in conversation.markers if m in text], f"off the record in {what}"

    @staticmethod
    def _text_of(body: bytes) -> str:
        if body[:2] == b"PK":
            with zipfile.ZipFile(io.BytesIO(body)) as archive:
                return " ".join(archive.read(n).decode("utf-8", "replace") for n in archive.namelist()).lower()
        return body.decode("utf-8", "replace").lower()

    # -- the promises ---------------------------------------------------------------------------------------

    @invariant()
    def forgotten_is_nowhere(self) -> None:
        gone = self.forgotten | self.lost
        if not gone:
            return
        files = {str(p.relative_to(self.data)): p.read_bytes().lower() for p in self.data.rglob("*") if p.is_file()}
        for marker in sorted(gone):
            needle = marker.encode()
            found = [name for name, body in files.items() if needle in body]
            assert not found, f"{marker} left on disk in {found}: {self._rows_holding(marker)}"
        bodies = self._responses()
        assert not [m for m in gone if m in bodies], "a forgotten word in an API response"

    def _rows_holding(self, marker: str) -> list[str]:
        """Which tables of the database hold ``marker`` (to say where a forgotten word was left)."""
        conn = sqlite3.connect(f"file:{self.data / 'lyra.db'}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return [t for t in tables if conn.execute(f"SELECT count(*) FROM \"{t}\" WHERE instr(lower(CAST(("
                    + " || ' ' || ".join(f"coalesce(CAST(\"{c[1]}\" AS TEXT), '')" for c in
                                        conn.execute(f"PRAGMA table_info(\"{t}\")"))
                    + ") AS TEXT)), ?) > 0", (marker,)).fetchone()[0]]
        finally:
            conn.close()

    def _responses(self) -> str:
        paths = ["/api/sessions", "/api/profile", "/api/digests", "/api/narrative", "/api/self", "/api/world",
                 "/api/world/history", "/api/world/proposals", "/api/sitrep", "/api/instances", "/api/locks"]
        for conversation in self.conversations.values():
            paths += [f"/api/sessions/{conversation.id}/messages", f"/api/sessions/{conversation.id}/gist"]
            for message in self.path(conversation.id):
                if message["role"] == "assistant":
                    paths.append(f"/api/exchanges/{message['id']}/trace")
        return " ".join(self.call("GET", p).text for p in paths).lower()

    @invariant()
    def off_the_record_reaches_no_memory(self) -> None:
        off = {m for c in self.live(remembered=False) for m in c.markers}
        if not off:
            return
        derived = " ".join(self.call("GET", p).text for p in ("/api/profile", "/api/digests", "/api/narrative",
                                                                "/api/self", "/api/world/proposals")).lower()
        for conversation in self.live(remembered=True):
            derived += self.call("GET", f"/api/sessions/{conversation.id}/gist").text.lower()
        assert not [m for m in off if m in derived], "off the record in what the dream wrote"
        for marker in sorted(off)[:3]:
            for route in ("/api/recall", "/api/search"):
                hits = self.call("GET", route, params={"q": marker, "k": 50}).json()
                found = json.dumps(hits.get("hits", hits.get("results", []))).lower()
                assert marker not in found, f"off the record in {route}"

    @invariant()
    def recall_finds_only_remembered_turns_of_current_paths(self) -> None:
        remembered = self.live(remembered=True)
        if not remembered:
            return
        current = {m["id"] for c in remembered for m in self.path(c.id)}
        markers = sorted(m for c in remembered for m in c.markers)[-2:]
        for marker in markers:
            hits = self.call("GET", "/api/recall", params={"q": marker, "k": 50}).json()["hits"]
            assert {h["id"] for h in hits if h["kind"] == "exchange"} <= current
            results = self.call("GET", "/api/search", params={"q": marker}).json()["results"]
            assert {r["turn_id"] for r in results if r["tier"] == "exchange"} <= current


PHASES = [p for p in Phase if p != Phase.shrink or os.environ.get("PROMISES_SHRINK", "1") == "1"]
Promises.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                                      suppress_health_check=list(HealthCheck), phases=PHASES)
test_the_promises_hold_whatever_a_person_and_the_dream_do = Promises.TestCase
