"""Timestamps from outside (an import file, a bound such as ``lyra forget --before``) as the store writes them.
Pure functions.

The store keeps every time as UTC ISO-8601 text with microseconds
(``2024-03-01T10:00:00.000000+00:00``, ``store.db.to_iso``) and compares them as
strings. A time kept as given (``+02:00``, naive, ``20230508T135600Z``, a date
alone) would sort wrongly against the rest: ``forget --before`` would miss rows,
and code that slices the date out of the text would fail. So every time coming
in is parsed here and rewritten in the store's form, or refused with a message
that says what was wrong.
"""

from __future__ import annotations

from datetime import datetime, timezone

from ..errors import BadRequest
from ..store.db import to_iso

EXAMPLE = "2023-05-08T13:56:00Z"
HINT = "write it as YYYY-MM-DD, or an ISO time such as 2024-03-01T10:00+02:00 (no offset means UTC)"


class BadTimestamp(ValueError):
    """A time that cannot be read; the message names it and shows the expected form."""


def utc_timestamp(value: object, what: str = "time") -> str:
    """``value`` (ISO 8601: extended or compact, with an offset, naive = UTC, or a date alone = midnight UTC)
    as UTC ISO text with microseconds."""
    if not isinstance(value, str) or not value.strip():
        raise BadTimestamp(f"{what} is missing (expected an ISO 8601 time such as {EXAMPLE})")
    text = value.strip()
    if len(text) > 64:
        raise BadTimestamp(f"{what} {text[:32]!r}... is not a time (expected ISO 8601, such as {EXAMPLE})")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise BadTimestamp(f"{what} {text!r} is not a time (expected ISO 8601, such as {EXAMPLE})") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return to_iso(moment)
    except OverflowError:  # year 1 with a positive offset, or 9999 with a negative one
        raise BadTimestamp(f"{what} {text!r} is out of range") from None


def time_bound(value: str | None, name: str) -> str | None:
    """A time a person gives as a bound (``--since``, ``until=``, ``before``) in the store's UTC form, which
    stored times compare with as text (kept as typed, an offset or a ``Z`` time compares wrongly); ``None`` or
    empty stays ``None``. A ``BadRequest`` naming ``name`` if it is not a time: a 400 in the API, an error line
    on the command line."""
    if not value:
        return None
    try:
        return utc_timestamp(value, name)
    except BadTimestamp as exc:
        raise BadRequest(str(exc), hint=HINT) from exc
