"""``POST /api/forget``: the same forget as ``lyra forget``, by session, date or text, with a dry run.

It returns once the forgotten text is gone from the database file, the WAL,
the full-text segments, the index snapshots and the uploads waiting to be
imported (an import running here stops first); it works in short
transactions, so chat goes on meanwhile.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from ...errors import BadRequest
from ...store.forget.plan import ForgetPlan, plan_forget
from ...transfer.timestamps import time_bound
from ..deps import AsPerson
from ..params import RowId

router = APIRouter(prefix="/api")
FORGETTABLE = ("fact",)  # memories named by id (turns: exchange_ids; a summary or digest: its DELETE, which also
# keeps the dream from writing it again)


class ForgetRequest(BaseModel):
    sessions: list[RowId | str] = Field(default_factory=list, max_length=10_000,
                                      description="conversations: a number is an id; a text is resolved like "
                                                  "`lyra forget --session` (#id, id, name, export id) and refused "
                                                  "when it names more than one")
    before: str | None = Field(None, max_length=64, description="turns before this UTC ISO date or time")
    matching: str | None = Field(None, min_length=1, max_length=4000, description="turns containing this text")
    exchange_ids: list[RowId] = Field(default_factory=list, max_length=10_000,
                                    description="turns by id (with their other versions: a regenerated reply's)")
    memories: dict[str, list[RowId]] = Field(default_factory=dict, max_length=16,
                                             description="memories by kind and id (facts: {\"fact\": [id]}), with "
                                                         "what was built on them")
    dry_run: bool = False


@router.post("/forget")
def forget_route(body: ForgetRequest, you: AsPerson) -> dict[str, Any]:
    if not (body.sessions or body.before or body.matching or body.exchange_ids or any(body.memories.values())):
        raise BadRequest("say what to forget", hint="give sessions, before, matching, exchange_ids or memories")
    wrong = sorted(set(body.memories) - set(FORGETTABLE))
    if wrong:
        raise BadRequest(f"memories of kind {', '.join(map(repr, wrong))} cannot be forgotten by id",
                         hint=f"kinds: {', '.join(FORGETTABLE)}; turns go by exchange_ids")
    if not body.dry_run:  # an import stops first, so what it brought is planned for too (store/files/uploads.py)
        you.store.uploads.settle()
    before = time_bound(body.before, "before")  # the store's UTC text, as `lyra forget --before` writes it
    sessions = [f"#{ref}" if isinstance(ref, int) else ref for ref in body.sessions]
    plan: ForgetPlan = plan_forget(you.store, sessions=sessions, before=before, matching=body.matching,
                                   exchange_ids=body.exchange_ids, memories=body.memories)
    out: dict[str, Any] = {"sessions": plan.session_ids, "turns": len(plan.exchange_ids),
                           "memories": {k: len(v) for k, v in plan.memories.items()}, "renamed": len(plan.renamed),
                           "logs": plan.logs}
    if body.dry_run or (plan.empty and not plan.matching):
        return {**out, "forgotten": None}
    done = you.memory.forget_plan(plan)
    return {**out, "forgotten": dataclasses.asdict(done)}
