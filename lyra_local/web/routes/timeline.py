"""``/api/timeline``: the Memory panel's digests, folded by month."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from ...memory.folded_timeline import timeline
from ..deps import AsPerson

router = APIRouter(prefix="/api")


@router.get("/timeline")
async def memory_timeline(you: AsPerson) -> dict[str, Any]:
    """The digests as the Memory panel shows them: months newest first, each with the days (and weeks) that had
    talk, and its entries, a period with one child shown as that child and each text once."""
    digests = await run_in_threadpool(you.store.derived.digests)
    return {"months": [{"month": m.month, "days": m.days, "weeks": m.weeks, "count": m.count,
                        "entries": [dataclasses.asdict(d) for d in m.entries]} for m in timeline(digests)]}
