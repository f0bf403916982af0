"""Personal API tokens (``api_tokens``): each acts as one person; only a hash of it is kept."""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from ...errors import NotFound
from .. import db
from .records import MAX_NAME, ApiToken, Person, digest, person_of_row

if TYPE_CHECKING:
    from .people import Household

TOKEN_PREFIX = "lyra_"
LAST_USED_EVERY = timedelta(minutes=1)  # a token used in a loop writes its "last used" once a minute, not per call


class Tokens:
    def __init__(self, household: Household) -> None:
        self._household = household

    def create(self, person_id: str, name: str) -> tuple[ApiToken, str]:
        """A personal API token acting as ``person_id``; the raw token is returned once and never stored."""
        name = " ".join(name.split())[:MAX_NAME] or "token"
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self._household.person(person_id)
        with self._household.write() as conn:
            cur = conn.execute("INSERT INTO api_tokens (person_id, name, hash, created_at) VALUES (?, ?, ?, ?)",
                               (person_id, name, digest(raw), db.utc_now()))
            token_id = cur.lastrowid
        return next(t for t in self.of(person_id) if t.id == token_id), raw

    def of(self, person_id: str) -> list[ApiToken]:
        """The person's tokens, oldest first (never the tokens themselves)."""
        rows = self._household.conn().execute("SELECT id, person_id, name, created_at, last_used_at FROM api_tokens "
                                              "WHERE person_id = ? ORDER BY id", (person_id,)).fetchall()
        return [ApiToken(r["id"], r["person_id"], r["name"], r["created_at"], r["last_used_at"]) for r in rows]

    def revoke(self, person_id: str, token_id: int) -> None:
        """Revoke one of the person's own tokens (another person's reads as not found)."""
        with self._household.write() as conn:
            gone = conn.execute("DELETE FROM api_tokens WHERE id = ? AND person_id = ?",
                                (token_id, person_id)).rowcount
        if not gone:
            raise NotFound("no such token")

    def person_of(self, raw: str) -> Person | None:
        """The person a token acts as, or None for an unknown or revoked one."""
        if not raw.startswith(TOKEN_PREFIX):
            return None
        hashed = digest(raw)
        row = self._household.conn().execute(
            "SELECT p.*, t.last_used_at FROM api_tokens t JOIN people p ON p.id = t.person_id "
            "WHERE t.hash = ? AND p.removing = 0", (hashed,)).fetchone()
        if row is None:
            return None
        now = datetime.now(timezone.utc)
        if row["last_used_at"] is None or db.from_iso(row["last_used_at"]) < now - LAST_USED_EVERY:
            with contextlib.suppress(sqlite3.OperationalError):  # a busy or full disk must not refuse the token
                with self._household.write() as conn:
                    conn.execute("UPDATE api_tokens SET last_used_at = ? WHERE hash = ?", (db.to_iso(now), hashed))
        return person_of_row(row)
