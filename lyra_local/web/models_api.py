"""The model manager's API (issue 27): the GGUF files in ``models_dir`` and what each is, and the choice of
model per role, written into lyra.toml and applied at once.

Only file *names* inside ``models_dir`` are ever shown or taken: no request
names a path, so none can reach outside it.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from ..config import LocalModel, Settings
from ..config_edit import ModelChoices
from ..modelfiles.on_disk import model_files as files_on_disk
from ..store import reembedding
from .deps import app_state
from .model_choice import apply_choice

router = APIRouter()


class ChoiceRequest(BaseModel):
    """``{"roles": {ROLE: CHOICE}}``: only the roles given change (``config_edit.ModelChoices`` says what a
    choice may be)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    roles: ModelChoices


@router.get("/api/models/files")
async def model_files(request: Request) -> dict[str, Any]:
    """Each GGUF in ``models_dir`` with its header's summary (or why llama.cpp could not load it), the role it
    looks made for, and the roles that use it now."""
    settings = app_state(request).settings
    using: dict[str, list[str]] = {}
    for role in settings.roles():
        spec = settings.role_spec(role)
        if isinstance(spec, LocalModel) and settings.model_path(spec).parent == settings.models_dir:
            using.setdefault(settings.model_path(spec).name, []).append(role)
    files = []
    for entry in await run_in_threadpool(files_on_disk, settings.models_dir):
        described: dict[str, Any] = {}
        if entry.summary is not None:
            described = {k: v for k, v in asdict(entry.summary).items() if k not in ("path", "size", "name")}
            described.update(title=entry.summary.name, role_hint=entry.summary.role_hint)  # "name" is the file's
        files.append({"name": entry.name, "size": entry.size, "problem": entry.problem,
                      "used_by": using.get(entry.name, []), **described})
    return {"models_dir": str(settings.models_dir), "files": files}


@router.put("/api/models/choice")
async def choose_models(body: ChoiceRequest, request: Request) -> dict[str, Any]:
    """Write the chosen model of each role given into lyra.toml and swap the models in, once they passed the
    reload's checks; a refused choice (400, or 409 when an environment variable overrides it) changes nothing."""
    state = app_state(request)
    written = await run_in_threadpool(apply_choice, state, body.roles, os.environ)
    return {"status": "applied", "config_file": str(written), "roles": role_views(state.settings)}


def role_views(settings: Settings) -> dict[str, dict[str, Any]]:
    """Which model serves each role, as GET /api/settings and a choice's answer show it."""
    roles: dict[str, dict[str, Any]] = {}
    for role in settings.roles():
        spec = settings.role_spec(role)
        if isinstance(spec, LocalModel):
            roles[role] = {"backend": "local", "model": spec.path.name, "path": str(settings.model_path(spec)),
                           "n_ctx": spec.n_ctx, "n_gpu_layers": spec.n_gpu_layers}
        else:
            roles[role] = {"backend": "server", "model": spec.model, "base_url": spec.base_url, "n_ctx": spec.n_ctx}
        if role == "summary" and settings.summary_shares_chat():
            roles[role]["shared_with"] = "chat"
    return roles


@router.get("/api/models/embedding")
async def embedding_progress(request: Request) -> dict[str, Any]:
    """How far re-embedding the memory with the configured embedding model has come: after a switch, recall
    keeps the old vectors (``in_use``) until no turn, gist or digest lacks one of the new model (``missing``).
    ``state`` is the background run's (``running``, ``done``, ``failed``…) and ``error`` why it failed."""
    memory = app_state(request).memory

    def read() -> dict[str, Any]:
        missing = sum(reembedding.count_missing(memory.store, memory.embedder.name).values())
        return {"model": memory.embedder.name, "in_use": memory.active_model, "missing": missing,
                **memory.reembedding.view()}

    return await run_in_threadpool(read)
