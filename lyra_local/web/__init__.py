"""The web app: an app factory and its routes. Nothing here runs at import time."""

from .app import create_app

__all__ = ["create_app"]
