"""Lyra: a self-hosted, fully offline AI companion with long-term memory."""

__version__ = "0.1.0"
