"""Embedding vectors as float32 BLOBs, written the one way every tier shares."""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt


def vector_blob(vector: npt.NDArray[np.float32]) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def put_vector(conn: sqlite3.Connection, tier: str, model: str, item_id: int,
               vector: npt.NDArray[np.float32]) -> None:
    """Insert or replace one item's vector; the vector_log triggers record the change."""
    conn.execute("INSERT INTO embeddings (tier, model, item_id, vector) VALUES (?, ?, ?, ?) "
                 "ON CONFLICT(tier, model, item_id) DO UPDATE SET vector = excluded.vector",
                 (tier, model, item_id, vector_blob(vector)))
