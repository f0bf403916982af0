"""``Household``: who lives with this Lyra, how they prove it, and what they chose to share.

Each person's memory is a ``Store`` of its own: the first person (the owner,
who opened this Lyra first; on an upgrade, whoever already talked to it) keeps
the data directory's own memory, so nothing moves and nothing can be lost on
the way; every later person's lives in ``people/<id>/``. This database
(``household.db`` beside them) holds none of what anyone said to Lyra: people,
hashed secrets, login sessions and API tokens (only hashes of either), recent
failed logins (for the rate limit) and the household memory's versions. Its
tables are described in ``household_schema.TABLES``.

Login sessions and tokens are 256-bit random strings; only their SHA-256 is
stored, so a copy of this file logs nobody in (a fast hash is enough for
secrets that cannot be guessed; passwords get scrypt, ``passwords.py``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import secrets
import sqlite3
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Literal

from ..errors import BadRequest, Conflict, NotFound
from ..fsutil import private_dir
from ..oserrors import named_os_errors
from . import db, migrations
from .connections import ThreadConnections
from .household_schema import SCHEMA
from .lookalike import look_alike

log = logging.getLogger(__name__)
FILENAME = "household.db"
PEOPLE_DIRNAME = "people"
TOKEN_PREFIX = "lyra_"
SESSION_DAYS = 30
DEVICE_DAYS = 365  # how long a device a person logged in on stays known (its cookie's life, renewed per login)
LAST_USED_EVERY = timedelta(minutes=1)  # a token used in a loop writes its "last used" once a minute, not per call
MAX_NAME = 60

Kind = Literal["adult", "child"]


class OwnerNeedsSecret(Conflict):
    """Adding a person while the owner has no password: from the second person on, everyone logs in."""


class PersonNotFound(NotFound):
    """No such person in this household (or one being removed)."""


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    kind: Kind
    owner: bool
    home: str  # "" for the data directory's own memory, else "people/<id>"
    created_at: str
    has_secret: bool

    def view(self) -> dict[str, object]:
        """What the API shows of a person (never the secret's hash)."""
        return {"id": self.id, "name": self.name, "kind": self.kind, "owner": self.owner,
                "has_secret": self.has_secret, "created_at": self.created_at}


@dataclass(frozen=True)
class ApiToken:
    id: int
    person_id: str
    name: str
    created_at: str
    last_used_at: str | None


@dataclass(frozen=True)
class SharedVersion:
    """One version of the household memory, with who wrote it."""

    id: int
    content: str
    author_id: str
    author: str
    created_at: str


def name_key(name: str) -> str:
    """The form two names are compared in: "Sam", "sam" and "ＳＡＭ" are one person."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


def clean_name(name: str) -> str:
    name = " ".join(unicodedata.normalize("NFKC", name).split())
    if not name:
        raise BadRequest("a person needs a name")
    if len(name) > MAX_NAME or any(unicodedata.category(c).startswith("C") for c in name):
        raise BadRequest(f"a name is at most {MAX_NAME} printable characters")
    return name


def exists(data_dir: Path) -> bool:
    """Whether this data directory has a household yet (before one, its memory is the first person's)."""
    return (data_dir / FILENAME).is_file()


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class Household:
    """The household database of one data directory (created on first open)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / FILENAME
        with named_os_errors(data_dir):
            if data_dir.exists() and not data_dir.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "a file where the data directory should be", str(data_dir))
            private_dir(data_dir)
        self._conns = ThreadConnections(lambda: db.connect(self.path))
        with named_os_errors(data_dir):
            migrations.migrate(self._conn(), schema=SCHEMA)

    def close(self) -> None:
        self._conns.close_all()

    def _conn(self) -> sqlite3.Connection:
        return self._conns.get()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with named_os_errors(self.data_dir), db.write_transaction(self._conn()) as conn:
            yield conn

    # -- people ---------------------------------------------------------------------------------------------
    def people(self, *, removing: bool = False) -> list[Person]:
        """Everyone in the household, the owner first; ``removing``: those whose removal has not finished."""
        rows = self._conn().execute("SELECT * FROM people WHERE removing = ? ORDER BY owner DESC, created_at, id",
                                    (int(removing),)).fetchall()
        return [_person(r) for r in rows]

    def person(self, person_id: str) -> Person:
        row = self._conn().execute("SELECT * FROM people WHERE id = ? AND removing = 0", (person_id,)).fetchone()
        if row is None:
            raise PersonNotFound("no such person in this household")
        return _person(row)

    def by_name(self, name: str) -> Person | None:
        row = self._conn().execute("SELECT * FROM people WHERE name_key = ? AND removing = 0",
                                   (name_key(name),)).fetchone()
        return None if row is None else _person(row)

    def leaving(self, name: str) -> Person | None:
        """The person called ``name`` whose removal began and has not finished (``lyra people remove`` finishes
        it, and so does the server, at start and every half minute)."""
        row = self._conn().execute("SELECT * FROM people WHERE name_key = ? AND removing = 1",
                                   (name_key(name),)).fetchone()
        return None if row is None else _person(row)

    def named(self, name: str) -> Person:
        """The person called ``name`` (as ``by_name`` compares), or ``PersonNotFound`` naming who lives here."""
        person = self.by_name(name)
        if person is None:
            raise PersonNotFound(f"no one called {name!r} lives in this household",
                                 hint="people here: " + ", ".join(p.name for p in self.people()))
        return person

    def owner(self) -> Person | None:
        row = self._conn().execute("SELECT * FROM people WHERE owner = 1").fetchone()
        return None if row is None else _person(row)

    def ensure_first(self, name: str) -> Person:
        """The owner, created with the data directory's own memory as theirs if nobody is here yet."""
        with self._write() as conn:
            row = conn.execute("SELECT * FROM people WHERE owner = 1").fetchone()
            if row is None:
                person_id = secrets.token_hex(6)
                conn.execute("INSERT INTO people (id, name, name_key, kind, owner, home, created_at) "
                             "VALUES (?, ?, ?, 'adult', 1, '', ?)",
                             (person_id, clean_name(name), name_key(name), db.utc_now()))
                row = conn.execute("SELECT * FROM people WHERE id = ?", (person_id,)).fetchone()
        return _person(row)

    def can_add(self) -> None:
        """Refuse to add anyone while the owner has no password: with two people everyone logs in, the owner
        too, and they could not."""
        owner = self.owner()
        if owner is not None and not owner.has_secret:
            raise OwnerNeedsSecret("set your own password first: with two people, everyone logs in, you too",
                                   hint="People → Your password in the web UI, or `lyra people passwd`")

    def add(self, name: str, kind: Kind, secret_hash: str) -> Person:
        self.can_add()
        name = clean_name(name)
        person_id = secrets.token_hex(6)
        with self._write() as conn:
            self.name_free(name, conn)
            conn.execute("INSERT INTO people (id, name, name_key, kind, owner, home, secret, created_at) "
                         "VALUES (?, ?, ?, ?, 0, ?, ?, ?)",
                         (person_id, name, name_key(name), kind, f"{PEOPLE_DIRNAME}/{person_id}", secret_hash,
                          db.utc_now()))
        return self.person(person_id)

    def name_free(self, name: str, conn: sqlite3.Connection | None = None, *, keeping: str | None = None) -> None:
        """Refuse a name someone has, or had until a removal that has not finished, or one that looks like theirs
        ("Аda" with a Cyrillic А beside "Ada": ``lookalike.py``), so that nobody can pass for another as an
        author (``Conflict``); ``keeping``: the person being renamed, whose own name does not count."""
        conn = conn or self._conn()
        for other in conn.execute("SELECT id, name FROM people WHERE id != ?", (keeping or "",)).fetchall():
            if name_key(other["name"]) != name_key(name) and look_alike(name, other["name"]):
                raise Conflict(f"{name.strip()} looks like {other['name']}, who is in this household",
                               hint="choose a name that reads differently (letters of another script that look "
                                    "like these are refused, so that nobody can pass for someone else)")
        taken = conn.execute("SELECT removing FROM people WHERE name_key = ? AND id != ?",
                             (name_key(name), keeping or "")).fetchone()
        if taken is not None and taken[0]:
            raise Conflict(f"the removal of someone called {name} began and has not finished",
                           hint=f"`lyra people remove {name}` finishes it (so does the server, at start and "
                                "every half minute); then the name is free")
        if taken is not None:
            raise Conflict(f"someone called {name} is already in this household",
                           hint="choose another name (names must differ to log in by name)")

    def rename(self, person_id: str, name: str) -> Person:
        name = clean_name(name)
        with self._write() as conn:
            self.name_free(name, conn, keeping=person_id)
            conn.execute("UPDATE people SET name = ?, name_key = ? WHERE id = ?", (name, name_key(name), person_id))
        return self.person(person_id)

    def person_dir(self, person: Person) -> Path:
        """Where the person's own memory lives: the data directory itself for the first person."""
        return self.data_dir / person.home if person.home else self.data_dir

    def removable(self, person_id: str) -> Person:
        """The person, if they may be removed: anyone but the owner (whose memory is the data directory's)."""
        person = self.person(person_id)
        if person.owner:
            raise Conflict("the owner cannot be removed", hint="the owner holds the household together")
        return person

    def begin_removal(self, person_id: str) -> Person:
        """Mark a person as leaving: from now on they cannot log in and appear nowhere; their memory is
        forgotten next, then ``finish_removal`` deletes the row (a removal cut short is finished at the next
        start: ``people(removing=True)``)."""
        person = self.removable(person_id)
        with self._write() as conn:
            conn.execute("UPDATE people SET removing = 1, secret = NULL WHERE id = ?", (person_id,))
            conn.execute("DELETE FROM login_sessions WHERE person_id = ?", (person_id,))
            conn.execute("DELETE FROM api_tokens WHERE person_id = ?", (person_id,))
        return person

    def finish_removal(self, person_id: str) -> None:
        with self._write() as conn:
            row = conn.execute("SELECT name_key FROM people WHERE id = ?", (person_id,)).fetchone()
            conn.execute("DELETE FROM household_memory WHERE author_id = ?", (person_id,))
            if row is not None:  # their name's counts, on every device ("name:KEY" and "name:KEY@ADDRESS")
                conn.execute("DELETE FROM login_failures WHERE key = ? OR substr(key, 1, ?) = ?",
                             (f"name:{row[0]}", len(row[0]) + 6, f"name:{row[0]}@"))
            conn.execute("DELETE FROM people WHERE id = ? AND removing = 1", (person_id,))
        self._empty_wal()

    def _empty_wal(self, tries: int = 50) -> None:
        """secure_delete zeroed a removed person's pages in the file; the WAL still holds copies of them until a
        checkpoint empties it, which a reader mid-read can hold up: tried again briefly, then said."""
        for _ in range(tries):
            busy = self._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return
            time.sleep(0.1)
        log.warning("household.db's write-ahead log could not be emptied now; it is at the next checkpoint")

    def set_secret(self, person_id: str, secret_hash: str) -> None:
        """A new password or PIN; every login session of the person ends (their tokens stay)."""
        self.person(person_id)
        with self._write() as conn:
            conn.execute("UPDATE people SET secret = ? WHERE id = ?", (secret_hash, person_id))
            conn.execute("DELETE FROM login_sessions WHERE person_id = ?", (person_id,))

    def secret_of(self, person_id: str) -> str | None:
        row = self._conn().execute("SELECT secret FROM people WHERE id = ? AND removing = 0",
                                   (person_id,)).fetchone()
        return None if row is None else row[0]

    # -- login sessions -------------------------------------------------------------------------------------
    def open_session(self, person_id: str, days: int = SESSION_DAYS) -> str:
        """A new login session; returns the raw id for the cookie (only its hash is kept)."""
        raw = secrets.token_urlsafe(32)
        now = datetime.now(timezone.utc)
        with self._write() as conn:
            conn.execute("DELETE FROM login_sessions WHERE expires_at < ?", (db.to_iso(now),))
            conn.execute("INSERT INTO login_sessions (id_hash, person_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                         (_digest(raw), person_id, db.to_iso(now), db.to_iso(now + timedelta(days=days))))
        return raw

    def session_person(self, raw: str) -> Person | None:
        row = self._conn().execute(
            "SELECT p.* FROM login_sessions s JOIN people p ON p.id = s.person_id "
            "WHERE s.id_hash = ? AND s.expires_at > ? AND p.removing = 0",
            (_digest(raw), db.utc_now())).fetchone()
        return None if row is None else _person(row)

    def end_session(self, raw: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM login_sessions WHERE id_hash = ?", (_digest(raw),))

    def end_all_sessions(self, person_id: str) -> int:
        with self._write() as conn:
            return conn.execute("DELETE FROM login_sessions WHERE person_id = ?", (person_id,)).rowcount

    # -- devices a person logged in on (OWASP "device cookies") ------------------------------------------------
    def known_device(self, raw: str | None, person_id: str | None) -> str | None:
        """The key its failed logins count under, if the device cookie ``raw`` was given to this browser at a
        login of ``person_id`` (and has not expired), else None; the same one query whatever is asked, so that
        an unknown name costs what a known one does."""
        digest = _digest(raw or "")
        row = self._conn().execute("SELECT 1 FROM login_devices WHERE device_hash = ? AND person_id = ? "
                                   "AND expires_at > ?", (digest, person_id or "", db.utc_now())).fetchone()
        return None if row is None else f"{digest}:{person_id}"

    def remember_device(self, raw: str | None, person_id: str, days: int = DEVICE_DAYS) -> str:
        """Record that ``person_id`` logged in on this device: the browser's device cookie if it is one this
        household gave (so one browser stays one device for everyone who logs in on it), else a new one; returns
        the raw cookie (only its hash is kept)."""
        now = datetime.now(timezone.utc)
        with self._write() as conn:
            conn.execute("DELETE FROM login_devices WHERE expires_at < ?", (db.to_iso(now),))
            ours = raw is not None and conn.execute("SELECT 1 FROM login_devices WHERE device_hash = ?",
                                                    (_digest(raw),)).fetchone() is not None
            device = raw if ours and raw is not None else secrets.token_urlsafe(32)
            conn.execute("INSERT INTO login_devices (device_hash, person_id, created_at, expires_at) "
                         "VALUES (?, ?, ?, ?) ON CONFLICT (device_hash, person_id) DO UPDATE SET "
                         "expires_at = excluded.expires_at",
                         (_digest(device), person_id, db.to_iso(now), db.to_iso(now + timedelta(days=days))))
        return device

    # -- API tokens -----------------------------------------------------------------------------------------
    def create_token(self, person_id: str, name: str) -> tuple[ApiToken, str]:
        """A personal API token acting as ``person_id``; the raw token is returned once and never stored."""
        name = " ".join(name.split())[:MAX_NAME] or "token"
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.person(person_id)
        with self._write() as conn:
            cur = conn.execute("INSERT INTO api_tokens (person_id, name, hash, created_at) VALUES (?, ?, ?, ?)",
                               (person_id, name, _digest(raw), db.utc_now()))
            token_id = cur.lastrowid
        return next(t for t in self.tokens(person_id) if t.id == token_id), raw

    def tokens(self, person_id: str) -> list[ApiToken]:
        rows = self._conn().execute("SELECT id, person_id, name, created_at, last_used_at FROM api_tokens "
                                    "WHERE person_id = ? ORDER BY id", (person_id,)).fetchall()
        return [ApiToken(r["id"], r["person_id"], r["name"], r["created_at"], r["last_used_at"]) for r in rows]

    def revoke_token(self, person_id: str, token_id: int) -> None:
        """Revoke one of the person's own tokens (another person's reads as not found)."""
        with self._write() as conn:
            gone = conn.execute("DELETE FROM api_tokens WHERE id = ? AND person_id = ?",
                                (token_id, person_id)).rowcount
        if not gone:
            raise NotFound("no such token")

    def token_person(self, raw: str) -> Person | None:
        """The person a token acts as, or None for an unknown or revoked one."""
        if not raw.startswith(TOKEN_PREFIX):
            return None
        digest = _digest(raw)
        row = self._conn().execute("SELECT p.*, t.last_used_at FROM api_tokens t JOIN people p ON p.id = t.person_id "
                                   "WHERE t.hash = ? AND p.removing = 0", (digest,)).fetchone()
        if row is None:
            return None
        now = datetime.now(timezone.utc)
        if row["last_used_at"] is None or db.from_iso(row["last_used_at"]) < now - LAST_USED_EVERY:
            with contextlib.suppress(sqlite3.OperationalError):  # a busy or full disk must not refuse the token
                with self._write() as conn:
                    conn.execute("UPDATE api_tokens SET last_used_at = ? WHERE hash = ?", (db.to_iso(now), digest))
        return _person(row)

    # -- failed logins (the rate limit) ---------------------------------------------------------------------
    def failures_since(self, key: str, since: datetime) -> list[str]:
        """When ``key`` failed to log in since ``since`` (oldest first)."""
        return [r[0] for r in self._conn().execute(
            "SELECT at FROM login_failures WHERE key = ? AND at >= ? ORDER BY at", (key, db.to_iso(since)))]

    def record_failure(self, keys: tuple[str, ...], keep_since: datetime) -> list[int]:
        """One failed attempt, counted under each of ``keys`` at once; returns its rows (``succeeded``)."""
        now = db.utc_now()
        with self._write() as conn:
            conn.execute("DELETE FROM login_failures WHERE at < ?", (db.to_iso(keep_since),))
            return [conn.execute("INSERT INTO login_failures (key, at) VALUES (?, ?)", (key, now)).lastrowid or 0
                    for key in keys]

    def succeeded(self, own: str, attempt: list[int]) -> None:
        """An attempt counted beforehand (``record_failure``) succeeded: its rows go, and so do the earlier
        failures under ``own`` (that person's on that device), and nothing else."""
        with self._write() as conn:
            conn.execute("DELETE FROM login_failures WHERE key = ?", (own,))
            conn.executemany("DELETE FROM login_failures WHERE rowid = ?", [(row,) for row in attempt])

    # -- the household memory -------------------------------------------------------------------------------
    def shared_memory(self) -> SharedVersion | None:
        row = self._conn().execute("SELECT * FROM household_memory ORDER BY id DESC LIMIT 1").fetchone()
        return None if row is None else _shared(row)

    def write_shared(self, content: str, author: Person) -> SharedVersion:
        """A new version of the household memory (each earlier one is kept, with who wrote it); refused once the
        author's removal has begun, in the very transaction that would store it, so that an edit on its way while
        they are removed is never stored after their versions were deleted."""
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM people WHERE id = ? AND removing = 0", (author.id,)).fetchone() is None:
                raise PersonNotFound(f"{author.name} is no longer in this household: their edit was not saved")
            conn.execute("INSERT INTO household_memory (content, author_id, author_name, created_at) "
                         "VALUES (?, ?, ?, ?)", (content, author.id, author.name, db.utc_now()))
        version = self.shared_memory()
        assert version is not None
        return version

    def shared_by(self, person_id: str) -> tuple[int, int]:
        """(versions of the household memory ``person_id`` wrote, versions others saved after their first): what
        a removal deletes, and what stays as its authors saved it (an edit saves the whole text, so those may
        still hold words of theirs)."""
        row = self._conn().execute(
            "SELECT (SELECT COUNT(*) FROM household_memory WHERE author_id = :p), "
            "(SELECT COUNT(*) FROM household_memory WHERE author_id != :p AND id > "
            "(SELECT COALESCE(MIN(id), 1 << 62) FROM household_memory WHERE author_id = :p))",
            {"p": person_id}).fetchone()
        return int(row[0]), int(row[1])

    def shared_history(self) -> list[SharedVersion]:
        return [_shared(r) for r in self._conn().execute("SELECT * FROM household_memory ORDER BY id DESC")]


def _person(row: sqlite3.Row) -> Person:
    return Person(row["id"], row["name"], row["kind"], bool(row["owner"]), row["home"], row["created_at"],
                  row["secret"] is not None)


def _shared(row: sqlite3.Row) -> SharedVersion:
    return SharedVersion(row["id"], row["content"], row["author_id"], row["author_name"], row["created_at"])
