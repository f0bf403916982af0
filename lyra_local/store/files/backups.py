"""A consistent copy of the database file, what such a copy leaves out, and checking one.

``VACUUM INTO`` copies one read transaction's snapshot, so a copy taken while
the server (or an import) writes is a consistent store as of that instant.
A copy holds the memory and nothing more: off-the-record conversations are
deleted from it with every row of theirs (the registry's kinds that belong to
a conversation), and the words of this machine's own logs (task notes, locks,
failed passes: kinds never exported) are blanked, so no forgotten word can
come back from a backup through them (the forget ledger names what it
forgets by id only: ``store/forget/ledger.py``).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import LyraError
from ...fsutil import private_file
from ..db import to_iso
from ..forget import ledger
from ..kinds import KINDS, with_session

if TYPE_CHECKING:
    from ..store import Store

SERVER_ALIVE_S = 120


def copy_into(store: Store, dest: Path) -> None:
    """A consistent copy of the database at ``dest`` (which must not exist), with what a copy leaves out gone, and
    how far the forget ledger was when it was taken (read first: a forget noted later is re-applied)."""
    position = ledger.position(store.data_dir)
    private_file(dest)  # VACUUM INTO fills an empty file, keeping its mode: 0600 whatever the umask
    store.conn().execute("VACUUM INTO ?", (str(dest),))
    leave_out(dest, position)


def leave_out(path: Path, position: int) -> None:
    """Delete off-the-record conversations and blank this machine's logs in a copy, leaving no trace in its pages;
    note the forget ledger's ``position`` in it."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")
        with conn:
            off = f"(SELECT id FROM sessions t WHERE NOT {KINDS['session'].where_current()})"
            for kind in with_session():
                conn.execute(f"DELETE FROM {kind.table} WHERE {kind.session_column} IN {off}")
            conn.execute(f"DELETE FROM sessions WHERE id IN {off}")  # traces go by cascade with their turns
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (ledger.POSITION_KEY, str(position)))
            for kind in (k for k in KINDS.values() if k.export is None and k.on_text == "blank"):
                for column in kind.words:
                    conn.execute(f"UPDATE {kind.table} SET {column} = '' WHERE {column} != ''")
        conn.execute("VACUUM")
    finally:
        conn.close()


def sequences(store: Store) -> dict[str, int]:
    """The highest id each table has handed out (its ``AUTOINCREMENT`` sequence)."""
    return {str(r[0]): int(r[1]) for r in store.conn().execute("SELECT name, seq FROM sqlite_sequence")}


def raise_sequences(store: Store, floor: dict[str, int]) -> None:
    """A restored memory hands out no id the memory it replaced ever handed out: each sequence is raised to at
    least ``floor``'s, so an id in the forget ledger names one row for good (``store/forget/ledger.py``)."""
    with store.write() as conn:
        for name, seq in floor.items():
            if conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (seq, name)).rowcount == 0:
                conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, seq))


def check(path: Path) -> None:
    """A readable, intact Lyra database, or a ``LyraError`` saying what is wrong."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            result = conn.execute("PRAGMA integrity_check").fetchone()[0]
            conn.execute("SELECT count(*) FROM _migrations").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise LyraError(f"{path} is not a Lyra database: {exc}", hint="pass a file written by `lyra backup`") from exc
    if result != "ok":
        raise LyraError(f"{path} is damaged: {result}", hint="use another backup")


def live_servers(store: Store) -> list[str]:
    """Instances that heartbeat recently without saying they stopped (another host, or a crash just now)."""
    since = to_iso(datetime.now(timezone.utc) - timedelta(seconds=SERVER_ALIVE_S))
    rows = store.conn().execute("SELECT id, kind FROM instances WHERE completed_at IS NULL AND heartbeat_at > ? "
                                "AND kind IN ('server', 'dream')", (since,)).fetchall()
    return [f"{r['kind']} {r['id']}" for r in rows]
