"""Request-scoped access to the app's shared objects (no globals)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import Request

if TYPE_CHECKING:
    from .state import AppState


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.lyra
    return state
