"""Context traces, the dream cycle's bookkeeping, world-state reviews, and provenance with ids never reused."""

from __future__ import annotations

import sqlite3

from .script import script


def m005_context_traces(conn: sqlite3.Connection) -> None:
    """Which memories went into each reply's context ("why did you say that?")."""
    script(conn, """
CREATE TABLE context_traces (
    exchange_id INTEGER PRIMARY KEY REFERENCES exchanges(id) ON DELETE CASCADE,
    trace TEXT NOT NULL CHECK (json_valid(trace)),
    tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
""")


def m006_embedding_keys_index(conn: sqlite3.Connection) -> None:
    """A narrow index so counting a tier's vectors does not read every vector BLOB."""
    conn.execute("CREATE INDEX embeddings_keys ON embeddings(tier, model)")


def m007_dream_cycle(conn: sqlite3.Connection) -> None:
    """What each derived memory was built from (so the dream cycle redoes only what changed), and its passes."""
    script(conn, """
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


def m008_world_reviews(conn: sqlite3.Connection) -> None:
    """Who accepted or rejected a proposed world-state version, and when (it counts from then)."""
    script(conn, """
ALTER TABLE world_state ADD COLUMN decided_at TEXT;
ALTER TABLE world_state ADD COLUMN decided_by TEXT;
UPDATE world_state SET decided_at = created_at, decided_by = author WHERE status != 'proposed';
CREATE INDEX instances_by_heartbeat ON instances(heartbeat_at);
""")


# Tables whose ids are handed out (API, vectors, provenance, event cursors): never reused.
NEVER_REUSED = ("sessions", "exchanges", "gists", "profile_facts", "digests", "narrative", "self_state",
                "world_state", "consolidation_log", "dream_passes")


def m009_provenance(conn: sqlite3.Connection) -> None:
    """What every derived memory was built from; ids never reused; no vector without its row; no text in logs.

    Runs with foreign keys off (``migrate`` sees ``rebuilds_tables``): the tables
    whose ids must never be reused are rebuilt with ``AUTOINCREMENT``, keeping
    every row, index and trigger.
    """
    for table in NEVER_REUSED:
        _autoincrement(conn, table)
    script(conn, """
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
    from ..provenance import backfill, scrub_logs  # the registry lives beside the store's other modules
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


