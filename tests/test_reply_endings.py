"""How a reply ended (cut at the token limit, stopped, failed) stored with it and continued; who wrote an
imported reply; Why? for an imported reply, dated by the days a memory speaks of and worded for a person.
Through the HTTP API and the store, on scripted fake models."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from lyra_local.companion import CONTINUE_PROMPT, joiner, reply_ending
from lyra_local.errors import ModelUnavailable
from lyra_local.llm.base import ChatDelta, GenerationOptions, Message
from lyra_local.memory.stage_words import LAYER_WORDS, STAGE_WORDS, found_by
from lyra_local.memory.stages import OPTIONAL, STAGES
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange

from .chatgpt_export import conversation, write_export
from .conftest import fake_client
from .fakes import FakeChatModel
from .sse import sse_events
from .web_fixtures import SAM, AppParts


class LimitedChat(FakeChatModel):
    """The fake chat model with a token limit: a reply longer than ``limit`` words stops there with
    ``finish_reason`` "length", as llama.cpp's does at ``max_tokens``; ``fail_after``: words after which the
    model fails mid-reply."""

    def __init__(self, limit: int = 5) -> None:
        super().__init__(n_ctx=2048)
        self.limit = limit
        self.fail_after: int | None = None

    def stream(self, messages: Sequence[Message], options: GenerationOptions | None = None) -> Iterator[ChatDelta]:
        words = self._next(messages, options).split(" ")
        for i, word in enumerate(words[:self.limit]):
            if self.fail_after is not None and i == self.fail_after:
                raise ModelUnavailable("the model went away")
            yield ChatDelta(word if i == 0 else " " + word)
        yield ChatDelta("", "length" if len(words) > self.limit else "stop")


@pytest.fixture
def app_parts() -> AppParts:
    return AppParts(SAM, LimitedChat())


def turn(client: TestClient, session_id: int, text: str) -> list[tuple[str, dict]]:
    return sse_events(client.post(f"/api/sessions/{session_id}/chat", json={"message": text}).text.splitlines())


def history(client: TestClient, session_id: int) -> list[dict]:
    return client.get(f"/api/sessions/{session_id}/messages").json()["messages"]


# -- pure pieces -----------------------------------------------------------------------------------------------


def test_how_a_reply_ended() -> None:
    assert reply_ending("length", stopped=False, failed=False) == "length"
    assert reply_ending("stop", stopped=False, failed=False) is None
    assert reply_ending("stop", stopped=True, failed=False) == "stopped"
    assert reply_ending("stop", stopped=False, failed=True) == "error"


def test_a_continuation_joins_the_reply_so_far_with_one_space_at_most() -> None:
    assert joiner("The lighthouse", "keeper") == " "
    assert joiner("The lighthouse ", "keeper") == ""
    assert joiner("The lighthouse", " keeper") == ""
    assert joiner("The lighthouse", ", said") == ""


def test_every_recall_stage_and_context_layer_is_said_in_words() -> None:
    for stage in (*STAGES, *OPTIONAL):
        assert stage.name in STAGE_WORDS, f"stage {stage.name!r} has no words for Why?"
    for layer in ("recalled", "gists", "digests", "session_gist", "recent"):
        assert layer in LAYER_WORDS
    assert found_by("answer+bm25+context+dense") == ["as the answer to a matching question", "by words",
                                                     "by meaning"]  # context adds nothing to bm25
    assert found_by("context") == ["by words in it or the turn before it"]
    assert found_by("dense+dense+newstage") == ["by meaning", "newstage"]  # a name not yet worded still shows


# -- a cut reply -----------------------------------------------------------------------------------------------


def test_a_reply_cut_at_the_limit_is_stored_as_cut_and_continue_extends_it(client: TestClient,
                                                                          chat: LimitedChat) -> None:
    session = client.post("/api/sessions", json={"name": "story"}).json()["id"]
    chat.enqueue("Once upon a time there was a lighthouse keeper")
    done = turn(client, session, "Tell me a story")[-1][1]
    assert done["finish_reason"] == "length" and done["ending"] == "length"  # the OpenAI route's reason stays
    cut = history(client, session)[-1]
    assert (cut["content"], cut["ending"]) == ("Once upon a time there", "length")

    chat.enqueue("was a lighthouse keeper.")
    got = sse_events(client.post(f"/api/exchanges/{cut['id']}/continue").text.splitlines())
    assert got[0][0] == "stored" and got[0][1]["continuing"] == cut["id"]
    assert "".join(d["text"] for k, d in got if k == "delta") == " was a lighthouse keeper."  # the new text only
    assert got[-1][1]["ending"] is None
    prompt = chat.history[-1][0]
    assert prompt[-2:] == [{"role": "assistant", "content": "Once upon a time there"},
                           {"role": "user", "content": CONTINUE_PROMPT}]
    assert prompt[-3] == {"role": "user", "content": "Tell me a story"}
    after = history(client, session)
    assert len(after) == 2  # no new turn: the reply grew
    assert after[-1]["content"] == "Once upon a time there was a lighthouse keeper."
    assert after[-1]["ending"] is None and after[-1]["alternatives"] == 2  # the cut one is kept a page back
    assert after[-1]["versions"] == [cut["id"], after[-1]["id"]]


# store/branches.py copies a turn's columns by name to ``asides`` and back, ``ending`` (and ``author``) among them:
# a version chosen back keeps its mark.
def test_a_cut_version_chosen_back_is_still_marked(client: TestClient, chat: LimitedChat) -> None:
    session = client.post("/api/sessions", json={"name": "story"}).json()["id"]
    chat.enqueue("Once upon a time there was a lighthouse keeper", "was a keeper.")
    turn(client, session, "Tell me a story")
    cut = history(client, session)[-1]
    client.post(f"/api/exchanges/{cut['id']}/continue")
    client.post(f"/api/exchanges/{cut['id']}/choose")
    back = history(client, session)[-1]
    assert (back["id"], back["ending"]) == (cut["id"], "length")


def test_only_a_reply_of_the_companion_can_be_continued(client: TestClient, chat: LimitedChat) -> None:
    session = client.post("/api/sessions", json={"name": "story"}).json()["id"]
    turn(client, session, "Hello")
    mine = history(client, session)[0]
    refused = client.post(f"/api/exchanges/{mine['id']}/continue")
    assert refused.status_code == 400 and "not a reply" in refused.json()["error"]["message"]
    assert client.post("/api/exchanges/999999/continue").status_code == 404


def test_a_reply_that_ended_by_itself_cannot_be_continued(client: TestClient, chat: LimitedChat) -> None:
    session = client.post("/api/sessions", json={"name": "hi"}).json()["id"]
    chat.enqueue("Hi Sam")
    turn(client, session, "Hello")
    whole = history(client, session)[-1]
    assert whole["ending"] is None
    refused = client.post(f"/api/exchanges/{whole['id']}/continue")
    assert refused.status_code == 409 and "ended by itself" in refused.json()["error"]["message"]
    assert [m["content"] for m in history(client, session)] == ["Hello", "Hi Sam"]  # nothing was added
    assert history(client, session)[-1]["alternatives"] == 1


def test_a_reply_the_model_broke_off_is_stored_as_an_error(client: TestClient, chat: LimitedChat) -> None:
    session = client.post("/api/sessions", json={"name": "story"}).json()["id"]
    chat.enqueue("one two three")
    chat.fail_after = 2
    got = turn(client, session, "Count")
    assert "error" in [k for k, _ in got]
    last = history(client, session)[-1]
    assert (last["content"], last["ending"]) == ("one two", "error")


def test_a_reply_stopped_by_its_reader_is_stored_as_stopped(client: TestClient, chat: LimitedChat) -> None:
    session = client.post("/api/sessions", json={"name": "story"}).json()["id"]
    chat.enqueue("one two three four")
    companion = client.app.state.lyra.owner_runtime().companion
    stream = companion.turn(session, "Count slowly")
    assert [next(stream).type, next(stream).type, next(stream).type] == ["stored", "delta", "delta"]
    stream.close()  # what a client hanging up does (web/streaming.py)
    last = history(client, session)[-1]
    assert (last["content"], last["ending"]) == ("one two", "stopped")


def test_a_whole_reply_has_no_ending(client: TestClient, chat: LimitedChat) -> None:
    session = client.post("/api/sessions", json={"name": "hi"}).json()["id"]
    chat.enqueue("Hi Sam")
    assert turn(client, session, "Hello")[-1][1]["finish_reason"] == "stop"
    assert history(client, session)[-1]["ending"] is None


# -- imported replies ------------------------------------------------------------------------------------------


def imported(client: TestClient, tmp_path: Path) -> int:
    export = write_export(tmp_path / "export.zip", [conversation("c1", "Interview prep", [
        ("user", "Hi! I'm Maya. I have an interview on 2 May, can you help me prepare?"),
        ("assistant", "Of course. Start by listing the three things you are proudest of."),
    ])])
    job = client.put("/api/import", params={"filename": "export.zip"}, content=export.read_bytes()).json()["job"]
    deadline = time.monotonic() + 60
    while client.get(f"/api/import/{job}").json()["status"] == "running":
        assert time.monotonic() < deadline, "the import did not finish"
        time.sleep(0.05)
    return next(s["id"] for s in client.get("/api/sessions").json()["sessions"] if s["name"] == "Interview prep")


def test_an_imported_reply_is_chatgpts_and_why_says_so(client: TestClient, chat: LimitedChat,
                                                       tmp_path: Path) -> None:
    session = imported(client, tmp_path)
    body = client.get(f"/api/sessions/{session}/messages").json()
    assert body["imported_from"] == "ChatGPT"
    theirs = body["messages"][1]
    assert theirs["role"] == "assistant" and theirs["imported_from"] == "ChatGPT"
    assert body["messages"][0]["imported_from"] is None  # the person's own message is the person's

    why = client.get(f"/api/exchanges/{theirs['id']}/trace")
    assert why.status_code == 200
    assert why.json() == {"kind": "imported", "exchange_id": theirs["id"], "imported_from": "ChatGPT",
                          "written_at": theirs["created_at"], "context_tokens": None, "memories": []}
    assert theirs["created_at"].startswith("2023-05-08")  # the day ChatGPT wrote it, not the import's

    refused = client.post(f"/api/exchanges/{theirs['id']}/continue")
    assert refused.status_code == 400 and "ChatGPT" in refused.json()["error"]["message"]

    chat.enqueue("Good luck")  # a reply written here, in the imported conversation, is the companion's
    turn(client, session, "Thanks!")
    mine = client.get(f"/api/sessions/{session}/messages").json()["messages"][-1]
    assert mine["imported_from"] is None
    assert client.get(f"/api/exchanges/{mine['id']}/trace").json()["kind"] == "context"
    user_turn = client.get(f"/api/sessions/{session}/messages").json()["messages"][0]
    assert client.get(f"/api/exchanges/{user_turn['id']}/trace").status_code == 404


def test_a_reply_of_lyras_in_an_imported_conversation_stays_lyras_after_export_and_import(
        client: TestClient, chat: LimitedChat, make_settings, tmp_path: Path) -> None:
    """A Lyra export writes a portable id on every turn: who wrote a reply is stored and exported with it, so a
    reply Lyra wrote after the import is not taken for ChatGPT's elsewhere (label, Why?, Continue)."""
    session = imported(client, tmp_path)
    chat.enqueue("Wear something you can move in and bring a copy of your CV")  # cut at five words
    turn(client, session, "What should I wear?")
    exported = client.get("/api/export")
    assert exported.status_code == 200

    other = LimitedChat()
    with fake_client(make_settings('[companion]\nuser_name = "Sam"\n', LYRA_DATA_DIR=str(tmp_path / "two")),
                     chat=other) as elsewhere:
        job = elsewhere.put("/api/import", params={"filename": "lyra.zip"}, content=exported.content).json()["job"]
        deadline = time.monotonic() + 60
        while (status := elsewhere.get(f"/api/import/{job}").json())["status"] == "running":
            assert time.monotonic() < deadline, "the import did not finish"
            time.sleep(0.05)
        assert status["status"] == "done", status
        there = next(s["id"] for s in elsewhere.get("/api/sessions").json()["sessions"]
                     if s["name"] == "Interview prep")
        body = elsewhere.get(f"/api/sessions/{there}/messages").json()
        assert body["imported_from"] == "ChatGPT"  # the conversation came from ChatGPT...
        theirs, mine = body["messages"][1], body["messages"][-1]
        assert (theirs["imported_from"], theirs["author"]) == ("ChatGPT", "ChatGPT")
        assert (mine["imported_from"], mine["author"], mine["ending"]) == (None, None, "length")  # ...this reply not
        assert mine["source_id"] is not None  # the export's portable id: no longer a sign of an import
        assert elsewhere.get(f"/api/exchanges/{theirs['id']}/trace").json()["kind"] == "imported"
        assert elsewhere.get(f"/api/exchanges/{mine['id']}/trace").status_code == 404  # its trace stayed home
        assert elsewhere.post(f"/api/exchanges/{theirs['id']}/continue").status_code == 400
        other.enqueue("a copy of your CV.")
        got = sse_events(elsewhere.post(f"/api/exchanges/{mine['id']}/continue").text.splitlines())
        assert got[0][0] == "stored" and got[-1][1]["ending"] is None
        assert elsewhere.get(f"/api/sessions/{there}/messages").json()["messages"][-1]["content"] == (
            "Wear something you can move a copy of your CV.")


# -- Why? dates and words ----------------------------------------------------------------------------------------


def test_why_dates_a_summary_by_the_days_it_speaks_of_and_says_how_it_was_found(client: TestClient) -> None:
    store: Store = client.app.state.lyra.owner_runtime().store
    old = store.sessions.create("Moving", created_at="2024-03-10T09:00:00+00:00")
    first = store.exchanges.add(NewExchange(old.id, "user", "I'm moving to Edinburgh", "2024-03-10T09:00:00+00:00"))
    last = store.exchanges.add(NewExchange(old.id, "assistant", "Exciting!", "2024-03-12T09:01:00+00:00"))
    gist = store.derived.put_gist(old.id, "Moving to Edinburgh.", last.id, None, None)  # written today
    now = store.sessions.create("Now")
    asked = store.exchanges.add(NewExchange(now.id, "user", "Where am I moving?"))
    reply = store.exchanges.add_reply(now.id, "Edinburgh.", [
        {"layer": "gists", "kind": "gist", "id": gist.id, "score": 0.9, "stage": "dense+bm25"},
        {"layer": "recalled", "kind": "exchange", "id": first.id, "score": 0.8, "stage": "answer+context"}], 40,
        answering=asked.id)

    why = client.get(f"/api/exchanges/{reply.id}/trace").json()
    assert why["kind"] == "context"
    summary, turn_entry = why["memories"]
    assert summary["created_at"] == gist.updated_at and not gist.updated_at.startswith("2024")
    assert (summary["began_at"], summary["ended_at"]) == (first.created_at, last.created_at)
    assert summary["layer_words"] == "A past conversation"
    assert summary["found_by"] == ["by meaning", "by words"]
    assert turn_entry["began_at"] == turn_entry["ended_at"] == first.created_at
    assert turn_entry["found_by"] == ["as the answer to a matching question", "by words in it or the turn before it"]
