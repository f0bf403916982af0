"""Times typed on the command line (``--since``, ``--until``) as the store's UTC text, or a clear refusal.

Stored times are compared as text (``2024-03-01T10:00:00.000000+00:00``): a
time kept as typed (an offset, ``Z``, a date alone) would compare wrongly.
"""

from __future__ import annotations

from ..errors import LyraError
from ..transfer.timestamps import BadTimestamp, utc_timestamp

HINT = "write it as YYYY-MM-DD, or an ISO time such as 2024-03-01T10:00+02:00 (no offset means UTC)"


def option_time(value: str | None, option: str) -> str | None:
    """``value`` of ``option`` in the store's UTC form (None stays None); a ``LyraError`` naming the option if
    it is not a time."""
    if value is None:
        return None
    try:
        return utc_timestamp(value, option)
    except BadTimestamp as exc:
        raise LyraError(str(exc), hint=HINT) from exc
