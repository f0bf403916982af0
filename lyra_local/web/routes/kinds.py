"""``/api/kinds``: the kinds of memory as the page names them, from the registry (``store/kinds.py``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ...store.kinds import KINDS

router = APIRouter()


@router.get("/api/kinds")
async def kinds() -> dict[str, Any]:
    """The kinds of memory as a person reads them (the registry's labels), and which ones search finds."""
    return {"kinds": [{"name": k.name, "label": k.label[0], "plural": k.label[1], "searchable": k.searchable}
                      for k in KINDS.values() if k.node or k.name == "session"]}
