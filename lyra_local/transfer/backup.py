"""Consistent online backups of the SQLite file, and restoring one.

``VACUUM INTO`` copies one read transaction's snapshot, so a backup taken while
the server (or an import) writes is a consistent store as of that instant.
The FAISS indexes are not copied: they are rebuilt from the database. An
off-the-record conversation is not in a backup: it is removed from the copy.
A restore takes the data directory's lock exclusively (see ``store/dirlock.py``).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..errors import LyraError
from ..store import Store
from ..store.db import to_iso
from ..store.dirlock import DataDirBusy, DirLock, find_holders
from ..store.store import DB_FILENAME, INDEX_DIRNAME

SERVER_ALIVE_S = 120


def backup(store: Store, dest: Path) -> int:
    """Write a consistent copy of the database to ``dest`` (which must not exist); returns its size."""
    dest = dest.expanduser().resolve()
    if dest.exists():
        raise LyraError(f"{dest} already exists", hint="choose a new file name; a backup never overwrites")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    tmp.unlink(missing_ok=True)
    try:
        store.conn().execute("VACUUM INTO ?", (str(tmp),))
        drop_off_the_record(tmp)
        check(tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest.stat().st_size


def drop_off_the_record(path: Path) -> None:
    """Remove off-the-record conversations from a copy of the database, leaving no trace in its pages."""
    conn = sqlite3.connect(path)
    try:
        if not conn.execute("SELECT 1 FROM sessions WHERE remember = 0 LIMIT 1").fetchone():
            return
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")
        with conn:  # their turns, versions set aside and traces go by cascade
            conn.execute("DELETE FROM sessions WHERE remember = 0")
        conn.execute("VACUUM")
    finally:
        conn.close()


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


def restore(source: Path, data_dir: Path, *, force: bool = False) -> Path:
    """Replace the data directory's database with a backup; the old one is kept beside it.

    Holds the data-directory lock exclusively throughout, so no process has the
    memory open while its file is swapped (one that starts meanwhile waits);
    refuses, naming them, while any process holds it. ``force`` only overrides
    the heartbeat check (a server that died without saying so), never the lock.
    """
    source = source.expanduser().resolve()
    if not source.is_file():
        raise LyraError(f"no backup at {source}")
    check(source)
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = DirLock(data_dir)
    if not lock.try_exclusive():
        holders = find_holders(data_dir)
        raise DataDirBusy(f"the memory in {data_dir} is open in {'; '.join(map(str, holders)) or 'another process'}",
                          hint="stop those processes (`lyra serve`, `lyra dream --loop`, ...) first: a restore "
                               "never replaces a database another process has open; --force does not override this")
    try:
        target = data_dir / DB_FILENAME
        kept = None
        if target.exists():
            kept = data_dir / f"{DB_FILENAME}.before-restore-{datetime.now():%Y%m%d-%H%M%S}"
            store = Store(data_dir, lock=lock)  # under our exclusive hold: it must not take the lock shared
            try:
                running = [] if force else _live_servers(store)
                if running:
                    raise LyraError(f"the memory is in use by {', '.join(running)}",
                                    hint="stop `lyra serve` (and `lyra dream`) first, or pass --force")
                store.conn().execute("VACUUM INTO ?", (str(kept),))
            finally:
                store.close()
        staged = data_dir / f"{DB_FILENAME}.restoring"
        shutil.copyfile(source, staged)
        for suffix in ("-wal", "-shm"):
            (data_dir / f"{DB_FILENAME}{suffix}").unlink(missing_ok=True)
        os.replace(staged, target)
        shutil.rmtree(data_dir / INDEX_DIRNAME, ignore_errors=True)  # derived: rebuilt from the restored rows
    finally:
        lock.release()
    return kept or target


def _live_servers(store: Store) -> list[str]:
    """Instances that heartbeat recently without saying they stopped (another host, or a crash just now)."""
    since = to_iso(datetime.now(timezone.utc) - timedelta(seconds=SERVER_ALIVE_S))
    rows = store.conn().execute("SELECT id, kind FROM instances WHERE completed_at IS NULL AND heartbeat_at > ? "
                                "AND kind IN ('server', 'dream')", (since,)).fetchall()
    return [f"{r['kind']} {r['id']}" for r in rows]
