"""Plain records the store hands out; no behaviour, no database handles."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Tier = Literal["exchange", "gist", "digest"]
TIERS: tuple[Tier, ...] = ("exchange", "gist", "digest")


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
