"""``GET /api/household/backup``: the whole box as one download, for the owner only.

It holds every person's memory, so nobody but the owner gets it (403), and it
says so in its name (``lyra-household-EVERYONE-<date>.tar``) and in the
``README.txt`` it opens with (``transfer/household_backup.py``). The copies it
streams are open files no path names any more: nothing of it stays on disk
behind the download, however the download ends.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ..transfer.household_backup import file_name, snapshot, tar_chunks, tar_size
from .deps import app_state
from .people import bound_person, not_by_token, require_owner

router = APIRouter(prefix="/api")


@router.get("/household/backup", dependencies=[Depends(not_by_token)])  # everyone's: a login, not a token
async def household_backup(request: Request) -> StreamingResponse:
    """Everyone's memory and the household database, consistent copies taken now (safe while chatting)."""
    owner = bound_person()
    require_owner(owner)
    state = app_state(request)
    members = await run_in_threadpool(snapshot, state.household, state.store_of, owner)
    return StreamingResponse(tar_chunks(members), media_type="application/x-tar",
                             headers={"Content-Disposition": f'attachment; filename="{file_name()}"',
                                      "Content-Length": str(tar_size(members))})
