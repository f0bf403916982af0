"""``Store``: owns the SQLite file and the vector indexes derived from it.

SQLite is the truth; every FAISS index is a cache that can be rebuilt from it.
One connection per thread (sqlite3 connections must not be shared between
threads mid-transaction), closed when its thread ends; the schema is migrated
when the store opens. While a store is open its process holds the data
directory's lock shared, so `lyra restore` can tell the memory is in use;
before it takes it, the recovery step removes what a process that ended left
in the data directory (``store/files/registry.py``).
Never a module-level global: the app factory or a CLI command creates one and
passes it.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from ..fsutil import private_dir
from ..oserrors import named_os_errors
from . import db, migrations
from .branches import Branches
from .connections import Opener, ThreadConnections
from .coordination import Coordination
from .corrections import Corrections
from .derived import Derived
from .dream_passes import DreamLog
from .exchanges import Exchanges
from .files.dirlock import DirLock
from .files.registry import sweep_leftovers
from .files.uploads import Uploads
from .sessions import Sessions
from .vectors import IndexSettings, VectorIndex

DB_FILENAME = "lyra.db"
INDEX_DIRNAME = "index"


class Store:
    """The memory database of one data directory."""

    def __init__(self, data_dir: Path, *, index_settings: IndexSettings | None = None,
                 lock: DirLock | None = None) -> None:
        """Open (and migrate) the store; ``lock``: a ``DirLock`` the caller already holds (restore)."""
        self.data_dir = data_dir
        with named_os_errors(data_dir):
            if data_dir.exists() and not data_dir.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, "a file where the data directory should be", str(data_dir))
            private_dir(data_dir)  # 0700: a person's memory is theirs, not every account's on the machine
        self.path = data_dir / DB_FILENAME
        self.index_dir = data_dir / INDEX_DIRNAME
        self.index_settings = index_settings or IndexSettings()
        sweep_leftovers(data_dir, lock)  # what a process that ended left (store/files/registry.py), under the lock
        self.uploads = Uploads(data_dir)
        self._own_lock = lock is None
        if lock is None:
            lock = DirLock(data_dir)
            lock.acquire_shared()
        self.dir_lock = lock
        self._opener = Opener(self.path)
        self._conns = ThreadConnections(self._opener)
        self._indexes: dict[tuple[str, str], VectorIndex] = {}
        self._indexes_lock = threading.Lock()
        try:
            with named_os_errors(data_dir):
                migrations.migrate(self.conn())
        except BaseException:
            self._release()
            raise
        self.sessions = Sessions(self)
        self.exchanges = Exchanges(self)
        self.branches = Branches(self)
        self.derived = Derived(self)
        self.corrections = Corrections(self)
        self.coord = Coordination(self)
        self.dreams = DreamLog(self)

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (closed when the thread ends; ``sqlite3.ProgrammingError`` once closed)."""
        with named_os_errors(self.data_dir):
            return self._conns.get()

    def open_connections(self) -> int:
        """How many per-thread connections are open now: one per live thread that used the store."""
        return self._conns.open_count()

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on this thread's connection (see ``db.write_transaction``)."""
        with named_os_errors(self.data_dir), db.write_transaction(self.conn()) as conn:
            yield conn

    def index(self, tier: str, model: str) -> VectorIndex:
        """The vector index of one tier for one embedding model, caught up with SQLite."""
        key = (tier, model)
        with self._indexes_lock:
            index = self._indexes.get(key)
            if index is None:
                index = VectorIndex(self, tier, model, self.index_settings)
                self._indexes[key] = index
        index.sync()
        return index

    def loaded_indexes(self) -> list[VectorIndex]:
        with self._indexes_lock:
            return list(self._indexes.values())

    def get_meta(self, key: str) -> str | None:
        row = self.conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.write() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                         "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def lineage(self) -> str:
        """Which memory this is, for the forget ledger (``store/forget/ledger.py``): the time its first migration ran,
        which every backup of it shares, and no other data directory's memory has."""
        row = self.conn().execute("SELECT applied_at FROM _migrations ORDER BY rowid LIMIT 1").fetchone()
        return f"created {row[0]}"

    def save_indexes(self, *, wait: bool = False) -> None:
        for index in self.loaded_indexes():
            index.save(wait=wait)

    def close(self) -> None:
        """Save the indexes, close every thread's connection and release the data-directory lock."""
        if self._conns.closed:
            return
        try:
            self.uploads.stop_all("the memory was closed", wait_s=0)  # an upload is not kept past its server
            with named_os_errors(self.data_dir):  # a full disk refuses a snapshot: said, and rebuilt next time
                self.save_indexes(wait=True)
        finally:  # whatever the save did, the connections close and the lock goes
            self._release()

    def _release(self) -> None:
        self._conns.close_all()
        if self._own_lock:
            self.dir_lock.release()
