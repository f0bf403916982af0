"""The routes, one module per URL family, named after it: the module that serves a URL is found from the URL.

A family is the first path segment after ``/api/`` or ``/v1/`` (or the first segment of any other path);
``tests/test_web_routes.py`` fails when two modules serve one. Every route that reaches a person's memory
takes the person as a dependency (``web/deps.py``, ``AsPerson``).
"""

from __future__ import annotations

from fastapi import APIRouter

from . import (
    admin,
    auth,
    coordination,
    digests,
    dream,
    forget,
    household,
    kinds,
    me,
    models,
    narrative,
    pages,
    people,
    profile,
    recall,
    search,
    sessions,
    settings,
    sources,
    timeline,
    tokens,
    transfer,
    v1,
    world,
)
from . import self as self_state

ROUTERS: tuple[APIRouter, ...] = tuple(module.router for module in (
    admin, v1, auth, me, people, tokens, household, sessions, profile, digests, narrative, self_state, sources,
    dream, world, coordination, recall, search, timeline, forget, transfer, models, settings, kinds, pages,
))
