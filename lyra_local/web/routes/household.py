"""``/api/household``: what the household shares: the household memory (everyone reads it, adults edit it,
each earlier version kept) and ``GET /api/household/backup``, the whole box as one download, for the owner only.

It holds every person's memory, so nobody but the owner gets it (403), and it
says so in its name (``lyra-household-EVERYONE-<date>.tar``) and in the
``README.txt`` it opens with (``transfer/household_backup.py``). The copies it
streams are open files no path names any more: nothing of it stays on disk
behind the download, however the download ends.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ...transfer.household_backup import file_name, snapshot, tar_chunks, tar_size
from ..auth import Forbidden, require_owner
from ..deps import AsPerson, app_state, not_by_token

router = APIRouter(prefix="/api")


class SharedEdit(BaseModel):
    content: str = Field(max_length=20_000)


@router.get("/household/backup", dependencies=[Depends(not_by_token)])  # everyone's: a login, not a token
async def household_backup(request: Request, you: AsPerson) -> StreamingResponse:
    """Everyone's memory and the household database, consistent copies taken now (safe while chatting)."""
    owner = you.person
    require_owner(owner)
    state = app_state(request)
    members = await run_in_threadpool(snapshot, state.household, state.store_of, owner)
    return StreamingResponse(tar_chunks(members), media_type="application/x-tar",
                             headers={"Content-Disposition": f'attachment; filename="{file_name()}"',
                                      "Content-Length": str(tar_size(members))})


@router.get("/household/memory")
async def shared_memory(request: Request, you: AsPerson) -> dict[str, Any]:
    person = you.person
    version = await run_in_threadpool(app_state(request).household.shared.current)
    return {"memory": None if version is None else _version(version), "can_edit": person.kind == "adult"}


@router.put("/household/memory")
async def edit_shared_memory(body: SharedEdit, request: Request, you: AsPerson) -> dict[str, Any]:
    """A new version of what everyone's Lyra knows (adults only); each earlier version is kept."""
    person = you.person
    if person.kind != "adult":
        raise Forbidden("only adults edit the household memory", hint="ask a grown-up of the household")
    version = await run_in_threadpool(app_state(request).household.shared.write, body.content.strip(), person)
    return {"memory": _version(version)}


@router.get("/household/memory/history")
async def shared_history(request: Request, you: AsPerson) -> dict[str, Any]:
    """Every version, for anyone of the household (``you``: so a request bound to nobody gets none)."""
    versions = await run_in_threadpool(app_state(request).household.shared.history)
    return {"versions": [_version(v) for v in versions]}


def _version(version: Any) -> dict[str, Any]:
    return {"id": version.id, "content": version.content, "author": version.author,
            "created_at": version.created_at}
