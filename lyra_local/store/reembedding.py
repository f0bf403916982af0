"""Rows of every vector tier that lack a vector of an embedding model, and storing the vectors made for them.

When the embedding model changes, turns, gists and digests all need vectors of
the new model before recall can switch to it (vectors of two models never
mix). The tiers and their tables come from the one registry,
``store/kinds.py``. A vector is written only for a row that is still there
with the text that was embedded: one forgotten or rewritten meanwhile gets
none (the dream writes a rewritten gist's vector itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .blobs import put_vector
from .kinds import KINDS, of_tier
from .records import TIERS
from .store import Store


@dataclass(frozen=True)
class Unembedded:
    """One row to embed: its tier, id and text as read."""

    tier: str
    id: int
    text: str


def _table(tier: str) -> str:
    return of_tier(tier).table


def _lacking(tier: str) -> str:
    """Rows of ``tier`` with no vector of the model given as a parameter; never an off-the-record turn (m013)."""
    remembered = f" AND {KINDS['exchange'].where_current()}" if tier == "exchange" else ""
    return (f"FROM {_table(tier)} t WHERE NOT EXISTS (SELECT 1 FROM embeddings v WHERE v.tier = ? AND v.model = ? "
            f"AND v.item_id = t.id){remembered}")


def missing(store: Store, tier: str, model: str, limit: int = 1000) -> list[Unembedded]:
    """Rows of ``tier`` with no vector of ``model``, oldest first."""
    text = of_tier(tier).indexed_text  # a turn's words with its photo's caption
    rows = store.conn().execute(f"SELECT t.id, {text} {_lacking(tier)} ORDER BY t.id LIMIT ?", (tier, model, limit))
    return [Unembedded(tier, int(r[0]), str(r[1])) for r in rows]


def count_missing(store: Store, model: str) -> dict[str, int]:
    """How many rows of each tier lack a vector of ``model``."""
    conn = store.conn()
    return {tier: int(conn.execute(f"SELECT count(*) {_lacking(tier)}", (tier, model)).fetchone()[0])
            for tier in TIERS}


def any_missing(store: Store, model: str) -> bool:
    return any(missing(store, tier, model, limit=1) for tier in TIERS)


def put_current(store: Store, model: str, items: Sequence[Unembedded],
                vectors: npt.NDArray[np.float32]) -> int:
    """Store each item's vector if its row still holds the text embedded, in one transaction; returns how many."""
    written = 0
    with store.write() as conn:
        for item, vector in zip(items, vectors, strict=True):
            row = conn.execute(f"SELECT {of_tier(item.tier).indexed_text} FROM {_table(item.tier)} t WHERE id = ?",
                               (item.id,)).fetchone()
            if row is not None and row[0] == item.text:
                put_vector(conn, item.tier, model, item.id, vector)
                written += 1
    return written
