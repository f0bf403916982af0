"""Text folded for matching what a person asks to forget: Unicode case folding and compatibility normalization.

"Forget Zörblax" must also forget ``ZÖRBLAX``, ``zörblax`` written with a
combining diaeresis, ``Москва`` for ``москва`` and ``Straße`` for ``STRASSE``:
both sides are NFKC-normalized, case-folded (full folding, not ``lower()``)
and normalized again, so a match never depends on how the text was typed.
Registered on every connection as the SQL functions ``lyra_fold`` and
``lyra_fold_json`` (the string values of a JSON document, folded), so the
store can scan any column that holds words. Pure functions.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any


def fold(text: str | None) -> str:
    """``text`` as forgetting compares it; ``''`` for NULL."""
    if not text:
        return ""
    if text.isascii():
        return text.lower()  # ASCII's full case folding is lower(); NFKC leaves it as it is
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def fold_json(document: str | None) -> str:
    """Every string of a JSON document (keys aside), folded and joined by newlines; the text as is if not JSON."""
    if not document:
        return ""
    try:
        value = json.loads(document)
    except ValueError:
        return fold(document)
    return "\n".join(fold(s) for s in _strings(value))


def _strings(value: Any) -> list[str]:
    out: list[str] = []
    stack = [value]
    while stack:  # iterative: a deeply nested document cannot exhaust the stack
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out
