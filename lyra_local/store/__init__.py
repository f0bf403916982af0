"""Persistence: SQLite as the truth, FAISS indexes derived from it."""

from .records import Exchange, Hit, Session
from .store import Store
from .vectors import IndexSettings

__all__ = ["Exchange", "Hit", "IndexSettings", "Session", "Store"]
