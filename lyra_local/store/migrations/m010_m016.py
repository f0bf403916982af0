"""Turns read with their context, how memories were written, corrections, branches and off the record,
reply endings and authors."""

from __future__ import annotations

import json
import sqlite3

from .script import script

# A turn's context view: the turn before it in its session, then the turn itself.
_CONTEXT_OF = ("coalesce((SELECT p.content || char(10) FROM exchanges p WHERE p.session_id = {t}.session_id "
               "AND p.id < {t}.id ORDER BY p.id DESC LIMIT 1), '') || {t}.content")
_SUCCESSOR = "(SELECT min(m.id) FROM exchanges m WHERE m.session_id = old.session_id AND m.id > old.id)"
_SUCCESSOR_ROW = f"SELECT n.id, {_CONTEXT_OF.format(t='n')} FROM exchanges n WHERE n.id = {_SUCCESSOR}"


def m010_exchange_context(conn: sqlite3.Connection) -> None:
    """Full text over each turn read with the turn before it ("What made you pick it?" -> "I chose them 'cause...").

    Kept by triggers: a new turn adds its row; deleting or editing a turn
    rewrites its successor's row too, so a forgotten turn's words leave the
    view with it. Rows for turns stored before this migration are added in the
    background (``store/context_view.py``: ``lyra reindex``, the server) from
    ``meta.context_backfill_upto`` down; recall uses the view meanwhile.
    """
    script(conn, f"""
CREATE VIRTUAL TABLE exchange_context_fts USING fts5(content, tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER exchange_context_insert AFTER INSERT ON exchanges BEGIN
    INSERT INTO exchange_context_fts(rowid, content) VALUES (new.id, {_CONTEXT_OF.format(t='new')});
END;
CREATE TRIGGER exchange_context_delete AFTER DELETE ON exchanges BEGIN
    DELETE FROM exchange_context_fts WHERE rowid = old.id;
    DELETE FROM exchange_context_fts WHERE rowid = {_SUCCESSOR};
    INSERT INTO exchange_context_fts(rowid, content) {_SUCCESSOR_ROW};
END;
CREATE TRIGGER exchange_context_update AFTER UPDATE OF content ON exchanges BEGIN
    DELETE FROM exchange_context_fts WHERE rowid = old.id;
    INSERT INTO exchange_context_fts(rowid, content) VALUES (new.id, {_CONTEXT_OF.format(t='new')});
    DELETE FROM exchange_context_fts WHERE rowid = {_SUCCESSOR};
    INSERT INTO exchange_context_fts(rowid, content) {_SUCCESSOR_ROW};
END;
""")
    top = conn.execute("SELECT coalesce(max(id), 0) FROM exchanges").fetchone()[0]
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('context_backfill_upto', ?)", (str(top),))


def m011_how_memories_were_written(conn: sqlite3.Connection) -> None:
    """How a gist, digest or narrative was written: by the summary model and checked, from the sources' own
    sentences (the floor when a draft fails its grounding checks), or by the person (a correction)."""
    script(conn, """
ALTER TABLE gists ADD COLUMN method TEXT NOT NULL DEFAULT 'abstractive'
    CHECK (method IN ('abstractive', 'extractive', 'user'));
ALTER TABLE digests ADD COLUMN method TEXT NOT NULL DEFAULT 'abstractive'
    CHECK (method IN ('abstractive', 'extractive', 'user'));
ALTER TABLE narrative ADD COLUMN method TEXT NOT NULL DEFAULT 'abstractive'
    CHECK (method IN ('abstractive', 'extractive', 'user'));
""")


def m012_corrections(conn: sqlite3.Connection) -> None:
    """Derived memories the person deleted, and what they were built from then: the dream does not bring one back
    until its sources change. Ids and hashes only, never text."""
    script(conn, """
CREATE TABLE dismissed (
    kind TEXT NOT NULL CHECK (kind IN ('gist', 'digest', 'narrative')),
    target TEXT NOT NULL,
    basis TEXT NOT NULL,
    dismissed_at TEXT NOT NULL,
    PRIMARY KEY (kind, target)
) WITHOUT ROWID;
""")


_BRANCHES_AND_OFF_THE_RECORD = f"""
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
    INSERT INTO exchange_context_fts(rowid, content) {_SUCCESSOR_ROW};
END;
CREATE TRIGGER exchange_context_update AFTER UPDATE OF content ON exchanges WHEN old.remembered BEGIN
    DELETE FROM exchange_context_fts WHERE rowid = old.id;
    INSERT INTO exchange_context_fts(rowid, content) VALUES (new.id, {_CONTEXT_OF.format(t='new')});
    DELETE FROM exchange_context_fts WHERE rowid = {_SUCCESSOR};
    INSERT INTO exchange_context_fts(rowid, content) {_SUCCESSOR_ROW};
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
"""


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
    script(conn, _BRANCHES_AND_OFF_THE_RECORD)


def m014_rejected_facts(conn: sqlite3.Connection) -> None:
    """A fact the person said was wrong is dismissed too: by its key and the conversation it was learnt from
    (``"<key>:<session id>"``), never by its value (the person's words would outlive a forget there)."""
    script(conn, """
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


def m015_reply_endings(conn: sqlite3.Connection) -> None:
    """How a reply ended when it did not end by itself: ``length`` (the token limit cut it), ``stopped`` (the
    person stopped it) or ``error`` (the model failed mid-reply); NULL for a whole reply. Stored with the reply,
    so a reopened conversation still marks it (and offers Continue for a cut one); a version set aside keeps
    its ending in ``asides``."""
    script(conn, """
ALTER TABLE exchanges ADD COLUMN ending TEXT CHECK (ending IN ('length', 'stopped', 'error'));
ALTER TABLE asides ADD COLUMN ending TEXT CHECK (ending IN ('length', 'stopped', 'error'));
""")


def m016_reply_authors(conn: sqlite3.Connection) -> None:
    """Who wrote a reply, stored with it: the assistant it was imported from ("ChatGPT"), NULL for the companion's.

    Read off the conversation (its ``source``) instead, a reply Lyra wrote in a conversation imported from
    ChatGPT would be credited to ChatGPT. Backfilled as ``authors.author_at_import`` decides: a reply
    that kept its source's id in a conversation imported from an assistant is that assistant's; one with no id
    (written here) or a Lyra portable id (``<origin>:<turn id>``, written in Lyra and brought by an export) is
    the companion's."""
    from ...authors import IMPORTED_FROM  # one mapping of import sources to the assistants they hold

    lyra_id = "[0-9a-f]" * 12 + ":[0-9]*"
    conn.execute("ALTER TABLE exchanges ADD COLUMN author TEXT")
    conn.execute("ALTER TABLE asides ADD COLUMN author TEXT")
    for table in ("exchanges", "asides"):
        conn.execute(f"UPDATE {table} SET author = (SELECT a.value FROM sessions s JOIN json_each(:from) a "
                     f"ON a.key = s.source WHERE s.id = {table}.session_id) WHERE role = 'assistant' "
                     "AND source_id IS NOT NULL AND source_id NOT GLOB :lyra_id",
                     {"from": json.dumps(IMPORTED_FROM), "lyra_id": lyra_id})
