"""What the crash model test (test_promises_crash.py) runs on: a real ``lyra serve`` and real ``lyra`` commands
on one data directory, killed at a chosen point, and the looks at the disk a crash must leave right.

A **point** is where a kill lands: a delay after the start, or a moment the
process shows from outside (a line added to the forget ledger, an upload in
``imports/``, the restore's staging folder, a first imported conversation in
the database, a dream pass under way), so a kill lands between two of the
steps an operation takes rather than only where a timer happens to fall.
Nothing here decides what must hold: the state machine does.
"""

from __future__ import annotations

import json
import re
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx

from lyra_local.pause_points import PAUSE_ENV

from .conftest import MODELS_DIR, REPO, base_env, free_port

CONSONANTS, VOWELS = "bdfgkmptvz", "aou"
MARKER = re.compile(r"zq(?:[bdfgkmptvz][aou]){7}k")
TAIL = 12  # FTS5 keeps a term after the prefix it shares with the one before: its tail is looked for too
START_S = 120.0
# Each process gets one thread per model: two processes may run models at once on a 2-core machine.
ENV = {"LYRA_DREAM__ENABLED": "false", "LYRA_DREAM__SESSION_IDLE_S": "0", "LYRA_DREAM__MIN_TURNS": "1",
       "LYRA_DREAM__SUMMARY_TOKENS": "32", "LYRA_DREAM__LEASE_S": "5",
       "LYRA_MODELS__CHAT__SAMPLING__MAX_TOKENS": "8", "LYRA_MODELS__CHAT__N_THREADS": "1",
       "LYRA_MODELS__EMBED__N_THREADS": "1"}


def new_marker() -> str:
    """A word nobody says: letters only (no 'e', 'i', 's', 'l', a final 'k'), so the full-text stemmer keeps it
    whole, and random, so no two share a tail (see ``TAIL``)."""
    return "zq" + "".join(secrets.choice(CONSONANTS) + secrets.choice(VOWELS) for _ in range(7)) + "k"


@dataclass(frozen=True)
class Point:
    """Where a kill lands: ``after`` seconds past the start, or once ``moment`` is seen (then ``after`` more)."""

    moment: str | None
    after: float

    def __str__(self) -> str:
        return f"{self.moment} +{self.after:.1f}s" if self.moment else f"after {self.after:.1f}s"


class Lyra:
    """One data directory with its config, the server on it (one at a time) and the commands run on it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.data = tmp / "data"
        self.config = tmp / "lyra.toml"
        self.config.write_text("# the crash test's settings come from LYRA_* variables\n")
        self.env = {**base_env(tmp), **ENV, "LYRA_DATA_DIR": str(self.data), "LYRA_MODELS_DIR": str(MODELS_DIR)}
        self.server: subprocess.Popen[str] | None = None
        self.client: httpx.Client | None = None
        self.starts = 0

    # -- processes -----------------------------------------------------------------------------------

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "lyra_local", "--config", str(self.config), *args]

    def log(self, name: str) -> Path:
        return self.tmp / f"{name}.log"

    def start(self) -> None:
        """``lyra serve`` on a free port, until /health answers."""
        assert self.server is None
        self.starts += 1
        port = free_port()
        with self.log(f"serve-{self.starts}").open("w") as out:  # the child keeps its own handle
            self.server = subprocess.Popen(self.command("serve", "--host", "127.0.0.1", "--port", str(port)),
                                           env=self.env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, text=True)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=httpx.Timeout(120.0, connect=5.0))
        deadline = time.monotonic() + START_S
        while True:
            assert self.server.poll() is None, f"lyra serve exited:\n{self.tail(f'serve-{self.starts}')}"
            assert time.monotonic() < deadline, f"no /health in {START_S}s:\n{self.tail(f'serve-{self.starts}')}"
            try:
                if self.client.get("/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """Stop the server with ``sig`` (a SIGTERM it does not obey within a minute is a failure)."""
        assert self.server is not None
        if self.server.poll() is None:
            self.server.send_signal(sig)
        try:
            code = self.server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()
            log = self.tail(f"serve-{self.starts}")
            raise AssertionError(f"lyra serve ignored {sig.name} for a minute:\n{log}") from None
        assert self.client is not None
        self.client.close()
        self.server, self.client = None, None
        return code

    def close(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.kill()
            self.server.wait()
        if self.client is not None:
            self.client.close()

    def tail(self, name: str) -> str:
        path = self.log(name)
        return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"

    def run(self, *args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
        """A ``lyra`` command to its end; it must succeed."""
        proc = subprocess.run(self.command(*args), env=self.env, cwd=REPO, capture_output=True, text=True,
                              timeout=timeout)
        assert proc.returncode == 0, f"lyra {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-1500:]}" \
                                     f"\n{proc.stderr[-3000:]}"
        return proc

    def spawn(self, name: str, *args: str, pause: str | None = None) -> subprocess.Popen[str]:
        """``lyra ARGS`` in the background, its output in ``NAME.log``; ``pause``: the named point
        (lyra_local/pause_points.py) where it holds still, saying so, until it is killed."""
        env = {**self.env, PAUSE_ENV: pause} if pause else self.env
        with self.log(name).open("w") as out:
            return subprocess.Popen(self.command(*args), env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                    text=True)

    # -- HTTP ------------------------------------------------------------------------------------------

    def call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """A request to the running server; a 5xx is a failure."""
        assert self.client is not None
        response = self.client.request(method, path, **kw)
        assert response.status_code < 500, (method, path, response.status_code, response.text[:500])
        return response

    def chat(self, session: int, text: str) -> bool:
        """One streamed turn; whether it was answered to its end (``done``, no ``error``)."""
        assert self.client is not None
        kinds = []
        with self.client.stream("POST", f"/api/sessions/{session}/chat", json={"message": text}) as r:
            if r.status_code != 200:
                r.read()
                assert r.status_code < 500, r.text[:500]
                return False
            kinds = [line[6:].strip() for line in r.iter_lines() if line.startswith("event:")]
        return "done" in kinds and "error" not in kinds

    def http_import(self, path: Path) -> bool:
        """``PUT /api/import`` of a Lyra JSON Lines file, then the job to its end; whether it was all stored."""
        r = self.call("PUT", "/api/import", params={"filename": path.name, "format": "lyra"},
                      content=path.read_bytes())
        if r.status_code != 202 and r.status_code != 200:
            return False
        job = r.json()["job"]
        while True:
            state = self.call("GET", f"/api/import/{job}").json()
            if state["status"] != "running":
                return bool(state["status"] == "done" and not (state.get("report") or {}).get("problems"))
            time.sleep(0.2)


def in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """``work()`` in a thread; its result (or the exception it raised) lands in the list."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(work())
        except Exception as exc:  # noqa: BLE001 - a request cut by the kill is an expected outcome
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def wait_for(point: Point, seen: Callable[[str], bool], done: Callable[[], bool], limit: float = 60.0) -> bool:
    """Wait until ``point``; False when the operation ended first (then there is nothing left to kill)."""
    deadline = time.monotonic() + limit
    if point.moment is not None:
        while not seen(point.moment):
            if done() or time.monotonic() > deadline:
                return False
            time.sleep(0.005)
    end = time.monotonic() + point.after
    while time.monotonic() < end:
        if done():
            return False
        time.sleep(0.005)
    return not done()


# -- the looks at the disk ------------------------------------------------------------------------------------


def moments(data: Path, before: dict[str, Any], log: Path | None = None) -> Callable[[str], bool]:
    """What a process shows from outside, against ``before`` (``snapshot(data)`` taken at its start); a moment
    ``paused at POINT`` is the line a process held at a pause point writes to its ``log``."""
    def seen(moment: str) -> bool:
        if moment.startswith("paused at "):
            return log is not None and log.exists() and moment in log.read_text(errors="replace")
        if moment == "ledger line written":
            return _lines(data / "forgotten.jsonl") > before["ledger"]
        if moment == "upload stored":
            return any((data / "imports").glob("*")) if (data / "imports").is_dir() else False
        if moment == "staging folder made":
            return (data / ".restoring").exists()
        if moment == "first conversation stored":
            return _count(data, "SELECT count(*) FROM sessions") > before["sessions"]
        if moment == "dream pass begun":
            return _count(data, "SELECT count(*) FROM dream_passes") > before["passes"]
        if moment == "index written":
            return _newest(data / "index") > before["index"]
        raise AssertionError(f"unknown moment {moment}")

    return seen


def snapshot(data: Path) -> dict[str, Any]:
    return {"ledger": _lines(data / "forgotten.jsonl"), "sessions": _count(data, "SELECT count(*) FROM sessions"),
            "passes": _count(data, "SELECT count(*) FROM dream_passes"), "index": _newest(data / "index")}


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _newest(folder: Path) -> float:
    try:
        return max((p.stat().st_mtime for p in folder.iterdir()), default=0.0)
    except FileNotFoundError:
        return 0.0


def _ro(data: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{data / 'lyra.db'}?mode=ro", uri=True, timeout=10)


def _count(data: Path, sql: str) -> int:
    try:
        conn = _ro(data)
        try:
            return int(conn.execute(sql).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return -1


def stored_texts(data: Path) -> Counter[str]:
    """Every turn's text in the database (on a path or set aside), counted."""
    conn = _ro(data)
    try:
        return Counter(r[0] for r in conn.execute("SELECT content FROM exchanges UNION ALL SELECT content FROM asides"))
    finally:
        conn.close()


def on_disk(data: Path, markers: set[str]) -> dict[str, list[str]]:
    """marker -> the files under ``data`` holding it (whole, or its tail), any case, any byte."""
    if not markers:
        return {}
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        try:
            body = path.read_bytes().lower()
        except FileNotFoundError:
            continue  # gone between listing and reading (a WAL checkpointed, a temp file renamed)
        for marker in markers:
            if marker.encode()[-TAIL:] in body:
                found.setdefault(marker, []).append(str(path.relative_to(data)))
    return found


class _ReadOnlyStore:
    """What a ``VectorIndex`` reads of a store, on a read-only connection: opening a ``Store`` would run the
    recovery step, and the server started next must find the data directory as the crash left it."""

    def __init__(self, data: Path) -> None:
        self.index_dir = data / "index"
        self._conn = _ro(data)

    def conn(self) -> sqlite3.Connection:
        return self._conn

    def get_meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])


def index_problems(data: Path) -> list[str]:
    """With no process on ``data``: the database is sound, and each vector index, loaded from the snapshot a
    crash left and caught up with the database, holds exactly the vectors the database does."""
    import faiss

    from lyra_local.store.vectors import IndexSettings, VectorIndex

    store = _ReadOnlyStore(data)
    conn = store.conn()
    try:
        problems = [] if (check := conn.execute("PRAGMA integrity_check").fetchone()[0]) == "ok" \
            else [f"integrity_check: {check}"]
        for tier, model in conn.execute("SELECT DISTINCT tier, model FROM embeddings").fetchall():
            index = VectorIndex(store, tier, model, IndexSettings())  # type: ignore[arg-type]
            index.sync()  # loads the snapshot if it is sound, else rebuilds (saying why in last_load)
            if "disagrees" in index.last_load or "count mismatch" in index.last_load:
                problems.append(f"{tier} snapshot inconsistent with SQLite: {index.last_load}")
            held = set(faiss.vector_to_array(index._index.id_map).tolist()) - index._tombstones  # noqa: SLF001
            rows = {r[0] for r in conn.execute("SELECT item_id FROM embeddings WHERE tier = ? AND model = ?",
                                               (tier, model))}
            if held != rows:
                problems.append(f"{tier} index holds {len(held)} vectors, SQLite {len(rows)} "
                                f"(loaded: {index.last_load})")
    finally:
        conn.close()
    return problems


def import_file(path: Path, conversations: int, messages: int) -> list[str]:
    """A Lyra JSON Lines file of ``conversations`` of ``messages`` turns, each turn a unique text with a
    marker; returns the texts."""
    lines, texts = [], []
    for c in range(conversations):
        uid = f"crash-{secrets.token_hex(4)}"
        turns = []
        for i in range(messages):
            text = f"Import {c}.{i}: the word was {new_marker()}."
            texts.append(text)
            at = datetime(2024, 1 + c % 12, 1, tzinfo=timezone.utc) + timedelta(minutes=3 * i)
            turns.append({"role": "user" if i % 2 == 0 else "assistant", "content": text,
                          "created_at": at.isoformat(timespec="seconds")})
        lines.append(json.dumps({"id": uid, "name": f"imported {uid}", "messages": turns}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return texts

