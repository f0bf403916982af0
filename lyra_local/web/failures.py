"""What a request gets when something fails that no ``LyraError`` foresaw: a clear JSON answer, never a crash.

The server keeps running whatever one request does. A ``LyraError`` keeps its own
message and status (the app's handler); anything else is logged with its
traceback and answered with a generic message in the same JSON shape, and a
stream that has already started ends with an ``error`` event instead of
stopping mid-air. A request the validator refuses is answered 422 even when it
carries text UTF-8 cannot encode (a lone surrogate), which FastAPI's own handler
could not echo back.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from ..errors import LyraError

log = logging.getLogger(__name__)
HINT = "try again; if it keeps failing, the server's log has the details"


def describe_failure(exc: BaseException, doing: str) -> tuple[str, int]:
    """(message, status) for a failure of ``doing`` ("this turn", ...); logs what a user cannot act on."""
    if isinstance(exc, LyraError):
        return str(exc), exc.status_code
    log.error("unexpected failure of %s", doing, exc_info=exc)
    return f"the server failed on {doing} ({type(exc).__name__}); {HINT}", 500


def install(app: FastAPI) -> None:
    """Handlers for a refused request body and for any exception no route caught."""

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        # ensure_ascii: the refused input is echoed, and it may hold a lone surrogate.
        body = json.dumps({"detail": jsonable_encoder(exc.errors())}, ensure_ascii=True, default=str)
        return Response(body, status_code=422, media_type="application/json")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Starlette logs the traceback after this answer is sent (it re-raises to the server).
        body: dict[str, Any] = {"error": {"message": f"the server failed on {request.method} {request.url.path} "
                                                     f"({type(exc).__name__})",
                                          "type": "InternalError", "hint": HINT}}
        return JSONResponse(body, status_code=500)
