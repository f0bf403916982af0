"""Recall and (later) context assembly over the store, with the embedding model in the loop."""

from .memory import Memory
from .recall import RecallQuery

__all__ = ["Memory", "RecallQuery"]
