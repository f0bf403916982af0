"""It runs for weeks: a real `lyra serve` keeps its open file descriptors flat across thousands of requests,
idle gaps that retire its worker threads, and configuration reloads (real tiny models, loopback only).

anyio stops a worker thread that has been idle for ``WorkerThread.MAX_IDLE_TIME``
(10 s) when the next call comes, and starts new ones for the next burst. A
store that kept one SQLite connection per thread that ever touched it gained
two descriptors (the database and its WAL) per new thread, every burst, until
"unable to open database file". SQLite keeps a closed connection's database
descriptor while the process holds a lock on the file and hands it to the
next connection it opens, so the count is taken after a warm-up burst as wide
as the later ones.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from .conftest import MODELS_DIR, base_env, serve_lyra

try:  # the idle time after which anyio retires a worker thread (no public knob to lower it)
    from anyio._backends._asyncio import WorkerThread

    ANYIO_IDLE_S = float(WorkerThread.MAX_IDLE_TIME)
except (ImportError, AttributeError):  # pragma: no cover - a future anyio: its documented default
    ANYIO_IDLE_S = 10.0

CLIENTS = 8
CYCLES = 4
PER_CYCLE = 600  # requests per burst: 2,400 after the warm-up
MARGIN = 4  # descriptors an end count may exceed the start by (a socket in TIME_WAIT teardown, a log file)


def descriptors(pid: int) -> Counter[str]:
    """What the process has open, by kind: the database files by name, sockets, pipes, anything else."""
    kinds: Counter[str] = Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # closed while we looked
            continue
        kinds[Path(target).name if target.startswith("/") else target.split(":")[0]] += 1
    return kinds


def requests(sid: int) -> list[Callable[[httpx.Client], httpx.Response]]:
    """Cheap endpoints that touch the store (and the embedder, for recall) from worker threads."""
    return [
        lambda c: c.get("/api/sessions"),
        lambda c: c.get("/api/recall", params={"q": "tomatoes on the balcony", "k": 3}),
        lambda c: c.post("/api/sessions", json={"name": "burst"}),
        lambda c: c.get(f"/api/sessions/{sid}/messages"),
        lambda c: c.get("/api/profile"),
        lambda c: c.get("/api/digests"),
        lambda c: c.get("/api/sitrep"),
        lambda c: c.get("/api/recall", params={"q": "garden", "tier": "gist"}),
    ]


def burst(url: str, total: int, sid: int, *, reload: bool) -> Counter[int]:
    """``total`` requests from ``CLIENTS`` clients at once (and a reload in the middle): status codes seen."""
    calls = requests(sid)
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def client(n: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            for i in range(n, total, CLIENTS):
                status = calls[i % len(calls)](c).status_code
                with lock:
                    statuses[status] += 1

    with ThreadPoolExecutor(CLIENTS + 1) as pool:
        runs = [pool.submit(client, n) for n in range(CLIENTS)]
        if reload:
            time.sleep(0.2)
            statuses[httpx.post(f"{url}/admin/reload", timeout=60).status_code] += 1
        for run in runs:
            run.result()
    return statuses


def settle(url: str) -> None:
    """An idle gap past anyio's retirement time, then one call: it stops the idle workers, which exit."""
    time.sleep(ANYIO_IDLE_S + 1.5)
    assert httpx.get(f"{url}/api/sessions", timeout=10).status_code == 200
    time.sleep(1.0)


@pytest.mark.slow
@pytest.mark.models
def test_descriptors_return_to_where_they_started_after_bursts_idle_gaps_and_reloads(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
           "LYRA_DREAM__ENABLED": "false", "LYRA_MODELS__EMBED__N_THREADS": "1"}
    with serve_lyra(tmp_path, env) as served:
        pid = served.proc.pid
        sid = httpx.post(f"{served.url}/api/sessions", json={"name": "garden"}).json()["id"]
        warm = burst(served.url, PER_CYCLE // 2, sid, reload=True)  # as wide as the bursts to come
        assert set(warm) <= {200, 201}, warm
        settle(served.url)
        start = descriptors(pid)

        counts = []
        for _ in range(CYCLES):
            statuses = burst(served.url, PER_CYCLE, sid, reload=True)
            assert set(statuses) <= {200, 201} and sum(statuses.values()) == PER_CYCLE + 1, statuses
            settle(served.url)
            counts.append(descriptors(pid))
        end = counts[-1]
        grown = {kind: n - start[kind] for kind, n in end.items() if n > start[kind]}
        summary = f"start {sum(start.values())}, after each cycle {[sum(c.values()) for c in counts]}, grew {grown}"
        assert sum(end.values()) <= sum(start.values()) + MARGIN, summary
        assert max(sum(c.values()) for c in counts) <= sum(start.values()) + MARGIN, summary
        assert end["lyra.db-wal"] <= start["lyra.db-wal"] + 1, summary
    log = served.log.read_text()
    assert "Traceback" not in log, log[-3000:]
