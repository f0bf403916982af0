"""The household database's schema (``household.db``), and the registry of what its tables hold.

Separate from every person's memory on purpose: people, their credentials,
login sessions and API tokens, and the household memory (what people chose to
share with everyone) are the household's; nothing a person says to Lyra is
here. ``TABLES`` says, for each table, whether it holds a person's words and
how a removed person's rows go; ``tests/test_household_store.py`` fails on a
table of a fresh ``household.db`` that it does not describe.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ..migrations import Migration, script

SCHEMA: list[Migration] = []


def migration(fn: Migration) -> Migration:
    SCHEMA.append(fn)
    return fn


@dataclass(frozen=True)
class Table:
    name: str
    words: bool  # whether a person's own words can be in it
    removed: str  # how a removed person's rows go


TABLES = (
    Table("people", False, "the row goes last, once their memory is forgotten and their folder deleted"),
    Table("login_sessions", False, "deleted with the person (ON DELETE CASCADE); ended by log out, by \"log out "
          "everywhere\", by a password reset and when they expire"),
    Table("api_tokens", False, "deleted with the person (ON DELETE CASCADE); revoked one by one in Tokens; "
          "only a hash of each token is kept"),
    Table("login_failures", False, "names, client addresses and device cookies' hashes of failed logins, kept "
          "15 minutes for the rate limit; a removed person's name goes with them"),
    Table("login_devices", False, "hashes of the device cookies a person logged in with (OWASP's device cookies: "
          "such a device is limited on its own failures only); deleted with the person (ON DELETE CASCADE)"),
    Table("household_memory", True, "every version a removed person wrote is deleted: what they shared goes "
          "with them, and the household memory reads as the latest version by someone else; versions others "
          "saved after theirs stay as saved (an edit saves the whole text, so they may still hold words of "
          "theirs), which the removal's confirmation says; an edit of theirs arriving during the removal is "
          "refused"),
)


@migration
def h001_people(conn: sqlite3.Connection) -> None:
    script(conn, """
    CREATE TABLE people (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('adult', 'child')),
        owner INTEGER NOT NULL DEFAULT 0,
        home TEXT NOT NULL UNIQUE,
        secret TEXT,
        created_at TEXT NOT NULL,
        removing INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE login_sessions (
        id_hash TEXT PRIMARY KEY,
        person_id TEXT NOT NULL REFERENCES people(id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
    );
    CREATE INDEX login_sessions_person ON login_sessions(person_id);
    CREATE TABLE api_tokens (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        person_id TEXT NOT NULL REFERENCES people(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        last_used_at TEXT
    );
    CREATE TABLE login_failures (
        key TEXT NOT NULL,
        at TEXT NOT NULL
    );
    CREATE INDEX login_failures_key ON login_failures(key, at);
    CREATE TABLE household_memory (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        content TEXT NOT NULL,
        author_id TEXT NOT NULL,
        author_name TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    """)


@migration
def h002_login_devices(conn: sqlite3.Connection) -> None:
    script(conn, """
    CREATE TABLE login_devices (
        device_hash TEXT NOT NULL,
        person_id TEXT NOT NULL REFERENCES people(id) ON DELETE CASCADE,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (device_hash, person_id)
    );
    CREATE INDEX login_devices_person ON login_devices(person_id);
    """)
