"""The model manager's API: the GGUF files in ``models_dir`` and what each is (issue 27).

Only file *names* inside ``models_dir`` are ever shown or taken: no request
names a path, so none can reach outside it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from ..config import LocalModel
from ..modelfiles.catalog import catalog
from .deps import app_state

router = APIRouter()


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
    for entry in await run_in_threadpool(catalog, settings.models_dir):
        described: dict[str, Any] = {}
        if entry.summary is not None:
            described = {k: v for k, v in asdict(entry.summary).items() if k not in ("path", "size", "name")}
            described.update(title=entry.summary.name, role_hint=entry.summary.role_hint)  # "name" is the file's
        files.append({"name": entry.name, "size": entry.size, "problem": entry.problem,
                      "used_by": using.get(entry.name, []), **described})
    return {"models_dir": str(settings.models_dir), "files": files}
