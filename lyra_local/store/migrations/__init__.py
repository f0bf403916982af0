"""Schema migrations: a list of small named functions, applied in order.

Adding a schema change means adding one function (to the last ``m0xx_m0yy.py``
module, or a new one when that grows long) and naming it at the bottom of
``MIGRATIONS``; the list reads like a changelog. ``_migrations`` records what
was applied, by function name: a name, once released, never changes.
Migrations run in one ``BEGIN IMMEDIATE`` transaction each, so two processes
opening a new database at once cannot apply the same one twice.
"""

from __future__ import annotations

import sqlite3

from ..db import utc_now, write_transaction
from .m001_m004 import (
    m001_sessions_and_exchanges,
    m002_embeddings_and_vector_log,
    m003_derived_memory,
    m004_coordination,
)
from .m005_m009 import (
    NEVER_REUSED,
    m005_context_traces,
    m006_embedding_keys_index,
    m007_dream_cycle,
    m008_world_reviews,
    m009_provenance,
)
from .m010_m016 import (
    m010_exchange_context,
    m011_how_memories_were_written,
    m012_corrections,
    m013_branches_and_off_the_record,
    m014_rejected_facts,
    m015_reply_endings,
    m016_reply_authors,
)
from .m017_captions import m017_photo_captions
from .script import Migration, script

__all__ = ["MIGRATIONS", "NEVER_REUSED", "Migration", "applied", "migrate", "script"]

MIGRATIONS: list[Migration] = [
    m001_sessions_and_exchanges,
    m002_embeddings_and_vector_log,
    m003_derived_memory,
    m004_coordination,
    m005_context_traces,
    m006_embedding_keys_index,
    m007_dream_cycle,
    m008_world_reviews,
    m009_provenance,
    m010_exchange_context,
    m011_how_memories_were_written,
    m012_corrections,
    m013_branches_and_off_the_record,
    m014_rejected_facts,
    m015_reply_endings,
    m016_reply_authors,
    m017_photo_captions,
]


def applied(conn: sqlite3.Connection) -> list[str]:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone():
        with write_transaction(conn):  # several processes may be creating the store at once
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def migrate(conn: sqlite3.Connection, *, upto: int | None = None,
            schema: list[Migration] | None = None) -> list[str]:
    """Apply pending migrations (the first ``upto`` only, for tests); return their names. ``schema``: another
    database's list (the household's, ``household/schema.py``) instead of the memory's."""
    done = set(applied(conn))
    ran = []
    for fn in (MIGRATIONS if schema is None else schema)[:upto]:
        if fn.__name__ in done:
            continue
        rebuilds = getattr(fn, "rebuilds_tables", False)
        if rebuilds:  # a table rebuild must not cascade deletes; SQLite only lets this change outside a transaction
            conn.execute("PRAGMA foreign_keys = OFF")
        try:
            with write_transaction(conn):
                if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (fn.__name__,)).fetchone():
                    continue  # another process got there first
                fn(conn)
                if rebuilds and conn.execute("PRAGMA foreign_key_check").fetchone():
                    raise sqlite3.IntegrityError(f"{fn.__name__} would break a foreign key")
                conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (fn.__name__, utc_now()))
        finally:
            if rebuilds:
                conn.execute("PRAGMA foreign_keys = ON")
        ran.append(fn.__name__)
    return ran
