"""What a request gets when something fails that no ``LyraError`` foresaw: a clear JSON answer, never a crash.

The server keeps running whatever one request does. A ``LyraError`` keeps its own
message and status (the app's handler); anything else is logged with its
traceback and answered with a generic message in the same JSON shape, and a
stream that has already started ends with an ``error`` event instead of
stopping mid-air. A request the validator refuses is answered 422 even when it
carries text UTF-8 cannot encode (a lone surrogate), which FastAPI's own handler
could not echo back.

An unexpected failure must never reach the server: Starlette's own handler for
``Exception`` answers and then re-raises, and uvicorn closes the client's
kept-alive connection on it, so the client's next request fails.
``AnswerUnexpected`` answers it instead and the exception ends there.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import LyraError
from ..oserrors import storage_error

log = logging.getLogger(__name__)
HINT = "try again; if it keeps failing, the server's log has the details"


def describe_failure(exc: BaseException, doing: str) -> tuple[str, int]:
    """(message, status) for a failure of ``doing`` ("this turn", ...); logs what a user cannot act on."""
    named = storage_error(exc)  # a full disk, a read-only one...: its cause and what to do, not "try again"
    if named is not None:
        log.error("%s failed: %s", doing, named.message)
        return str(named), named.status_code
    if isinstance(exc, LyraError):
        return str(exc), exc.status_code
    log.error("unexpected failure of %s", doing, exc_info=exc)
    return f"the server failed on {doing} ({type(exc).__name__}); {HINT}", 500


def error_body(exc: LyraError) -> dict[str, dict[str, str | None]]:
    """The JSON answer of a ``LyraError``: what happened, its kind, and what to do."""
    return {"error": {"message": exc.message, "type": type(exc).__name__, "hint": exc.hint}}


def unexpected_response(method: str, path: str, exc: BaseException) -> JSONResponse:
    """The 500 answer to a request whose failure nothing foresaw (the details are in the server's log); a storage
    cause (``oserrors``) is answered as the ``LyraError`` it names, with its status (507 for a full disk)."""
    named = storage_error(exc)
    if named is not None:
        return JSONResponse(error_body(named), status_code=named.status_code)
    body: dict[str, Any] = {"error": {"message": f"the server failed on {method} {path} ({type(exc).__name__})",
                                      "type": "InternalError", "hint": HINT}}
    return JSONResponse(body, status_code=500)


class AnswerUnexpected:
    """ASGI middleware: any exception from the app is logged once and answered here, never re-raised.

    Installed outermost (just inside Starlette's own error middleware), so a failure in another
    middleware is answered too. Before the response has started the answer is the JSON 500; after,
    a second start would be a protocol error, so the response (a stream) is ended where it stands.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = ended = False

        async def tracked(message: Message) -> None:
            nonlocal started, ended
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                ended = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:  # the server goes on, and so does the client's connection
            method, path = scope.get("method", "?"), scope.get("path", "?")
            log.error("unexpected failure of %s %s%s", method, path, " mid-response" if started else "",
                      exc_info=exc)
            if not started:
                await unexpected_response(method, path, exc)(scope, receive, send)
            elif not ended:
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def install(app: FastAPI) -> None:
    """Handlers for a refused request body and for any exception no route caught."""

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        # ensure_ascii: the refused input is echoed, and it may hold a lone surrogate.
        body = json.dumps({"detail": jsonable_encoder(exc.errors())}, ensure_ascii=True, default=str)
        return Response(body, status_code=422, media_type="application/json")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Only what escapes ``AnswerUnexpected`` (a failure sending its own answer) comes here; Starlette
        # logs the traceback after this answer is sent (it re-raises to the server).
        return unexpected_response(request.method, request.url.path, exc)
