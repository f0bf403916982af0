"""Coordination over HTTP for local agents: ``/api/sitrep``, ``/api/instances``, ``/api/locks`` and
``/api/remember`` (world-state proposals are ``/api/world``'s: ``routes/world.py``).

The same operations as the MCP server (both call ``coord.Coordinator``);
protected by the API token like the rest of the API when it is set.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...coord import Coordinator, render_sitrep
from ..deps import AsPerson, app_state

router = APIRouter(prefix="/api")


class NewInstance(BaseModel):
    kind: str = Field(min_length=1, max_length=40)
    summary: str = Field(min_length=1, max_length=300)
    id: str | None = Field(None, max_length=120)


class Beat(BaseModel):
    message: str | None = Field(None, max_length=2000)


class Done(BaseModel):
    result: str = Field(min_length=1, max_length=4000)
    status: str = Field("done", pattern="^(done|failed|cancelled)$")


class LockRequest(BaseModel):
    resource: str = Field(min_length=1, max_length=300)
    holder: str = Field(min_length=1, max_length=120)
    ttl_s: float = Field(60.0, gt=0, le=86400)
    note: str | None = Field(None, max_length=300)


class Note(BaseModel):
    agent: str = Field(min_length=1, max_length=60)
    content: str = Field(min_length=1, max_length=20_000)


def coordinator(request: Request, you: AsPerson) -> Coordinator:
    """The coordination service over the person's memory (a route's dependency: ``c: Coordinated``)."""
    return Coordinator(you.store, app_state(request).settings, you.memory)


Coordinated = Annotated[Coordinator, Depends(coordinator)]


@router.get("/sitrep", response_model=None)
async def sitrep(c: Coordinated, format: str = "json") -> Any:
    if format == "text":
        return PlainTextResponse(await run_in_threadpool(c.sitrep_text))
    data = await run_in_threadpool(c.sitrep)
    return {**data, "text": render_sitrep(data, c.settings.coordination.sitrep_chars)}


@router.get("/instances")
async def instances(c: Coordinated) -> dict[str, Any]:
    return {"instances": await run_in_threadpool(c.instances)}


@router.post("/instances", status_code=201)
async def register(body: NewInstance, c: Coordinated) -> dict[str, Any]:
    return await run_in_threadpool(c.register, body.kind, body.summary, body.id)


@router.post("/instances/{instance_id}/heartbeat")
async def heartbeat(instance_id: str, body: Beat, c: Coordinated) -> dict[str, Any]:
    return await run_in_threadpool(c.heartbeat, instance_id, body.message)


@router.post("/instances/{instance_id}/complete")
async def complete(instance_id: str, body: Done, c: Coordinated) -> dict[str, Any]:
    return await run_in_threadpool(c.complete, instance_id, body.result, body.status)


@router.get("/locks")
async def locks(c: Coordinated, resource: str | None = None) -> dict[str, Any]:
    if resource is not None:
        return await run_in_threadpool(c.check, resource)
    leases = await run_in_threadpool(c.store.coord.leases)
    return {"locks": [dataclasses.asdict(lease) for lease in leases]}


@router.post("/locks/{action}", response_model=None)
async def lock(action: Literal["acquire", "renew", "release"], body: LockRequest, c: Coordinated) -> Any:
    """``acquire``, ``renew`` or ``release``; a refused lease is 409 and says who holds it."""
    if action == "release":
        return await run_in_threadpool(c.release, body.resource, body.holder)
    if action == "acquire":
        result = await run_in_threadpool(c.acquire, body.resource, body.holder, body.ttl_s, body.note)
    else:
        result = await run_in_threadpool(c.renew, body.resource, body.holder, body.ttl_s)
    return result if result["ok"] else JSONResponse(
        {**result, "error": {"message": f"{body.resource} is held by {result['held_by']} until {result['until']}",
                             "type": "LockHeld", "hint": "wait for it to be released or to expire"}},
        status_code=409)


@router.post("/remember", status_code=201)
async def remember(body: Note, c: Coordinated) -> dict[str, Any]:
    return await run_in_threadpool(c.remember, body.agent, body.content)
