"""How people prove who they are: their password's hash, login sessions, and the devices they logged in on.

Login sessions and device cookies are 256-bit random strings of which only a hash is stored (``records.digest``),
so a copy of ``household.db`` logs nobody in."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from .. import db
from .records import Person, digest, person_of_row

if TYPE_CHECKING:
    from .people import Household

SESSION_DAYS = 30
DEVICE_DAYS = 365  # how long a device a person logged in on stays known (its cookie's life, renewed per login)


class Logins:
    """Secrets and login sessions (``login_sessions``)."""

    def __init__(self, household: Household) -> None:
        self._household = household

    def set_secret(self, person_id: str, secret_hash: str) -> None:
        """A new password or PIN; every login session of the person ends (their tokens stay)."""
        self._household.person(person_id)
        with self._household.write() as conn:
            conn.execute("UPDATE people SET secret = ? WHERE id = ?", (secret_hash, person_id))
            conn.execute("DELETE FROM login_sessions WHERE person_id = ?", (person_id,))

    def secret_of(self, person_id: str) -> str | None:
        row = self._household.conn().execute("SELECT secret FROM people WHERE id = ? AND removing = 0",
                                             (person_id,)).fetchone()
        return None if row is None else row[0]

    def open(self, person_id: str, days: int = SESSION_DAYS) -> str:
        """A new login session; returns the raw id for the cookie (only its hash is kept)."""
        raw = secrets.token_urlsafe(32)
        now = datetime.now(timezone.utc)
        with self._household.write() as conn:
            conn.execute("DELETE FROM login_sessions WHERE expires_at < ?", (db.to_iso(now),))
            conn.execute("INSERT INTO login_sessions (id_hash, person_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
                         (digest(raw), person_id, db.to_iso(now), db.to_iso(now + timedelta(days=days))))
        return raw

    def person_of(self, raw: str) -> Person | None:
        """Who the login session ``raw`` belongs to, while it lasts and they are in the household."""
        row = self._household.conn().execute(
            "SELECT p.* FROM login_sessions s JOIN people p ON p.id = s.person_id "
            "WHERE s.id_hash = ? AND s.expires_at > ? AND p.removing = 0",
            (digest(raw), db.utc_now())).fetchone()
        return None if row is None else person_of_row(row)

    def end(self, raw: str) -> None:
        with self._household.write() as conn:
            conn.execute("DELETE FROM login_sessions WHERE id_hash = ?", (digest(raw),))

    def end_all(self, person_id: str) -> int:
        with self._household.write() as conn:
            return conn.execute("DELETE FROM login_sessions WHERE person_id = ?", (person_id,)).rowcount


class Devices:
    """The devices each person logged in on (OWASP's "device cookies", ``login_devices``): a right password from
    a known device is never refused because someone else mistyped theirs there."""

    def __init__(self, household: Household) -> None:
        self._household = household

    def known(self, raw: str | None, person_id: str | None) -> str | None:
        """The key its failed logins count under, if the device cookie ``raw`` was given to this browser at a
        login of ``person_id`` (and has not expired), else None; the same one query whatever is asked, so that
        an unknown name costs what a known one does."""
        hashed = digest(raw or "")
        row = self._household.conn().execute(
            "SELECT 1 FROM login_devices WHERE device_hash = ? AND person_id = ? AND expires_at > ?",
            (hashed, person_id or "", db.utc_now())).fetchone()
        return None if row is None else f"{hashed}:{person_id}"

    def remember(self, raw: str | None, person_id: str, days: int = DEVICE_DAYS) -> str:
        """Record that ``person_id`` logged in on this device: the browser's device cookie if it is one this
        household gave (so one browser stays one device for everyone who logs in on it), else a new one; returns
        the raw cookie (only its hash is kept)."""
        now = datetime.now(timezone.utc)
        with self._household.write() as conn:
            conn.execute("DELETE FROM login_devices WHERE expires_at < ?", (db.to_iso(now),))
            ours = raw is not None and conn.execute("SELECT 1 FROM login_devices WHERE device_hash = ?",
                                                    (digest(raw),)).fetchone() is not None
            device = raw if ours and raw is not None else secrets.token_urlsafe(32)
            conn.execute("INSERT INTO login_devices (device_hash, person_id, created_at, expires_at) "
                         "VALUES (?, ?, ?, ?) ON CONFLICT (device_hash, person_id) DO UPDATE SET "
                         "expires_at = excluded.expires_at",
                         (digest(device), person_id, db.to_iso(now), db.to_iso(now + timedelta(days=days))))
        return device


class Failures:
    """Recent failed logins (``login_failures``), counted per key for the rate limit (``web/logins.py`` chooses
    the keys: a name on a device, a device, a client address)."""

    def __init__(self, household: Household) -> None:
        self._household = household

    def since(self, key: str, since: datetime) -> list[str]:
        """When ``key`` failed to log in since ``since`` (oldest first)."""
        return [r[0] for r in self._household.conn().execute(
            "SELECT at FROM login_failures WHERE key = ? AND at >= ? ORDER BY at", (key, db.to_iso(since)))]

    def record(self, keys: tuple[str, ...], keep_since: datetime) -> list[int]:
        """One failed attempt, counted under each of ``keys`` at once; returns its rows (``succeeded``)."""
        now = db.utc_now()
        with self._household.write() as conn:
            conn.execute("DELETE FROM login_failures WHERE at < ?", (db.to_iso(keep_since),))
            return [conn.execute("INSERT INTO login_failures (key, at) VALUES (?, ?)", (key, now)).lastrowid or 0
                    for key in keys]

    def succeeded(self, own: str, attempt: list[int]) -> None:
        """An attempt counted beforehand (``record``) succeeded: its rows go, and so do the earlier failures
        under ``own`` (that person's on that device), and nothing else."""
        with self._household.write() as conn:
            conn.execute("DELETE FROM login_failures WHERE key = ?", (own,))
            conn.executemany("DELETE FROM login_failures WHERE rowid = ?", [(row,) for row in attempt])
