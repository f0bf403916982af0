"""Schema migrations: a list of small named functions, applied in order.

Adding a schema change means adding one function at the bottom; the list reads
like a changelog. ``_migrations`` records what was applied. Migrations run in
one ``BEGIN IMMEDIATE`` transaction each, so two processes opening a new
database at once cannot apply the same one twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from .db import utc_now, write_transaction

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


def applied(conn: sqlite3.Connection) -> list[str]:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone():
        with write_transaction(conn):  # several processes may be creating the store at once
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def migrate(conn: sqlite3.Connection, *, upto: int | None = None,
            schema: list[Migration] | None = None) -> list[str]:
    """Apply pending migrations (the first ``upto`` only, for tests); return their names. ``schema``: another
    database's list (the household's, ``household_schema.py``) instead of the memory's."""
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


def _script(conn: sqlite3.Connection, sql: str) -> None:
    # executescript() would COMMIT our transaction; run statement by statement instead.
    for statement in _split(sql):
        conn.execute(statement)


def _split(sql: str) -> list[str]:
    statements, current = [], ""
    for line in sql.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    assert not current.strip(), f"incomplete SQL: {current}"
    return statements


@migration
def m001_sessions_and_exchanges(conn: sqlite3.Connection) -> None:
    _script(conn, """
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


@migration
def m002_embeddings_and_vector_log(conn: sqlite3.Connection) -> None:
    """Vectors per (tier, model, item); every change is logged so indexes can catch up."""
    _script(conn, """
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


@migration
def m003_derived_memory(conn: sqlite3.Connection) -> None:
    """Gists, profile facts, temporal digests, narrative and self-state."""
    _script(conn, """
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
""")


@migration
def m004_coordination(conn: sqlite3.Connection) -> None:
    """World state (core memory) versions, instance registry, leases, consolidation log."""
    _script(conn, """
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


@migration
def m005_context_traces(conn: sqlite3.Connection) -> None:
    """Which memories went into each reply's context ("why did you say that?")."""
    _script(conn, """
CREATE TABLE context_traces (
    exchange_id INTEGER PRIMARY KEY REFERENCES exchanges(id) ON DELETE CASCADE,
    trace TEXT NOT NULL CHECK (json_valid(trace)),
    tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
""")


@migration
def m006_embedding_keys_index(conn: sqlite3.Connection) -> None:
    """A narrow index so counting a tier's vectors does not read every vector BLOB."""
    conn.execute("CREATE INDEX embeddings_keys ON embeddings(tier, model)")


@migration
def m007_dream_cycle(conn: sqlite3.Connection) -> None:
    """What each derived memory was built from (so the dream cycle redoes only what changed), and its passes."""
    _script(conn, """
ALTER TABLE gists ADD COLUMN profiled_upto INTEGER NOT NULL DEFAULT 0;
ALTER TABLE profile_facts ADD COLUMN observed_at TEXT;
ALTER TABLE digests ADD COLUMN basis TEXT NOT NULL DEFAULT '';
ALTER TABLE narrative ADD COLUMN basis TEXT NOT NULL DEFAULT '';
CREATE TABLE dream_passes (
    id INTEGER PRIMARY KEY,
    instance_id TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    forced INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done', 'deferred', 'failed')),
    backlog_before TEXT CHECK (backlog_before IS NULL OR json_valid(backlog_before)),
    drives_before TEXT CHECK (drives_before IS NULL OR json_valid(drives_before)),
    backlog_after TEXT CHECK (backlog_after IS NULL OR json_valid(backlog_after)),
    drives_after TEXT CHECK (drives_after IS NULL OR json_valid(drives_after)),
    actions TEXT CHECK (actions IS NULL OR json_valid(actions)),
    error TEXT
);
CREATE INDEX consolidation_log_by_kind ON consolidation_log(kind, target);
""")


@migration
def m008_world_reviews(conn: sqlite3.Connection) -> None:
    """Who accepted or rejected a proposed world-state version, and when (it counts from then)."""
    _script(conn, """
ALTER TABLE world_state ADD COLUMN decided_at TEXT;
ALTER TABLE world_state ADD COLUMN decided_by TEXT;
UPDATE world_state SET decided_at = created_at, decided_by = author WHERE status != 'proposed';
CREATE INDEX instances_by_heartbeat ON instances(heartbeat_at);
""")


# Tables whose ids are handed out (API, vectors, provenance, event cursors): never reused.
NEVER_REUSED = ("sessions", "exchanges", "gists", "profile_facts", "digests", "narrative", "self_state",
                "world_state", "consolidation_log", "dream_passes")


@migration
def m009_provenance(conn: sqlite3.Connection) -> None:
    """What every derived memory was built from; ids never reused; no vector without its row; no text in logs.

    Runs with foreign keys off (``migrate`` sees ``rebuilds_tables``): the tables
    whose ids must never be reused are rebuilt with ``AUTOINCREMENT``, keeping
    every row, index and trigger.
    """
    for table in NEVER_REUSED:
        _autoincrement(conn, table)
    _script(conn, """
CREATE TABLE provenance (
    kind TEXT NOT NULL,
    item_id INTEGER NOT NULL,
    source_kind TEXT NOT NULL,
    source_id INTEGER NOT NULL,
    PRIMARY KEY (kind, item_id, source_kind, source_id)
) WITHOUT ROWID;
CREATE INDEX provenance_by_source ON provenance(source_kind, source_id);
-- deleting a row deletes its vectors of every model: without this, each delete scanned the tier
CREATE INDEX embeddings_by_item ON embeddings(tier, item_id);
CREATE TRIGGER embeddings_need_row BEFORE INSERT ON embeddings
WHEN (new.tier = 'exchange' AND NOT EXISTS (SELECT 1 FROM exchanges WHERE id = new.item_id))
  OR (new.tier = 'gist' AND NOT EXISTS (SELECT 1 FROM gists WHERE id = new.item_id))
  OR (new.tier = 'digest' AND NOT EXISTS (SELECT 1 FROM digests WHERE id = new.item_id))
BEGIN
    SELECT RAISE(IGNORE);
END;
DELETE FROM embeddings WHERE (tier = 'exchange' AND item_id NOT IN (SELECT id FROM exchanges))
    OR (tier = 'gist' AND item_id NOT IN (SELECT id FROM gists))
    OR (tier = 'digest' AND item_id NOT IN (SELECT id FROM digests));
DELETE FROM gists WHERE stale = 1;
DELETE FROM digests WHERE stale = 1;
DELETE FROM narrative WHERE stale = 1;
""")
    from .provenance import backfill, scrub_logs  # the registry lives beside the store's other modules
    backfill(conn)
    scrub_logs(conn)


m009_provenance.rebuilds_tables = True  # type: ignore[attr-defined]


def _autoincrement(conn: sqlite3.Connection, table: str) -> None:
    """Rebuild ``table`` with ``INTEGER PRIMARY KEY AUTOINCREMENT`` (SQLite's 12-step table change)."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()[0]
    if "AUTOINCREMENT" in sql.upper():
        return
    new_sql = sql.replace("id INTEGER PRIMARY KEY,", "id INTEGER PRIMARY KEY AUTOINCREMENT,", 1)
    assert new_sql != sql, f"{table}: no 'id INTEGER PRIMARY KEY' column"
    extras = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN "
                                         "('index', 'trigger') AND sql IS NOT NULL", (table,))]
    top = conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
    conn.execute(new_sql.replace(f"CREATE TABLE {table}", f"CREATE TABLE {table}__new", 1))
    conn.execute(f"INSERT INTO {table}__new SELECT * FROM {table}")
    conn.execute(f"DROP TABLE {table}")
    conn.execute(f"ALTER TABLE {table}__new RENAME TO {table}")
    for statement in extras:
        conn.execute(statement)
    # The copy set the sequence to the highest id kept; ids freed before this migration stay free.
    conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (top, table))


# A turn's context view: the turn before it in its session, then the turn itself.
_CONTEXT_OF = ("coalesce((SELECT p.content || char(10) FROM exchanges p WHERE p.session_id = {t}.session_id "
               "AND p.id < {t}.id ORDER BY p.id DESC LIMIT 1), '') || {t}.content")
_SUCCESSOR = "(SELECT min(m.id) FROM exchanges m WHERE m.session_id = old.session_id AND m.id > old.id)"


@migration
def m010_exchange_context(conn: sqlite3.Connection) -> None:
    """Full text over each turn read with the turn before it ("What made you pick it?" -> "I chose them 'cause...").

    Kept by triggers: a new turn adds its row; deleting or editing a turn
    rewrites its successor's row too, so a forgotten turn's words leave the
    view with it. Rows for turns stored before this migration are added in the
    background (``store/context_view.py``: ``lyra reindex``, the server) from
    ``meta.context_backfill_upto`` down; recall uses the view meanwhile.
    """
    successor_row = f"SELECT n.id, {_CONTEXT_OF.format(t='n')} FROM exchanges n WHERE n.id = {_SUCCESSOR}"
    _script(conn, f"""
CREATE VIRTUAL TABLE exchange_context_fts USING fts5(content, tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER exchange_context_insert AFTER INSERT ON exchanges BEGIN
    INSERT INTO exchange_context_fts(rowid, content) VALUES (new.id, {_CONTEXT_OF.format(t='new')});
END;
CREATE TRIGGER exchange_context_delete AFTER DELETE ON exchanges BEGIN
    DELETE FROM exchange_context_fts WHERE rowid = old.id;
    DELETE FROM exchange_context_fts WHERE rowid = {_SUCCESSOR};
    INSERT INTO exchange_context_fts(rowid, content) {successor_row};
END;
CREATE TRIGGER exchange_context_update AFTER UPDATE OF content ON exchanges BEGIN
    DELETE FROM exchange_context_fts WHERE rowid = old.id;
    INSERT INTO exchange_context_fts(rowid, content) VALUES (new.id, {_CONTEXT_OF.format(t='new')});
    DELETE FROM exchange_context_fts WHERE rowid = {_SUCCESSOR};
    INSERT INTO exchange_context_fts(rowid, content) {successor_row};
END;
""")
    top = conn.execute("SELECT coalesce(max(id), 0) FROM exchanges").fetchone()[0]
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('context_backfill_upto', ?)", (str(top),))


@migration
def m011_how_memories_were_written(conn: sqlite3.Connection) -> None:
    """How a gist, digest or narrative was written: by the summary model and checked, from the sources' own
    sentences (the floor when a draft fails its grounding checks), or by the person (a correction)."""
    _script(conn, """
ALTER TABLE gists ADD COLUMN method TEXT NOT NULL DEFAULT 'abstractive'
    CHECK (method IN ('abstractive', 'extractive', 'user'));
ALTER TABLE digests ADD COLUMN method TEXT NOT NULL DEFAULT 'abstractive'
    CHECK (method IN ('abstractive', 'extractive', 'user'));
ALTER TABLE narrative ADD COLUMN method TEXT NOT NULL DEFAULT 'abstractive'
    CHECK (method IN ('abstractive', 'extractive', 'user'));
""")


@migration
def m012_corrections(conn: sqlite3.Connection) -> None:
    """Derived memories the person deleted, and what they were built from then: the dream does not bring one back
    until its sources change. Ids and hashes only, never text."""
    _script(conn, """
CREATE TABLE dismissed (
    kind TEXT NOT NULL CHECK (kind IN ('gist', 'digest', 'narrative')),
    target TEXT NOT NULL,
    basis TEXT NOT NULL,
    dismissed_at TEXT NOT NULL,
    PRIMARY KEY (kind, target)
) WITHOUT ROWID;
""")


@migration
def m013_branches_and_off_the_record(conn: sqlite3.Connection) -> None:
    """Regenerated replies, edited messages and off-the-record conversations.

    ``exchanges`` holds each conversation's current path only: what is
    remembered. A reply that was regenerated, or what followed a message that
    was edited, moves to ``asides`` (same ids: a turn keeps its id wherever it
    is), kept with the conversation and outside long-term memory: no vector in
    the index (its vector waits beside it for when it comes back), no full
    text, no dream. Choosing it again moves it back. A session with
    ``remember = 0`` is off the record: its turns are stored (the conversation
    needs them) with ``remembered = 0``, which the full-text triggers, the
    vector table and recall's filters all honour; every existing row stays as it is.
    """
    successor_row = f"SELECT n.id, {_CONTEXT_OF.format(t='n')} FROM exchanges n WHERE n.id = {_SUCCESSOR}"
    _script(conn, f"""
ALTER TABLE sessions ADD COLUMN remember INTEGER NOT NULL DEFAULT 1 CHECK (remember IN (0, 1));
ALTER TABLE exchanges ADD COLUMN remembered INTEGER NOT NULL DEFAULT 1 CHECK (remembered IN (0, 1));
DROP TRIGGER exchanges_fts_insert;
DROP TRIGGER exchanges_fts_delete;
DROP TRIGGER exchanges_fts_update;
CREATE TRIGGER exchanges_fts_insert AFTER INSERT ON exchanges WHEN new.remembered BEGIN
    INSERT INTO exchanges_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER exchanges_fts_delete AFTER DELETE ON exchanges WHEN old.remembered BEGIN
    INSERT INTO exchanges_fts(exchanges_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER exchanges_fts_update AFTER UPDATE OF content ON exchanges WHEN old.remembered BEGIN
    INSERT INTO exchanges_fts(exchanges_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO exchanges_fts(rowid, content) VALUES (new.id, new.content);
END;
DROP TRIGGER exchange_context_insert;
DROP TRIGGER exchange_context_delete;
DROP TRIGGER exchange_context_update;
CREATE TRIGGER exchange_context_insert AFTER INSERT ON exchanges WHEN new.remembered BEGIN
    INSERT INTO exchange_context_fts(rowid, content) VALUES (new.id, {_CONTEXT_OF.format(t='new')});
END;
CREATE TRIGGER exchange_context_delete AFTER DELETE ON exchanges WHEN old.remembered BEGIN
    DELETE FROM exchange_context_fts WHERE rowid = old.id;
    DELETE FROM exchange_context_fts WHERE rowid = {_SUCCESSOR};
    INSERT INTO exchange_context_fts(rowid, content) {successor_row};
END;
CREATE TRIGGER exchange_context_update AFTER UPDATE OF content ON exchanges WHEN old.remembered BEGIN
    DELETE FROM exchange_context_fts WHERE rowid = old.id;
    INSERT INTO exchange_context_fts(rowid, content) VALUES (new.id, {_CONTEXT_OF.format(t='new')});
    DELETE FROM exchange_context_fts WHERE rowid = {_SUCCESSOR};
    INSERT INTO exchange_context_fts(rowid, content) {successor_row};
END;
DROP TRIGGER embeddings_need_row;
CREATE TRIGGER embeddings_need_row BEFORE INSERT ON embeddings
WHEN (new.tier = 'exchange' AND NOT EXISTS (SELECT 1 FROM exchanges WHERE id = new.item_id AND remembered = 1))
  OR (new.tier = 'gist' AND NOT EXISTS (SELECT 1 FROM gists WHERE id = new.item_id))
  OR (new.tier = 'digest' AND NOT EXISTS (SELECT 1 FROM digests WHERE id = new.item_id))
BEGIN
    SELECT RAISE(IGNORE);
END;
CREATE TABLE asides (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    parent_id INTEGER,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    tokens INTEGER,
    source_id TEXT,
    trace TEXT CHECK (trace IS NULL OR json_valid(trace)),
    trace_tokens INTEGER,
    trace_created_at TEXT,
    vector BLOB,
    vector_model TEXT,
    set_aside_seq INTEGER NOT NULL
);
CREATE INDEX asides_by_session ON asides(session_id);
CREATE INDEX asides_by_parent ON asides(parent_id);
""")


@migration
def m014_rejected_facts(conn: sqlite3.Connection) -> None:
    """A fact the person said was wrong is dismissed too: by its key and the conversation it was learnt from
    (``"<key>:<session id>"``), never by its value (the person's words would outlive a forget there)."""
    _script(conn, """
CREATE TABLE dismissed__new (
    kind TEXT NOT NULL CHECK (kind IN ('gist', 'digest', 'narrative', 'fact')),
    target TEXT NOT NULL,
    basis TEXT NOT NULL,
    dismissed_at TEXT NOT NULL,
    PRIMARY KEY (kind, target)
) WITHOUT ROWID;
INSERT INTO dismissed__new SELECT kind, target, basis, dismissed_at FROM dismissed;
DROP TABLE dismissed;
ALTER TABLE dismissed__new RENAME TO dismissed;
""")


@migration
def m015_reply_endings(conn: sqlite3.Connection) -> None:
    """How a reply ended when it did not end by itself: ``length`` (the token limit cut it), ``stopped`` (the
    person stopped it) or ``error`` (the model failed mid-reply); NULL for a whole reply. Stored with the reply,
    so a reopened conversation still marks it (and offers Continue for a cut one); a version set aside keeps
    its ending in ``asides``."""
    _script(conn, """
ALTER TABLE exchanges ADD COLUMN ending TEXT CHECK (ending IN ('length', 'stopped', 'error'));
ALTER TABLE asides ADD COLUMN ending TEXT CHECK (ending IN ('length', 'stopped', 'error'));
""")


@migration
def m016_reply_authors(conn: sqlite3.Connection) -> None:
    """Who wrote a reply, stored with it: the assistant it was imported from ("ChatGPT"), NULL for the companion's.

    Until now the author was read off the conversation (its ``source``), so a reply Lyra wrote in a conversation
    imported from ChatGPT was credited to ChatGPT. Backfilled as ``authors.author_at_import`` decides: a reply
    that kept its source's id in a conversation imported from an assistant is that assistant's; one with no id
    (written here) or a Lyra portable id (``<origin>:<turn id>``, written in Lyra and brought by an export) is
    the companion's."""
    from ..authors import IMPORTED_FROM  # one mapping of import sources to the assistants they hold

    lyra_id = "[0-9a-f]" * 12 + ":[0-9]*"
    conn.execute("ALTER TABLE exchanges ADD COLUMN author TEXT")
    conn.execute("ALTER TABLE asides ADD COLUMN author TEXT")
    for table in ("exchanges", "asides"):
        conn.execute(f"UPDATE {table} SET author = (SELECT a.value FROM sessions s JOIN json_each(:from) a "
                     f"ON a.key = s.source WHERE s.id = {table}.session_id) WHERE role = 'assistant' "
                     "AND source_id IS NOT NULL AND source_id NOT GLOB :lyra_id",
                     {"from": json.dumps(IMPORTED_FROM), "lyra_id": lyra_id})
