"""Every route of the app is bound to one person, and none of them lets one person reach another's memory.

The table ``ROUTES`` names every route of the app (``app.routes``, with what FastAPI includes from routers) and
what it is: open, the owner's management of people, one's own account, the household's shared memory, the
models and settings (written by the owner only), or MEMORY (what reads or writes a person's memory). A route
the table does not name fails the first test: a new route must say whose it is before it ships. That test also
asks every route but the open ones without credentials in a household of two, and expects a 401.

The second test runs the real app on scripted fake models with two people: A (the owner) fills their memory
through the API with words found nowhere else (each text of A's holds a word of its own starting with ``MARK``,
and ``OWN``), and B then calls every route (``b_calls``: each one, with A's ids, A's words as queries, A's job
ids) and must get a refusal or an answer holding nothing of A's. B's changes (rename, delete, forget,
corrections, edits) must leave A's memory as it was, B's own files must hold no byte of A's, and no prompt the
model saw for B may hold any of A's words.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from httpx import Response
from starlette.routing import Mount

from lyra_local.config import Settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .chatgpt_export import conversation, write_export
from .fakes import FakeChatModel, FakeEmbedder

MARK = "qxa"  # every text of A's holds it (twice: ``own`` below and a word of its own); nothing else does
OWN = f"{MARK}own"
B_MARK = "qxb"  # B's own words, which A must not see either
A_SECRET, B_SECRET = "ada-password-1", "ben-password-1"

OPEN = "open (no person)"
OWNER = "owner-only household management"
ACCOUNT = "own account"
SHARED = "household-shared memory"
MODELS = "models and settings (owner-only writes)"
MEMORY = "a person's memory"

ROUTES: dict[tuple[str, str], str] = {
    # open: nobody's, answered before anyone logs in
    ("GET", "/health"): OPEN,
    ("GET", "/"): OPEN,
    ("GET", "/static/{name}"): OPEN,
    ("GET", "/api/auth/state"): OPEN,
    ("POST", "/api/auth/login"): OPEN,
    # the owner manages people, never their minds
    ("GET", "/api/people"): OWNER,
    ("POST", "/api/people"): OWNER,
    ("PUT", "/api/people/{person_id}/secret"): OWNER,
    ("GET", "/api/people/{person_id}/removal"): OWNER,
    ("DELETE", "/api/people/{person_id}"): OWNER,
    ("GET", "/api/household/backup"): OWNER,  # everyone's memory in one download: the owner's alone
    # one's own account
    ("POST", "/api/auth/logout"): ACCOUNT,
    ("POST", "/api/auth/logout-everywhere"): ACCOUNT,
    ("GET", "/api/me"): ACCOUNT,
    ("PUT", "/api/me/secret"): ACCOUNT,
    ("PUT", "/api/me/name"): ACCOUNT,
    ("GET", "/api/tokens"): ACCOUNT,
    ("POST", "/api/tokens"): ACCOUNT,
    ("DELETE", "/api/tokens/{token_id}"): ACCOUNT,
    # shared with everyone on purpose
    ("GET", "/api/household/memory"): SHARED,
    ("PUT", "/api/household/memory"): SHARED,
    ("GET", "/api/household/memory/history"): SHARED,
    # the box's models and settings, and the API's own description: the same for everyone
    ("GET", "/openapi.json"): MODELS,
    ("GET", "/docs"): MODELS,
    ("GET", "/docs/oauth2-redirect"): MODELS,
    ("GET", "/redoc"): MODELS,
    ("POST", "/admin/reload"): MODELS,
    ("GET", "/v1/models"): MODELS,
    ("GET", "/api/settings"): MODELS,
    ("GET", "/api/kinds"): MODELS,
    ("GET", "/api/models/files"): MODELS,
    ("PUT", "/api/models/choice"): MODELS,
    ("GET", "/api/models/offload"): MODELS,
    ("GET", "/api/models/embedding"): MODELS,
    ("GET", "/api/models/catalog"): MODELS,
    ("GET", "/api/models/first-run"): MODELS,
    ("POST", "/api/models/pulls"): MODELS,
    ("GET", "/api/models/pulls"): MODELS,
    ("GET", "/api/models/pulls/{job_id}"): MODELS,
    ("DELETE", "/api/models/pulls/{job_id}"): MODELS,
    ("DELETE", "/api/models/partials/{name:path}"): MODELS,
    # a person's memory: conversations, turns and everything built from them
    ("POST", "/v1/chat/completions"): MEMORY,
    ("GET", "/api/recall"): MEMORY,
    ("GET", "/api/search"): MEMORY,
    ("GET", "/api/timeline"): MEMORY,
    ("POST", "/api/forget"): MEMORY,
    ("GET", "/api/sources/{kind}/{item_id}"): MEMORY,
    ("GET", "/api/sessions/{session_id}/gist"): MEMORY,
    ("PUT", "/api/sessions/{session_id}/gist"): MEMORY,
    ("DELETE", "/api/sessions/{session_id}/gist"): MEMORY,
    ("PUT", "/api/digests/{digest_id}"): MEMORY,
    ("DELETE", "/api/digests/{digest_id}"): MEMORY,
    ("GET", "/api/narrative"): MEMORY,
    ("PUT", "/api/narrative"): MEMORY,
    ("DELETE", "/api/narrative"): MEMORY,
    ("GET", "/api/self"): MEMORY,
    ("PATCH", "/api/self"): MEMORY,
    ("GET", "/api/sessions"): MEMORY,
    ("POST", "/api/sessions"): MEMORY,
    ("PATCH", "/api/sessions/{session_id}"): MEMORY,
    ("DELETE", "/api/sessions/{session_id}"): MEMORY,
    ("GET", "/api/sessions/{session_id}/messages"): MEMORY,
    ("POST", "/api/sessions/{session_id}/chat"): MEMORY,
    ("POST", "/api/exchanges/{exchange_id}/regenerate"): MEMORY,
    ("POST", "/api/exchanges/{exchange_id}/continue"): MEMORY,
    ("POST", "/api/exchanges/{exchange_id}/edit"): MEMORY,
    ("POST", "/api/exchanges/{exchange_id}/choose"): MEMORY,
    ("GET", "/api/exchanges/{exchange_id}/trace"): MEMORY,
    ("GET", "/api/dream"): MEMORY,
    ("POST", "/api/dream"): MEMORY,
    ("GET", "/api/dream/events"): MEMORY,
    ("GET", "/api/profile"): MEMORY,
    ("PUT", "/api/profile"): MEMORY,
    ("POST", "/api/profile/seen"): MEMORY,
    ("POST", "/api/profile/facts/{fact_id}/confirm"): MEMORY,
    ("POST", "/api/profile/facts/{fact_id}/reject"): MEMORY,
    ("GET", "/api/profile/history"): MEMORY,
    ("DELETE", "/api/profile/{key}"): MEMORY,
    ("GET", "/api/digests"): MEMORY,
    ("PUT", "/api/import"): MEMORY,
    ("GET", "/api/import/{job_id}"): MEMORY,
    ("GET", "/api/import/{job_id}/events"): MEMORY,
    ("GET", "/api/export"): MEMORY,
    ("GET", "/api/backup"): MEMORY,
    ("GET", "/api/sitrep"): MEMORY,
    ("GET", "/api/world"): MEMORY,
    ("PUT", "/api/world"): MEMORY,
    ("GET", "/api/world/history"): MEMORY,
    ("GET", "/api/world/proposals"): MEMORY,
    ("POST", "/api/world/proposals"): MEMORY,
    ("POST", "/api/world/proposals/{version_id}/{decision}"): MEMORY,
    ("GET", "/api/instances"): MEMORY,
    ("POST", "/api/instances"): MEMORY,
    ("POST", "/api/instances/{instance_id}/heartbeat"): MEMORY,
    ("POST", "/api/instances/{instance_id}/complete"): MEMORY,
    ("GET", "/api/locks"): MEMORY,
    ("POST", "/api/locks/{action}"): MEMORY,
    ("POST", "/api/remember"): MEMORY,
}

COMING: set[tuple[str, str]] = set()  # routes named in the table before the app includes them
REFUSED = {400, 403, 404, 409, 422}  # a refusal holds nothing of anyone's memory (its body is checked anyway)


def app_routes(app: FastAPI) -> set[tuple[str, str]]:
    """Every (method, path) the app answers, the routers' included ones too (FastAPI >= 0.16x keeps them
    behind ``_IncludedRouter``: ``iter_route_contexts`` opens them); a mount is ("MOUNT", its path)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # an older FastAPI lists every route in app.routes itself
        routes: Sequence[Any] = app.routes
    else:
        routes = list(iter_route_contexts(app.routes))
    found = set()
    for route in routes:
        if isinstance(getattr(route, "original_route", route), Mount):
            found.add(("MOUNT", route.path))
            continue
        for method in set(route.methods or ()) - {"HEAD"}:
            found.add((method, route.path))
    return found


# -- the fake models: the chat model echoes what it is given, so whatever reaches a prompt reaches the reply ----
def respond(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A reply, summary, fact list or reflection made of the marked words it was shown (and the text's end)."""
    content = messages[-1]["content"]
    material = content.rpartition("\n\n")[0] or content
    marks = sorted(set(re.findall(rf"(?:{MARK}|{B_MARK})\w*", material)))
    if options is not None and options.json_schema is not None:
        if "standing facts" in content:
            return json.dumps({"facts": [{"key": "codeword", "value": " ".join(marks) or "none"}]})
        return json.dumps({"mood": "content", "energy": 0.8, "self_narrative": "I heard " + " ".join(marks),
                           "reflections": ["heard " + " ".join(marks)]})
    return " ".join([*marks, "noted", *material.split()[-30:]])


# -- a household of two on the real app ------------------------------------------------------------------------
@dataclass
class Home:
    app: FastAPI
    a: TestClient  # the owner, logged in
    b: TestClient  # the second adult, logged in
    nobody: TestClient  # no credentials at all
    chat: FakeChatModel
    a_id: str
    b_id: str
    data_dir: Path


@contextlib.contextmanager
def household(make_settings: Callable[..., Settings]) -> Iterator[Home]:
    """A fresh Lyra whose owner (Ada) set a password and added Ben; both logged in, each in a client of their
    own (their own cookie)."""
    settings = make_settings('[companion]\nuser_name = "Ada"\n[dream]\nsession_idle_s = 0\n')
    chat = FakeChatModel(respond=respond)
    app = create_app(settings, models=Models(settings, chat=chat, embed=FakeEmbedder()))  # type: ignore[arg-type]
    with TestClient(app, base_url="http://127.0.0.1") as a:
        assert a.put("/api/me/secret", json={"secret": A_SECRET}).status_code == 200
        added = a.post("/api/people", json={"name": "Ben", "kind": "adult", "secret": B_SECRET})
        assert added.status_code == 200, added.text
        b = TestClient(app, base_url="http://127.0.0.1")
        logged = b.post("/api/auth/login", json={"name": "Ben", "secret": B_SECRET})
        assert logged.status_code == 200, logged.text
        nobody = TestClient(app, base_url="http://127.0.0.1")
        yield Home(app, a, b, nobody, chat, a.get("/api/me").json()["id"], added.json()["person"]["id"],
                   settings.data_dir)


def ok(response: Response) -> Any:
    assert response.status_code < 300, f"{response.request.method} {response.request.url}: {response.text[:500]}"
    return response.json() if response.headers.get("content-type", "").startswith("application/json") else None


def poll(client: TestClient, url: str, done: Callable[[Any], bool], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = ok(client.get(url))
        if done(found):
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what} did not finish in {timeout:g} s")


# -- A's memory, filled through the API ------------------------------------------------------------------------
@dataclass
class Filled:
    """What A put in their memory: the marked words, and the ids and names B will try."""

    words: list[str] = field(default_factory=list)  # each marked word A wrote (B's queries)
    session_ids: list[int] = field(default_factory=list)
    session_names: list[str] = field(default_factory=list)
    exchange_ids: list[int] = field(default_factory=list)
    gist_ids: list[int] = field(default_factory=list)
    digest_ids: list[int] = field(default_factory=list)
    fact_ids: list[int] = field(default_factory=list)
    fact_keys: list[str] = field(default_factory=list)
    narrative_ids: list[int] = field(default_factory=list)
    world_ids: list[int] = field(default_factory=list)
    import_job: str = ""
    token_id: int = 0
    token: str = ""
    instance: str = f"{MARK}inst1"
    lock: str = f"{MARK}lock1"
    holder: str = f"{MARK}holder"

    def said(self, word: str) -> str:
        """A text of A's: a word of its own (remembered for B's queries) and ``OWN``."""
        self.words.append(f"{MARK}{word}")
        return f"{MARK}{word} {OWN}"


def chatgpt_export(tmp: Path, name: str, turns: list[tuple[str, str]], title: str) -> bytes:
    return write_export(tmp / f"{name}.zip", [conversation(name, title, turns)]).read_bytes()


def fill_a(home: Home, tmp: Path) -> Filled:
    """A chats (web and OpenAI route), regenerates, edits, corrects, writes core memory, imports, dreams, asks
    Why?, proposes, remembers, registers, locks and makes a token: every kind of memory gets A's words."""
    a, f = home.a, Filled()
    first = ok(a.post("/api/sessions", json={"name": f.said("sess")}))
    ok(a.post(f"/api/sessions/{first['id']}/chat", json={"message": f"my codeword is {f.said('chat')}"}))
    ok(a.post(f"/api/sessions/{first['id']}/chat", json={"message": f"and my dog is {f.said('dog')}"}))
    answer = ok(a.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": f.said("openai")}],
                                                       "user": f.said("oaisess")}))
    assert MARK in answer["choices"][0]["message"]["content"]  # the fake echoes: A's words are in A's replies
    turns = ok(a.get(f"/api/sessions/{first['id']}/messages"))["messages"]
    ok(a.post(f"/api/exchanges/{turns[-1]['id']}/regenerate"))
    ok(a.post(f"/api/exchanges/{turns[-2]['id']}/edit", json={"content": f"edited: {f.said('edit')}"}))
    ok(a.put("/api/profile", json={"key": f"{MARK}factkey", "value": f.said("fact")}))
    ok(a.put("/api/world", json={"content": f"# Now\n- {f.said('world')}"}))
    body = chatgpt_export(tmp, f"{MARK}conv", [("user", f.said("import")), ("assistant", f.said("impreply"))],
                          f.said("imptitle"))
    f.import_job = ok(a.put("/api/import", params={"filename": "chatgpt.zip"}, content=body))["job"]
    job = poll(a, f"/api/import/{f.import_job}", lambda j: j["status"] != "running", "A's import")
    assert job["status"] == "done" and job["report"]["sessions_new"] == 1, job

    assert ok(a.post("/api/dream"))["started"] is True
    passed = poll(a, "/api/dream", lambda d: not d["running"] and d["last_pass"] is not None, "A's dream pass")
    assert passed["last_pass"]["status"] == "done", passed["last_pass"]

    sessions = ok(a.get("/api/sessions"))["sessions"]
    f.session_ids = [s["id"] for s in sessions]
    f.session_names = [s["name"] for s in sessions]
    for sid in f.session_ids:
        for turn in ok(a.get(f"/api/sessions/{sid}/messages"))["messages"]:
            f.exchange_ids += turn["versions"]
        gist = ok(a.get(f"/api/sessions/{sid}/gist"))["gist"]
        if gist is not None:
            f.gist_ids.append(gist["id"])
    f.exchange_ids = sorted(set(f.exchange_ids))
    f.digest_ids = [d["id"] for d in ok(a.get("/api/digests"))["digests"]]
    assert f.gist_ids and f.digest_ids, "the dream wrote no gist or digest of A's"

    # A corrects what the dream made, and says Why? about a reply
    ok(a.put(f"/api/sessions/{first['id']}/gist", json={"content": f.said("gist")}))
    ok(a.put(f"/api/digests/{f.digest_ids[0]}", json={"content": f.said("digest")}))
    ok(a.put("/api/narrative", json={"content": f.said("narrative")}))
    ok(a.patch("/api/self", json={"mood": f"{MARK}mood", "self_narrative": f.said("selfnarr"),
                                  "reflections": [f.said("reflect")]}))
    facts = ok(a.get("/api/profile"))["facts"]
    f.fact_ids, f.fact_keys = [c["id"] for c in facts], [c["key"] for c in facts]
    f.narrative_ids = [ok(a.get("/api/narrative"))["id"]]
    replies = [t for t in ok(a.get(f"/api/sessions/{first['id']}/messages"))["messages"] if t["role"] == "assistant"]
    why = ok(a.get(f"/api/exchanges/{replies[-1]['id']}/trace"))
    assert MARK in json.dumps(why), "A's Why? names none of A's memories"

    # the agent-facing memory: a proposal to the core memory, a note, an instance and a lock of A's
    proposal = ok(a.post("/api/world/proposals", json={"agent": f"{MARK}agent", "content": f.said("proposal"),
                                                        "reason": f.said("reason")}))
    f.world_ids = sorted({v["id"] for v in ok(a.get("/api/world/history"))["versions"]} | {proposal["id"]})
    ok(a.post("/api/remember", json={"agent": f"{MARK}agent", "content": f.said("remember")}))
    ok(a.post("/api/instances", json={"kind": "agent", "summary": f.said("instance"), "id": f.instance}))
    ok(a.post("/api/locks/acquire", json={"resource": f.lock, "holder": f.holder, "ttl_s": 3600,
                                          "note": f.said("locknote")}))
    made = ok(a.post("/api/tokens", json={"name": f.said("token")}))
    f.token_id, f.token = made["token"]["id"], made["secret"]
    return f


def fill_b(home: Home, tmp: Path) -> None:
    """B's own memory, small, with ids that overlap A's (B's session 1 is not A's session 1)."""
    b = home.b
    sid = ok(b.post("/api/sessions", json={"name": f"{B_MARK}sess plans"}))["id"]
    ok(b.post(f"/api/sessions/{sid}/chat", json={"message": f"my own word is {B_MARK}chat"}))
    ok(b.put("/api/profile", json={"key": f"{B_MARK}key", "value": f"{B_MARK}fact"}))
    ok(b.put("/api/world", json={"content": f"# Now\n- {B_MARK}world"}))


def a_view(a: TestClient, f: Filled) -> dict[str, Any]:
    """Everything A reads of their memory, as comparable data (the export's files, each list and page)."""
    view: dict[str, Any] = {}
    for url in ("/api/sessions", "/api/profile", "/api/digests", "/api/timeline", "/api/narrative", "/api/world",
                "/api/world/history", "/api/world/proposals", "/api/locks", "/api/tokens"):
        view[url] = ok(a.get(url))
    view["/api/self"] = ok(a.get("/api/self"))["self_state"]
    view["instances"] = sorted(i["id"] for i in ok(a.get("/api/instances"))["instances"])
    for sid in f.session_ids:
        view[f"messages {sid}"] = ok(a.get(f"/api/sessions/{sid}/messages"))
        view[f"gist {sid}"] = ok(a.get(f"/api/sessions/{sid}/gist"))
    for word in f.words:
        view[f"search {word}"] = ok(a.get("/api/search", params={"q": word}))
    with zipfile.ZipFile(io.BytesIO(a.get("/api/export").content)) as archive:
        view["export"] = {name: archive.read(name).decode() for name in sorted(archive.namelist())}
    return view


# -- B's calls: every route, with A's ids, words and jobs ------------------------------------------------------
@dataclass
class Call:
    method: str
    route: str  # the table's path
    url: str
    params: dict[str, Any] | None = None
    json: Any = None
    content: bytes | None = None
    mine: bool = False  # the answer must hold B's own words: B reads real memory, not an empty page

    def sent(self) -> list[str]:
        """The marked strings B itself sent (a refusal or a query may echo them back: that is not A's memory)."""
        found: list[str] = []

        def walk(value: Any) -> None:
            if isinstance(value, str):
                found.extend(value.split("/"))
            elif isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        walk([self.url, self.params, self.json])
        return sorted({s for s in found if MARK in s}, key=len, reverse=True)


def b_calls(f: Filled, home: Home, tmp: Path) -> list[Call]:
    """Each route B can call, with what of A's it could name: A's ids in the path, A's words as queries, A's
    job ids, A's names; B's own writes carry none of A's words (so B's files must end up without any)."""
    calls: list[Call] = []

    def call(method: str, route: str, url: str | None = None, **kw: Any) -> None:
        calls.append(Call(method, route, url or route, **kw))

    # the box's models and settings: readable by anyone, changed by the owner only
    for route in ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", "/v1/models", "/api/settings",
                  "/api/kinds", "/api/models/files", "/api/models/offload", "/api/models/embedding",
                  "/api/models/catalog", "/api/models/first-run", "/api/models/pulls"):
        call("GET", route)
    call("GET", "/api/models/pulls/{job_id}", "/api/models/pulls/nope")
    call("POST", "/admin/reload")
    call("PUT", "/api/models/choice", json={"chat": "x"})
    call("POST", "/api/models/pulls", json={"name": "qwen2.5-7b-instruct"})
    call("DELETE", "/api/models/pulls/{job_id}", "/api/models/pulls/nope")
    call("DELETE", "/api/models/partials/{name:path}", "/api/models/partials/some.gguf")
    # the owner's management of people: B is refused, whoever they name
    call("GET", "/api/people")
    call("POST", "/api/people", json={"name": "Cleo", "kind": "child", "secret": "4321"})
    for pid in (home.a_id, home.b_id):
        call("PUT", "/api/people/{person_id}/secret", f"/api/people/{pid}/secret", json={"secret": "taken-over-1"})
        call("GET", "/api/people/{person_id}/removal", f"/api/people/{pid}/removal")
        call("DELETE", "/api/people/{person_id}", f"/api/people/{pid}")
    if ("GET", "/api/household/backup") in app_routes(home.app):
        call("GET", "/api/household/backup")
    # one's own account and the household memory (shared on purpose: A wrote none of their words there)
    call("GET", "/api/me")
    call("PUT", "/api/me/name", json={"name": "Ada"})
    call("PUT", "/api/me/secret", json={"secret": B_SECRET})
    call("GET", "/api/tokens")
    call("POST", "/api/tokens", json={"name": "ben's script"})
    call("DELETE", "/api/tokens/{token_id}", f"/api/tokens/{f.token_id}")
    call("GET", "/api/household/memory")
    call("PUT", "/api/household/memory", json={"content": "The bins go out on Tuesday."})
    call("GET", "/api/household/memory/history")

    # reading: lists, searches, recall, every item by A's ids
    for route in ("/api/timeline", "/api/narrative", "/api/self", "/api/digests", "/api/world/history",
                  "/api/world/proposals", "/api/instances", "/api/locks", "/api/dream"):
        call("GET", route)
    for route in ("/api/sessions", "/api/profile", "/api/world", "/api/export", "/api/backup"):
        call("GET", route, mine=True)
    call("GET", "/api/search", params={"q": f"{B_MARK}chat"}, mine=True)
    call("GET", "/api/recall", params={"q": f"{B_MARK}chat"}, mine=True)
    call("GET", "/api/digests", params={"granularity": "day"})
    call("GET", "/api/dream/events", params={"follow": "false", "after": 0})
    call("GET", "/api/sitrep")
    call("GET", "/api/sitrep", params={"format": "text"})
    call("GET", "/api/locks", params={"resource": f.lock})
    for word in f.words:
        call("GET", "/api/search", params={"q": word})
        for tier in ("exchange", "gist", "digest"):
            call("GET", "/api/recall", params={"q": word, "tier": tier, "context": 2})
    for sid in f.session_ids:
        call("GET", "/api/search", params={"q": "codeword", "session_id": sid})
        call("GET", "/api/recall", params={"q": "codeword", "session_id": sid})
        call("GET", "/api/sessions/{session_id}/messages", f"/api/sessions/{sid}/messages")
        call("GET", "/api/sessions/{session_id}/gist", f"/api/sessions/{sid}/gist")
    for key in f.fact_keys:
        call("GET", "/api/profile/history", params={"key": key})
    for kind, ids in (("gist", f.gist_ids), ("fact", f.fact_ids), ("digest", f.digest_ids),
                      ("narrative", f.narrative_ids), ("self_state", [1]), ("world", f.world_ids)):
        for item in ids:
            call("GET", "/api/sources/{kind}/{item_id}", f"/api/sources/{kind}/{item}")
    for eid in f.exchange_ids:
        call("GET", "/api/exchanges/{exchange_id}/trace", f"/api/exchanges/{eid}/trace")
    call("GET", "/api/import/{job_id}", f"/api/import/{f.import_job}")
    call("GET", "/api/import/{job_id}/events", f"/api/import/{f.import_job}/events")
    for word in f.words:  # a dry run says how much would go: nothing of B's holds A's words
        call("POST", "/api/forget", json={"matching": word, "dry_run": True})

    # writing: B's own chat, import and dream, then changes aimed at A's ids, words and names
    call("POST", "/v1/chat/completions", json={"messages": [{"role": "user", "content": "What is my codeword?"}]})
    call("POST", "/api/sessions", json={"name": "Ben asks"})
    body = chatgpt_export(tmp, "ben", [("user", f"{B_MARK}import of mine"), ("assistant", "fine")], "Ben's")
    call("PUT", "/api/import", params={"filename": "ben.zip"}, content=body)
    call("POST", "/api/dream")
    call("POST", "/api/profile/seen")
    call("PUT", "/api/profile", json={"key": "mood", "value": "fine"})
    call("PUT", "/api/narrative", json={"content": "Ben's story so far."})
    call("PATCH", "/api/self", json={"mood": "calm", "reflections": ["Ben is here."]})
    call("PUT", "/api/world", json={"content": "# Now\n- Ben's world"})
    call("POST", "/api/world/proposals", json={"agent": "benbot", "content": "# Ben", "reason": "tidy"})
    call("POST", "/api/remember", json={"agent": "benbot", "content": "Ben likes tea."})
    call("POST", "/api/instances", json={"kind": "agent", "summary": "Ben's agent"})
    for sid in f.session_ids:
        call("POST", "/api/sessions/{session_id}/chat", f"/api/sessions/{sid}/chat",
             json={"message": "What did I say here?"})
        call("PUT", "/api/sessions/{session_id}/gist", f"/api/sessions/{sid}/gist", json={"content": "Ben's gist"})
        call("PATCH", "/api/sessions/{session_id}", f"/api/sessions/{sid}", json={"name": "renamed by Ben"})
    for eid in f.exchange_ids:
        for action in ("regenerate", "continue", "choose"):
            call("POST", f"/api/exchanges/{{exchange_id}}/{action}", f"/api/exchanges/{eid}/{action}")
        call("POST", "/api/exchanges/{exchange_id}/edit", f"/api/exchanges/{eid}/edit", json={"content": "Ben's"})
    for did in f.digest_ids:
        call("PUT", "/api/digests/{digest_id}", f"/api/digests/{did}", json={"content": "Ben's digest"})
    for fid in f.fact_ids:
        call("POST", "/api/profile/facts/{fact_id}/confirm", f"/api/profile/facts/{fid}/confirm")
    for vid in f.world_ids:
        for decision in ("accept", "reject"):
            call("POST", "/api/world/proposals/{version_id}/{decision}", f"/api/world/proposals/{vid}/{decision}",
                 json={"by": "ben"})
    for action in ("heartbeat", "complete"):
        call("POST", f"/api/instances/{{instance_id}}/{action}", f"/api/instances/{f.instance}/{action}",
             json={"message": "hi"} if action == "heartbeat" else {"result": "stopped by Ben"})
    for action in ("renew", "release"):
        call("POST", "/api/locks/{action}", f"/api/locks/{action}", json={"resource": f.lock, "holder": f.holder})

    # deleting and forgetting by A's ids, words and names
    for fid in f.fact_ids:
        call("POST", "/api/profile/facts/{fact_id}/reject", f"/api/profile/facts/{fid}/reject")
    for key in f.fact_keys:
        call("DELETE", "/api/profile/{key}", f"/api/profile/{key}")
    for did in f.digest_ids:
        call("DELETE", "/api/digests/{digest_id}", f"/api/digests/{did}")
    call("DELETE", "/api/narrative")
    for name in f.session_names:
        call("POST", "/api/forget", json={"sessions": [name]})
    for word in f.words:
        call("POST", "/api/forget", json={"matching": word})
    call("POST", "/api/forget", json={"exchange_ids": f.exchange_ids})
    call("POST", "/api/forget", json={"memories": {"fact": f.fact_ids}})
    call("POST", "/api/forget", json={"sessions": f.session_ids})
    for sid in f.session_ids:
        call("DELETE", "/api/sessions/{session_id}/gist", f"/api/sessions/{sid}/gist")
        call("DELETE", "/api/sessions/{session_id}", f"/api/sessions/{sid}")
    call("POST", "/api/forget", json={"before": "2100-01-01"})
    # logging out: B's own sessions end, A's stay (the last calls: B logs in again between them)
    call("POST", "/api/auth/logout")
    call("POST", "/api/auth/logout-everywhere")
    return calls


def body_text(response: Response) -> bytes:
    """The response's bytes, a zip's members unpacked (an export is compressed)."""
    data = response.content
    if data.startswith(b"PK\x03\x04"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return b"\n".join(archive.read(name) for name in archive.namelist())
    return data


def leak(call: Call, response: Response) -> str | None:
    """What of A's a response to B holds (None: nothing). B's own marked words echoed back do not count; every
    text of A's holds a second marked word that B never sends."""
    text = body_text(response)
    for sent in call.sent():
        text = text.replace(sent.encode(), b"")
    at = text.find(MARK.encode())
    return None if at < 0 else text[max(0, at - 120):at + 120].decode(errors="replace")


def expected(call: Call) -> str:
    """What B may get: a refusal (403) for the owner's routes and the box's changes, else 2xx or a refusal."""
    kind = ROUTES[(call.method, call.route)]
    if kind == OWNER or (kind == MODELS and call.method != "GET"):
        return "403"
    return "2xx or refused"


def files_holding(folder: Path, needle: bytes) -> list[str]:
    """Every file under ``folder`` (the database, its WAL, the indexes...) whose bytes hold ``needle``."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes())


def test_every_route_says_whose_it_is_and_asks_for_a_login(make_settings: Callable[..., Settings]) -> None:
    with household(make_settings) as home:
        found = app_routes(home.app)
        unnamed = sorted(found - set(ROUTES))
        assert not unnamed, f"routes with no person binding in the table (say whose they are): {unnamed}"
        assert not sorted(set(ROUTES) - found - COMING), "the table names routes the app no longer has"
        for method, path in sorted(found):
            if method == "MOUNT":
                assert ROUTES[(method, path)] == OPEN
                continue
            url = re.sub(r"\{[^}]+\}", "1", path)
            response = home.nobody.request(method, url)
            if ROUTES[(method, path)] == OPEN:
                assert response.status_code != 401 or response.json()["error"]["type"] == "login_failed", (
                    f"{method} {path} is open but asked for a login")
                continue
            assert response.status_code == 401, f"{method} {url} answered {response.status_code} to nobody"
            assert response.json()["error"]["type"] in ("login_required", "unauthorized")
        # and with a wrong or revoked credential, a memory route is refused the same way
        assert home.nobody.get("/api/sessions", headers={"Authorization": "Bearer lyra_wrong"}).status_code == 401
        assert home.nobody.get("/api/sessions", headers={"Cookie": "lyra_session=ended"}).status_code == 401


def test_b_reaches_nothing_of_a_through_any_route(make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    with household(make_settings) as home:
        filled = fill_a(home, tmp_path)
        fill_b(home, tmp_path)
        before = a_view(home.a, filled)
        seen = json.dumps(before)
        missing = [w for w in filled.words if w not in seen]
        assert not missing, f"A's words that A cannot see in their own memory: {missing}"
        assert B_MARK not in seen, "the owner sees B's memory"

        calls = b_calls(filled, home, tmp_path)
        answered = {(c.method, c.route) for c in calls}
        untried = sorted(k for k in app_routes(home.app) if ROUTES[k] != OPEN and k not in answered)
        assert not untried, f"routes B was never sent to (add a call to b_calls): {untried}"
        prompts_before = len(home.chat.history)
        leaks, wrong = [], []
        for call in calls:
            if call.route == "/api/auth/logout":  # B's last calls: first let B's background work end
                poll(home.b, "/api/dream", lambda d: not d["running"], "B's dream pass")
                for job in home.app.state.lyra.imports.jobs.values():
                    deadline = time.monotonic() + 30
                    while job.status == "running" and time.monotonic() < deadline:
                        time.sleep(0.05)
            if call.route == "/api/auth/logout-everywhere":
                ok(home.b.post("/api/auth/login", json={"name": "Ben", "secret": B_SECRET}))
            response = home.b.request(call.method, call.url, params=call.params, json=call.json,
                                      content=call.content)
            status = response.status_code
            fits = status == 403 if expected(call) == "403" else status < 300 or status in REFUSED
            if not fits:
                wrong.append(f"{call.method} {call.url} {call.params or ''} -> {status} "
                             f"(expected {expected(call)}): {response.text[:200]}")
            if call.mine and B_MARK.encode() not in body_text(response):
                wrong.append(f"{call.method} {call.url} {call.params or ''} -> {status}: none of B's own memory")
            found = leak(call, response)
            if found is not None:
                leaks.append(f"{call.method} {call.url} {call.params or call.json or ''} -> {status}: …{found}…")
        assert not wrong, "\n".join(wrong)
        assert not leaks, "B got A's memory:\n" + "\n".join(leaks)

        # nothing of A's reached a prompt made for B (the fake model saw B's turns, B's dream, B's import)
        for messages, _ in home.chat.history[prompts_before:]:
            assert MARK not in json.dumps(messages), "a prompt made for B held A's words"
        assert len(home.chat.history) > prompts_before, "B's chat and dream never reached the model"

        # B's changes left A's memory as it was, and A's token and login still work
        after = a_view(home.a, filled)
        assert after == before, [k for k in before if before[k] != after.get(k)]
        assert home.nobody.get("/api/me", headers={"Authorization": f"Bearer {filled.token}"}).json()["id"] == (
            home.a_id)
        assert home.b.get("/api/me").status_code == 401  # B logged out everywhere; A (above) did not
        # B's own folder holds no byte of A's: database, WAL, full text, indexes, nothing
        b_dir = home.data_dir / "people" / home.b_id
        assert (b_dir / "lyra.db").is_file()
        assert files_holding(b_dir, MARK.encode()) == []
        assert files_holding(home.data_dir, B_MARK.encode()) != []  # the check reads what is there
    assert files_holding(b_dir, MARK.encode()) == []  # closed too (the WAL checkpointed into the database)
