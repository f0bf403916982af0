"""``/api/tokens``: one's personal API tokens (for the OpenAI route, `lyra mcp` and scripts)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from ..deps import AsPerson, app_state, not_by_token

router = APIRouter(prefix="/api")


class NewToken(BaseModel):
    name: str = Field("token", max_length=200)


@router.get("/tokens")
async def tokens(request: Request, you: AsPerson) -> dict[str, Any]:
    mine = await run_in_threadpool(app_state(request).household.tokens.of, you.id)
    return {"tokens": [_token(t) for t in mine]}


@router.post("/tokens", dependencies=[Depends(not_by_token)])
async def new_token(body: NewToken, request: Request, you: AsPerson) -> dict[str, Any]:
    """A token acting as this person for the OpenAI route, `lyra mcp` and scripts: shown now, never again."""
    token, raw = await run_in_threadpool(app_state(request).household.tokens.create, you.id, body.name)
    return {"token": _token(token), "secret": raw}


@router.delete("/tokens/{token_id}")  # a token may revoke itself: that only ever takes access away
async def revoke_token(token_id: int, request: Request, you: AsPerson) -> dict[str, Any]:
    await run_in_threadpool(app_state(request).household.tokens.revoke, you.id, token_id)
    return {}


def _token(token: Any) -> dict[str, Any]:
    return {"id": token.id, "name": token.name, "created_at": token.created_at, "last_used_at": token.last_used_at}
