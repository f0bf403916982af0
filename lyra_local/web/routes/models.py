"""The model manager's API: the GGUF files in ``models_dir`` and what each is, and the choice of
model per role, written into lyra.toml and applied at once; the catalog of known-good models with what fits
this machine, and their downloads, and what the first-run guide suggests.

Only file *names* inside ``models_dir`` are ever shown or taken: no request
names a path, so none can reach outside it. Nothing here reaches the network
but ``POST /api/models/pulls``, which only a person's click sends; ``DELETE /api/models/partials/{name}`` deletes
what a cancelled download left in ``models_dir/.pull/``, and only that.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from ...config import Settings, uses_demo_chat_model
from ...config_edit import ModelChoices
from ...errors import BadRequest
from ...llm.backends import backend_of
from ...llm.registry import catalog_fits, describe_offload, suggest_chat
from ...modelfiles.catalog import CatalogModel, resolve, title_of_file
from ...modelfiles.devices import Machine, probe
from ...modelfiles.fit import RECOMMEND_CTX, Placement
from ...modelfiles.on_disk import model_files as files_on_disk
from ...modelfiles.pull import partial_bytes
from ...store import reembedding
from ..deps import AsPerson, app_state, owner_only
from ..model_choice import apply_choice

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
        path = settings.role_spec(role).local_file(settings.models_dir)
        if path is not None and path.parent == settings.models_dir:
            using.setdefault(path.name, []).append(role)
    files = []
    for entry in await run_in_threadpool(files_on_disk, settings.models_dir):
        described: dict[str, Any] = {}
        if entry.summary is not None:
            described = {k: v for k, v in asdict(entry.summary).items() if k not in ("path", "size", "name")}
            described.update(title=title_of_file(entry.name), role_hint=entry.summary.role_hint)  # "name": the file's
        files.append({"name": entry.name, "size": entry.size, "problem": entry.problem,
                      "used_by": using.get(entry.name, []), **described})
    return {"models_dir": str(settings.models_dir), "files": files}


@router.put("/api/models/choice", dependencies=[Depends(owner_only)])
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
        roles[role] = backend_of(spec).view(settings, spec)
        if role == "summary" and settings.summary_shares_chat():
            roles[role]["shared_with"] = "chat"
    return roles


@router.get("/api/models/offload")
async def offload(request: Request) -> dict[str, Any]:
    """What each local role's ``n_gpu_layers`` comes to on this machine and why ("auto → 0: this llama.cpp
    build has no GPU offload"), from the files' headers and the GPUs' memory: no model is loaded."""
    settings = app_state(request).settings
    return {"roles": await run_in_threadpool(describe_offload, settings)}


@router.get("/api/models/embedding")
async def embedding_progress(you: AsPerson) -> dict[str, Any]:
    """How far re-embedding the memory with the configured embedding model has come: after a switch, recall
    keeps the old vectors (``in_use``) until no turn, gist or digest lacks one of the new model (``missing``).
    ``state`` is the background run's (``running``, ``done``, ``failed``…) and ``error`` why it failed."""
    memory = you.memory

    def read() -> dict[str, Any]:
        run = memory.reembedding.view()  # first: a run said done has written every vector the count will see
        missing = sum(reembedding.count_missing(memory.store, memory.embedder.name).values())
        return {"model": memory.embedder.name, "in_use": memory.active_model, "missing": missing, **run}

    return await run_in_threadpool(read)


# -- the catalog, its downloads and the first-run guide --------------------------------------------------------

ASSUMED_MBIT_S = 50  # the rate the first-run guide's download time assumes, and says it assumes


class PullRequest(BaseModel):
    """``{"name": NAME}`` (a catalog name, or ``owner/repo:File.gguf[@revision]``) or ``{"repo", "file"[,
    "revision"]}``: what ``lyra models pull`` takes."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str | None = Field(None, min_length=1, max_length=600)
    repo: str | None = Field(None, min_length=1, max_length=200)
    file: str | None = Field(None, min_length=1, max_length=400)
    revision: str | None = Field(None, min_length=1, max_length=100)

    def ref(self) -> str:
        if self.name is not None and self.repo is None and self.file is None and self.revision is None:
            return self.name
        if self.name is None and self.repo is not None and self.file is not None:
            return f"{self.repo}:{self.file}" + (f"@{self.revision}" if self.revision else "")
        raise BadRequest("give either a name, or a repo and a file",
                         hint='{"name": "qwen2.5-7b-instruct"} or {"repo": "owner/repo", "file": "Model.gguf"}')


@router.get("/api/models/catalog")
async def catalog(request: Request) -> dict[str, Any]:
    """Every known-good model with where it would run here (at its role's context, after the other roles'
    models), and whether its file is already in ``models_dir`` (or partly downloaded)."""
    settings = app_state(request).settings
    machine = await run_in_threadpool(probe)
    entries = await run_in_threadpool(catalog_views, settings, machine)
    return {"machine": machine_view(machine), "models": entries}


def catalog_views(settings: Settings, machine: Machine) -> list[dict[str, Any]]:
    return [entry_view(entry, settings, placement) for entry, placement in catalog_fits(settings, machine)]


def entry_view(entry: CatalogModel, settings: Settings, placement: Placement) -> dict[str, Any]:
    return {"name": entry.name, "role": entry.role, "title": entry.title, "repo": entry.repo, "file": entry.file,
            "size": entry.size, "quantization": entry.quantization, "parameters": entry.parameters,
            "context_length": entry.context_length, "licence": entry.licence, "note": entry.note,
            "sha256": entry.sha256, "thinking": entry.thinking,
            "downloaded": (settings.models_dir / entry.file).is_file(),
            "partial": partial_bytes(settings.models_dir, entry.file),
            "fit": {"kind": placement.kind, "text": placement.text, "layers": placement.layers,
                    "of_layers": placement.of_layers}}


def machine_view(machine: Machine) -> dict[str, Any]:
    return {"gpus": [{"name": g.name, "total": g.total, "free": g.free} for g in machine.gpus],
            "ram_total": machine.ram_total, "ram_free": machine.ram_free, "offload": machine.offload,
            "source": machine.source, "text": machine.describe()}


@router.get("/api/models/first-run")
async def first_run(request: Request) -> dict[str, Any]:
    """What the first-run guide says: whether chat runs on the demo model, this machine, and the chat model
    suggested for it with its size and a download time at ``ASSUMED_MBIT_S``."""
    settings = app_state(request).settings
    machine = await run_in_threadpool(probe)

    def suggest() -> dict[str, Any] | None:
        chosen = suggest_chat(settings, machine)
        if chosen is None:
            return None
        entry, placement = chosen
        # applied with the context it was sized for: the demo model's 2,048 tokens are too few for a companion
        return {**entry_view(entry, settings, placement), "n_ctx": min(RECOMMEND_CTX, entry.context_length),
                "download_s": round(entry.size * 8 / (ASSUMED_MBIT_S * 1e6))}

    return {"demo": uses_demo_chat_model(settings), "machine": machine_view(machine),
            "recommended": await run_in_threadpool(suggest), "assumed_mbit_s": ASSUMED_MBIT_S,
            "models_dir": str(settings.models_dir)}


@router.post("/api/models/pulls", status_code=202, dependencies=[Depends(owner_only)])
async def start_pull(body: PullRequest, request: Request) -> dict[str, Any]:
    """Start downloading a model into ``models_dir`` (follow it with GET …/pulls/{id}); a file already being
    pulled is not pulled twice: the answer is that download's job, ``joined``."""
    state = app_state(request)
    target = resolve(body.ref())
    job, joined = state.pulls.start(target, state.settings.models_dir)
    return {"job": job.view(), "joined": joined}


@router.get("/api/models/pulls")
async def list_pulls(request: Request) -> dict[str, Any]:
    """The downloads this server ran or runs, oldest first (a page opened later finds the one running)."""
    return {"jobs": [job.view() for job in app_state(request).pulls.all()]}


@router.get("/api/models/pulls/{job_id}")
async def pull_progress(job_id: str, request: Request) -> dict[str, Any]:
    return {"job": app_state(request).pulls.get(job_id).view()}


@router.delete("/api/models/pulls/{job_id}", status_code=202, dependencies=[Depends(owner_only)])
async def cancel_pull(job_id: str, request: Request) -> dict[str, Any]:
    """Cancel: the download stops at its next chunk, keeping its partial file for a later pull to resume."""
    return {"job": app_state(request).pulls.cancel(job_id).view()}


@router.delete("/api/models/partials/{name:path}", dependencies=[Depends(owner_only)])
async def discard_partial(name: str, request: Request) -> dict[str, Any]:
    """Discard the partial download of ``name`` (a catalog name, or ``owner/repo:File.gguf``, as a pull takes it):
    its bytes in ``models_dir/.pull/`` are deleted, and a later pull starts from the beginning. Refused (409) while
    that file downloads here or in ``lyra models pull``: cancel it first (DELETE …/pulls/{id})."""
    state = app_state(request)
    target = resolve(name)
    freed = await run_in_threadpool(state.pulls.discard, target, state.settings.models_dir)
    return {"name": name, "file": target.local_name, "freed": freed}
