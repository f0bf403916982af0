"""``Store``: owns the SQLite file and the vector indexes derived from it.

SQLite is the truth; every FAISS index is a cache that can be rebuilt from it.
One connection per thread (sqlite3 connections must not be shared between
threads mid-transaction); the schema is migrated when the store opens. Never a
module-level global: the app factory or a CLI command creates one and passes it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import LyraError
from . import db, migrations
from .coordination import Coordination
from .derived import Derived
from .dreams import DreamLog
from .exchanges import Exchanges
from .sessions import Sessions
from .vectors import IndexSettings, VectorIndex

DB_FILENAME = "lyra.db"
INDEX_DIRNAME = "index"


class Store:
    """The memory database of one data directory."""

    def __init__(self, data_dir: Path, *, index_settings: IndexSettings | None = None) -> None:
        self.data_dir = data_dir
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LyraError(f"cannot create the data directory {data_dir}: {exc}",
                            hint="set data_dir or $LYRA_DATA_DIR to a writable folder") from exc
        self.path = data_dir / DB_FILENAME
        self.index_dir = data_dir / INDEX_DIRNAME
        self.index_settings = index_settings or IndexSettings()
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._indexes: dict[tuple[str, str], VectorIndex] = {}
        self._indexes_lock = threading.Lock()
        migrations.migrate(self.conn())
        self.sessions = Sessions(self)
        self.exchanges = Exchanges(self)
        self.derived = Derived(self)
        self.coord = Coordination(self)
        self.dreams = DreamLog(self)

    def conn(self) -> sqlite3.Connection:
        """This thread's connection."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = db.connect(self.path)
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on this thread's connection (see ``db.write_transaction``)."""
        with db.write_transaction(self.conn()) as conn:
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

    def save_indexes(self) -> None:
        for index in self.loaded_indexes():
            index.save()

    def close(self) -> None:
        self.save_indexes()
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
