"""Who wrote a turn: the person, Lyra, or the assistant of the service a conversation was imported from.

A conversation imported from ChatGPT holds ChatGPT's replies in the
``assistant`` role; they were never Lyra's. Every place that names the author
of a reply (gists, digests, the chat's label above a message, Why?) asks here,
so a new import source adds one line.
"""

from __future__ import annotations

# A session's ``source`` -> the name of the assistant whose replies it holds.
IMPORTED_FROM = {"chatgpt": "ChatGPT"}


def imported_from(source: str) -> str | None:
    """The assistant a conversation's replies came from, or ``None`` for Lyra's own conversations."""
    return IMPORTED_FROM.get(source)


def reply_author(source: str, companion: str) -> str:
    """Who wrote the replies of a conversation from ``source``: the imported assistant, else the companion."""
    return IMPORTED_FROM.get(source, companion)
