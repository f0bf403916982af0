"""The first schema: conversations and their full text, vectors, derived memory, coordination."""

from __future__ import annotations

import sqlite3

from .script import script


def m001_sessions_and_exchanges(conn: sqlite3.Connection) -> None:
    script(conn, """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    uid TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT 'lyra',
    source_id TEXT,
    UNIQUE (source, source_id)
);
CREATE TABLE exchanges (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    tokens INTEGER,
    source_id TEXT
);
CREATE INDEX exchanges_by_session ON exchanges(session_id, id);
CREATE INDEX exchanges_by_time ON exchanges(created_at);
CREATE VIRTUAL TABLE exchanges_fts USING fts5(
    content, content='exchanges', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER exchanges_fts_insert AFTER INSERT ON exchanges BEGIN
    INSERT INTO exchanges_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER exchanges_fts_delete AFTER DELETE ON exchanges BEGIN
    INSERT INTO exchanges_fts(exchanges_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER exchanges_fts_update AFTER UPDATE OF content ON exchanges BEGIN
    INSERT INTO exchanges_fts(exchanges_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO exchanges_fts(rowid, content) VALUES (new.id, new.content);
END;
""")


def m002_embeddings_and_vector_log(conn: sqlite3.Connection) -> None:
    """Vectors per (tier, model, item); every change is logged so indexes can catch up."""
    script(conn, """
CREATE TABLE embeddings (
    tier TEXT NOT NULL CHECK (tier IN ('exchange', 'gist', 'digest')),
    model TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (tier, model, item_id)
) WITHOUT ROWID;
CREATE TABLE vector_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tier TEXT NOT NULL,
    model TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    op TEXT NOT NULL CHECK (op IN ('add', 'del'))
);
CREATE INDEX vector_log_by_index ON vector_log(tier, model, seq);
CREATE TRIGGER embeddings_log_insert AFTER INSERT ON embeddings BEGIN
    INSERT INTO vector_log(tier, model, item_id, op) VALUES (new.tier, new.model, new.item_id, 'add');
END;
CREATE TRIGGER embeddings_log_delete AFTER DELETE ON embeddings BEGIN
    INSERT INTO vector_log(tier, model, item_id, op) VALUES (old.tier, old.model, old.item_id, 'del');
END;
CREATE TRIGGER embeddings_log_update AFTER UPDATE OF vector ON embeddings BEGIN
    INSERT INTO vector_log(tier, model, item_id, op) VALUES (new.tier, new.model, new.item_id, 'del');
    INSERT INTO vector_log(tier, model, item_id, op) VALUES (new.tier, new.model, new.item_id, 'add');
END;
CREATE TRIGGER exchanges_drop_vectors AFTER DELETE ON exchanges BEGIN
    DELETE FROM embeddings WHERE tier = 'exchange' AND item_id = old.id;
END;
""")


_DERIVED_MEMORY = """
CREATE TABLE gists (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL UNIQUE REFERENCES sessions(id) ON DELETE CASCADE,
    content TEXT NOT NULL,
    covers_upto INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    stale INTEGER NOT NULL DEFAULT 0
);
CREATE VIRTUAL TABLE gists_fts USING fts5(
    content, content='gists', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER gists_fts_insert AFTER INSERT ON gists BEGIN
    INSERT INTO gists_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER gists_fts_delete AFTER DELETE ON gists BEGIN
    INSERT INTO gists_fts(gists_fts, rowid, content) VALUES ('delete', old.id, old.content);
    DELETE FROM embeddings WHERE tier = 'gist' AND item_id = old.id;
END;
CREATE TRIGGER gists_fts_update AFTER UPDATE OF content ON gists BEGIN
    INSERT INTO gists_fts(gists_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO gists_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TABLE profile_facts (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    source_session_id INTEGER REFERENCES sessions(id) ON DELETE SET NULL,
    author TEXT NOT NULL DEFAULT 'dream',
    created_at TEXT NOT NULL,
    superseded_by INTEGER REFERENCES profile_facts(id),
    superseded_at TEXT,
    stale INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX profile_current ON profile_facts(key) WHERE superseded_by IS NULL;
CREATE TABLE digests (
    id INTEGER PRIMARY KEY,
    granularity TEXT NOT NULL CHECK (granularity IN ('day', 'week', 'month')),
    period TEXT NOT NULL,
    content TEXT NOT NULL,
    source_count INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    stale INTEGER NOT NULL DEFAULT 0,
    UNIQUE (granularity, period)
);
CREATE TRIGGER digests_drop_vectors AFTER DELETE ON digests BEGIN
    DELETE FROM embeddings WHERE tier = 'digest' AND item_id = old.id;
END;
CREATE TABLE narrative (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    stale INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE self_state (
    id INTEGER PRIMARY KEY,
    state TEXT NOT NULL CHECK (json_valid(state)),
    created_at TEXT NOT NULL
);
"""


def m003_derived_memory(conn: sqlite3.Connection) -> None:
    """Gists, profile facts, temporal digests, narrative and self-state."""
    script(conn, _DERIVED_MEMORY)


def m004_coordination(conn: sqlite3.Connection) -> None:
    """World state (core memory) versions, instance registry, leases, consolidation log."""
    script(conn, """
CREATE TABLE world_state (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    author TEXT NOT NULL,
    reason TEXT,
    status TEXT NOT NULL DEFAULT 'accepted' CHECK (status IN ('accepted', 'proposed', 'rejected')),
    created_at TEXT NOT NULL
);
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    summary TEXT NOT NULL,
    pid INTEGER,
    host TEXT,
    started_at TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    completed_at TEXT,
    status TEXT NOT NULL DEFAULT 'running',
    result TEXT
);
CREATE TABLE instance_log (
    id INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE TABLE locks (
    resource TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    note TEXT
);
CREATE TABLE consolidation_log (
    id INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT,
    detail TEXT,
    instance_id TEXT
);
""")

