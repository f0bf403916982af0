"""Where the soak's markers can still be found (see soak.py): every byte of every file, every SQLite row
and full-text term, every FAISS snapshot, every API response.

A ``Sightings`` maps each place to the markers seen there, forgotten or not:
seeing the kept ones is how a "0 forgotten found" is shown to mean something.
The search is case-insensitive and also looks for a marker's last thirteen
letters, because FTS5 stores a term after the prefix it shares with the term
before it (the final database scan reads the full-text terms exactly).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sqlite3
import tempfile
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from soak_client import Api

MARKER = re.compile(rb"zq(?:[bdfgkmptvz][aou]){7}k")
RUN = re.compile(rb"[a-z]{9,}")
TAIL = 13


class Sightings:
    """place -> markers seen there; ``tails`` maps a marker's last characters back to it."""

    def __init__(self, markers: list[str]) -> None:
        self.places: dict[str, set[str]] = defaultdict(set)
        self.tails = {m[-TAIL:].encode(): m for m in markers}

    def bytes(self, place: str, data: bytes, where: Callable[[int], str] | None = None) -> None:
        """Markers in ``data``; ``where(offset)`` names the part of the file (a SQLite page's table)."""
        low = data.lower()
        for match in MARKER.finditer(low):
            self.places[_at(place, where, match.start())].add(match.group().decode())
        stripped = MARKER.sub(lambda m: b" " * len(m.group()), low)  # a whole marker is not another's tail
        for run in RUN.finditer(stripped):
            text = run.group()
            for end in range(TAIL, len(text) + 1):
                marker = self.tails.get(text[end - TAIL:end])
                if marker is not None:
                    self.places[_at(f"{place} (last {TAIL} letters only)", where, run.start())].add(marker)

    def text(self, place: str, text: str) -> None:
        self.bytes(place, text.encode("utf-8", "replace"))

    def add(self, place: str, markers: set[str]) -> None:
        self.places[place] |= markers

    def archive(self, place: str, data: bytes, where: Callable[[int], str] | None = None) -> None:
        """The bytes, and each member of a zip inflated."""
        self.bytes(place, data, where)
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for name in archive.namelist():
                    self.bytes(f"{place}: {name}", archive.read(name))
        except zipfile.BadZipFile:
            pass

    def found(self, markers: set[str]) -> dict[str, set[str]]:
        """Places holding any of ``markers``, with which."""
        return {place: seen & markers for place, seen in sorted(self.places.items()) if seen & markers}


def _at(place: str, where: Callable[[int], str] | None, offset: int) -> str:
    return f"{place} [{where(offset)}]" if where else place


def page_owners(path: Path, data: bytes) -> Callable[[int], str] | None:
    """For a SQLite file or its WAL (``data``, as read): offset -> what its page holds now, by ``dbstat``:
    a table or index, or a page no b-tree uses (free), so a hit says whether a live row could hold it."""
    wal = path.name.endswith("-wal")
    try:
        conn = sqlite3.connect(f"file:{path.with_name(path.name.removesuffix('-wal'))}?mode=ro", uri=True)
        try:
            size = int(conn.execute("PRAGMA page_size").fetchone()[0])
            owners = {p: f"{name} {kind}" for name, p, kind in conn.execute("SELECT name, pageno, pagetype FROM dbstat")}
        finally:
            conn.close()
    except sqlite3.Error:
        return None

    def where(offset: int) -> str:
        if not wal:
            return owners.get(offset // size + 1, "a page no table uses")
        header = 32 + max(0, (offset - 32) // (24 + size)) * (24 + size)  # 32-byte header, frames of 24 + page
        page = int.from_bytes(data[header:header + 4], "big")
        return f"WAL copy of {owners.get(page, 'a page no table uses')}"

    return where


def scan_tree(root: Path, sightings: Sightings, label: str) -> int:
    """Every file under ``root``, byte for byte (zips inflated too); returns the number of files read."""
    count = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            try:
                data = path.read_bytes()
            except (FileNotFoundError, IsADirectoryError, PermissionError):
                continue  # gone between listing and reading (a WAL checkpointed, a temp file renamed)
            count += 1
            where = page_owners(path, data) if name.endswith((".db", ".db-wal")) else None
            sightings.archive(f"{label}/{path.relative_to(root)}", data, where)
    return count


def scan_database(db: Path, sightings: Sightings, label: str) -> list[str]:
    """Every row of every table (by table and column) and every FTS5 term, on a copy; returns problems."""
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="soak-db-") as tmp:
        copy = Path(tmp) / "copy.db"
        for suffix in ("", "-wal"):
            if Path(f"{db}{suffix}").exists():
                shutil.copyfile(f"{db}{suffix}", f"{copy}{suffix}")
        conn = sqlite3.connect(copy)
        try:
            tables = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
            for table, sql in tables:
                if (sql or "").upper().startswith("CREATE VIRTUAL TABLE"):
                    if "USING FTS5" in sql.upper():
                        _fts_terms(conn, table, sightings, label)
                    continue
                cursor = conn.execute(f'SELECT * FROM "{table}"')
                columns = [d[0] for d in cursor.description]
                for row in cursor:
                    for column, value in zip(columns, row):
                        if isinstance(value, (str, bytes)):
                            sightings.bytes(f"{label} {table}.{column}",
                                            value if isinstance(value, bytes) else value.encode())
        except sqlite3.Error as exc:
            problems.append(f"{label}: {exc}")
        finally:
            conn.close()
    return problems


def _fts_terms(conn: sqlite3.Connection, table: str, sightings: Sightings, label: str) -> None:
    conn.execute(f'CREATE VIRTUAL TABLE IF NOT EXISTS temp."vocab_{table}" USING fts5vocab(main, "{table}", row)')
    terms = {t for (t,) in conn.execute(f'SELECT term FROM temp."vocab_{table}" WHERE term GLOB \'zq*\'')}
    sightings.add(f"{label} {table} (full-text terms)", terms)


def orphan_vectors(data_dir: Path, turn_ids: dict[int, str]) -> dict[str, set[str]]:
    """Vectors of forgotten turns still stored: in the ``embeddings`` table, or in a FAISS snapshot under
    ``index/`` while no turn of that id exists (or one that no longer holds the marker: an id reused)."""
    import faiss  # noqa: PLC0415 - only this check needs it
    import numpy as np  # noqa: PLC0415

    out: dict[str, set[str]] = defaultdict(set)
    if not turn_ids:
        return out
    conn = sqlite3.connect(f"file:{data_dir / 'lyra.db'}?mode=ro", uri=True)
    try:
        present = {i: (c or "").lower() for i, c in conn.execute(
            f"SELECT id, content FROM exchanges WHERE id IN ({','.join(map(str, turn_ids))})")}
        for (item,) in conn.execute(f"SELECT item_id FROM embeddings WHERE tier = 'exchange' AND item_id IN "
                                    f"({','.join(map(str, turn_ids))})"):
            if turn_ids[item] not in present.get(item, ""):
                out["lyra.db embeddings (vector of a forgotten turn)"].add(turn_ids[item])
    finally:
        conn.close()
    for path in sorted((data_dir / "index").glob("exchange--*.faiss")):
        try:
            ids = faiss.vector_to_array(faiss.read_index(str(path)).id_map)
        except Exception as exc:  # noqa: BLE001 - a snapshot FAISS cannot read is reported, not fatal
            out[f"index/{path.name} unreadable: {exc}"] = set()
            continue
        for item in np.intersect1d(ids, np.fromiter(turn_ids, dtype=np.int64)):
            if turn_ids[int(item)] not in present.get(int(item), ""):
                out[f"index/{path.name} (vector of a forgotten turn)"].add(turn_ids[int(item)])
    return out


def scan_api(api: Api, sightings: Sightings, forgotten: list[str]) -> tuple[dict[str, int], list[str]]:
    """Every listing the API has, and recall of each forgotten marker (hits only: the query echoes it);
    returns the dream log's events counted by kind, and the texts of its ``error`` events."""
    def get(place: str, path: str, route: str | None = None, **kw: Any) -> Any:
        r = api.call("GET", path, route, ok=kw.pop("ok", (200,)), **kw)
        if r is None or r.status_code != 200:
            return None
        sightings.archive(place, r.content)
        return r.json() if r.headers.get("content-type", "").startswith("application/json") else r.text

    for marker in forgotten:
        for tier in ("exchange", "gist", "digest"):
            r = api.call("GET", "/api/recall", params={"q": marker, "tier": tier, "k": 20})
            if r is not None:
                sightings.text(f"GET /api/recall?tier={tier} (hits)", json.dumps(r.json()["hits"]))
    sessions: list[dict[str, Any]] = []
    while True:  # in pages, as the web UI lists them
        page = (get("GET /api/sessions", "/api/sessions", params={"limit": 100, "offset": len(sessions)})
                or {}).get("sessions", [])
        sessions += page
        if len(page) < 100:
            break
    for s in sessions:
        messages = get("GET /api/sessions/{id}/messages", f"/api/sessions/{s['id']}/messages",
                       "GET /api/sessions/{id}/messages") or {}
        get("GET /api/sessions/{id}/gist", f"/api/sessions/{s['id']}/gist", "GET /api/sessions/{id}/gist")
        for m in messages.get("messages", []):
            if m["role"] == "assistant":  # imported replies have no trace: 404 is their answer
                get("GET /api/exchanges/{id}/trace", f"/api/exchanges/{m['id']}/trace",
                    "GET /api/exchanges/{id}/trace", ok=(200, 404))
    facts = (get("GET /api/profile", "/api/profile") or {}).get("facts", [])
    for key in {f["key"] for f in facts}:
        get("GET /api/profile/history", "/api/profile/history", params={"key": key})
    for path in ("/api/digests", "/api/narrative", "/api/self", "/api/dream", "/api/sitrep", "/api/world",
                 "/api/world/history", "/api/world/proposals", "/api/instances", "/api/locks", "/api/settings"):
        get(f"GET {path}", path)
    get("GET /api/sitrep?format=text", "/api/sitrep", params={"format": "text"})
    after, kinds, errors = 0, Counter[str](), []
    while True:
        page = get("GET /api/dream/events?follow=false", "/api/dream/events",
                   params={"after": after, "follow": "false", "limit": 1000}) or {}
        events = page.get("events", [])
        if not events:
            break
        after = events[-1]["id"]
        kinds.update(e["kind"] for e in events)
        errors += [f"{e['target']}: {(e.get('detail') or {}).get('error', '?')}" for e in events if e["kind"] == "error"]
    get("GET /api/export (zip)", "/api/export")
    get("GET /api/backup", "/api/backup")
    return dict(kinds), errors


def kept_recalled(api: Api, kept: list[str]) -> tuple[int, int, list[str]]:
    """How many kept markers recall finds: by default (hybrid), by full text alone, and which neither finds."""
    hybrid = bm25 = 0
    missing = []
    for marker in kept:
        found = False
        for mode in ("hybrid", "bm25"):
            r = api.call("GET", "/api/recall", params={"q": marker, "mode": mode, "k": 10})
            if r is not None and marker in json.dumps(r.json()["hits"]).lower():
                hybrid += mode == "hybrid"
                bm25 += mode == "bm25"
                found = True
        if not found:
            missing.append(marker)
    return hybrid, bm25, missing
