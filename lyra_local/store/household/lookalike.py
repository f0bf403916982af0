"""Names that look alike: Unicode TR39 skeletons, so that "Аda" (a Cyrillic А) cannot join beside "Ada".

``name_key`` (``household.py``) makes "Kit", " KIT " and fullwidth "ＫＩＴ" one
person; it leaves "Аda" and "Ada" two, and a household memory version "by Аda"
would read as Ada's. A name whose skeleton another person's name has is
refused when a person is added or renamed.

The skeleton follows TR39 section 4: NFD, each character replaced by the one
that stands for everything it can be confused with, NFD again; taken of the
name as written (after NFKC) and of its case-folded form, as ``name_key``
compares. Which characters are
confusable is Unicode's confusables data as the ``confusable-homoglyphs``
distribution ships it (a JSON file of homoglyph groups, read once, never its
code); a group stands for itself by its smallest member, so the stand-in of
"а", "ɑ" and "α" is "a".
"""

from __future__ import annotations

import functools
import json
import unicodedata
from importlib.resources import files

DATA_PACKAGE = "confusable-homoglyphs"


@functools.cache
def _stand_ins() -> dict[str, str]:
    """Each confusable character -> the smallest character of its group (groups joined where they meet)."""
    groups: dict[str, list[dict[str, str]]] = json.loads(
        (files("confusable_homoglyphs") / "confusables.json").read_text(encoding="utf-8"))
    parent: dict[str, str] = {}

    def root(c: str) -> str:
        while parent.setdefault(c, c) != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for char, glyphs in groups.items():
        if len(char) != 1:
            continue
        for glyph in glyphs:
            if len(glyph["c"]) == 1:
                a, b = root(char), root(glyph["c"])
                if a != b:
                    parent[max(a, b)] = min(a, b)
    return {c: root(c) for c in parent if root(c) != c}


def skeletons(name: str) -> tuple[str, str]:
    """Two forms of ``name``: as written and case folded. Two names look alike when either form is the same
    ("Аda" and "Ada"; "CIeo" with a capital I and "Cleo"; "аda" and "ADA" once folded)."""
    written = unicodedata.normalize("NFKC", name).strip()
    return _mapped(written), _mapped(written.casefold())


def look_alike(a: str, b: str) -> bool:
    return any(x == y for x, y in zip(skeletons(a), skeletons(b), strict=True))


def _mapped(text: str) -> str:
    stand_ins = _stand_ins()
    return unicodedata.normalize("NFD", "".join(stand_ins.get(c, c) for c in unicodedata.normalize("NFD", text)))
