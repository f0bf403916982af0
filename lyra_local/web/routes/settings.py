"""``/api/settings``: read-only, which model serves each role, GPU offload, where the data lives, how to change it."""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from ... import __version__
from ...config import uses_demo_chat_model
from ...diagnostics import gpu_layers_ignored
from ...llm.local import GPU_LAYERS_IGNORED
from ..deps import app_state
from ..model_choice import config_target
from .models import role_views

router = APIRouter()


@router.get("/api/settings")
async def settings_view(request: Request) -> dict[str, Any]:
    """Read-only: which model serves each role, GPU offload, where the data lives, how to change it."""
    state = app_state(request)
    settings = state.settings
    offload = await run_in_threadpool(_gpu_offload)
    return {
        "version": __version__,
        "roles": role_views(settings),
        "gpu_offload": offload,
        "warnings": [f"models.{role}: {GPU_LAYERS_IGNORED.format(layers=layers)}"
                     for role, layers in gpu_layers_ignored(settings, offload)],
        "data_dir": str(settings.data_dir),
        "config_file": str(settings.config_file) if settings.config_file else None,
        # where Settings → Models writes: the file read, else the one it would create
        "config_file_target": str(config_target(state.config_path, os.environ)),
        "companion": {"name": settings.companion.name, "user_name": settings.companion.user_name},
        "demo_chat_model": uses_demo_chat_model(settings),  # the first run says so, once
        "how_to_change": "Choose models in Settings → Models (PUT /api/models/choice writes lyra.toml and applies "
                         "it), or edit lyra.toml (or set LYRA_* environment variables, which win over it), then "
                         "POST /admin/reload or send SIGHUP; a new data_dir takes a restart. `lyra doctor` checks "
                         "the result.",
    }


def _gpu_offload() -> bool:
    try:
        from ...llm.local import gpu_offload_supported

        return gpu_offload_supported()
    except ImportError:
        return False
