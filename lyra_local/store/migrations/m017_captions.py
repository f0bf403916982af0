"""A photo's caption, stored with its turn as a caption (never as the words of whoever sent it) and found with it."""

from __future__ import annotations

import sqlite3

from .script import script

# What the turn view's full text holds of a turn: its words, then its photo's caption (``kinds``: the exchange
# kind's ``indexed``); a row is deleted from the index with the same text it was added with.
_INDEXED = "{t}.content || coalesce(char(10) || {t}.caption, '')"


def m017_photo_captions(conn: sqlite3.Connection) -> None:
    """A photo message's caption ("a photo of a dog walking past a mural"): a column of its own beside the words
    (a photo with no text has empty words), in the turn's full text and its vector, so the photo can be found,
    and shown as a caption, not as what its sender said. A version set aside keeps its caption in ``asides``.
    Every existing turn has none, so the full text of each stays what it was."""
    new, old = _INDEXED.format(t="new"), _INDEXED.format(t="old")
    script(conn, f"""
ALTER TABLE exchanges ADD COLUMN caption TEXT;
ALTER TABLE asides ADD COLUMN caption TEXT;
DROP TRIGGER exchanges_fts_insert;
DROP TRIGGER exchanges_fts_delete;
DROP TRIGGER exchanges_fts_update;
CREATE TRIGGER exchanges_fts_insert AFTER INSERT ON exchanges WHEN new.remembered BEGIN
    INSERT INTO exchanges_fts(rowid, content) VALUES (new.id, {new});
END;
CREATE TRIGGER exchanges_fts_delete AFTER DELETE ON exchanges WHEN old.remembered BEGIN
    INSERT INTO exchanges_fts(exchanges_fts, rowid, content) VALUES ('delete', old.id, {old});
END;
CREATE TRIGGER exchanges_fts_update AFTER UPDATE OF content, caption ON exchanges WHEN old.remembered BEGIN
    INSERT INTO exchanges_fts(exchanges_fts, rowid, content) VALUES ('delete', old.id, {old});
    INSERT INTO exchanges_fts(rowid, content) VALUES (new.id, {new});
END;
""")
