"""``Household``: who lives with this Lyra, and their removal; its repositories hold the rest.

Each person's memory is a ``Store`` of its own: the first person (the owner,
who opened this Lyra first; on an upgrade, whoever already talked to it) keeps
the data directory's own memory, so nothing moves and nothing can be lost on
the way; every later person's lives in ``people/<id>/``. This database
(``household.db`` beside them) holds none of what anyone said to Lyra: people,
hashed secrets, login sessions, devices and API tokens (only hashes of them),
recent failed logins (for the rate limit) and the household memory's versions.
Its tables are described in ``schema.TABLES``. As ``Store`` does, ``Household``
splits the work into repositories sharing its connections: ``logins``,
``devices``, ``failures``, ``tokens`` and ``shared``.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from ...errors import Conflict
from ...fsutil import private_dir
from ...oserrors import named_os_errors
from .. import db, migrations
from ..connections import ThreadConnections
from .logins import Devices, Failures, Logins
from .lookalike import look_alike
from .records import Kind, OwnerNeedsSecret, Person, PersonNotFound, clean_name, name_key, person_of_row
from .schema import SCHEMA
from .shared import SharedMemory
from .tokens import Tokens

log = logging.getLogger(__name__)
FILENAME = "household.db"
PEOPLE_DIRNAME = "people"


def exists(data_dir: Path) -> bool:
    """Whether this data directory has a household yet (before one, its memory is the first person's)."""
    return (data_dir / FILENAME).is_file()


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
            migrations.migrate(self.conn(), schema=SCHEMA)
        self.logins = Logins(self)
        self.devices = Devices(self)
        self.failures = Failures(self)
        self.tokens = Tokens(self)
        self.shared = SharedMemory(self)

    def close(self) -> None:
        self._conns.close_all()

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (the repositories read through it)."""
        return self._conns.get()

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        with named_os_errors(self.data_dir), db.write_transaction(self.conn()) as conn:
            yield conn

    # -- people ---------------------------------------------------------------------------------------------
    def people(self, *, removing: bool = False) -> list[Person]:
        """Everyone in the household, the owner first; ``removing``: those whose removal has not finished."""
        rows = self.conn().execute("SELECT * FROM people WHERE removing = ? ORDER BY owner DESC, created_at, id",
                                    (int(removing),)).fetchall()
        return [person_of_row(r) for r in rows]

    def person(self, person_id: str) -> Person:
        row = self.conn().execute("SELECT * FROM people WHERE id = ? AND removing = 0", (person_id,)).fetchone()
        if row is None:
            raise PersonNotFound("no such person in this household")
        return person_of_row(row)

    def by_name(self, name: str) -> Person | None:
        row = self.conn().execute("SELECT * FROM people WHERE name_key = ? AND removing = 0",
                                   (name_key(name),)).fetchone()
        return None if row is None else person_of_row(row)

    def leaving(self, name: str) -> Person | None:
        """The person called ``name`` whose removal began and has not finished (``lyra people remove`` finishes
        it, and so does the server, at start and every half minute)."""
        row = self.conn().execute("SELECT * FROM people WHERE name_key = ? AND removing = 1",
                                   (name_key(name),)).fetchone()
        return None if row is None else person_of_row(row)

    def named(self, name: str) -> Person:
        """The person called ``name`` (as ``by_name`` compares), or ``PersonNotFound`` naming who lives here."""
        person = self.by_name(name)
        if person is None:
            raise PersonNotFound(f"no one called {name!r} lives in this household",
                                 hint="people here: " + ", ".join(p.name for p in self.people()))
        return person

    def owner(self) -> Person | None:
        row = self.conn().execute("SELECT * FROM people WHERE owner = 1").fetchone()
        return None if row is None else person_of_row(row)

    def ensure_first(self, name: str) -> Person:
        """The owner, created with the data directory's own memory as theirs if nobody is here yet."""
        with self.write() as conn:
            row = conn.execute("SELECT * FROM people WHERE owner = 1").fetchone()
            if row is None:
                person_id = secrets.token_hex(6)
                conn.execute("INSERT INTO people (id, name, name_key, kind, owner, home, created_at) "
                             "VALUES (?, ?, ?, 'adult', 1, '', ?)",
                             (person_id, clean_name(name), name_key(name), db.utc_now()))
                row = conn.execute("SELECT * FROM people WHERE id = ?", (person_id,)).fetchone()
        return person_of_row(row)

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
        with self.write() as conn:
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
        conn = conn or self.conn()
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
        with self.write() as conn:
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
        with self.write() as conn:
            conn.execute("UPDATE people SET removing = 1, secret = NULL WHERE id = ?", (person_id,))
            conn.execute("DELETE FROM login_sessions WHERE person_id = ?", (person_id,))
            conn.execute("DELETE FROM api_tokens WHERE person_id = ?", (person_id,))
        return person

    def finish_removal(self, person_id: str) -> None:
        with self.write() as conn:
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
            busy = self.conn().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if not busy:
                return
            time.sleep(0.1)
        log.warning("household.db's write-ahead log could not be emptied now; it is at the next checkpoint")
