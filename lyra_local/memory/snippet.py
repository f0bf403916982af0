"""What a search shows of a memory: a window of its text around the first word that matched, and the words
that matched marked.

Pure functions: a text and the query in, pieces of text out, each saying whether it matched. The browser
marks the matched pieces with DOM nodes; nothing here is HTML, and no offset has to mean the same in
Python's code points and JavaScript's UTF-16 units.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fusion import query_words

SNIPPET_CHARS = 280  # a longer text is cut to about this many characters around its first match
LEAD_CHARS = 60  # of them, at most this many before the match
_WORD = re.compile(r"\w[\w'’]*")
_SUFFIXES = ("ing", "ed", "es", "s")


@dataclass(frozen=True)
class Piece:
    text: str
    match: bool


def _stem(word: str) -> str:
    """A word without a common English ending, close to what full-text search (Porter) matches on."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def _matches(word: str, asked: list[str]) -> bool:
    word = word.lower().replace("’", "'")
    return any(word == a or (len(a) >= 3 and word.startswith(a)) or _stem(word) == _stem(a) for a in asked)


def matched_spans(text: str, query: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` spans of ``text``'s words that match a word of ``query`` (a prefix, or the same stem)."""
    asked = [w.replace("’", "'") for w in query_words(query)]
    return [m.span() for m in _WORD.finditer(text) if asked and _matches(m.group(), asked)]


def window(text: str, first: int, size: int = SNIPPET_CHARS, lead: int = LEAD_CHARS) -> tuple[int, int]:
    """Where to cut ``text`` to about ``size`` characters showing position ``first``: at spaces where it can."""
    if len(text) <= size:
        return 0, len(text)
    start = max(0, min(first - lead, len(text) - size))
    if start > 0:
        space = text.find(" ", start, first)
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + size)
    if end < len(text):
        space = text.rfind(" ", max(start, first) + 1, end)
        end = space if space > start else end
    return start, end


def snippet(text: str, query: str, size: int = SNIPPET_CHARS) -> list[Piece]:
    """``text`` cut around its first match (with "…" where it was cut), in pieces that did or did not match."""
    spans = matched_spans(text, query)
    start, end = window(text, spans[0][0] if spans else 0, size)
    pieces = [Piece("…", False)] if start > 0 else []
    at = start
    for a, b in spans:
        if a < start or b > end:
            continue
        if a > at:
            pieces.append(Piece(text[at:a], False))
        pieces.append(Piece(text[a:b], True))
        at = b
    if end > at:
        pieces.append(Piece(text[at:end], False))
    if end < len(text):
        pieces.append(Piece("…", False))
    return pieces
