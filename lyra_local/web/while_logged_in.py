"""An open stream lives only as long as the login or token it was opened with.

A response that streams (the live dream log, a chat's reply, an import's
progress, a download) would otherwise go on after "Log out", "Log out
everywhere", a password reset, a revoked token or the person's removal, telling
whoever holds the old connection what that person's memory is doing. Once a
response has started and is still going ``CHECK_S`` later, the credential it
was opened with is checked every ``CHECK_S``; when it no longer holds, the response
is cancelled (its work stops as on a client that hung up: a reply in flight is
stored as far as it got) and the body is ended where it stands. Whoever ended
the credential (this server, another process, ``lyra people reset``) need not
know the stream exists: the check reads ``household.db``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import anyio
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CHECK_S = 1.0


async def serve_while(app: ASGIApp, scope: Scope, receive: Receive, send: Send, holds: Callable[[], bool]) -> None:
    """Run ``app`` for this request; a response still streaming when ``holds()`` turns False is ended."""
    streaming = anyio.Event()
    finished = False
    ended_here = False

    async def watched(message: Message) -> None:
        nonlocal finished
        if message["type"] == "http.response.start":
            streaming.set()  # an SSE stream may send its first part only at its first ping
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            finished = True
        await send(message)

    failed: Exception | None = None
    async with anyio.create_task_group() as group:
        async def run() -> None:
            nonlocal failed
            try:
                await app(scope, receive, watched)
            except Exception as exc:  # raised as it is below, not inside the task group's ExceptionGroup
                failed = exc
            group.cancel_scope.cancel()  # done: the watch below has nothing left to watch

        async def watch() -> None:
            nonlocal ended_here
            await streaming.wait()
            await anyio.sleep(CHECK_S)  # an answer that is no stream is sent by then, and nothing is read
            while await run_in_threadpool(holds):
                await anyio.sleep(CHECK_S)
            ended_here = True
            group.cancel_scope.cancel()

        group.start_soon(run)
        group.start_soon(watch)
    if failed is not None:
        raise failed
    if ended_here and not finished:
        with contextlib.suppress(OSError):  # the client may have gone as well
            await send({"type": "http.response.body", "body": b"", "more_body": False})
