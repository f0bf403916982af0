"""The dream's log as a person reads it: events with their sentence, the conversations' titles looked up now.

Shared by the web API (``/api/dream/events``) and the ``lyra dream`` command, so both say the same thing.
The titles are read when the log is read, never stored in it: a conversation forgotten since is "a
forgotten conversation", and its old title is shown nowhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...store import Store
from ...store.sessions import SessionNotFound
from .sentences import conversation_ids, sentence


def titles(store: Store, session_ids: Iterable[int]) -> dict[int, str | None]:
    """Each session's name now; None for one that is gone (forgotten)."""
    out: dict[int, str | None] = {}
    for session_id in set(session_ids):
        try:
            out[session_id] = store.sessions.get(session_id).name
        except SessionNotFound:
            out[session_id] = None
    return out


def told(store: Store, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events, each with the sentence a person reads (``says``); the raw fields stay, for developers."""
    named = titles(store, (i for e in events for i in conversation_ids(e)))
    return [{**e, "says": sentence(e, named)} for e in events]
