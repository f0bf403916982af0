"""``/api/import`` (upload with progress), ``/api/export`` and ``/api/backup``: one's memory in and out.

An upload is streamed to ``<data_dir>/imports/`` (never a path the request
names: ``store/files/uploads.py``), imported in a background thread, and deleted
when the import ends, when the server stops, or when a forget stops it (the
job then says so); a server killed meanwhile leaves it to the recovery step
at the next open (``store/files/registry.py``). Progress is read as JSON or as
server-sent events. Export and backup are downloads.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import zipfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from ...errors import BadRequest, NotFound
from ...transfer.backup import backup_file
from ...transfer.lyra_format import write_sessions
from ...transfer.memory_file import memory_json
from ...transfer.sources import MEMORY_FILE, SESSIONS_FILE
from ..deps import AsPerson, app_state
from ..import_jobs import ImportJob, Into
from ..state import PersonRuntime

router = APIRouter(prefix="/api")
MAX_UPLOAD = 2 * 1024**3
CHUNK = 1024 * 1024
POLL_S = 0.25


@router.put("/import", status_code=202)
async def upload(request: Request, you: AsPerson, filename: str = Query(min_length=1, max_length=255),
                 format: Literal["auto", "chatgpt", "lyra"] = "auto") -> dict[str, Any]:
    """The request body is the file (a ChatGPT export .zip/.json, or Lyra .jsonl / export .zip)."""
    state = app_state(request)
    uploads = you.store.uploads
    received = uploads.create(filename)
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_UPLOAD:
                raise BadRequest("the upload is larger than 2 GiB", hint="use `lyra import PATH` instead")
            received.check()  # a forget stopped it: keep nothing of it
            received.file.write(chunk)
        received.file.flush()
        if size == 0:
            raise BadRequest("the upload is empty", hint="choose the export file again")
        uploads.begin_import(received)  # refused if a forget stopped it while it was uploading
        into = Into(you.id, you.store, you.models.embed, release=you.hold())
        job = state.imports.start(received, filename, format, into)
    except BaseException:
        uploads.end(received)
        raise
    return {"job": job.id}


@router.get("/import/{job_id}")
async def import_status(job_id: str, request: Request, you: AsPerson) -> dict[str, Any]:
    return asdict(_job(request, you, job_id))


@router.get("/import/{job_id}/events")
async def import_events(job_id: str, request: Request, you: AsPerson) -> EventSourceResponse:
    job = _job(request, you, job_id)

    async def stream() -> AsyncIterator[dict[str, str]]:
        last = None
        while not await request.is_disconnected():
            now = (job.status, job.done, job.total)
            if now != last:
                last = now
                yield {"event": "progress" if job.status == "running" else job.status, "data": json.dumps(asdict(job))}
            if job.status != "running":
                return
            await asyncio.sleep(POLL_S)

    return EventSourceResponse(stream(), ping=15)


@router.get("/export")
async def export(you: AsPerson) -> Response:
    """Every session (JSON Lines) and the derived memory (JSON), as one zip: `lyra import` reads it back."""
    store = you.store

    def build() -> bytes:
        sessions = io.StringIO()
        write_sessions(store, sessions)
        memory = memory_json(store)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(SESSIONS_FILE, sessions.getvalue())
            archive.writestr(MEMORY_FILE, memory)
        return buffer.getvalue()

    body = await run_in_threadpool(build)
    name = f"lyra-export-{datetime.now():%Y%m%d-%H%M}.zip"
    return Response(body, media_type="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@router.get("/backup")
async def download_backup(you: AsPerson) -> StreamingResponse:
    """A consistent copy of the database, taken now (safe while chatting and dreaming). It is written in the
    data directory as a declared temporary and unlinked as soon as it is open (``transfer/backup.py``), so no
    copy of the memory stays on disk behind the download, however the download ends; a server killed while it
    is written leaves it to the recovery step at the next open."""
    store = you.store
    copy = await run_in_threadpool(backup_file, store)
    size = os.fstat(copy.fileno()).st_size
    name = f"lyra-backup-{datetime.now():%Y%m%d-%H%M}.db"

    def chunks() -> Iterator[bytes]:
        with copy:
            while block := copy.read(CHUNK):
                yield block

    return StreamingResponse(chunks(), media_type="application/vnd.sqlite3",
                             headers={"Content-Disposition": f'attachment; filename="{name}"',
                                      "Content-Length": str(size)})


def _job(request: Request, you: PersonRuntime, job_id: str) -> ImportJob:
    job = app_state(request).imports.jobs.get(job_id)
    if job is None or job.person != you.id:  # another person's import: not theirs to see
        raise NotFound(f"no import {job_id}", hint="the id comes from PUT /api/import; jobs live until a restart")
    return job
