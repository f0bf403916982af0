"""A store that runs for weeks: per-thread connections close with their thread; the data-directory lock."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lyra_local.store import Store
from lyra_local.store.files.dirlock import DataDirBusy, DirLock, find_holders

from .conftest import REPO


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def use_store(store: Store, barrier: threading.Barrier | None = None, go: threading.Event | None = None) -> None:
    store.sessions.list()
    if barrier is not None:
        barrier.wait()
    if go is not None:  # hold the connection until the caller has counted
        go.wait(30)
    with store.write() as conn:
        conn.execute("INSERT INTO meta (key, value) VALUES ('k', 'v') ON CONFLICT(key) DO UPDATE SET value = 'w'")


def test_a_threads_connection_is_closed_when_the_thread_ends(tmp_path: Path) -> None:
    store = Store(tmp_path / "data")
    assert store.open_connections() == 1  # this thread's, opened to migrate
    started, counted = threading.Barrier(9), threading.Event()
    threads = [threading.Thread(target=use_store, args=(store, started, counted)) for _ in range(8)]
    for thread in threads:
        thread.start()
    started.wait()  # all eight hold a connection at once, until counted
    held = store.open_connections()
    counted.set()
    assert held == 9
    for thread in threads:
        thread.join()
    deadline = time.monotonic() + 5
    while store.open_connections() > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.open_connections() == 1
    store.close()
    assert store.open_connections() == 0
    with pytest.raises(sqlite3.ProgrammingError):
        store.conn()


def test_descriptors_stay_flat_over_many_thread_pools(store: Store) -> None:
    """Each dream pass with concurrency > 1 makes a new pool; each pool's threads end with it.

    SQLite keeps a closed connection's database descriptor while another connection
    of the process holds a lock on the file, and hands it to the next connection
    opened: so the count settles at the first pool's peak and then stays there.
    """
    counts = []
    for _ in range(8):
        barrier = threading.Barrier(6)
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(use_store, [store] * 6, [barrier] * 6))
        counts.append(open_fds())
        assert store.open_connections() == 1
    assert counts[-1] <= counts[0], counts  # the old store grew by two descriptors per thread per pool


def test_close_releases_every_descriptor_and_the_lock(tmp_path: Path) -> None:
    before = open_fds()
    store = Store(tmp_path / "data")
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: use_store(store), range(20)))
    store.index("exchange", "fake-embed")
    store.close()
    store.close()  # idempotent
    assert open_fds() == before
    exclusive = DirLock(tmp_path / "data")
    assert exclusive.try_exclusive()
    exclusive.release()


def test_every_open_store_holds_the_data_directory_shared(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first, second = Store(data), Store(data)  # shared: any number at once
    lock = DirLock(data)
    assert not lock.try_exclusive()
    assert [h.pid for h in find_holders(data)] == [os.getpid()]
    first.close()
    assert not lock.try_exclusive()
    second.close()
    assert lock.try_exclusive() and lock.mode == "exclusive"
    # While the exclusive lock is held (a restore), a store waits, then says why it could not open.
    with pytest.raises(DataDirBusy, match="stayed locked by pid"):
        DirLock(data).acquire_shared(wait_s=0.3)
    # A store may run under a lock its caller holds: restore reads the old database that way.
    inside = Store(data, lock=lock)
    inside.sessions.create("while restoring")
    inside.close()
    assert lock.held
    lock.release()
    assert [s.name for s in Store(data).sessions.list()] == ["while restoring"]


HOLD = """
import sys, time
from pathlib import Path
from lyra_local.store import Store
store = Store(Path(sys.argv[1]))
store.coord.register("worker-1", "dream", "a test worker that sleeps")
print("ready", flush=True)
time.sleep(60)
"""


def test_the_holders_of_a_data_directory_are_named_from_the_instance_registry(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(data)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        lock = DirLock(data)
        assert not lock.try_exclusive()
        holders = find_holders(data)
        assert [(h.pid, h.what) for h in holders] == [(proc.pid, "dream worker-1: a test worker that sleeps")]
        assert str(holders[0]) == f"pid {proc.pid} (dream worker-1: a test worker that sleeps)"
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    assert find_holders(data) == []  # the kernel drops a dead process's lock, however it died
    lock = DirLock(data)
    assert lock.try_exclusive()
    lock.release()
