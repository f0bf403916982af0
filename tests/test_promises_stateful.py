"""The promises, tested as properties of the whole system: a model-based (stateful) test of a household.

One data directory with two people, the owner A and a second person B (the
owner sets a password and adds B; each logs in with a client of their own), is
driven through random sequences of what either of them and the dream do,
through the HTTP API of the real app (SQLite files, FAISS indexes, routes) on
scripted models: chat, regenerate, edit, choose a version, a chat imported
with a photo whose caption holds the marker, off-the-record conversations (and
leaving them), rename, forget by session / text / date /
ids, a dream pass whose summary model copies its sources' words into gists,
facts, digests, arc, self-state and world proposals, corrections (edit or
delete a gist, a fact, a digest, the arc, the self-state, the core memory),
export and re-import, backup and restore, writing the household memory, one
person forgetting the other's words, and the owner removing B and adding
someone new. Every word a person says is a unique marker whose owner the test
knows (``tests/promises_people.py``), so where it is can be looked for byte by
byte.

At every response and every prompt a model is given:
- nothing of another person is in it: no marker of A in any response to B
  (conversations, search, recall, Why? traces, export, backup, what the dream
  wrote) nor in any prompt written for B (a turn's context, the dream's), and
  vice versa; only what a person wrote into the household memory is everyone's.
After every step:
- no byte of any file under ``people/<B>/`` holds a marker of A, none of A's
  files (the data directory's own, without ``people/`` and ``household.db``)
  one of B, and ``household.db`` (WAL included) none but household-memory ones;
- a forgotten marker (and one of a conversation left off the record, or lost
  to a restore) is in no byte of any file under the data directory (WAL and
  index snapshots included) and in no API response;
- a removed person left no byte anywhere (household.db and its WAL included),
  the household-memory versions they wrote went with them, and their old
  login cookie is refused (401);
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
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lyra_local.store import Store
from lyra_local.transfer.backup import restore
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.sources import open_source
from lyra_local.web.auth import COOKIE

from .fakes import FakeChatModel, FakeEmbedder
from .promises_people import (
    MARK,
    REPLY,
    SECOND,
    SECRETS,
    Conversation,
    Ledger,
    Someone,
    copy_markers,
    founded,
    household_file,
    markers_in,
    markers_on_disk,
    open_app,
    owner_of_file,
    rows_holding,
    settings_for,
    text_of,
)
from .sse import sse_events

EXAMPLES = int(os.environ.get("PROMISES_EXAMPLES", "12"))
STEPS = int(os.environ.get("PROMISES_STEPS", "30"))
DREAM_WROTE = ("/api/profile", "/api/digests", "/api/narrative", "/api/self", "/api/world/proposals")  # + gists


class Promises(RuleBasedStateMachine):
    """A household's data directory, and what each of its people expects of it."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="lyra-promises-"))
        self.data = self.tmp / "data"
        self.settings = settings_for(self.tmp, self.data)
        self.chat_model = FakeChatModel(respond=lambda m, o: REPLY)
        self.summary_model = FakeChatModel(respond=copy_markers)
        self.embedder = FakeEmbedder()
        self.ledger = Ledger()
        self.people: dict[str, Someone] = {}  # by role: "A" the owner, "B" the second person (while there is one)
        self.left: list[Someone] = []  # the people removed, whose old login must stay refused
        self.added = 1
        self.exports = 0
        self.restores = 0
        self.actor: Someone | None = None
        start = founded()
        shutil.copytree(start.data, self.data)
        self.host = self._open()
        for role, (person_id, name, secret) in start.people.items():
            cookies = {COOKIE: start.cookies[role]}
            self.people[role] = Someone(role if role == "A" else "B1", person_id, name, secret, "adult", role.lower(),
                                        self._client(cookies))
            assert self.call(self.people[role], "GET", "/api/me").json()["id"] == person_id

    # -- plumbing ---------------------------------------------------------------------------------

    def _open(self) -> TestClient:
        return open_app(self.settings, self.chat_model, self.summary_model, self.embedder)

    def _client(self, cookies: dict[str, str] | None = None) -> TestClient:
        """A device of one person's (not entered: the host runs the lifespan)."""
        return TestClient(self.host.app, base_url="http://127.0.0.1", cookies=cookies)

    def _close(self) -> None:
        for someone in [*self.people.values(), *self.left]:
            someone.client.close()
        self.host.__exit__(None, None, None)

    def _reopen(self) -> None:
        """A restarted server: every device keeps its login cookie (login sessions live in household.db)."""
        self.host = self._open()
        for someone in [*self.people.values(), *self.left]:
            someone.client = self._client(dict(someone.client.cookies))

    def teardown(self) -> None:
        self._close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def call(self, someone: Someone, method: str, path: str, **kw: Any) -> httpx.Response:
        """A request as ``someone``: it must not fail with 5xx, and neither its response nor any prompt a model
        was given while it ran may hold a marker of another person."""
        chats, summaries = len(self.chat_model.history), len(self.summary_model.history)
        response = someone.client.request(method, path, **kw)
        assert response.status_code < 500, (method, path, response.status_code, response.text[:500])
        found = markers_in(text_of(response.content))
        someone.seen |= found
        strangers = self.ledger.strangers(someone, found)
        assert not strangers, f"{someone.key} was answered {strangers} of {self._whose(strangers)} by {method} {path}"
        self._prompts_were_theirs(someone, chats, summaries, f"{method} {path}")
        return response

    def _whose(self, markers: Sequence[str]) -> list[str]:
        return [self.ledger.whose.get(m, "nobody") for m in markers]

    def _prompts_were_theirs(self, someone: Someone, chats: int, summaries: int, during: str) -> None:
        """What the models were asked since (a turn's context, a dream's sources) holds nothing of another person
        and nothing forgotten or removed."""
        gone = self._gone()
        for messages, _ in self.chat_model.history[chats:] + self.summary_model.history[summaries:]:
            found = markers_in("\n".join(m["content"] for m in messages))
            strangers = self.ledger.strangers(someone, found)
            assert not strangers, f"{strangers} of {self._whose(strangers)} in {someone.key}'s context ({during})"
            assert not found & gone, f"forgotten {sorted(found & gone)} in {someone.key}'s context ({during})"

    def _gone(self) -> set[str]:
        """What must be nowhere: everyone's forgotten and lost words, and everything of the people removed."""
        out = self.ledger.gone()
        for someone in self.people.values():
            out |= someone.forgotten | someone.lost
        return out

    def who(self, data: st.DataObject, having: Callable[[Someone], object] = bool) -> Someone:
        """One of the people present (for whom ``having`` holds), drawn by role so a failing example reads "A"/"B";
        the invariants after the step look through their eyes."""
        role = data.draw(st.sampled_from(sorted(r for r, p in self.people.items() if having(p))), label="who")
        self.actor = self.people[role]
        return self.actor

    def watched(self) -> Someone:
        """Whose view the invariants read after a step: the person who acted (the other's is read when they act;
        what one did that reached the other's memory is in the bytes of their files, checked every step)."""
        return self.actor if self.actor is not None and self.actor in self.people.values() else self.people["A"]

    def marker(self, someone: Someone) -> str:
        return self.ledger.new(someone)

    @property
    def state(self) -> Any:
        app: Any = self.host.app
        return app.state.lyra

    def store(self, someone: Someone) -> Store:
        return self.state.store_of(self.state.household.person(someone.id))  # type: ignore[no-any-return]

    def path(self, someone: Someone, conversation: int) -> list[dict[str, Any]]:
        return list(self.call(someone, "GET", f"/api/sessions/{conversation}/messages").json()["messages"])

    def a_message(self, data: st.DataObject, role: str) -> tuple[Someone, Conversation, dict[str, Any] | None]:
        """Someone with conversations, one of them, and one of its messages on the path shown said by ``role``
        (None where it has none)."""
        someone = self.who(data, lambda p: p.conversations)
        conversation = data.draw(st.sampled_from(someone.live()))
        said = [m for m in self.path(someone, conversation.id) if m["role"] == role]
        return someone, conversation, data.draw(st.sampled_from(said)) if said else None

    def streamed(self, someone: Someone, response: httpx.Response) -> None:
        """A streamed turn ends with ``done``; one refused before it starts says why (a reply with no message
        before it any more cannot be regenerated). The new reply's Why? trace is read at once (``call`` checks
        it holds nothing of the other person)."""
        if response.status_code >= 400:
            assert response.json()["error"]["message"], response.text
            return
        events = sse_events(response.text.splitlines())
        assert events and events[-1][0] == "done", events
        if events[-1][1].get("exchange_id") is not None:
            self.call(someone, "GET", f"/api/exchanges/{events[-1][1]['exchange_id']}/trace")

    def said(self, someone: Someone, conversation: Conversation, text: str) -> None:
        response = self.call(someone, "POST", f"/api/sessions/{conversation.id}/chat", json={"message": text})
        assert response.status_code == 200, response.text
        self.streamed(someone, response)
        self._check_context(someone, conversation)

    def _check_context(self, someone: Someone, conversation: Conversation) -> None:
        """The prompt of the turn just taken holds nothing off the record of another conversation, and the
        household memory (what everyone's context shares on purpose)."""
        prompt = "\n".join(m["content"] for m in self.chat_model.history[-1][0]).lower()
        others = {m for c in someone.conversations.values() if not c.remember and c.id != conversation.id
                  for m in c.markers}
        assert not [m for m in others if m in prompt], "an off-the-record word of another conversation in context"
        shared = self.ledger.shared_now()[-1:]
        assert all(m in prompt for m in shared), f"the household memory {shared} missing from {someone.key}'s context"

    def _add(self, kind: str) -> None:
        """The owner adds a second person, who logs in on a device of their own."""
        self.added += 1
        secret = SECRETS[kind]
        created = self.call(self.people["A"], "POST", "/api/people",
                            json={"name": SECOND, "kind": kind, "secret": secret})
        assert created.status_code == 200, created.text
        b = Someone(f"B{self.added}", created.json()["person"]["id"], SECOND, secret, kind, "b", self._client())
        assert self.call(b, "POST", "/api/auth/login", json={"name": SECOND, "secret": secret}).status_code == 200
        assert self.call(b, "GET", "/api/me").json()["id"] == b.id
        self.people["B"] = b

    # -- who lives here ----------------------------------------------------------------------------

    @precondition(lambda self: "B" in self.people and self.people["B"].markers())
    @rule()
    def remove_the_second_person(self) -> None:
        """Once B has something remembered (a removal of nobody in particular proves little), the owner removes
        them: every byte of theirs goes (the invariants' file scan looks for all of them) and their login
        with it."""
        a, b = self.people["A"], self.people["B"]
        self.actor = a
        counts = self.call(a, "GET", f"/api/people/{b.id}/removal").json()
        assert counts["conversations"] == len(b.conversations), (counts, b.conversations)
        assert self.call(a, "DELETE", f"/api/people/{b.id}").json() == {"removed": b.id}
        del self.people["B"]
        self.ledger.removed.add(b.key)
        self.left.append(b)
        assert not (self.data / "people" / b.id).exists()
        self._refused(b)
        assert b.id not in {p["id"] for p in self.call(a, "GET", "/api/people").json()["people"]}
        self._household_memory_checked()

    @staticmethod
    def _refused(someone: Someone) -> None:
        """A removed person's old login cookie reaches nothing (and leaks nothing while refusing)."""
        for path in ("/api/me", "/api/sessions"):
            response = someone.client.get(path)
            assert response.status_code == 401, (someone.key, path, response.status_code, response.text[:300])
            assert response.json()["error"]["type"] == "login_required", response.text
            assert not markers_in(response.text), response.text

    @precondition(lambda self: "B" not in self.people)
    @rule(kind=st.sampled_from(["adult", "child"]))
    def add_someone_new(self, kind: str) -> None:
        """Someone new under the removed person's name: the old device's cookie still reaches nobody."""
        self._add(kind)
        self.actor = self.people["B"]
        for someone in self.left[-2:]:
            self._refused(someone)
        self._household_memory_checked()

    @rule(data=st.data())
    def share_with_the_household(self, data: st.DataObject) -> None:
        """A person writes the household memory: an adult's version is everyone's, a child is refused."""
        someone = self.who(data)
        if someone.kind == "child":
            attempt = self.marker(someone)  # theirs: it must not reach household.db
            refused = self.call(someone, "PUT", "/api/household/memory", json={"content": f"Bins: {attempt}."})
            assert refused.status_code == 403, refused.text
            self._household_memory_checked()
            return
        marker = self.ledger.new(someone, shared=True)
        written = self.call(someone, "PUT", "/api/household/memory", json={"content": f"The shed code is {marker}."})
        assert written.status_code == 200 and marker in written.text, written.text
        self._household_memory_checked()

    # -- what a person does ------------------------------------------------------------------------

    @rule(data=st.data(), remember=st.booleans(), named=st.sampled_from(["plain", "marker", "first message"]))
    def start_a_conversation(self, data: st.DataObject, remember: bool, named: str) -> None:
        someone = self.who(data)
        first = f"My sport is {self.marker(someone)}."
        name = {"plain": "Chat", "marker": f"About {self.marker(someone)}", "first message": first[:48]}[named]
        created = self.call(someone, "POST", "/api/sessions", json={"name": name, "remember": remember}).json()
        conversation = Conversation(created["id"], remember, MARK.findall(name)[0] if named == "marker" else None)
        someone.conversations[conversation.id] = conversation
        if named == "marker":
            conversation.markers.add(conversation.name_marker)  # type: ignore[arg-type]
        if named == "first message":
            conversation.markers.add(MARK.findall(first)[0])
            self.said(someone, conversation, first)

    @precondition(lambda self: any(p.conversations for p in self.people.values()))
    @rule(data=st.data(), form=st.sampled_from(["My sport is {}.", "We talked about {} yesterday.", "{}"]))
    def say_something(self, data: st.DataObject, form: str) -> None:
        someone = self.who(data, lambda p: p.conversations)
        conversation = data.draw(st.sampled_from(someone.live()))
        marker = self.marker(someone)
        conversation.markers.add(marker)
        self.said(someone, conversation, form.format(marker))

    @rule(data=st.data(), words=st.sampled_from(["", "look!!"]))
    def import_a_photo(self, data: st.DataObject, words: str) -> None:
        """A chat imported with a photo whose caption holds a marker (with words or none): the caption is the
        person's memory like their words, so every promise reaches it (forget by text, export, removal...)."""
        someone = self.who(data)
        marker = self.marker(someone)
        chat = json.dumps({"id": f"photos-{len(self.ledger.whose)}", "name": "Photos", "messages": [
            {"role": "user", "content": words, "caption": f"a photo of {marker} at the beach",
             "created_at": "2024-05-08T13:56:00+00:00"},
            {"role": "assistant", "content": "Lovely!", "created_at": "2024-05-08T13:56:01+00:00"}]})
        before = {s["id"] for s in self.call(someone, "GET", "/api/sessions").json()["sessions"]}
        job = self.call(someone, "PUT", "/api/import", params={"filename": "photos.jsonl", "format": "lyra"},
                        content=chat.encode()).json()["job"]
        while (status := self.call(someone, "GET", f"/api/import/{job}").json())["status"] == "running":
            threading.Event().wait(0.05)
        assert status["status"] == "done", status
        new = {s["id"] for s in self.call(someone, "GET", "/api/sessions").json()["sessions"]} - before
        assert len(new) == 1, new
        conversation = Conversation(new.pop(), True)
        conversation.markers.add(marker)
        someone.conversations[conversation.id] = conversation

    @precondition(lambda self: any(p.conversations for p in self.people.values()))
    @rule(data=st.data())
    def regenerate_a_reply(self, data: st.DataObject) -> None:
        someone, _, reply = self.a_message(data, "assistant")
        if reply:
            self.streamed(someone, self.call(someone, "POST", f"/api/exchanges/{reply['id']}/regenerate"))

    @precondition(lambda self: any(p.conversations for p in self.people.values()))
    @rule(data=st.data())
    def edit_a_message(self, data: st.DataObject) -> None:
        someone, conversation, message = self.a_message(data, "user")
        if message:
            marker = self.marker(someone)
            conversation.markers.add(marker)
            self.streamed(someone, self.call(someone, "POST", f"/api/exchanges/{message['id']}/edit",
                                    json={"content": f"Actually it was {marker}."}))

    @precondition(lambda self: any(p.conversations for p in self.people.values()))
    @rule(data=st.data())
    def choose_another_version(self, data: st.DataObject) -> None:
        someone = self.who(data, lambda p: p.conversations)
        conversation = data.draw(st.sampled_from(someone.live()))
        choices = [v for m in self.path(someone, conversation.id) for v in m["versions"] if v != m["id"]]
        if choices:
            self.call(someone, "POST", f"/api/exchanges/{data.draw(st.sampled_from(choices))}/choose")

    @precondition(lambda self: any(p.conversations for p in self.people.values()))
    @rule(data=st.data())
    def rename_a_conversation(self, data: st.DataObject) -> None:
        someone = self.who(data, lambda p: p.conversations)
        conversation = data.draw(st.sampled_from(someone.live()))
        marker = self.marker(someone)
        self.call(someone, "PATCH", f"/api/sessions/{conversation.id}", json={"name": f"Notes on {marker}"})
        if conversation.name_marker:  # the old name is replaced, not forgotten: it is not looked for
            conversation.markers.discard(conversation.name_marker)
        conversation.name_marker = marker
        conversation.markers.add(marker)

    @precondition(lambda self: any(p.live(remembered=False) for p in self.people.values()))
    @rule(data=st.data())
    def leave_an_off_the_record_conversation(self, data: st.DataObject) -> None:
        someone = self.who(data, lambda p: p.live(remembered=False))
        conversation = data.draw(st.sampled_from(someone.live(remembered=False)))
        self.call(someone, "DELETE", f"/api/sessions/{conversation.id}")
        self._gone_whole(someone, conversation)

    @staticmethod
    def _gone_whole(someone: Someone, conversation: Conversation) -> None:
        someone.forgotten |= conversation.markers
        someone.personal = {m: w for m, w in someone.personal.items() if w != f"gist:{conversation.id}"}
        del someone.conversations[conversation.id]

    # -- forgetting ---------------------------------------------------------------------------------

    @precondition(lambda self: any(p.live(remembered=True) for p in self.people.values()))
    @rule(data=st.data(), how=st.sampled_from(["delete", "forget by id", "forget by #id"]))
    def forget_a_conversation(self, data: st.DataObject, how: str) -> None:
        someone = self.who(data, lambda p: p.live(remembered=True))
        conversation = data.draw(st.sampled_from(someone.live(remembered=True)))
        if how == "delete":
            self.call(someone, "DELETE", f"/api/sessions/{conversation.id}")
        else:
            ref: int | str = conversation.id if how == "forget by id" else f"#{conversation.id}"
            self.call(someone, "POST", "/api/forget", json={"sessions": [ref]})
        self._gone_whole(someone, conversation)

    @precondition(lambda self: any(p.markers() for p in self.people.values()))
    @rule(data=st.data(), case=st.sampled_from(["as said", "upper"]))
    def forget_a_text(self, data: st.DataObject, case: str) -> None:
        someone = self.who(data, Someone.markers)
        marker = data.draw(st.sampled_from(sorted(someone.markers())))
        self.call(someone, "POST", "/api/forget", json={"matching": marker.upper() if case == "upper" else marker})
        self._forgot(someone, [marker])

    @precondition(lambda self: len(self.people) == 2 and any(p.markers() for p in self.people.values()))
    @rule(data=st.data())
    def forget_another_s_word(self, data: st.DataObject) -> None:
        """One person asks to forget a word only the other said: nothing of the other's changes (their
        conversations, and every memory of theirs a marker can be in: facts, core memory, summaries...)."""
        sayer = self.who(data, Someone.markers)
        asker = next(p for p in self.people.values() if p is not sayer)
        marker = data.draw(st.sampled_from(sorted(sayer.markers())))
        before = {c.id: self.path(sayer, c.id) for c in sayer.live()}, markers_in(self._responses(sayer))
        self.call(asker, "POST", "/api/forget", json={"matching": marker})
        after = {c.id: self.path(sayer, c.id) for c in sayer.live()}, markers_in(self._responses(sayer))
        assert after == before, f"{asker.key} forgot {sayer.key}'s"

    @precondition(lambda self: any(p.live(remembered=True) for p in self.people.values()))
    @rule(data=st.data())
    def forget_turns(self, data: st.DataObject) -> None:
        """Turns by id, on the path or versions set aside (as Search's Forget, or paging to a version, does)."""
        someone = self.who(data, lambda p: p.live(remembered=True))
        conversation = data.draw(st.sampled_from(someone.live(remembered=True)))
        ids = sorted({v for m in self.path(someone, conversation.id) for v in m["versions"]})
        if not ids:
            return
        chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True))
        said = self._contents(someone, chosen)
        self.call(someone, "POST", "/api/forget", json={"exchange_ids": chosen})
        self._forgot(someone, [m for text in said for m in MARK.findall(text)])

    def _contents(self, someone: Someone, turn_ids: Sequence[int]) -> list[str]:
        """What these turns say, on the path or set aside (read before they are forgotten)."""
        return [r[0] for r in self.store(someone).conn().execute(
            "SELECT content FROM exchanges WHERE id IN (SELECT value FROM json_each(:ids)) UNION ALL "
            "SELECT content FROM asides WHERE id IN (SELECT value FROM json_each(:ids))",
            {"ids": json.dumps(list(turn_ids))})]

    @precondition(lambda self: any(p.live(remembered=True) for p in self.people.values()))
    @rule(data=st.data())
    def forget_before_a_turn(self, data: st.DataObject) -> None:
        someone = self.who(data, lambda p: p.live(remembered=True))
        turns = [t for c in someone.live(remembered=True) for t in self.path(someone, c.id)]
        if not turns:
            return
        cut = data.draw(st.sampled_from(turns))["created_at"]
        doomed = [m for c in someone.live() for t in self._all_turns(someone, c.id) if t[1] < cut
                  for m in MARK.findall(t[0])]
        self.call(someone, "POST", "/api/forget", json={"before": cut})
        self._forgot(someone, doomed)

    def _all_turns(self, someone: Someone, conversation: int) -> list[tuple[str, str]]:
        """Every turn of a conversation, on the path and set aside, as (content, created_at)."""
        conn = self.store(someone).conn()
        return [(r[0], r[1]) for r in conn.execute(
            "SELECT content, created_at FROM exchanges WHERE session_id = :s UNION ALL "
            "SELECT content, created_at FROM asides WHERE session_id = :s", {"s": conversation})]

    def _forgot(self, someone: Someone, markers: Sequence[str]) -> None:
        someone.forgotten |= set(markers)
        store = self.store(someone)
        for conversation in list(someone.conversations.values()):
            conversation.markers -= set(markers)
            if store.sessions.exists(conversation.id):
                continue
            del someone.conversations[conversation.id]  # a conversation left with no turn goes whole
        for marker in markers:
            someone.personal.pop(marker, None)

    # -- the dream and corrections -------------------------------------------------------------------

    @rule(data=st.data())
    def dream(self, data: st.DataObject) -> None:
        """A pass over one person's memory, as the scheduler runs it (their own runtime on the shared models)."""
        someone = self.who(data)
        chats, summaries = len(self.chat_model.history), len(self.summary_model.history)
        dreamer = self.state.dreamer(someone.id, threading.Event())
        try:
            assert dreamer.run_pass(force=True).status in ("done", "deferred")
        finally:
            dreamer.close()
        self._prompts_were_theirs(someone, chats, summaries, "a dream pass")
        for path in (*DREAM_WROTE, *(f"/api/sessions/{c}/gist" for c in someone.conversations)):
            self.call(someone, "GET", path)  # what the dream wrote for them: theirs alone (checked in ``call``)

    @precondition(lambda self: any(p.live(remembered=True) for p in self.people.values()))
    @rule(data=st.data(), what=st.sampled_from(["edit gist", "delete gist"]))
    def correct_a_summary(self, data: st.DataObject, what: str) -> None:
        someone = self.who(data, lambda p: p.live(remembered=True))
        conversation = data.draw(st.sampled_from(someone.live(remembered=True)))
        if what == "delete gist":
            self.call(someone, "DELETE", f"/api/sessions/{conversation.id}/gist")
            return
        marker = self.marker(someone)
        if self.call(someone, "PUT", f"/api/sessions/{conversation.id}/gist",
                     json={"content": f"In my words: {marker}."}).status_code == 200:
            someone.personal[marker] = f"gist:{conversation.id}"

    @rule(data=st.data(), what=st.sampled_from(["fact", "retire fact", "world", "self", "arc"]))
    def correct_a_memory(self, data: st.DataObject, what: str) -> None:
        someone = self.who(data)
        marker = self.marker(someone)
        if what == "fact":
            self.call(someone, "PUT", "/api/profile", json={"key": "favourite word", "value": marker})
        elif what == "retire fact":
            self.call(someone, "DELETE", "/api/profile/favourite word")
            return
        elif what == "world":
            self.call(someone, "PUT", "/api/world", json={"content": f"# Now\n- the code word is {marker}"})
        elif what == "self":
            self.call(someone, "PATCH", "/api/self", json={"mood": "calm", "self_narrative": f"I think of {marker}."})
        else:
            self.call(someone, "PUT", "/api/narrative", json={"content": f"Lately: {marker}."})
        someone.personal[marker] = what

    @rule(data=st.data(), verdict=st.sampled_from(["confirm", "reject"]))
    def judge_a_fact(self, data: st.DataObject, verdict: str) -> None:
        """"That's right" / "That's wrong" on a card of About you."""
        someone = self.who(data)
        cards = self.call(someone, "GET", "/api/profile").json()["facts"]
        if cards:
            card = data.draw(st.sampled_from(cards))
            assert self.call(someone, "POST", f"/api/profile/facts/{card['id']}/{verdict}").status_code == 200
            if verdict == "reject":
                assert card["id"] not in {c["id"] for c in self.call(someone, "GET", "/api/profile").json()["facts"]}

    @rule(data=st.data())
    def correct_a_digest(self, data: st.DataObject) -> None:
        someone = self.who(data)
        digests = self.call(someone, "GET", "/api/digests").json()["digests"]
        if digests:
            digest = data.draw(st.sampled_from(digests))
            if data.draw(st.booleans()):
                self.call(someone, "DELETE", f"/api/digests/{digest['id']}")
            else:
                marker = self.marker(someone)
                if self.call(someone, "PUT", f"/api/digests/{digest['id']}", json={"content": f"My week: {marker}."}
                             ).status_code == 200:
                    someone.personal[marker] = "digest"

    # -- export, import, backup, restore ----------------------------------------------------------------

    @rule(data=st.data())
    def export_import_elsewhere_and_again_here(self, data: st.DataObject) -> None:
        someone = self.who(data)
        first = self.call(someone, "GET", "/api/export").content
        self._no_off_the_record_in(someone, first, "an export")
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
        report, _ = import_source(self.store(someone), self.embedder, open_source(folder))  # type: ignore[arg-type]
        assert report.messages == 0 and report.sessions_new == 0, report.summary()

    @rule(data=st.data())
    def back_up(self, data: st.DataObject) -> None:
        someone = self.who(data)
        body = self.call(someone, "GET", "/api/backup").content
        self._no_off_the_record_in(someone, body, "a backup")
        path = self.tmp / f"backup-{someone.key}-{len(someone.backups)}.db"
        path.write_bytes(body)
        kept = {i: Conversation(c.id, c.remember, c.name_marker, set(c.markers))
                for i, c in someone.conversations.items() if c.remember}
        someone.backups.append((path, kept, set(someone.personal)))

    @precondition(lambda self: any(p.backups for p in self.people.values()))
    @rule(data=st.data())
    def restore_a_backup(self, data: st.DataObject) -> None:
        """``lyra restore`` of one person's backup into their own memory, with the server stopped."""
        someone = self.who(data, lambda p: p.backups)
        path, kept, personal = data.draw(st.sampled_from(someone.backups))
        now = someone.markers()
        folder = self.state.household.person_dir(self.state.household.person(someone.id))
        self._close()
        self.restores += 1
        restore(path, folder, keep=self.tmp / f"replaced-{self.restores}.db")
        self._reopen()
        for gone in self.left[-2:]:
            self._refused(gone)
        store = self.store(someone)
        someone.conversations = {i: Conversation(c.id, c.remember, c.name_marker, c.markers - someone.forgotten)
                                 for i, c in kept.items() if store.sessions.exists(c.id)}
        someone.personal = {m: "restored" for m in personal - someone.forgotten}
        # what was said after the backup is not in it (a later one may be)
        someone.lost = (someone.lost | now) - someone.markers()

    def _no_off_the_record_in(self, someone: Someone, body: bytes, what: str) -> None:
        found = markers_in(text_of(body))
        for conversation in someone.live(remembered=False):
            assert not conversation.markers & found, f"off the record in {what} of {someone.key}"

    # -- the promises ---------------------------------------------------------------------------------------

    @invariant()
    def each_file_holds_only_its_person_s_words_and_nothing_forgotten(self) -> None:
        """No byte of a person's folder holds another's marker (household-memory markers are everyone's),
        household.db holds only what was written into the household memory, and no file anything forgotten,
        lost or of someone removed."""
        gone = self._gone()
        for name, found in markers_on_disk(self.data).items():
            left = sorted(found & gone)
            assert not left, f"{left} of {self._whose(left)} on disk in {name}: {self._rows_holding(name, left[0])}"
            if household_file(name):
                theirs = sorted(m for m in found if m in self.ledger.whose and not self.ledger.is_shared(m))
                assert not theirs, f"{theirs} of {self._whose(theirs)} in {name}"
                continue
            owner = owner_of_file(name, self.people)
            assert owner is not None, f"{name}: a file of nobody present holds {sorted(found)}"
            strangers = self.ledger.strangers(owner, found)
            assert not strangers, f"{strangers} of {self._whose(strangers)} in {owner.key}'s {name}"

    @invariant()
    def no_response_holds_anything_forgotten_removed_or_another_s(self) -> None:
        """Once something is gone, the conversations, Why? traces, memory and what the dream wrote of the person
        who acted, read back (each response is also checked for the other's words, as every response is in
        ``call``). Only theirs: both every step would double the test's time (its budget is ``make test``'s),
        and another's word that reached someone's memory is found at once without it, in the bytes of their
        files (``each_file_holds_only_its_person_s_words_and_nothing_forgotten``) and in the trace of every
        reply and the outputs of every dream pass, read as they are made."""
        gone = self._gone()
        if not gone:
            return
        someone = self.watched()
        left = sorted(markers_in(self._responses(someone)) & gone)
        assert not left, f"forgotten {left} of {self._whose(left)} in an API response to {someone.key}"

    def _rows_holding(self, name: str, marker: str) -> list[str]:
        parts = Path(name).parts
        database = (self.data / "household.db" if household_file(name) else
                    self.data / parts[0] / parts[1] / "lyra.db" if parts[0] == "people" and len(parts) > 2 else
                    self.data / "lyra.db")
        return rows_holding(database, marker)

    def _responses(self, someone: Someone) -> str:
        paths = ["/api/sessions", "/api/profile", "/api/digests", "/api/narrative", "/api/self", "/api/world",
                 "/api/world/history", "/api/world/proposals", "/api/sitrep", "/api/household/memory/history"]
        for conversation in someone.conversations.values():
            paths += [f"/api/sessions/{conversation.id}/messages", f"/api/sessions/{conversation.id}/gist"]
            for message in self.path(someone, conversation.id):
                if message["role"] == "assistant":
                    paths.append(f"/api/exchanges/{message['id']}/trace")
        return " ".join(self.call(someone, "GET", p).text for p in paths).lower()

    def _household_memory_checked(self) -> None:
        """Every version an adult still here wrote is kept, newest first; a removed author's went with them (after
        each write, removal and addition: nothing else changes it)."""
        kept = self.ledger.shared_now()
        for someone in self.people.values():
            versions = self.call(someone, "GET", "/api/household/memory/history").json()["versions"]
            assert [MARK.findall(v["content"]) for v in versions] == [[m] for m in reversed(kept)]
            current = self.call(someone, "GET", "/api/household/memory").json()
            assert MARK.findall((current["memory"] or {}).get("content", "")) == kept[-1:], current
            assert current["can_edit"] == (someone.kind == "adult")

    @invariant()
    def nobody_was_answered_another_s_words(self) -> None:
        for someone in self.people.values():
            strangers = self.ledger.strangers(someone, someone.seen)
            assert not strangers, f"{someone.key} was shown {strangers} of {self._whose(strangers)}"

    @invariant()
    def off_the_record_reaches_no_memory(self) -> None:
        someone = self.watched()
        off = {m for c in someone.live(remembered=False) for m in c.markers}
        if off:
            derived = " ".join(self.call(someone, "GET", p).text for p in DREAM_WROTE).lower()
            for conversation in someone.live(remembered=True):
                derived += self.call(someone, "GET", f"/api/sessions/{conversation.id}/gist").text.lower()
            assert not [m for m in off if m in derived], f"off the record in what the dream wrote for {someone.key}"
            for marker in sorted(off)[:3]:
                for route in ("/api/recall", "/api/search"):
                    hits = self.call(someone, "GET", route, params={"q": marker, "k": 50}).json()
                    found = json.dumps(hits.get("hits", hits.get("results", []))).lower()
                    assert marker not in found, f"off the record in {route} of {someone.key}"

    @invariant()
    def recall_finds_only_remembered_turns_of_current_paths(self) -> None:
        someone = self.watched()
        remembered = someone.live(remembered=True)
        if remembered:
            current = {m["id"] for c in remembered for m in self.path(someone, c.id)}
            for marker in sorted(m for c in remembered for m in c.markers)[-2:]:
                hits = self.call(someone, "GET", "/api/recall", params={"q": marker, "k": 50}).json()["hits"]
                assert {h["id"] for h in hits if h["kind"] == "exchange"} <= current
                results = self.call(someone, "GET", "/api/search", params={"q": marker}).json()["results"]
                assert {r["turn_id"] for r in results if r["tier"] == "exchange"} <= current
        others = sorted(m for p in self.people.values() if p is not someone for m in p.markers())[-1:]
        for marker in others:  # the other's word, asked for: nothing of theirs is found
            for route in ("/api/recall", "/api/search"):
                response = someone.client.get(route, params={"q": marker, "k": 50})
                assert response.status_code == 200, (route, response.text[:300])
                body = response.json()
                assert body.pop("query") == marker  # the question echoed back is the asker's own
                strangers = self.ledger.strangers(someone, markers_in(json.dumps(body)))
                assert not strangers, f"{someone.key} found {strangers} of {self._whose(strangers)} by {route}"


PHASES = [p for p in Phase if p != Phase.shrink or os.environ.get("PROMISES_SHRINK", "1") == "1"]
Promises.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                                      suppress_health_check=list(HealthCheck), phases=PHASES)
test_the_promises_hold_whatever_two_people_and_the_dream_do = Promises.TestCase
