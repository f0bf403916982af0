"""Who wrote a turn: the person, Lyra, or the assistant of the service a conversation was imported from.

A conversation imported from ChatGPT holds ChatGPT's replies in the
``assistant`` role; they were never Lyra's. But the person may go on with it
here, and the replies written then are Lyra's: who wrote a reply is a fact of
the reply, not of its conversation. It is stored with it (``exchanges.author``,
``asides.author``: the imported assistant's name, NULL for the companion's;
set by the import, carried by an export, migration ``m016``), and every place
that names the author of a reply (gists, digests, the chat's label above a
message, Why?, Continue) asks ``author_of`` / ``imported_author``.
"""

from __future__ import annotations

import re
from typing import Protocol

# A session's ``source`` -> the name of the assistant whose replies it holds.
IMPORTED_FROM = {"chatgpt": "ChatGPT"}

# The portable id a Lyra export gives a turn written in Lyra (``store/portable.py``: ``<origin>:<turn id>``, the
# origin 12 hex digits). An imported turn keeps the id its source gave it (a ChatGPT message's UUID) instead.
WRITTEN_IN_LYRA = re.compile(r"[0-9a-f]{12}:[0-9]+")


class Turn(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def author(self) -> str | None: ...


def imported_from(source: str) -> str | None:
    """The assistant a conversation's imported replies came from, or ``None`` for Lyra's own conversations."""
    return IMPORTED_FROM.get(source)


def imported_author(turn: Turn) -> str | None:
    """The assistant a reply was imported from ("ChatGPT"), or ``None``: the companion's reply, or no reply."""
    return turn.author if turn.role == "assistant" else None


def author_of(turn: Turn, companion: str) -> str:
    """Who wrote a reply: the assistant it was imported from, else the companion (the one rule for a reply)."""
    return imported_author(turn) or companion


def author_at_import(role: str, source: str, source_id: str | None) -> str | None:
    """Who wrote a turn that came with no author (an export made before authors were stored, a store migrated
    to them): a reply that kept its source's id in a conversation imported from an assistant is that
    assistant's; one whose id is a Lyra portable id (``WRITTEN_IN_LYRA``) or that has none was written here."""
    if role != "assistant" or not source_id or WRITTEN_IN_LYRA.fullmatch(source_id):
        return None
    return IMPORTED_FROM.get(source)
