"""``/api/world``: the shared core memory (world state), its versions, and the proposals agents make to it.

Every version is kept; an agent's proposal becomes current only once accepted (``coord.Coordinator``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..deps import AsPerson
from ..params import RowId
from .coordination import Coordinated

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
async def world(you: AsPerson) -> dict[str, Any]:
    version = await run_in_threadpool(you.store.coord.world)
    return {"world": None if version is None else dataclasses.asdict(version)}


@router.put("/api/world")
async def edit_world(body: WorldEdit, you: AsPerson) -> dict[str, Any]:
    """A new version of the core memory, by the user; every earlier version is kept."""
    version = await run_in_threadpool(you.store.coord.write_world, body.content, "user",
                                      "edited in the web UI")
    return {"world": dataclasses.asdict(version)}


@router.get("/api/world/history")
async def world_history(you: AsPerson) -> dict[str, Any]:
    versions = await run_in_threadpool(you.store.coord.world_history)
    return {"versions": [dataclasses.asdict(v) for v in versions]}


@router.get("/api/world/proposals")
async def proposals(c: Coordinated) -> dict[str, Any]:
    return await run_in_threadpool(c.world)


@router.post("/api/world/proposals", status_code=201)
async def propose(body: Proposal, c: Coordinated) -> dict[str, Any]:
    return await run_in_threadpool(c.propose_world, body.agent, body.content, body.reason)


@router.post("/api/world/proposals/{version_id}/{decision}")
async def decide(version_id: RowId, decision: Literal["accept", "reject"], body: Decision,
                 you: AsPerson) -> dict[str, Any]:
    version = await run_in_threadpool(you.store.coord.decide, version_id, decision == "accept",
                                      body.by)
    return dataclasses.asdict(version)
