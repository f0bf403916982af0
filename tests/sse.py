"""Reading server-sent events in tests: (event, data) pairs from the stream's lines."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def sse_events(lines: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    out, kind = [], None
    for line in lines:
        if line.startswith("event: "):
            kind = line[7:].strip()
        elif line.startswith("data: ") and kind:
            out.append((kind, json.loads(line[6:])))
            kind = None
    return out
