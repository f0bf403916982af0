"""``/`` and ``/static``: the web UI, one static page (plain HTML/CSS/JS, no build step, nothing from a CDN).

The page and its assets are served with a strict Content-Security-Policy: no
inline script, no foreign origin, no plugins. Everything the page renders from
the memory goes in as text (``textContent``), never as HTML, so the policy is a
second wall, not the first.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, Response

STATIC = Path(__file__).parent.parent / "static"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
UI_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}

router = APIRouter()


@router.get("/", include_in_schema=False)
async def index() -> Response:
    return FileResponse(STATIC / "index.html", headers=UI_HEADERS)


@router.get("/static/{name}", include_in_schema=False)
async def asset(name: str) -> Response:
    """One flat folder of assets; a name can never reach outside it."""
    path = (STATIC / name).resolve()
    if path.parent != STATIC.resolve() or not path.is_file():
        return Response("not found", status_code=404)
    return FileResponse(path, headers={**UI_HEADERS, "Cache-Control": "no-cache"})
