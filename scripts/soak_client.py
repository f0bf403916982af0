"""The soak's instruments (see soak.py): an HTTP client and a ``lyra`` command runner that count every
request by route and every failure by kind, lock errors and 5xx apart.

With kill rounds (``--kill-every``), a request that fails because the server
was killed under it is sent again once the server is back, as a client
would, and counted apart ("retried after a server kill"), never as an error.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
# A forget refuses while another process imports an upload (store/files/uploads.py), and a server's own import stops
# when a forget runs there: both say what to do (wait, or import the same file again), and the soak does it.
IMPORT_RUNNING = ("ImportInProgress", "an import into this memory is running", "is still finishing the batch")
LOCK_TEXTS = ("database is locked", "database table is locked", "storebusy", "stayed locked",
              "unable to open database file")


def is_lock_text(text: str) -> bool:
    low = text.lower()
    return any(t in low for t in LOCK_TEXTS)


class Tally:
    """Thread-safe counts: requests served by route, errors by kind (with a first example), lock errors, 5xx."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.served: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.locks: Counter[str] = Counter()
        self.server_5xx = 0
        self.examples: dict[str, str] = {}
        self.chat_s: list[float] = []
        self.retried: Counter[str] = Counter()
        self.kills: list[str] = []  # one line per server kill: when, and what was in flight

    def ok(self, route: str, seconds: float | None = None) -> None:
        with self._lock:
            self.served[route] += 1
            if seconds is not None:
                self.chat_s.append(seconds)

    def retry(self, route: str) -> None:
        with self._lock:
            self.retried[route] += 1

    def killed(self, what: str) -> None:
        with self._lock:
            self.kills.append(what)

    def error(self, kind: str, detail: str = "", *, status: int | None = None) -> None:
        lock = status == 503 or is_lock_text(detail) or is_lock_text(kind)
        with self._lock:
            self.errors[kind] += 1
            self.examples.setdefault(kind, " ".join(detail.split())[:300])
            if lock:
                self.locks[kind] += 1
            if status is not None and status >= 500:
                self.server_5xx += 1

    def copy(self) -> dict[str, Any]:
        with self._lock:
            return {"served": Counter(self.served), "errors": Counter(self.errors), "locks": Counter(self.locks),
                    "server_5xx": self.server_5xx, "examples": dict(self.examples), "chat_s": list(self.chat_s),
                    "retried": Counter(self.retried), "kills": list(self.kills)}


class Outage:
    """The server's kill rounds, as the clients see them: ``down`` is called *before* the kill, ``back`` once the
    new server answers; a request that failed after a ``down`` (or while the server is down) is sent again."""

    def __init__(self) -> None:
        self.epoch = 0
        self._up = threading.Event()
        self._up.set()

    def down(self) -> None:
        self._up.clear()
        self.epoch += 1

    def back(self) -> None:
        self._up.set()

    def killed_since(self, epoch: int) -> bool:
        return self.epoch != epoch or not self._up.is_set()

    def wait(self, timeout: float = 600.0) -> bool:
        return self._up.wait(timeout)


class _CutByKill(Exception):
    """A streamed turn cut because the server was killed: the turn is sent again once it is back."""


class ConversationGone(Exception):
    """The conversation a client talked in was forgotten whole (every turn of it held a forgotten word)."""


class Api:
    """An httpx client on the server that records every answer in a ``Tally``; one per thread."""

    def __init__(self, base: str, token: str, tally: Tally, timeout: float = 180.0,
                 outage: Outage | None = None) -> None:
        # Origin as the web UI sends it: a same-origin request is what a hardened server must still accept.
        self.client = httpx.Client(base_url=base, timeout=httpx.Timeout(timeout, connect=10.0),
                                   headers={"Authorization": f"Bearer {token}", "Origin": base})
        self.tally = tally
        self.outage = outage

    def epoch(self) -> int:
        return self.outage.epoch if self.outage is not None else 0

    def cut_by_a_kill(self, epoch: int, route: str) -> bool:
        """Whether a failure of a request sent at ``epoch`` was the server being killed: then it is counted as
        retried, and this returns once the server is back (the caller sends it again)."""
        if self.outage is None or not self.outage.killed_since(epoch):
            return False
        self.tally.retry(route)
        return self.outage.wait()

    def close(self) -> None:
        self.client.close()

    def call(self, method: str, path: str, route: str | None = None, *, ok: tuple[int, ...] = (200, 201, 202),
             refused_ok: bool = False, **kwargs: Any) -> httpx.Response | None:
        """The response when its status is in ``ok``, else None (and the failure counted); ``refused_ok``: a 409
        refusal because an import is running is returned as it is, counted apart (the caller tries again)."""
        route = route or f"{method} {path.split('?')[0]}"
        retried = False
        while True:
            epoch = self.epoch()
            try:
                response = self.client.request(method, path, **kwargs)
                break
            except httpx.HTTPError as exc:
                if self.cut_by_a_kill(epoch, route):
                    retried = True
                    continue
                self.tally.error(f"{route}: {type(exc).__name__}", str(exc))
                return None
        if retried and method == "DELETE" and response.status_code == 404:
            self.tally.ok(f"{route} (sent again after a kill: already gone)")  # the first one went through
            return response
        if refused_ok and response.status_code == 409 and any(t in response.text for t in IMPORT_RUNNING):
            self.tally.retry(f"{route} (refused while an import ran)")
            return response
        if response.status_code not in ok:
            self.tally.error(f"{route}: HTTP {response.status_code}", response.text, status=response.status_code)
            return None
        self.tally.ok(route)
        return response

    def chat(self, session_id: int, text: str) -> tuple[int | None, int | None]:
        """One streamed turn; (the user turn's id, the reply's id) when it ended with ``done`` and no ``error``;
        ``ConversationGone`` when the conversation was forgotten whole meanwhile."""
        route = "POST /api/sessions/{id}/chat"
        while True:
            epoch = self.epoch()
            try:
                return self._chat(session_id, text, route)
            except _CutByKill:
                if not self.cut_by_a_kill(epoch, route):
                    return None, None

    def _chat(self, session_id: int, text: str, route: str) -> tuple[int | None, int | None]:
        started = time.monotonic()
        epoch = self.epoch()
        events: list[tuple[str, dict[str, Any]]] = []
        try:
            with self.client.stream("POST", f"/api/sessions/{session_id}/chat", json={"message": text}) as r:
                if r.status_code == 404 and "SessionNotFound" in r.read().decode(errors="replace"):
                    # every turn of it held a word the forgetter forgot: the conversation went whole
                    self.tally.ok(f"{route} (its conversation was forgotten: a new one is started)")
                    raise ConversationGone(session_id)
                if r.status_code != 200:
                    r.read()
                    self.tally.error(f"{route}: HTTP {r.status_code}", r.text, status=r.status_code)
                    return None, None
                kind = None
                for line in r.iter_lines():
                    if line.startswith("event:"):
                        kind = line[6:].strip()
                    elif line.startswith("data:") and kind:
                        events.append((kind, json.loads(line[5:].strip())))
                        kind = None
        except (httpx.HTTPError, json.JSONDecodeError) as exc:
            if self.outage is not None and self.outage.killed_since(epoch):
                raise _CutByKill from exc
            self.tally.error(f"{route}: {type(exc).__name__}", str(exc))
            return None, None
        if not any(kind == "done" for kind, _ in events) and self.outage is not None \
                and self.outage.killed_since(epoch):
            raise _CutByKill  # the stream ended early because the server died
        errors = [data.get("text", "") for kind, data in events if kind == "error"]
        for message in errors:
            self.tally.error(f"{route}: SSE error event", message)
        done = [data for kind, data in events if kind == "done"]
        if not done:
            self.tally.error(f"{route}: stream ended without done", str(events[-3:]))
        if errors or not done:
            return None, None
        self.tally.ok(route, time.monotonic() - started)
        stored = next((data.get("exchange_id") for kind, data in events if kind == "stored"), None)
        return stored, done[0].get("exchange_id")

    def dream_running(self) -> bool:
        r = self.call("GET", "/api/dream")
        return bool(r is not None and r.json().get("running"))


class Cli:
    """``lyra ...`` in a subprocess on the soak's config, counted like a request."""

    def __init__(self, config: Path, env: dict[str, str], tally: Tally) -> None:
        self.config, self.env, self.tally = config, env, tally

    def run(self, *args: str, timeout: float = 300.0,
            refused_ok: bool = False) -> subprocess.CompletedProcess[str] | None:
        """The finished command, or None (and the failure counted); ``refused_ok``: one that refused because an
        import is running is returned as it is (exit code not 0), counted apart (the caller tries again)."""
        route = f"cli lyra {args[0]}"
        try:
            proc = subprocess.run([sys.executable, "-m", "lyra_local", "--config", str(self.config), *args],
                                  env=self.env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            self.tally.error(f"{route}: timed out after {timeout:.0f}s", str(exc.stderr or ""))
            return None
        if proc.returncode != 0 and refused_ok and any(t in proc.stderr for t in IMPORT_RUNNING):
            self.tally.retry(f"{route} (refused while an import ran)")
            return proc
        if proc.returncode != 0:
            self.tally.error(f"{route}: exit {proc.returncode}", proc.stderr[-600:] + proc.stdout[-600:])
            return None
        if is_lock_text(proc.stderr):  # a lock reported but survived is still a lock error
            self.tally.error(f"{route}: lock message on stderr", proc.stderr[-600:])
        self.tally.ok(route)
        return proc
