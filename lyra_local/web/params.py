"""The integers a route takes (ids, page sizes, offsets, token counts), each bounded once for every route.

SQLite stores a 64-bit signed integer: an id or a ``LIMIT``/``OFFSET`` past it
cannot even be bound (``OverflowError``), so a request carrying one failed
with a 500. Annotated with these types, in a path, a query or a body model,
such a number is refused by validation (a 422 naming the parameter) before
any route runs; an id in range that names nothing is the route's 404. The
bounds are ``annotated_types`` constraints, which pydantic applies wherever
the type appears (FastAPI's own ``Path``/``Query`` would fit one place only).
"""

from __future__ import annotations

from typing import Annotated

from annotated_types import Interval
from pydantic import BaseModel, Field

from ..store.db import MAX_INTEGER

MAX_ROW_ID = MAX_INTEGER  # SQLite's largest integer
MAX_PAGE = 100_000  # rows one request may ask for
MAX_TOKENS = 2**31 - 1  # llama.cpp counts tokens to generate in a 32-bit int

RowId = Annotated[int, Interval(ge=1, le=MAX_ROW_ID)]
"""An id of a stored row (a session, a turn, a digest, a world version...): SQLite's ids start at 1."""

EventId = Annotated[int, Interval(ge=0, le=MAX_ROW_ID)]
"""A position in an id sequence to read after: 0 is before the first row."""

Limit = Annotated[int, Interval(ge=1, le=MAX_PAGE)]
"""How many rows to return."""

Offset = Annotated[int, Interval(ge=0, le=MAX_ROW_ID)]
"""How many rows to skip."""

Tokens = Annotated[int, Interval(ge=1, le=MAX_TOKENS)]
"""A number of tokens to generate."""

Seed = Annotated[int, Interval(ge=-(2**63), le=2**63 - 1)]
"""A sampling seed: any 64-bit integer, as OpenAI's API takes it."""


class TextEdit(BaseModel):
    """A derived memory's text as the person rewrote it (a gist, a digest, the narrative)."""

    content: str = Field(min_length=1, max_length=20_000)
