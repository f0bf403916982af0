"""``/api/kinds``: the kinds of memory as the page names them, from the registry (``store/kinds.py``), and the
model roles (``roles.py``), so the page lists neither by hand."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from ...roles import ROLES
from ...store.kinds import KINDS

router = APIRouter()


@router.get("/api/kinds")
async def kinds() -> dict[str, Any]:
    """The kinds of memory as a person reads them (the registry's labels), and which ones search finds; the
    model roles in the order Settings shows them."""
    return {"kinds": [{"name": k.name, "label": k.label[0], "plural": k.label[1], "searchable": k.searchable}
                      for k in KINDS.values() if k.node or k.name == "session"],
            "roles": [{"role": role, "label": info.label, "what": info.what, "same": info.same, "off": info.off}
                      for role, info in ROLES.items()]}
