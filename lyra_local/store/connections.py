"""One SQLite connection per thread, closed when its thread ends.

A server runs for weeks: anyio retires idle worker threads, and every dream
pass with ``dream.concurrency > 1`` makes a new thread pool. A connection kept
for each thread that ever touched the store would hold its file descriptors
(the database, its WAL and its shared memory) until "unable to open database
file". So each thread's connection sits in a small holder that only that
thread's ``threading.local`` slot references: when the thread ends, Python
drops the slot, the holder dies, and its finalizer closes the connection
(allowed from any thread: connections are opened with ``check_same_thread=False``).
This module must never hand one connection to two threads.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import weakref
from collections.abc import Callable


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
