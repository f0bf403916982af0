"""The derived memory dumped to plain data and written back (``memory.json`` of an export).

What goes out is the registry's (``store/kinds.py``): each kind exported to
``memory.json`` writes its ``columns`` as they are, and each ``portable``
column through a translator here, so the dump means the same in another data
directory (a session by its uid, a gist's coverage by a count of turns, a
fact's successor by its place in the list). A column the registry adds is
written, or the registry test fails; a portable column without a translator
here fails ``tests/test_export_roundtrip.py``. What a restore writes depends
on ``ANY`` or on its sessions' turns (``provenance.backfill``), so forgetting
reaches it too.

A deletion the person made (``dismissed``) goes out too, so it sticks in the
new home. A deleted digest's or arc's basis is a hash of this directory's
ids: it is not written, and the new home adopts the basis it computes the
first time the dream looks (``ADOPT``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import provenance
from .blobs import put_vector
from .derived import rejection_parts, rejection_target
from .kinds import KINDS, MEMORY_FILE, Kind

if TYPE_CHECKING:
    from .store import Store

Vectors = npt.NDArray[np.float32]
ADOPT = "adopt"  # a dismissed digest's or arc's basis, imported: whatever the dream computes first
DUMPED = tuple(k for k in KINDS.values() if k.export is not None and k.export.file == MEMORY_FILE)
_ORDER = {"gist": "s.uid", "fact": "t.id", "digest": "t.granularity, t.period", "narrative": "t.id DESC",
          "self_state": "t.id DESC", "world": "t.id", "dismissed": "t.kind, t.target"}


class _Here:
    """What portable values mean in one store: sessions by uid and turn counts, both ways."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        rows = conn.execute(f"SELECT id, uid FROM sessions t WHERE {KINDS['session'].where_current()}").fetchall()
        self.uid = {int(r[0]): str(r[1]) for r in rows}
        self.sid = {uid: sid for sid, uid in self.uid.items()}

    def turns_upto(self, session_id: int, turn_id: int) -> int:
        return int(self.conn.execute("SELECT count(*) FROM exchanges WHERE session_id = ? AND id <= ?",
                                     (session_id, turn_id)).fetchone()[0])

    def turn_at(self, session_id: int, count: int) -> int:
        return int(self.conn.execute("SELECT coalesce(max(id), 0) FROM (SELECT id FROM exchanges WHERE session_id = ? "
                                     "ORDER BY id LIMIT ?)", (session_id, count)).fetchone()[0])


# Deletions that name a session (a gist's: "<session>"; a fact's: "<key>:<session>"), carried by its uid
BY_SESSION = ("gist", "fact")


# (kind, column) -> the portable value of a row; None drops the row (its session is not in the dump)
Out = Callable[[_Here, sqlite3.Row, Mapping[int, int]], Any]  # (here, the row, each row's place by id)
_OUT: dict[tuple[str, str], Out] = {
    ("gist", "session_id"): lambda here, r, _: here.uid.get(r["session_id"]),
    ("gist", "covers_upto"): lambda here, r, _: here.turns_upto(r["session_id"], r["covers_upto"]),
    ("fact", "source_session_id"): lambda here, r, _: here.uid.get(r["source_session_id"]),
    ("fact", "superseded_by"): lambda here, r, place: place.get(r["superseded_by"]),
    ("dismissed", "target"): lambda here, r, _: _target_out(here, r["kind"], r["target"]),
    ("dismissed", "basis"): lambda here, r, _: (here.turns_upto(_session_of(r["kind"], r["target"]),
                                                                int(r["basis"] or 0))
                                                if r["kind"] in BY_SESSION else None),
}


def _session_of(kind: str, target: str) -> int:
    return int(rejection_parts(target)[1] if kind == "fact" else target)


def _target_out(here: _Here, kind: str, target: str) -> str | None:
    if kind not in BY_SESSION:
        return target
    uid = here.uid.get(_session_of(kind, target))
    return None if uid is None else (rejection_target(rejection_parts(target)[0], uid) if kind == "fact" else uid)

PORTABLE_OUT = frozenset(_OUT)
_REQUIRED = {"gist": "session", "dismissed": "target"}  # without it the row means nothing elsewhere: left out


def dump(store: Store) -> dict[str, Any]:
    """Every current derived memory and every standing deletion, as the registry says they go out."""
    conn = store.conn()
    here = _Here(conn)
    out: dict[str, Any] = {}
    for kind in DUMPED:
        rows = _rows(conn, kind)
        place = {int(r[kind.key]): i for i, r in enumerate(rows)} if kind.key == "id" else {}
        items = [item for item in (_item(kind, row, place, here) for row in rows) if item is not None]
        spec = kind.export
        assert spec is not None
        out[spec.section] = (items[0] if items else None) if spec.rows == "latest" else items
    return out


def _rows(conn: sqlite3.Connection, kind: Kind) -> list[sqlite3.Row]:
    join = "JOIN sessions s ON s.id = t.session_id" if kind.session_column else ""
    # a deletion whose memory was written again since (new sources) no longer stands: it is not carried
    live = (f" AND NOT EXISTS (SELECT 1 FROM gists g WHERE t.kind = 'gist' AND {KINDS['gist'].where_current('g')} "
            "AND CAST(g.session_id AS TEXT) = t.target) AND NOT EXISTS (SELECT 1 FROM digests d WHERE "
            f"t.kind = 'digest' AND {KINDS['digest'].where_current('d')} AND d.granularity || ':' || d.period = "
            f"t.target) AND NOT EXISTS (SELECT 1 FROM narrative n WHERE t.kind = 'narrative' AND "
            f"{KINDS['narrative'].where_current('n')})") if kind.name == "dismissed" else ""
    limit = " LIMIT 1" if kind.export is not None and kind.export.rows == "latest" else ""
    return conn.execute(f"SELECT t.* FROM {kind.table} t {join} WHERE {kind.where_current()}{live} "
                        f"ORDER BY {_ORDER[kind.name]}{limit}").fetchall()


def _item(kind: Kind, row: sqlite3.Row, place: Mapping[int, int], here: _Here) -> dict[str, Any] | None:
    spec = kind.export
    assert spec is not None
    item: dict[str, Any] = {column: row[column] for column in spec.columns}
    for column, key in spec.portable.items():
        item[key] = _OUT[(kind.name, column)](here, row, place)
    if kind.json_words:
        item[kind.text] = json.loads(item[kind.text])
    required = _REQUIRED.get(kind.name)
    return None if required and item[required] is None else item  # its conversation is not exported


def has_derived(store: Store) -> bool:
    """Whether any memory an export's ``memory.json`` carries is here already (a restore goes into none)."""
    conn = store.conn()
    return any(conn.execute(f"SELECT 1 FROM {k.table} LIMIT 1").fetchone() for k in DUMPED)


def restorable_gists(store: Store, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The dumped gists whose session is in this store."""
    sessions = {r[0] for r in store.conn().execute("SELECT uid FROM sessions")}
    return [g for g in data["gists"] if g["session"] in sessions]


def restore(store: Store, data: dict[str, Any], gist_vectors: Vectors, digest_vectors: Vectors,
            model: str) -> dict[str, int]:
    """Write a dump (``restorable_gists`` and every digest with their vectors, in order) in one transaction."""
    gists = restorable_gists(store, data)
    with store.write() as w:
        here = _Here(w)  # read in the write: a session forgotten meanwhile is not written to
        for g, vector in zip(gists, gist_vectors, strict=True):
            sid = here.sid.get(g["session"])
            if sid is None:
                continue  # forgotten while its vector was made
            upto = here.turn_at(sid, g["covers_turns"])
            row = w.execute("INSERT INTO gists (session_id, content, covers_upto, created_at, updated_at, "
                            "profiled_upto, method) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                            (sid, g["content"], upto, g["created_at"], g["updated_at"], upto,
                             g.get("method", "abstractive"))).fetchone()
            put_vector(w, "gist", model, row[0], vector)
        ids: list[int] = []
        for f in data["profile"]:
            row = w.execute("INSERT INTO profile_facts (key, value, source_session_id, author, created_at, "
                            "observed_at, superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                            (f["key"], f["value"], here.sid.get(f["session"] or ""), f["author"], f["created_at"],
                             f["observed_at"], f["superseded_at"])).fetchone()
            ids.append(row[0])
        for f, fact_id in zip(data["profile"], ids, strict=True):
            if f["superseded_by"] is not None:
                w.execute("UPDATE profile_facts SET superseded_by = ? WHERE id = ?", (ids[f["superseded_by"]], fact_id))
        for d, vector in zip(data["digests"], digest_vectors, strict=True):
            row = w.execute("INSERT INTO digests (granularity, period, content, source_count, basis, created_at, "
                            "updated_at, method) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                            (d["granularity"], d["period"], d["content"], d["source_count"], d["basis"],
                             d["created_at"], d["updated_at"], d.get("method", "abstractive"))).fetchone()
            put_vector(w, "digest", model, row[0], vector)
        if data["narrative"]:
            n = data["narrative"]
            w.execute("INSERT INTO narrative (content, created_at, basis, method) VALUES (?, ?, ?, ?)",
                      (n["content"], n["created_at"], n["basis"], n.get("method", "abstractive")))
        if data["self_state"]:
            w.execute("INSERT INTO self_state (state, created_at) VALUES (?, ?)",
                      (json.dumps(data["self_state"]["state"]), data["self_state"]["created_at"]))
        for v in data["world"]:
            w.execute("INSERT INTO world_state (content, author, reason, status, created_at, decided_at, decided_by) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)", (v["content"], v["author"], v["reason"], v["status"],
                                                       v["created_at"], v.get("decided_at"), v.get("decided_by")))
        dismissed = _restore_dismissed(w, here, data.get("dismissed") or [])
        provenance.backfill(w)  # so forgetting reaches what was restored too
    return {"gists": len(gists), "facts": len(ids), "digests": len(data["digests"]), "world": len(data["world"]),
            "deletions": dismissed}


def _restore_dismissed(conn: sqlite3.Connection, here: _Here, items: list[dict[str, Any]]) -> int:
    """The person's deletions, in this store's terms: a gist's by session id and the turn it covered up to; a
    digest's or the arc's with a basis to adopt."""
    written = 0
    for d in items:
        if d["kind"] in BY_SESSION:
            key, uid = rejection_parts(str(d["target"])) if d["kind"] == "fact" else ("", str(d["target"]))
            sid = here.sid.get(uid)
            if sid is None:
                continue
            target = rejection_target(key, sid) if key else str(sid)
            basis = str(here.turn_at(sid, int(d["basis"] or 0)))
        else:
            target, basis = str(d["target"]), ADOPT
        written += conn.execute("INSERT OR IGNORE INTO dismissed (kind, target, basis, dismissed_at) "
                                "VALUES (?, ?, ?, ?)", (d["kind"], target, basis, d["dismissed_at"])).rowcount
    return written
