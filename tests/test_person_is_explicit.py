"""No route and no background job reaches a memory but through a person it was handed or named.

A request's person is a FastAPI dependency (``web/deps.py``: ``AsPerson``, built from what the login
middleware found); background work takes its person as an argument. Nothing carries "the current person" in
hidden state, so a thread that lost its request's context has nobody's memory to fall back on, the owner's
least of all. Checked three ways: the routes' declared dependencies, the source (what is gone stays gone), and
what asking for "the current person" outside a request does.
"""

from __future__ import annotations

import ast
import inspect
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.requests import Request

import lyra_local
from lyra_local.llm.registry import Models
from lyra_local.web import create_app
from lyra_local.web.auth import Unbound
from lyra_local.web.deps import person_runtime
from lyra_local.web.routes import ROUTERS

from .fakes import FakeChatModel, FakeEmbedder

PACKAGE = Path(lyra_local.__file__).parent
ROUTES = PACKAGE / "web" / "routes"
# Routes that act for nobody in particular, or for the box rather than a person: none of them has a person's
# runtime to reach a memory with. A new route is not added here unless it reads no one's memory.
NO_PERSON = {
    ("GET", "/health"), ("GET", "/"), ("GET", "/static/{name}"),  # liveness, the page and its assets
    ("GET", "/api/auth/state"), ("POST", "/api/auth/login"), ("POST", "/api/auth/logout"),  # logging in and out
    ("GET", "/api/kinds"), ("GET", "/api/settings"),  # the registry's kinds, the configuration
    ("GET", "/api/models/files"), ("GET", "/api/models/offload"), ("GET", "/api/models/catalog"),  # models_dir
    ("GET", "/api/models/first-run"), ("GET", "/api/models/pulls"), ("GET", "/api/models/pulls/{job_id}"),
}
# Names that would carry the person, the request or the generation of models in hidden state: none may come back.
GONE = {"PERSON", "IN_REQUEST", "BY_TOKEN", "LEASED", "bound_person", "_holders_person"}
# The only context variables left: which call into a model runs in the background (llm/base.py) and whose turn
# it is at a shared model (llm/fair.py). Both order work at a model; neither chooses whose memory is read.
CONTEXT_VARIABLES = {"_BACKGROUND", "ASKER"}


def dependencies(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from dependencies(sub)


def routes() -> Iterator[APIRoute]:
    for router in ROUTERS:
        for route in router.routes:
            assert isinstance(route, APIRoute)
            yield route


def test_every_route_but_the_few_that_read_no_memory_is_handed_its_person() -> None:
    without = {(method, route.path) for route in routes() for method in route.methods or ()
               if person_runtime not in set(dependencies(route.dependant))}
    assert without == NO_PERSON, (
        "a route that reads or writes anyone's memory takes `you: AsPerson` (web/deps.py); one that reads none is "
        f"listed in NO_PERSON. Not handed a person: {sorted(without - NO_PERSON)}; "
        f"handed one now: {sorted(NO_PERSON - without)}")


def test_the_routes_that_read_no_memory_mention_no_store() -> None:
    reaching = re.compile(r"(?<!settings)\.(store|memory|companion|runtime_of|store_of|held)\b")
    for route in routes():
        if any((method, route.path) in NO_PERSON for method in route.methods or ()):
            assert not reaching.search(inspect.getsource(route.endpoint)), route.path


def python_files() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"))


def test_no_hidden_state_carries_the_person() -> None:
    found = []
    for path, tree in python_files():
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
            if name in GONE and path.is_relative_to(PACKAGE / "web"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {name}")  # type: ignore[attr-defined]
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == \
                    "ContextVar":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} a ContextVar")
    allowed = [f for f in found if f.endswith("a ContextVar") and ("llm/base.py" in f or "llm/fair.py" in f)]
    assert sorted(set(found) - set(allowed)) == []
    assert len(allowed) == len(CONTEXT_VARIABLES)


def test_no_route_reaches_a_store_through_the_app_state() -> None:
    """``app_state(request).store`` (the person "of the request", from hidden state) is gone; a route that
    chooses whose store to open itself (``store_of``) is one that checked first that it may (the owner's
    backup of everyone)."""
    chosen_here = {"household.py"}
    for path in sorted(ROUTES.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("store", "memory", "companion", "runtime"):
                value = node.value
                from_state = (isinstance(value, ast.Call) and getattr(value.func, "id", "") == "app_state") or \
                    (isinstance(value, ast.Name) and value.id == "state")
                assert not from_state, f"{path.name}:{node.lineno} reaches .{node.attr} of the app state"
            if isinstance(node, ast.Attribute) and node.attr in ("store_of", "runtime_of", "person_runtime",
                                                                 "owner_runtime"):
                assert path.name in chosen_here, f"{path.name}:{node.lineno} opens a memory of its choosing"


@pytest.fixture
def app(make_settings: Any) -> Iterator[FastAPI]:
    settings = make_settings('[companion]\nuser_name = "Ada"\n')
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(), embed=FakeEmbedder()))
    try:
        yield app
    finally:
        app.state.lyra.close()


def on_a_thread(job: Callable[[], object]) -> BaseException | None:
    failed: list[BaseException] = []

    def run() -> None:
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            failed.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    return failed[0] if failed else None


def test_asking_the_app_for_the_current_persons_memory_fails_loudly_on_any_thread(app: FastAPI) -> None:
    """Even alone with the owner, on the thread that built the app: whose memory is always said."""
    state = app.state.lyra
    for accessor in ("store", "memory", "companion"):
        with pytest.raises(Unbound):
            getattr(state, accessor)
        assert isinstance(on_a_thread(lambda a=accessor: getattr(state, a)), Unbound)  # type: ignore[misc]
    owner = state.household.owner()
    assert state.owner_runtime().store is state.person_runtime(owner).store  # named, it is reached


def test_a_request_bound_to_nobody_has_no_person_to_hand_a_route(app: FastAPI) -> None:
    request = Request({"type": "http", "app": app, "method": "GET", "path": "/api/auth/state", "headers": []})
    with pytest.raises(Unbound):
        person_runtime(request)
