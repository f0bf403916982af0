"""What the household's promises test (tests/test_promises_stateful.py) knows about each person, and where
their words may be.

Every word a person says (or writes into a correction, or into the household
memory) is a marker made here, and the ``Ledger`` remembers whose it is, so a
marker found anywhere (an API response, a model's prompt, a byte of a file)
says at once whether it may be there: a person's own markers may be in their
own responses, prompts and files; a household-memory marker anywhere its
household is (it was shared on purpose) until its author is removed; nothing
else, ever. Markers are found by pattern, not looked up one by one, so a check
costs one pass over what is read.

Every example starts from a copy of one household founded through the API
(``founded``): the owner set a password and added a second person, and both
logged in.
"""

from __future__ import annotations

import atexit
import functools
import io
import json
import re
import shutil
import sqlite3
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from lyra_local.config import Settings, load_settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.registry import Models
from lyra_local.web import create_app
from lyra_local.web.auth import COOKIE

from .conftest import MODELS_DIR
from .fakes import FakeChatModel, FakeEmbedder

MARK = re.compile(r"zq[0-9a-f]{10}")
MARK_BYTES = re.compile(rb"zq[0-9a-f]{10}")
SHARED_TAG = "c"  # the hex digit household-memory markers start with (a person's: "a" the owner, "b" the second)
HOUSEHOLD_FILES = ("household.db", "household.db-wal", "household.db-shm", "household.db-journal")

# -- the household every example starts from ----------------------------------------------------------

REPLY = "I hear you."
OWNER_SECRET = "owner-pass-1"
SECOND = "Robin"  # everyone added is called so: a new person under a removed one's name is still someone else
SECRETS = {"adult": "robin-pass-1", "child": "4321"}


def copy_markers(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A summary model that writes every marker it read into whatever it is asked to write."""
    found = list(dict.fromkeys(MARK.findall("\n".join(m["content"] for m in messages))))[:6]
    said = " ".join(f"Sam spoke of {m}." for m in found) or "Sam and Lyra talked."
    if options is not None and options.json_schema is not None:
        if "facts" in options.json_schema.get("properties", {}):
            return json.dumps({"facts": [{"key": "sport", "value": m} for m in found[:2]]})
        return json.dumps({"mood": "curious", "energy": 0.6, "self_narrative": said, "reflections": [said]})
    return said


def settings_for(tmp: Path, data: Path) -> Settings:
    config = tmp / "lyra.toml"
    config.write_text('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\nmin_turns = 1\n'
                      '[coordination]\nworld_updates = "propose"\n')
    return load_settings(config, env={"LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR),
                                      "LYRA_DREAM__ENABLED": "false"})


def open_app(settings: Settings, chat: FakeChatModel, summary: FakeChatModel, embedder: FakeEmbedder) -> TestClient:
    """The app, and the client that runs its lifespan (logged in as nobody: each person has a client of their
    own)."""
    models = Models(settings, chat=chat, summary=summary, embed=embedder)
    host = TestClient(create_app(settings, models=models), base_url="http://127.0.0.1")
    host.__enter__()
    return host


@dataclass(frozen=True)
class Founded:
    """The household every example starts from: the owner set a password and added B, and both logged in."""

    data: Path
    people: dict[str, tuple[str, str, str]]  # role -> (person id, name, secret)
    cookies: dict[str, str]  # role -> the login cookie of their device


@functools.cache
def founded() -> Founded:
    """Founded through the API once per run, and copied for each example: its three scrypt hashes (a third of a
    second each on a busy box) would otherwise cost every example a second. Adding someone new within an
    example (``add_someone_new``) goes the whole way each time."""
    tmp = Path(tempfile.mkdtemp(prefix="lyra-promises-founded-"))
    atexit.register(shutil.rmtree, tmp, True)
    host = open_app(settings_for(tmp, tmp / "data"), FakeChatModel(), FakeChatModel(), FakeEmbedder())
    try:
        a, b = (TestClient(host.app, base_url="http://127.0.0.1") for _ in range(2))
        app: Any = host.app
        owner = app.state.lyra.household.owner()
        assert a.get("/api/me").json()["login_free"] is True
        assert a.put("/api/me/secret", json={"secret": OWNER_SECRET}).status_code == 200
        added = a.post("/api/people", json={"name": SECOND, "kind": "adult", "secret": SECRETS["adult"]})
        assert added.status_code == 200, added.text
        assert b.get("/api/me").status_code == 401  # two people: every device logs in
        assert b.post("/api/auth/login", json={"name": SECOND, "secret": SECRETS["adult"]}).status_code == 200
        start = Founded(tmp / "data", {"A": (owner.id, owner.name, OWNER_SECRET),
                                       "B": (added.json()["person"]["id"], SECOND, SECRETS["adult"])},
                        {"A": a.cookies[COOKIE], "B": b.cookies[COOKIE]})
    finally:
        host.__exit__(None, None, None)
    return start


# -- who is who, and what they said --------------------------------------------------------------------

@dataclass
class Conversation:
    id: int
    remember: bool
    name_marker: str | None = None
    markers: set[str] = field(default_factory=set)  # every marker said in it, on the path or set aside


Backup = tuple[Path, dict[int, Conversation], set[str]]


@dataclass
class Someone:
    """One person of the household as the test knows them: how they are logged in, and what they said."""

    key: str  # "A" (the owner), "B1", "B2", ...: who, in a failure's message (a re-added person is someone new)
    id: str
    name: str
    secret: str
    kind: str
    tag: str  # the hex digit their markers start with
    client: TestClient
    conversations: dict[int, Conversation] = field(default_factory=dict)
    forgotten: set[str] = field(default_factory=set)  # forgotten, or left off the record: nowhere, ever again
    lost: set[str] = field(default_factory=set)  # said after the backup that was restored: nowhere, until another
    personal: dict[str, str] = field(default_factory=dict)  # markers written into corrections -> where
    backups: list[Backup] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # every marker of any response this person's client received

    def live(self, *, remembered: bool | None = None) -> list[Conversation]:
        return sorted((c for c in self.conversations.values() if remembered is None or c.remember == remembered),
                      key=lambda c: c.id)

    def markers(self) -> set[str]:
        """What of theirs is remembered now (in a conversation, or written into a correction)."""
        return {m for c in self.conversations.values() for m in c.markers} | set(self.personal)


class Ledger:
    """Whose every marker is, and which were written into the household memory (and by whom, in order)."""

    def __init__(self) -> None:
        self.counter = 0
        self.whose: dict[str, str] = {}
        self.shared: list[tuple[str, str]] = []  # (marker, author's key), oldest first
        self.removed: set[str] = set()  # keys of the people removed

    def new(self, someone: Someone, *, shared: bool = False) -> str:
        self.counter += 1
        marker = f"zq{SHARED_TAG if shared else someone.tag}{self.counter:09x}"
        self.whose[marker] = someone.key
        if shared:
            self.shared.append((marker, someone.key))
        return marker

    def is_shared(self, marker: str) -> bool:
        return marker[2] == SHARED_TAG and marker in self.whose

    def gone(self) -> set[str]:
        """Every marker of a removed person: what they said, and what they wrote into the household memory."""
        return {m for m, key in self.whose.items() if key in self.removed}

    def strangers(self, someone: Someone, found: Iterable[str]) -> list[str]:
        """The markers of ``found`` that are another person's own (household-memory markers are everyone's)."""
        return sorted(m for m in set(found) if m in self.whose and self.whose[m] != someone.key
                      and not self.is_shared(m))

    def shared_now(self) -> list[str]:
        """The household memory's versions still kept, oldest first (a removed author's went with them)."""
        return [m for m, key in self.shared if key not in self.removed]


def markers_in(text: str) -> set[str]:
    return set(MARK.findall(text.lower()))


def text_of(body: bytes) -> str:
    """A response body as text: an export's zip read member by member, anything else (a backup's SQLite file
    included) decoded as it is."""
    if body[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            return " ".join(archive.read(n).decode("utf-8", "replace") for n in archive.namelist()).lower()
    return body.decode("utf-8", "replace").lower()


def markers_on_disk(data_dir: Path) -> dict[str, set[str]]:
    """Every marker in any byte of any file under the data directory (WAL, index snapshots, household.db), by
    the file's path relative to it."""
    found: dict[str, set[str]] = {}
    for path in data_dir.rglob("*"):
        if path.is_file():
            try:
                body = path.read_bytes().lower()
            except FileNotFoundError:  # a WAL checkpointed away while we looked
                continue
            markers = {m.decode() for m in MARK_BYTES.findall(body)}
            if markers:
                found[str(path.relative_to(data_dir))] = markers
    return found


def household_file(relative: str) -> bool:
    return relative in HOUSEHOLD_FILES


def owner_of_file(relative: str, people: dict[str, Someone]) -> Someone | None:
    """Whose memory a file of the data directory belongs to: ``people/<id>/...`` that person's, the household's
    own files nobody's (None), everything else the first person's (the data directory's own memory)."""
    parts = Path(relative).parts
    if household_file(relative):
        return None
    if parts[0] == "people":
        return next((p for p in people.values() if len(parts) > 1 and p.id == parts[1]), None)
    return next(p for p in people.values() if p.key == "A")


def rows_holding(database: Path, marker: str) -> list[str]:
    """Which tables of a database hold ``marker`` (to say where a word was left)."""
    if not database.is_file():
        return []
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [t for t in tables if conn.execute(f"SELECT count(*) FROM \"{t}\" WHERE instr(lower(CAST(("
                + " || ' ' || ".join(f"coalesce(CAST(\"{c[1]}\" AS TEXT), '')" for c in
                                    conn.execute(f"PRAGMA table_info(\"{t}\")"))
                + ") AS TEXT)), ?) > 0", (marker,)).fetchone()[0]]
    finally:
        conn.close()
