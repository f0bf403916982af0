"""Opening the SQLite file: WAL, a busy timeout, foreign keys, and write transactions
that wait for other processes instead of failing.

Several processes (web server, dream worker, CLI) share one database file. WAL
lets readers run beside a writer; ``BEGIN IMMEDIATE`` takes the write lock up
front, so a transaction never fails half way on a lock upgrade; the busy
timeout plus a bounded retry keeps "database is locked" from reaching a user.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone, tzinfo
from pathlib import Path

from ..errors import LyraError
from ..fsutil import private_file
from .files.dirlock import find_holders
from .forget.folding import fold, fold_json

BUSY_TIMEOUT_MS = 10_000
WRITE_RETRIES = 8
MAX_INTEGER = (1 << 63) - 1  # SQLite's INTEGER: a larger number fails an insert with an OverflowError


class StoreBusy(LyraError):
    """Another process held the database for longer than we are willing to wait."""

    status_code = 503


def connect(path: Path, *, exclusive: bool = False) -> sqlite3.Connection:
    """A connection to the database at ``path``; ``exclusive``: without the shared-memory file of the WAL (SQLite
    keeps that index in this connection's memory and locks the file for itself), which opens a memory on a
    full disk, where that file cannot be made (``Store`` decides when)."""
    private_file(path)  # a new database is 0600 whatever the umask, and SQLite gives its WAL the same mode
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if exclusive:
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")  # before the first access, or the shared file is used
        _enter_wal(conn, path)
        conn.execute("PRAGMA synchronous = NORMAL")  # durable across application crashes in WAL mode
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")  # forgotten text is overwritten, not left in free pages
    except BaseException:
        conn.close()
        raise
    register_functions(conn)
    return conn


def _enter_wal(conn: sqlite3.Connection, path: Path) -> None:
    """``journal_mode = WAL``, waiting out the moment of exclusive access a new file's switch needs (several
    processes opening a new store together may get "locked" at once). Any other error (a full disk, a
    read-only one) goes up as SQLite gave it, for the store to name: it is never "another process"."""
    _while_busy(conn, "PRAGMA journal_mode = WAL", WRITE_RETRIES * 4,
                lambda exc: busy(path.parent, f"could not open {path}: {exc}"),
                lambda attempt: 0.05 * (1 + random.random()))


def busy(data_dir: Path, message: str) -> StoreBusy:
    """The database stayed locked: naming the processes that hold the data directory, and blaming "another
    process" only when the data-directory lock says one has the memory open."""
    holders = find_holders(data_dir, exclude_pid=os.getpid())
    if holders:
        return StoreBusy(f"{message}; another process holds the memory: {'; '.join(map(str, holders))}",
                         hint="is a long import or backup running? try again when it is done, or stop it")
    return StoreBusy(f"{message}; no other process on this machine has the memory open",
                     hint="another connection of this process held it (try again), or a process on another "
                          "machine shares this folder over the network")


def register_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the store's queries use: ``lyra_fold(text)`` and ``lyra_fold_json(json)``."""
    conn.create_function("lyra_fold", 1, fold, deterministic=True)
    conn.create_function("lyra_fold_json", 1, fold_json, deterministic=True)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _while_busy(conn: sqlite3.Connection, sql: str, attempts: int,
                refused: Callable[[sqlite3.OperationalError], LyraError], pause_s: Callable[[int], float]) -> None:
    """``sql``, run again after ``pause_s(attempt)`` while SQLite says another connection holds the lock, at
    most ``attempts`` times (then ``refused``); any other error goes up as SQLite gave it."""
    for attempt in range(attempts):
        try:
            conn.execute(sql)
            return
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            if attempt == attempts - 1:
                raise refused(exc) from exc
            time.sleep(pause_s(attempt))


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error.

    Only taking the lock is retried: once the body runs, an error rolls back and
    propagates, so nothing is ever half-written or written twice.
    """
    _while_busy(conn, "BEGIN IMMEDIATE", WRITE_RETRIES,
                lambda exc: busy(_data_dir(conn), "the memory database stayed locked"),
                lambda attempt: 0.05 * (2 ** attempt) * (0.5 + random.random()))
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        _roll_back(conn)
        raise


def _roll_back(conn: sqlite3.Connection) -> None:
    """Undo the open transaction, if SQLite has not already: after a full disk or an I/O error it may have rolled
    back itself, and a second ROLLBACK would hide the error that says why under "no transaction is active"."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            if conn.in_transaction:
                raise


def _data_dir(conn: sqlite3.Connection) -> Path:
    """The folder of the connection's main database file."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main" and row[2]:
            return Path(row[2]).parent
    return Path(".")


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
