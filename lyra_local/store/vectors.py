"""FAISS indexes kept in sync with the ``embeddings`` rows of SQLite.

One index per (tier, embedding model); FAISS ids are the SQLite row ids
(``IndexIDMap2``). Every insert or delete of an embedding is logged by a trigger
in ``vector_log`` in the same transaction, so an index at high-water mark *h*
catches up by replaying the log after *h* — including rows another process
wrote since our last query, at the cost of one indexed ``max(seq)`` lookup.

Snapshots are written with ``faiss.write_index`` (never pickle) to a temporary
file (declared in ``store/files/registry.py``, swept after a crash) and renamed, next to
a JSON sidecar holding the high-water mark, the count and the file's sha256.
A missing, stale, truncated or garbled snapshot is detected on open and the
index is rebuilt from SQLite. A failed save raises.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import faiss
import numpy as np
import numpy.typing as npt

from ..fsutil import atomic_write_text, private_dir, sha256_file
from ..oserrors import named_os_errors
from .files.registry import locked_file

if TYPE_CHECKING:
    from .store import Store

log = logging.getLogger(__name__)
FORMAT_VERSION = 1
REBUILD_CHUNK = 20_000
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IndexSettings:
    """When to switch from exact search to HNSW, and HNSW's knobs."""

    hnsw_threshold: int = 50_000
    hnsw_m: int = 32
    hnsw_ef_construction: int = 128
    hnsw_ef_search: int = 128


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80]


class VectorIndex:
    """The searchable, persisted mirror of one tier's vectors for one model."""

    def __init__(self, store: Store, tier: str, model: str, settings: IndexSettings) -> None:
        self.store = store
        self.tier = tier
        self.model = model
        self.settings = settings
        stem = f"{tier}--{_slug(model)}"
        self.path = store.index_dir / f"{stem}.faiss"
        self.meta_path = store.index_dir / f"{stem}.json"
        self._lock = threading.RLock()
        self._index: Any = None
        self._hwm = 0
        self._saved_hwm = -1
        self._tombstones: set[int] = set()  # HNSW cannot delete: removed ids are filtered out
        self._upgrading: threading.Thread | None = None
        self._compacting: threading.Thread | None = None
        self.last_load: str = "not loaded"

    # -- public -------------------------------------------------------------------

    @property
    def size(self) -> int:
        with self._lock:
            return 0 if self._index is None else int(self._index.ntotal) - len(self._tombstones)

    @property
    def kind(self) -> str:
        with self._lock:
            return "none" if self._index is None else ("hnsw" if self._is_hnsw() else "flat")

    def sync(self, progress: Progress | None = None) -> None:
        """Load or rebuild on first use, then replay what SQLite logged since."""
        with self._lock:
            if self._index is None:
                self._open(progress)
            latest = self._latest_seq()
            if latest > self._hwm:
                self._catch_up(latest)

    def search(self, query: npt.NDArray[np.float32], k: int,
               allowed: npt.NDArray[np.int64] | None = None) -> list[tuple[int, float]]:
        """Top ``k`` (id, inner product) pairs, optionally among ``allowed`` ids only."""
        with self._lock:
            if self._index is None or self._index.ntotal == 0 or k <= 0:
                return []
            q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
            fetch = min(int(self._index.ntotal), k + len(self._tombstones))
            # HNSW needs a wider search as it grows to keep recall@10 >= 0.95 (measured: bench_recall.py)
            ef = max(self.settings.hnsw_ef_search, fetch, int(self._index.ntotal ** 0.5))
            params = None
            if allowed is not None:
                if len(allowed) == 0:
                    return []
                selector = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
                # faiss's bundled stub lacks SearchParametersHNSW and the keyword constructors: hence the ignores
                params = (faiss.SearchParametersHNSW(sel=selector, efSearch=ef)  # type: ignore[attr-defined]
                          if self._is_hnsw() else faiss.SearchParameters(sel=selector))  # type: ignore[call-arg]
            elif self._is_hnsw():
                params = faiss.SearchParametersHNSW(efSearch=ef)  # type: ignore[attr-defined]
            index = self._index
            scores, ids = _one_thread(lambda: index.search(q, fetch, params=params))
            hits = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True)
                    if i >= 0 and int(i) not in self._tombstones]
            return hits[:k]

    def vectors(self, ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The vectors the index holds for ``ids`` (SQLite's, bit for bit), by id; an id without one is left out.
        Recall reads its candidates' vectors here: as BLOBs from SQLite they took 3.2 ms of a recall's p50 on
        LoCoMo's dev half, from the index 0.03 ms (scripts/bench_recall_breakdown.py)."""
        with self._lock:
            if self._index is None or self._index.ntotal == 0:
                return {}
            wanted = [int(i) for i in ids if int(i) not in self._tombstones]
            if not wanted:
                return {}
            try:
                found = self._index.reconstruct_batch(np.asarray(wanted, dtype=np.int64))
                return dict(zip(wanted, found, strict=True))
            except RuntimeError:  # one of them has no vector (a reply embedded after it was stored): one by one
                out = {}
                for i in wanted:
                    with contextlib.suppress(RuntimeError):
                        out[i] = self._index.reconstruct(i)
                return out

    def rebuild(self, progress: Progress | None = None) -> None:
        """Rebuild from SQLite (the truth), in chunks, reporting ``progress(done, total)``."""
        with self._lock:
            self._index, self._hwm = self._build(progress)
            self._tombstones = set()
            self._saved_hwm = -1
            log.info("rebuilt %s index for %s: %d vectors (%s)", self.tier, self.model, self.size, self.kind)

    def _build(self, progress: Progress | None = None, *, hnsw: bool | None = None) -> tuple[Any, int]:
        """A fresh index of every stored vector, and the log position it covers."""
        conn = self.store.conn()
        latest = self._latest_seq()
        total = int(conn.execute("SELECT count(*) FROM embeddings WHERE tier = ? AND model = ?",
                                 (self.tier, self.model)).fetchone()[0])
        index = None
        done = 0
        last_id = -1
        while True:
            rows = conn.execute(
                "SELECT item_id, vector FROM embeddings WHERE tier = ? AND model = ? AND item_id > ? "
                "ORDER BY item_id LIMIT ?", (self.tier, self.model, last_id, REBUILD_CHUNK)).fetchall()
            if not rows:
                break
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
            if index is None:
                index = self._new_index(vectors.shape[1], total, hnsw=hnsw)
            index.add_with_ids(vectors, ids)
            last_id = int(ids[-1])
            done += len(rows)
            if progress:
                progress(done, total)
        return (index if index is not None else self._empty()), latest

    def _upgrade_in_background(self) -> None:
        """Grown past the exact-search size: build HNSW beside the flat index, then swap."""
        if self._upgrading is not None:
            return

        def build() -> None:
            try:
                index, hwm = self._build(hnsw=True)
                with self._lock:
                    self._index, self._hwm, self._tombstones, self._saved_hwm = index, hwm, set(), -1
                    self._catch_up(self._latest_seq())
                log.info("%s index for %s switched to HNSW (%d vectors)", self.tier, self.model, self.size)
            finally:
                self._upgrading = None

        self._upgrading = threading.Thread(target=build, name=f"hnsw-{self.tier}", daemon=True)
        self._upgrading.start()

    def wait_for_upgrade(self, timeout: float | None = None) -> None:
        upgrading = self._upgrading
        if upgrading is not None:
            upgrading.join(timeout)

    def forget_snapshot(self) -> None:
        """The snapshot on disk was deleted (a forget): the next ``save`` writes one again."""
        with self._lock:
            self._saved_hwm = -1

    def compact(self, *, wait: bool = False) -> None:
        """Drop HNSW's tombstones by building a fresh index beside the live one, then swapping.

        Searches go on meanwhile (the tombstones filter them); the lock is held only
        for the swap and the catch-up with what changed during the build.
        """
        if wait:
            with self._lock:
                if self._tombstones:
                    self.rebuild()
            return
        if self._compacting is not None:
            return

        def build() -> None:
            try:
                with self._lock:
                    hnsw = self._is_hnsw()
                index, hwm = self._build(hnsw=hnsw)
                with self._lock:
                    self._index, self._hwm, self._tombstones, self._saved_hwm = index, hwm, set(), -1
                    self._catch_up(self._latest_seq())
                log.info("%s index for %s compacted (%d vectors)", self.tier, self.model, self.size)
                self.save()
            except Exception:  # the store closed under us; the next open rebuilds
                log.exception("compacting the %s index for %s failed", self.tier, self.model)
            finally:
                self._compacting = None

        self._compacting = threading.Thread(target=build, name=f"compact-{self.tier}", daemon=True)
        self._compacting.start()

    def save(self, *, wait: bool = False) -> None:
        """Persist a snapshot if anything changed since the last one (atomically).

        The index first catches up with the database, so a snapshot never holds a
        vector deleted meanwhile (by another process, say); one with tombstones is
        compacted first (in the background unless ``wait``), then saved.
        """
        with self._lock:
            if self._index is None:
                return
            self.sync()
            if self._hwm == self._saved_hwm or self._index.ntotal == 0:
                return
            if self._tombstones:
                self.compact(wait=wait)
                if self._tombstones:
                    return  # saved by the compaction when it is done
            private_dir(self.path.parent)
            # a name of its own (two processes may save one index at once) and a flock while it is written, so
            # the recovery step tells a dead writer's half-written file from a live one's (store/files/registry.py)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
            with named_os_errors(self.path.parent), locked_file(tmp) as held:
                # through our own file object: ``write_index(index, path)`` opens the path itself and only
                # prints a failed close (a full disk), which would rename a truncated snapshot into place
                faiss.write_index(self._index, faiss.PyCallbackIOWriter(held.write))  # type: ignore[attr-defined]
                held.flush()
                os.fsync(held.fileno())
                os.replace(tmp, self.path)
            meta = {"format": FORMAT_VERSION, "tier": self.tier, "model": self.model, "hwm": self._hwm,
                    "count": int(self._index.ntotal), "dim": int(self._index.d), "kind": self.kind,
                    "sha256": sha256_file(self.path)}
            atomic_write_text(self.meta_path, json.dumps(meta))
            self._saved_hwm = self._hwm

    # -- internals ------------------------------------------------------------------

    def _open(self, progress: Progress | None) -> None:
        problem = self._load_snapshot()
        if problem is None:
            self.last_load = "snapshot"
            return
        log.warning("%s index for %s: %s; rebuilding from the database", self.tier, self.model, problem)
        self.last_load = f"rebuilt ({problem})"
        self.rebuild(progress)

    def _load_snapshot(self) -> str | None:
        """Load the snapshot; return why it cannot be used, or None."""
        if not self.path.exists() or not self.meta_path.exists():
            return "no snapshot"
        try:
            meta = json.loads(self.meta_path.read_text())
        except (OSError, json.JSONDecodeError):
            return "unreadable snapshot metadata"
        if meta.get("format") != FORMAT_VERSION or meta.get("tier") != self.tier or meta.get("model") != self.model:
            return "snapshot of another format or model"
        if sha256_file(self.path) != meta.get("sha256"):
            return "snapshot file is damaged (checksum mismatch)"
        if int(meta["hwm"]) > self._latest_seq() or int(meta["hwm"]) < self._pruned_upto():
            return "snapshot does not match the database (restored or pruned)"
        try:
            index = faiss.read_index(str(self.path))
        except RuntimeError as exc:
            return f"snapshot unreadable by FAISS: {exc}"
        if int(index.ntotal) != int(meta["count"]):
            return "snapshot count mismatch"
        self._index, self._hwm, self._saved_hwm, self._tombstones = index, int(meta["hwm"]), int(meta["hwm"]), set()
        self._catch_up(self._latest_seq())
        stored = int(self.store.conn().execute("SELECT count(*) FROM embeddings WHERE tier = ? AND model = ?",
                                               (self.tier, self.model)).fetchone()[0])
        if self.size != stored:
            self._index = None
            return f"snapshot disagrees with the database ({self.size} vs {stored} vectors)"
        return None

    def _latest_seq(self) -> int:
        row = self.store.conn().execute("SELECT max(seq) FROM vector_log WHERE tier = ? AND model = ?",
                                        (self.tier, self.model)).fetchone()
        return int(row[0] or 0)

    def _pruned_upto(self) -> int:
        return int(self.store.get_meta(f"vector_log_pruned:{self.tier}:{self.model}") or 0)

    def _catch_up(self, latest: int) -> None:
        if self._hwm < self._pruned_upto():
            self.rebuild()
            return
        conn = self.store.conn()
        final: dict[int, str] = {}
        removed: set[int] = set()  # ids the index may hold a vector for that is now gone or replaced
        for item_id, op in conn.execute(
                "SELECT item_id, op FROM vector_log WHERE tier = ? AND model = ? AND seq > ? AND seq <= ? "
                "ORDER BY seq", (self.tier, self.model, self._hwm, latest)):
            final[int(item_id)] = op
            if op == "del":
                removed.add(int(item_id))
        if not final:
            self._hwm = latest
            return
        added = [i for i, op in final.items() if op == "add"]
        if self._is_hnsw():
            # A turn chosen again (store/branches.py) comes back with the very vector it left with: the index
            # still holds it, under a tombstone; lifting the tombstone is all it takes.
            held = self._held(conn, [i for i in added if i in removed or i in self._tombstones])
            if not all(held.values()):
                self.rebuild()  # HNSW cannot replace a vector in place
                return
            self._tombstones.difference_update(held)
            added = [i for i in added if i not in held]
            self._tombstones.update(i for i in removed if final[i] == "del")
        elif removed:
            # Only deletions and replacements need a pass over the index; new rows are just added.
            self._index.remove_ids(np.fromiter(removed, dtype=np.int64, count=len(removed)))
        for start in range(0, len(added), 900):
            chunk = added[start:start + 900]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT item_id, vector FROM embeddings WHERE tier = ? AND model = ? "
                                f"AND item_id IN ({marks})", (self.tier, self.model, *chunk)).fetchall()
            if rows:
                ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
                if self._index.ntotal == 0 and self._index.d != vectors.shape[1]:
                    self._index = self._new_index(vectors.shape[1], len(rows))
                self._index.add_with_ids(vectors, ids)
        self._hwm = latest
        if not self._is_hnsw() and self._index.ntotal > self.settings.hnsw_threshold:
            self._upgrade_in_background()

    def _held(self, conn: sqlite3.Connection, ids: list[int]) -> dict[int, bool]:
        """Of ``ids``, those the index holds a vector for: whether it is the vector the database has now."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = dict(conn.execute(f"SELECT item_id, vector FROM embeddings WHERE tier = ? AND model = ? "
                                 f"AND item_id IN ({marks})", (self.tier, self.model, *ids)).fetchall())
        out = {}
        for i in ids:
            try:
                vector = self._index.reconstruct(int(i))
            except RuntimeError:  # not in the index: added like any new row
                continue
            out[i] = i in rows and np.array_equal(vector, np.frombuffer(rows[i], dtype=np.float32))
        return out

    def _new_index(self, dim: int, expected: int, *, hnsw: bool | None = None) -> Any:
        inner: faiss.Index
        if hnsw if hnsw is not None else expected > self.settings.hnsw_threshold:
            inner = faiss.IndexHNSWFlat(dim, self.settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = self.settings.hnsw_ef_construction
            inner.hnsw.efSearch = self.settings.hnsw_ef_search
        else:
            inner = faiss.IndexFlatIP(dim)
        return faiss.IndexIDMap2(inner)

    def _empty(self) -> Any:
        return faiss.IndexIDMap2(faiss.IndexFlatIP(1))

    def _is_hnsw(self) -> bool:
        if self._index is None:
            return False
        inner = faiss.downcast_index(faiss.downcast_index(self._index).index)  # type: ignore[attr-defined]
        return isinstance(inner, faiss.IndexHNSWFlat)


def _one_thread(search: Callable[[], Any]) -> Any:
    """Run one query's search on the calling thread alone. A single query gains nothing from FAISS's OpenMP
    team: on a small box the extra thread waits for a core, and that wait is what a recall's p95 pays
    (scripts/bench_chat.py --people: 4 people's p95 went from 1.15-1.62x one person's to 0.67-0.76x). OpenMP's
    thread count belongs to the calling thread, so it is put back after: builds and compactions keep theirs."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        return search()
    finally:
        faiss.omp_set_num_threads(before)
