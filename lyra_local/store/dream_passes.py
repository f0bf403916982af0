"""The record of dream passes: what was sensed, the drives before and after, what was done.

The chat context shows the drives the last finished pass left (sensing the
backlog again for every reply would cost the reply); the API and the web UI
compute them from the backlog now (``web/routes/dream.py``, ``sensed``).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from .db import to_iso, utc_now

if TYPE_CHECKING:
    from .store import Store

JSON_COLUMNS = ("backlog_before", "drives_before", "backlog_after", "drives_after", "actions")


class DreamLog:
    def __init__(self, store: Store) -> None:
        self.store = store

    def start(self, instance_id: str, *, forced: bool, backlog: dict[str, Any], drives: dict[str, float]) -> int:
        with self.store.write() as conn:
            row = conn.execute("INSERT INTO dream_passes (instance_id, started_at, forced, backlog_before, "
                               "drives_before) VALUES (?, ?, ?, ?, ?) RETURNING id",
                               (instance_id, utc_now(), int(forced), json.dumps(backlog), json.dumps(drives))
                               ).fetchone()
        return int(row[0])

    def finish(self, pass_id: int, *, status: str, backlog: dict[str, Any] | None, drives: dict[str, float] | None,
               actions: list[dict[str, Any]], error: str | None = None) -> None:
        with self.store.write() as conn:
            conn.execute("UPDATE dream_passes SET finished_at = ?, status = ?, backlog_after = ?, drives_after = ?, "
                         "actions = ?, error = ? WHERE id = ?",
                         (utc_now(), status, None if backlog is None else json.dumps(backlog),
                          None if drives is None else json.dumps(drives), json.dumps(actions), error, pass_id))

    def last(self, *, finished: bool = True) -> dict[str, Any] | None:
        sql = "SELECT * FROM dream_passes" + (" WHERE finished_at IS NOT NULL" if finished else "")
        row = self.store.conn().execute(sql + " ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            return None
        out = dict(row)
        for column in JSON_COLUMNS:
            out[column] = json.loads(out[column]) if out[column] else None
        return out

    def drives(self) -> dict[str, float] | None:
        """The drives as the last finished pass left them."""
        last = self.last()
        if last is None:
            return None
        drives: dict[str, float] | None = last["drives_after"] or last["drives_before"]
        return drives

    def running(self, alive_s: float = 600.0) -> list[dict[str, Any]]:
        """Passes in progress whose process still heartbeats (a crashed one's pass is not shown)."""
        since = to_iso(datetime.now(timezone.utc) - timedelta(seconds=alive_s))
        rows = self.store.conn().execute(
            "SELECT p.id, p.instance_id, p.started_at FROM dream_passes p JOIN instances i ON i.id = p.instance_id "
            "WHERE p.status = 'running' AND i.heartbeat_at > ? ORDER BY p.id", (since,))
        return [dict(r) for r in rows]
