"""Plain records the store hands out; no behaviour, no database handles."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Tier = Literal["exchange", "gist", "digest"]
TIERS: tuple[Tier, ...] = ("exchange", "gist", "digest")

# How a reply ended when it did not end by itself: cut by the token limit, stopped by the person, or cut short by
# an error (migration m015). Stored with the reply, so the page marks it again when the conversation is reopened.
Ending = Literal["length", "stopped", "error"]
ENDINGS: tuple[Ending, ...] = ("length", "stopped", "error")


@dataclass(frozen=True)
class Session:
    id: int
    uid: str
    name: str
    created_at: str
    updated_at: str
    source: str
    source_id: str | None
    remember: bool = True  # False: off the record (never embedded, recalled, dreamt over or exported)


@dataclass(frozen=True)
class Exchange:
    id: int
    session_id: int
    role: str
    content: str
    created_at: str
    tokens: int | None = None
    source_id: str | None = None
    ending: Ending | None = None  # a reply that did not end by itself: how it ended (``ENDINGS``)
    author: str | None = None  # the assistant an imported reply came from ("ChatGPT"); None: the companion's
    caption: str | None = None  # a photo's caption: what the photo shows, never the sender's words


@dataclass(frozen=True)
class Hit:
    """One recalled memory: what it is, where it came from, and why it ranked."""

    kind: str
    id: int
    session_id: int | None
    role: str | None
    content: str
    created_at: str
    score: float
    stages: tuple[str, ...] = ()
    context: tuple[Exchange, ...] = field(default=())
    author: str | None = None  # who wrote a turn an import brought, by the name it gave ("Melanie", "ChatGPT")
    caption: str | None = None  # a turn's photo's caption, apart from its words (``content``: what was said)
