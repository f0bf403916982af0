"""The web layer's shape: one module per URL family, named after it, so the file that serves a URL is found
from the URL; and the size limits ``make lint`` does not measure (a file's lines, a function's lines)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path
from typing import Any

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from lyra_local.web import routes
from lyra_local.web.routes import ROUTERS

WEB = Path(routes.__file__).parent.parent
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 60


def family(path: str) -> str:
    """``/api/sessions/{id}/chat`` -> ``/api/sessions``; ``/v1/chat/completions`` -> ``/v1/chat``; ``/health``
    -> ``/health``; ``/`` -> ``/``."""
    parts = path.strip("/").split("/")
    if parts[0] in ("api", "v1") and len(parts) > 1:
        return f"/{parts[0]}/{parts[1]}"
    return "/" + parts[0]


def served() -> dict[str, set[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for router in ROUTERS:
        route: BaseRoute
        for route in router.routes:
            assert isinstance(route, APIRoute), route
            found[family(route.path)].add(route.endpoint.__module__)
    return found


def test_no_url_family_is_served_by_two_modules() -> None:
    split = {name: sorted(modules) for name, modules in served().items() if len(modules) > 1}
    assert split == {}, f"a URL family served from two modules (keep each in one module of web/routes/): {split}"


def test_every_route_is_in_web_routes() -> None:
    modules = {module for found in served().values() for module in found}
    assert all(m.startswith("lyra_local.web.routes.") for m in modules), modules
    assert {"/api/sessions", "/api/exchanges", "/api/world", "/api/household", "/v1/chat", "/health"} <= set(served())


def test_the_app_serves_exactly_the_routers_of_web_routes(make_settings: Any) -> None:
    from lyra_local.web import create_app

    app = create_app(make_settings())
    try:  # FastAPI keeps each included router whole (``original_router``) or copies its routes in
        included = {id(getattr(r, "original_router", None)) for r in app.routes} - {id(None)}
        copied = {(r.path, tuple(sorted(r.methods or ()))) for r in app.routes if isinstance(r, APIRoute)}
        listed = {(r.path, tuple(sorted(r.methods or ()))) for router in ROUTERS for r in router.routes
                  if isinstance(r, APIRoute)}
        assert included == {id(router) for router in ROUTERS} or copied == listed
    finally:
        app.state.lyra.close()


def test_web_files_and_functions_are_small() -> None:
    long_files, long_functions = [], []
    for path in sorted(WEB.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_FILE_LINES:
            long_files.append(path.name)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{path.relative_to(WEB)}:{node.name} ({length} lines)")
    assert long_files == [] and long_functions == []
