"""The web UI: one static page (plain HTML/CSS/JS, no build step, nothing from a CDN), and what only it needs.

The page and its assets are served with a strict Content-Security-Policy: no
inline script, no foreign origin, no plugins. Everything the page renders from
the memory goes in as text (``textContent``), never as HTML, so the policy is a
second wall, not the first.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from .. import __version__
from ..config import uses_demo_chat_model
from ..diagnostics import gpu_layers_ignored
from ..llm.local import GPU_LAYERS_IGNORED
from ..store.kinds import KINDS
from .deps import app_state
from .model_choice import config_target
from .models_api import role_views

STATIC = Path(__file__).parent / "static"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
UI_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}

router = APIRouter()


class WorldEdit(BaseModel):
    content: str = Field(max_length=100_000)


@router.get("/", include_in_schema=False)
async def index() -> Response:
    return FileResponse(STATIC / "index.html", headers=UI_HEADERS)


@router.get("/static/{name}", include_in_schema=False)
async def asset(name: str) -> Response:
    """One flat folder of assets; a name can never reach outside it."""
    path = (STATIC / name).resolve()
    if path.parent != STATIC.resolve() or not path.is_file():
        return Response("not found", status_code=404)
    return FileResponse(path, headers={**UI_HEADERS, "Cache-Control": "no-cache"})


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


@router.get("/api/kinds")
async def kinds() -> dict[str, Any]:
    """The kinds of memory as a person reads them (the registry's labels), and which ones search finds."""
    return {"kinds": [{"name": k.name, "label": k.label[0], "plural": k.label[1], "searchable": k.searchable}
                      for k in KINDS.values() if k.node or k.name == "session"]}


@router.get("/api/world")
async def world(request: Request) -> dict[str, Any]:
    version = await run_in_threadpool(app_state(request).store.coord.world)
    return {"world": None if version is None else dataclasses.asdict(version)}


@router.put("/api/world")
async def edit_world(body: WorldEdit, request: Request) -> dict[str, Any]:
    """A new version of the core memory, by the user; every earlier version is kept."""
    version = await run_in_threadpool(app_state(request).store.coord.write_world, body.content, "user",
                                      "edited in the web UI")
    return {"world": dataclasses.asdict(version)}


@router.get("/api/world/history")
async def world_history(request: Request) -> dict[str, Any]:
    versions = await run_in_threadpool(app_state(request).store.coord.world_history)
    return {"versions": [dataclasses.asdict(v) for v in versions]}


def _gpu_offload() -> bool:
    try:
        from ..llm.local import gpu_offload_supported

        return gpu_offload_supported()
    except ImportError:
        return False
