"""How much one person's memory holds, in numbers only: what the owner is told before removing someone.

The owner manages people, not their minds: a removal's confirmation says how
many conversations, messages and memories will be forgotten, never what they
say.
"""

from __future__ import annotations

from dataclasses import dataclass

from .kinds import DERIVED, KINDS
from .store import Store


@dataclass(frozen=True)
class Held:
    conversations: int
    messages: int
    memories: int


def held(store: Store) -> Held:
    conn = store.conn()
    memories = sum(conn.execute(f"SELECT count(*) FROM {KINDS[k].table}").fetchone()[0] for k in DERIVED)
    return Held(store.sessions.count(), store.exchanges.count(), memories)
