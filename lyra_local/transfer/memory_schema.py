"""What a ``memory.json`` may hold, checked before a byte of it is restored. Pure functions.

The restore (``store/memory_dump.restore``) writes each value into SQLite as
it is. SQLite keeps whatever it is given: a text where a count belongs, a
number of 70 bits, a time no one can sort; so a hand-edited or damaged file
would fail deep inside the restore (an ``OverflowError``, an ``IndexError``, a
constraint) or, worse, be stored and fail the dream days later. Here every
section, row and value is checked against what the exporter writes, times are
rewritten in the store's UTC form (as every imported time is:
``timestamps.py``), and the first thing wrong is a ``ValueError`` naming it:
``memory.json: digests[2].source_count must be a whole number``.

``SCHEMA`` names each key the registry exports (``store/kinds.py``: columns
and portable keys), which ``tests/test_import_fuzz.py`` checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..store.db import MAX_INTEGER
from .timestamps import BadTimestamp, utc_timestamp

Check = Callable[[Any, str], Any]  # (value, where) -> the value to restore, or a ValueError naming ``where``


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be a text")
    return value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INTEGER:
        raise ValueError(f"{where} must be a whole number from 0")
    return value


def _time(value: Any, where: str) -> str:
    try:
        return utc_timestamp(value, where)
    except BadTimestamp as exc:
        raise ValueError(str(exc)) from None


def _one_of(*allowed: str) -> Check:
    def check(value: Any, where: str) -> str:
        if value not in allowed:
            raise ValueError(f"{where} must be one of {', '.join(allowed)}")
        return str(value)
    return check


def _json_object(value: Any, where: str) -> dict[str, Any]:
    try:
        if isinstance(value, dict):
            json.dumps(value, allow_nan=False)  # what the store's json_valid() accepts
            return value
    except (ValueError, RecursionError):
        pass
    raise ValueError(f"{where} must be a JSON object")


def _optional(check: Check) -> Check:
    def maybe(value: Any, where: str) -> Any:
        return None if value is None else check(value, where)
    return maybe


_TEXT, _TIME, _COUNT = _text, _time, _count
_METHOD = _one_of("abstractive", "extractive", "user")
# section -> ("all" rows or the "latest" one, {key: (required, check)})
SCHEMA: dict[str, tuple[str, dict[str, tuple[bool, Check]]]] = {
    "gists": ("all", {"content": (True, _TEXT), "created_at": (True, _TIME), "updated_at": (True, _TIME),
                      "method": (False, _METHOD), "session": (True, _TEXT), "covers_turns": (True, _COUNT)}),
    "profile": ("all", {"key": (True, _TEXT), "value": (True, _TEXT), "author": (True, _TEXT),
                        "created_at": (True, _TIME), "observed_at": (True, _optional(_TIME)),
                        "superseded_at": (True, _optional(_TIME)), "session": (True, _optional(_TEXT)),
                        "superseded_by": (True, _optional(_COUNT))}),
    "digests": ("all", {"granularity": (True, _one_of("day", "week", "month")), "period": (True, _TEXT),
                        "content": (True, _TEXT), "source_count": (True, _COUNT), "basis": (True, _TEXT),
                        "created_at": (True, _TIME), "updated_at": (True, _TIME), "method": (False, _METHOD)}),
    "narrative": ("latest", {"content": (True, _TEXT), "created_at": (True, _TIME), "basis": (True, _TEXT),
                             "method": (False, _METHOD)}),
    "self_state": ("latest", {"state": (True, _json_object), "created_at": (True, _TIME)}),
    "world": ("all", {"content": (True, _TEXT), "author": (True, _TEXT), "reason": (True, _optional(_TEXT)),
                      "status": (True, _one_of("accepted", "proposed", "rejected")), "created_at": (True, _TIME),
                      "decided_at": (False, _optional(_TIME)), "decided_by": (False, _optional(_TEXT))}),
    "dismissed": ("all", {"kind": (True, _one_of("gist", "digest", "narrative", "fact")),
                          "dismissed_at": (True, _TIME), "target": (True, _TEXT),
                          "basis": (True, _optional(_COUNT))}),
}
OPTIONAL_SECTIONS = ("dismissed",)  # version 1 files have none


def checked(data: dict[str, Any], name: str = "memory.json") -> dict[str, Any]:
    """A copy of ``data`` whose every section, row and value is what the exporter writes (times in the store's
    form); a ``ValueError`` naming the first that is not."""
    out = dict(data)
    for section, (rows, keys) in SCHEMA.items():
        if section not in data and section in OPTIONAL_SECTIONS:
            continue
        if section not in data:
            raise ValueError(f"{name} has no {section!r}")
        value = data[section]
        if rows == "latest":
            out[section] = None if value is None else _row(value, keys, f"{name}: {section}")
            continue
        if not isinstance(value, list):
            raise ValueError(f"{name}: {section} must be a list")
        out[section] = [_row(item, keys, f"{name}: {section}[{i}]") for i, item in enumerate(value)]
    _unique(out, name)
    return out


def _row(item: Any, keys: dict[str, tuple[bool, Check]], where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ValueError(f"{where} must be an object")
    row = dict(item)
    for key, (required, check) in keys.items():
        if key in item:
            row[key] = check(item[key], f"{where}.{key}")
        elif required:
            raise ValueError(f"{where} has no {key!r}")
    return row


def _unique(data: dict[str, Any], name: str) -> None:
    """What the store holds once: a summary per conversation, a digest per period; and a fact's successor is
    a fact of the list."""
    sessions = [g["session"] for g in data["gists"]]
    if len(set(sessions)) != len(sessions):
        raise ValueError(f"{name}: two gists sum up the same conversation")
    periods = [(d["granularity"], d["period"]) for d in data["digests"]]
    if len(set(periods)) != len(periods):
        raise ValueError(f"{name}: two digests cover the same period")
    for i, fact in enumerate(data["profile"]):
        if fact["superseded_by"] is not None and fact["superseded_by"] >= len(data["profile"]):
            raise ValueError(f"{name}: profile[{i}].superseded_by names no fact of the list")
