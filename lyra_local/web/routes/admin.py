"""Liveness and administration: ``/health`` and ``/admin/reload``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ... import __version__
from ..deps import app_state, owner_only

router = APIRouter()


@router.get("/health")
async def health() -> dict[str, Any]:
    """Cheap liveness probe: answers without touching a model."""
    return {"status": "ok", "version": __version__}


@router.post("/admin/reload", dependencies=[Depends(owner_only)])
async def reload(request: Request) -> dict[str, Any]:
    """Re-read lyra.toml and the environment, and swap the models (same as SIGHUP).

    Work already running (this request included) keeps the old models until it
    ends; they are freed then, and the new ones load on first use.
    """
    state = app_state(request)
    await run_in_threadpool(state.reload)
    models = state.settings.models
    return {
        "status": "reloaded",
        "config_file": str(state.settings.config_file) if state.settings.config_file else None,
        "backends": {"chat": models.chat.backend, "embed": models.embed.backend},
    }
