"""``/api/world``: the shared core memory (world state), its versions, and the proposals agents make to it.

Every version is kept; an agent's proposal becomes current only once accepted (``coord.Coordinator``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..deps import app_state
from ..params import RowId
from .coordination import coordinator

router = APIRouter()


class WorldEdit(BaseModel):
    content: str = Field(max_length=100_000)


class Proposal(BaseModel):
    agent: str = Field(min_length=1, max_length=60)
    content: str = Field(max_length=100_000)
    reason: str = Field(min_length=1, max_length=1000)


class Decision(BaseModel):
    by: str = Field("user", min_length=1, max_length=60)


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


@router.get("/api/world/proposals")
async def proposals(request: Request) -> dict[str, Any]:
    return await run_in_threadpool(coordinator(request).world)


@router.post("/api/world/proposals", status_code=201)
async def propose(body: Proposal, request: Request) -> dict[str, Any]:
    return await run_in_threadpool(coordinator(request).propose_world, body.agent, body.content, body.reason)


@router.post("/api/world/proposals/{version_id}/{decision}")
async def decide(version_id: RowId, decision: Literal["accept", "reject"], body: Decision,
                 request: Request) -> dict[str, Any]:
    version = await run_in_threadpool(app_state(request).store.coord.decide, version_id, decision == "accept",
                                      body.by)
    return dataclasses.asdict(version)
