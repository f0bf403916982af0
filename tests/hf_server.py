"""A local stand-in for Hugging Face's resolve API, with faults on demand, for the pull tests (CLI and web).

It answers ``HEAD`` and ``GET /{owner}/{repo}/resolve/{revision}/{path}`` the way
huggingface.co answers for an LFS file: ``X-Repo-Commit``, ``ETag`` and
``X-Linked-Etag`` (the file's sha256), ``X-Linked-Size``, ``Content-Length``,
``Accept-Ranges`` and a ``206`` for ``Range: bytes=N-``; an unknown repository,
revision or file gets Hugging Face's 404 with its ``X-Error-Code``. With
``redirect=True`` the resolve address answers 302 to a blob address (as the Hub
sends a file to its CDN), carrying the metadata on the 302 like the Hub does; the
blob address names ``localhost`` (this same server), another host than the
resolve address's ``127.0.0.1``, so huggingface_hub treats it as the Hub's CDN.

Faults (``HFServer.faults``, changed between requests by a test):
- ``stop_after``: the next GET sends this many bytes of its body, then closes the connection (once);
- ``hold_after``: the next GET sends this many bytes, then waits (``held`` is set) until ``release`` or ``stop``;
- ``flip_at``: the byte at this file offset is served flipped (every GET, until cleared);
- ``html_get``: GET answers 200 with an HTML error page (HEAD stays right: a CDN's error page);
- ``portal``: HEAD and GET answer 200 with an HTML login page, no Hub headers at all (a captive portal);
- ``claim_size``: the size the Hub headers claim, instead of the file's (a file bigger than any disk).

Every request is kept in ``requests`` (method, path, Range header), so a test can assert that a pull resumed.
The server binds 127.0.0.1 on a free port, in a thread; nothing here reaches another machine.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<path>.+)$")
_BLOB = re.compile(r"^/_blobs/(?P<sha>[0-9a-f]{64})$")
_RANGE = re.compile(r"^bytes=(?P<start>\d+)-$")
_CHUNK = 1 << 20
HTML_PAGE = (b"<!DOCTYPE html><html><head><title>Sign in to the network</title></head>"
             b"<body><h1>Welcome</h1><p>Accept the terms to continue.</p></body></html>")


@dataclass
class Faults:
    stop_after: int | None = None
    hold_after: int | None = None
    flip_at: int | None = None
    html_get: bool = False
    portal: bool = False
    claim_size: int | None = None


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    range: str | None


@dataclass
class Served:
    """One file of one fake repository."""

    repo: str
    path: str
    source: Path
    sha256: str
    size: int


@dataclass
class HFServer:
    """Start with ``with HFServer() as hf:``; ``hf.add(repo, path, file)``; point ``HF_ENDPOINT`` at ``hf.url``."""

    redirect: bool = False
    faults: Faults = field(default_factory=Faults)
    requests: list[Seen] = field(default_factory=list)
    held: threading.Event = field(default_factory=threading.Event)
    _release: threading.Event = field(default_factory=threading.Event)
    _files: dict[tuple[str, str], Served] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None

    def add(self, repo: str, path: str, source: Path) -> Served:
        data_hash = hashlib.sha256()
        with source.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                data_hash.update(block)
        served = Served(repo, path, source, data_hash.hexdigest(), source.stat().st_size)
        self._files[(repo, path)] = served
        return served

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def ranges(self) -> list[str]:
        """The Range headers of the GETs seen, in order (a resumed pull sends ``bytes=N-``)."""
        return [seen.range for seen in self.requests if seen.method == "GET" and seen.range]

    def gets(self) -> list[Seen]:
        return [seen for seen in self.requests if seen.method == "GET"]

    def hold(self, after: int) -> None:
        """The next GET sends ``after`` bytes, then waits until ``release`` (``held`` is set meanwhile)."""
        self.held.clear()
        self._release.clear()
        self.faults.hold_after = after

    def release(self) -> None:
        self._release.set()

    def start(self) -> HFServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="hf-server", daemon=True).start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> HFServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def lookup(self, repo: str, revision: str, path: str) -> Served | str:
        """The file, or Hugging Face's error code for why not."""
        if not any(r == repo for r, _ in self._files):
            return "RepoNotFound"
        if revision not in ("main", COMMIT):
            return "RevisionNotFound"
        return self._files.get((repo, path)) or "EntryNotFound"

    def blob(self, sha: str) -> Served | None:
        return next((f for f in self._files.values() if f.sha256 == sha), None)


def _handler(hub: HFServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads ``requests``
            pass

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, *, body: bool) -> None:
            hub.requests.append(Seen(self.command, self.path, self.headers.get("Range")))
            faults = hub.faults
            if faults.portal or (body and faults.html_get):
                self._html(body)
                return
            blob = _BLOB.match(self.path)
            if blob:
                served = hub.blob(blob["sha"])
                if served is None:
                    self._error(404, "EntryNotFound")
                    return
                self._file(served, body, hub_headers=False)
                return
            match = _RESOLVE.match(self.path)
            found = hub.lookup(match["repo"], match["revision"], match["path"]) if match else "RepoNotFound"
            if isinstance(found, str):
                self._error(404, found)
                return
            if hub.redirect:
                self.send_response(302)
                self._hub_headers(found)
                port = self.server.server_address[1]
                self.send_header("Location", f"http://localhost:{port}/_blobs/{found.sha256}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._file(found, body, hub_headers=True)

        def _hub_headers(self, served: Served) -> None:
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{served.sha256}"')
            self.send_header("X-Linked-Etag", f'"{served.sha256}"')
            claimed = hub.faults.claim_size
            self.send_header("X-Linked-Size", str(served.size if claimed is None else claimed))

        def _file(self, served: Served, body: bool, *, hub_headers: bool) -> None:
            start = 0
            asked = self.headers.get("Range")
            if asked:
                ranged = _RANGE.match(asked)
                if ranged is None or int(ranged["start"]) >= served.size:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{served.size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = int(ranged["start"])
            self.send_response(206 if asked else 200)
            if hub_headers:
                self._hub_headers(served)
            else:
                self.send_header("ETag", f'"{served.sha256}"')
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(served.size - start))
            if asked:
                self.send_header("Content-Range", f"bytes {start}-{served.size - 1}/{served.size}")
            self.end_headers()
            if body:
                self._send_body(served, start)

        def _send_body(self, served: Served, start: int) -> None:
            faults = hub.faults
            stop, hold = faults.stop_after, faults.hold_after
            faults.stop_after = faults.hold_after = None  # each fault strikes one GET
            cut = stop if stop is not None else hold
            sent = 0
            with served.source.open("rb") as fh:
                fh.seek(start)
                at = start
                while True:
                    block = fh.read(_CHUNK if cut is None else min(_CHUNK, cut - sent))
                    if not block:
                        break
                    flip = faults.flip_at
                    if flip is not None and at <= flip < at + len(block):
                        block = block[:flip - at] + bytes([block[flip - at] ^ 0xFF]) + block[flip - at + 1:]
                    try:
                        self.wfile.write(block)
                    except (BrokenPipeError, ConnectionResetError):
                        return
                    sent += len(block)
                    at += len(block)
                    if cut is not None and sent >= cut:
                        break
            if cut is not None:
                self.wfile.flush()
                if hold is not None:
                    hub.held.set()
                    hub._release.wait()
                self.close_connection = True

        def _html(self, body: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(HTML_PAGE)))
            self.end_headers()
            if body:
                self.wfile.write(HTML_PAGE)

        def _error(self, status: int, code: str) -> None:
            text = f'{{"error": "{code}"}}'.encode()
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Error-Message", code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(text)

    return Handler
