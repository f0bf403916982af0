"""Opening the SQLite file: WAL, a busy timeout, foreign keys, and write transactions
that wait for other processes instead of failing.

Several processes (web server, dream worker, CLI) share one database file. WAL
lets readers run beside a writer; ``BEGIN IMMEDIATE`` takes the write lock up
front, so a transaction never fails half way on a lock upgrade; the busy
timeout plus a bounded retry keeps "database is locked" from reaching a user.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime, timezone, tzinfo
from pathlib import Path

from ..errors import LyraError
from .folding import fold, fold_json

BUSY_TIMEOUT_MS = 10_000
WRITE_RETRIES = 8


class StoreBusy(LyraError):
    """Another process held the database for longer than we are willing to wait."""

    status_code = 503


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # Switching a new file to WAL needs a moment of exclusive access; when several
    # processes open a new store together, SQLite may answer "locked" at once.
    for attempt in range(WRITE_RETRIES * 4):
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            break
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or attempt == WRITE_RETRIES * 4 - 1:
                conn.close()
                raise StoreBusy(f"could not open {path}: {exc}", hint="another process holds the database") from exc
            time.sleep(0.05 * (1 + random.random()))
    conn.execute("PRAGMA synchronous = NORMAL")  # durable across application crashes in WAL mode
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA secure_delete = ON")  # forgotten text is overwritten, not left in free pages
    register_functions(conn)
    return conn


def register_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the store's queries use: ``lyra_fold(text)`` and ``lyra_fold_json(json)``."""
    conn.create_function("lyra_fold", 1, fold, deterministic=True)
    conn.create_function("lyra_fold_json", 1, fold_json, deterministic=True)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error.

    Only taking the lock is retried: once the body runs, an error rolls back and
    propagates, so nothing is ever half-written or written twice.
    """
    for attempt in range(WRITE_RETRIES):
        try:
            conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or attempt == WRITE_RETRIES - 1:
                raise StoreBusy("the memory database stayed locked by another process",
                                hint="is a long import or backup running? try again when it is done") from exc
            time.sleep(0.05 * (2 ** attempt) * (0.5 + random.random()))
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def utc_now() -> str:
    return to_iso(datetime.now(timezone.utc))


def local_day(stamp: str, zone: tzinfo) -> str:
    """The calendar day (``YYYY-MM-DD``) a stored UTC timestamp falls on in ``zone``."""
    return from_iso(stamp).astimezone(zone).date().isoformat()


def to_iso(moment: datetime) -> str:
    """Timestamps are stored as UTC ISO-8601 text, so they sort and compare as strings."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def canonical(text: str) -> str:
    """Any ISO-8601 time as the store's UTC text (naive = UTC), so every stored time compares as text."""
    return to_iso(from_iso(text))


def from_iso(text: str) -> datetime:
    return datetime.fromisoformat(text)
