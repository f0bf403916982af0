"""The mind: consolidation of raw turns into gists, profile, digests, narrative and self-state.

``dream.Dreamer`` runs one pass; ``scheduler`` runs passes on a schedule inside
the server. Logic that decides (chunking, drives, digest planning) is pure and
lives apart from the model calls that write.
"""

from .dream.cycle import Dreamer, PassReport

__all__ = ["Dreamer", "PassReport"]
