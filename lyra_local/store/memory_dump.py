"""The derived memory dumped to plain data and written back (``memory.json`` of an export).

Rows refer to sessions by their uid and to a gist's coverage by a count of
turns, never by database ids, so a dump means the same in another data
directory. What a restore writes depends on ``ANY`` or on its sessions' turns
(``provenance.backfill``), so forgetting reaches it too.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import provenance
from .blobs import put_vector

if TYPE_CHECKING:
    from .store import Store

Vectors = npt.NDArray[np.float32]


def dump(store: Store) -> dict[str, Any]:
    """Every current derived memory, referring to sessions by uid (see ``transfer/memory_file.py``)."""
    conn = store.conn()
    gists = []
    for g in conn.execute("SELECT g.*, s.uid FROM gists g JOIN sessions s ON s.id = g.session_id "
                          "WHERE g.stale = 0 ORDER BY s.uid"):
        covered = conn.execute("SELECT count(*) FROM exchanges WHERE session_id = ? AND id <= ?",
                               (g["session_id"], g["covers_upto"])).fetchone()[0]
        gists.append({"session": g["uid"], "content": g["content"], "covers_turns": covered,
                      "created_at": g["created_at"], "updated_at": g["updated_at"]})
    facts = conn.execute("SELECT f.*, s.uid FROM profile_facts f LEFT JOIN sessions s ON s.id = f.source_session_id "
                         "WHERE f.stale = 0 ORDER BY f.id").fetchall()
    position = {f["id"]: i for i, f in enumerate(facts)}
    profile = [{"key": f["key"], "value": f["value"], "author": f["author"], "session": f["uid"],
                "created_at": f["created_at"], "observed_at": f["observed_at"], "superseded_at": f["superseded_at"],
                "superseded_by": position.get(f["superseded_by"])} for f in facts]
    digests = [{k: d[k] for k in ("granularity", "period", "content", "source_count", "basis", "created_at",
                                  "updated_at")}
               for d in conn.execute("SELECT * FROM digests WHERE stale = 0 ORDER BY granularity, period")]
    narrative = conn.execute("SELECT content, created_at, basis FROM narrative WHERE stale = 0 "
                             "ORDER BY id DESC LIMIT 1").fetchone()
    state = conn.execute("SELECT state, created_at FROM self_state ORDER BY id DESC LIMIT 1").fetchone()
    world = [dict(w) for w in conn.execute("SELECT content, author, reason, status, created_at, decided_at, "
                                           "decided_by FROM world_state ORDER BY id")]
    return {"gists": gists, "profile": profile, "digests": digests,
            "narrative": dict(narrative) if narrative else None,
            "self_state": {"state": json.loads(state["state"]), "created_at": state["created_at"]} if state else None,
            "world": world}



def has_derived(store: Store) -> bool:
    conn = store.conn()
    return any(conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()
               for t in ("gists", "profile_facts", "digests", "narrative", "self_state", "world_state"))


def restorable_gists(store: Store, data: dict[str, Any]) -> list[dict[str, Any]]:
    """The dumped gists whose session is in this store."""
    sessions = {r[0] for r in store.conn().execute("SELECT uid FROM sessions")}
    return [g for g in data["gists"] if g["session"] in sessions]


def restore(store: Store, data: dict[str, Any], gist_vectors: Vectors, digest_vectors: Vectors,
            model: str) -> dict[str, int]:
    """Write a dump (``restorable_gists`` and every digest with their vectors, in order) in one transaction."""
    conn = store.conn()
    sessions = {r[0]: r[1] for r in conn.execute("SELECT uid, id FROM sessions")}
    gists = restorable_gists(store, data)
    with store.write() as w:
        for g, vector in zip(gists, gist_vectors, strict=True):
            sid = sessions[g["session"]]
            upto = w.execute("SELECT coalesce(max(id), 0) FROM (SELECT id FROM exchanges WHERE session_id = ? "
                             "ORDER BY id LIMIT ?)", (sid, g["covers_turns"])).fetchone()[0]
            row = w.execute("INSERT INTO gists (session_id, content, covers_upto, created_at, updated_at, "
                            "profiled_upto) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                            (sid, g["content"], upto, g["created_at"], g["updated_at"], upto)).fetchone()
            put_vector(w, "gist", model, row[0], vector)
        ids: list[int] = []
        for f in data["profile"]:
            row = w.execute("INSERT INTO profile_facts (key, value, source_session_id, author, created_at, "
                            "observed_at, superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                            (f["key"], f["value"], sessions.get(f["session"]), f["author"], f["created_at"],
                             f["observed_at"], f["superseded_at"])).fetchone()
            ids.append(row[0])
        for f, fact_id in zip(data["profile"], ids, strict=True):
            if f["superseded_by"] is not None:
                w.execute("UPDATE profile_facts SET superseded_by = ? WHERE id = ?", (ids[f["superseded_by"]], fact_id))
        for d, vector in zip(data["digests"], digest_vectors, strict=True):
            row = w.execute("INSERT INTO digests (granularity, period, content, source_count, basis, created_at, "
                            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                            (d["granularity"], d["period"], d["content"], d["source_count"], d["basis"],
                             d["created_at"], d["updated_at"])).fetchone()
            put_vector(w, "digest", model, row[0], vector)
        if data["narrative"]:
            n = data["narrative"]
            w.execute("INSERT INTO narrative (content, created_at, basis) VALUES (?, ?, ?)",
                      (n["content"], n["created_at"], n["basis"]))
        if data["self_state"]:
            w.execute("INSERT INTO self_state (state, created_at) VALUES (?, ?)",
                      (json.dumps(data["self_state"]["state"]), data["self_state"]["created_at"]))
        for v in data["world"]:
            w.execute("INSERT INTO world_state (content, author, reason, status, created_at, decided_at, decided_by) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)", (v["content"], v["author"], v["reason"], v["status"],
                                                       v["created_at"], v.get("decided_at"), v.get("decided_by")))
        provenance.backfill(w)  # so forgetting reaches what was restored too
    return {"gists": len(gists), "facts": len(ids), "digests": len(data["digests"]), "world": len(data["world"])}
