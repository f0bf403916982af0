"""One SQLite connection per thread, closed when its thread ends.

A server runs for weeks: anyio retires idle worker threads, and every dream
pass with ``dream.concurrency > 1`` makes a new thread pool. A connection kept
for each thread that ever touched the store would hold its file descriptors
(the database, its WAL and its shared memory) until "unable to open database
file". So each thread's connection sits in a small holder that only that
thread's ``threading.local`` slot references: when the thread ends, Python
drops the slot, the holder dies, and its finalizer closes the connection
(allowed from any thread: connections are opened with ``check_same_thread=False``).
This module must never hand one connection to two threads. ``Opener`` opens them,
also on a full disk.
"""

from __future__ import annotations

import itertools
import logging
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from pathlib import Path

from ..errors import DiskFull
from ..oserrors import storage_error
from . import db
from .files.dirlock import find_holders

log = logging.getLogger(__name__)


class _Holder:
    """What a thread's local slot keeps alive; its death closes the connection."""

    __slots__ = ("conn", "__weakref__")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn


class ThreadConnections:
    """Per-thread connections opened by ``open_conn``; ``close_all`` closes every one still open."""

    def __init__(self, open_conn: Callable[[], sqlite3.Connection]) -> None:
        self._open_conn = open_conn
        self._local = threading.local()
        self._open: dict[int, sqlite3.Connection] = {}  # key -> connection, for close_all and counting
        self._lock = threading.Lock()
        self._keys = itertools.count()
        self._closed = False

    def get(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        holder: _Holder | None = getattr(self._local, "holder", None)
        if holder is not None:
            return holder.conn
        if self._closed:
            raise sqlite3.ProgrammingError("the store is closed")
        conn = self._open_conn()
        holder = _Holder(conn)
        key = next(self._keys)
        with self._lock:
            self._open[key] = conn
        # The finalizer holds the key, never the holder: the holder must die with the thread.
        weakref.finalize(holder, self._drop, key)
        self._local.holder = holder
        return conn

    @property
    def closed(self) -> bool:
        return self._closed

    def open_count(self) -> int:
        """Connections open now (one per live thread that used the store)."""
        with self._lock:
            return len(self._open)

    def close_all(self) -> None:
        """Close every connection, whichever thread opened it; later ``get`` calls fail."""
        with self._lock:
            conns = list(self._open.values())
            self._open.clear()
            self._closed = True
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def _drop(self, key: int) -> None:
        with self._lock:
            conn = self._open.pop(key, None)
        if conn is not None:
            conn.close()


class Opener:
    """Opens the connections of one database file, and still opens it for reading when its disk is full.

    With no space left, SQLite cannot make the WAL's shared-memory file and every open fails with "disk I/O
    error", so not even ``lyra sessions``, ``lyra export`` or ``lyra backup`` to another disk could read
    what is stored. Where the disk is full and no other process has the memory open (the data-directory
    lock says so), the connection is opened in SQLite's exclusive locking mode instead, which keeps that
    index in memory: reads work, a write fails with "database or disk is full" (named ``DiskFull`` by the
    store), and nothing is lost. The open is said once in the log: other processes cannot open the memory
    while this one has it so, nor can a second connection of this one (it would wait on the first's lock for
    minutes), so a second thread is refused at once with the same ``DiskFull``: a command reads on one thread,
    and a server started on a full disk answers each request that needs another connection with the cause.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.full_disk: DiskFull | None = None  # set once the memory was opened so

    def __call__(self) -> sqlite3.Connection:
        full = self.full_disk
        if full is not None:  # its one connection is out: another would wait minutes on its lock
            raise DiskFull(full.message, path=full.path, hint=full.hint)
        try:
            return db.connect(self.path)
        except sqlite3.OperationalError as exc:
            named = storage_error(exc, self.path.parent)
            if (not isinstance(named, DiskFull) or not self.path.is_file()
                    or find_holders(self.path.parent, exclude_pid=os.getpid())):
                raise
            self.full_disk = named
            log.warning("%s: the memory is open for reading only, and no other process can open it until "
                        "this one ends (%s)", named.message, named.hint)
        return db.connect(self.path, exclusive=True)
