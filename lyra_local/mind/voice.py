"""The companion's own voice: checks that what Lyra writes about itself is neither the person's words nor cut off.

The self-narrative, the reflections and an abstractive arc are written in the
companion's mouth. A small model asked to reflect on what a person said often
copies them ("I'm thinking of moving from Leeds to Edinburgh in September"
came back as Lyra's self-narrative), or stops where its token or length limit
falls ("keep close," ending on a comma). Both are refused here, and the caller
keeps the previous state and says so. Pure functions: text in, verdict out;
no store, no model. This module never rewrites a text, it only judges it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

RUN = 6  # words in a row shared with the person's messages that make a text theirs, not the companion's
COPIED = "copied"  # a reason: the draft copied a run of the person's words
CUT = "cut"  # a reason: the draft stops mid-clause

_APOSTROPHES = re.compile(r"['’‘`]")
_WORD = re.compile(r"[^\W_]+")
_END = re.compile(r"[.!?…]+[\"'”’)\]]*$")
# Words a finished sentence does not end on: articles, conjunctions, prepositions, determiners and auxiliaries.
_OPEN_ENDED = frozenset("""a an the and or but nor so yet because although though whereas while if unless until
than that which who whom whose where when whether as of to in on at for with from by about into onto over under
between through after before during without within towards toward upon across against among around behind beyond
like via my your his her our their its this these those is am are was were be been being have has had do does
did will would can could shall should may might must not very i we they he she""".split())
# After a sentence's final stop, only these make it plainly unfinished ("and the." is not a sentence).
_NEVER_LAST = frozenset("a an the and or but nor my your our their".split())


def words(text: str) -> list[str]:
    """Lower-case words without punctuation or apostrophes: "I'm" and "im" are one word, as people type it."""
    return _WORD.findall(_APOSTROPHES.sub("", text.casefold()))


def runs(texts: Iterable[str], n: int = RUN) -> frozenset[tuple[str, ...]]:
    """Every run of ``n`` words inside one text (a run never spans two messages)."""
    out: set[tuple[str, ...]] = set()
    for text in texts:
        said = words(text)
        out.update(tuple(said[i:i + n]) for i in range(len(said) - n + 1))
    return frozenset(out)


def copied_run(text: str, said: frozenset[tuple[str, ...]], n: int = RUN) -> str | None:
    """The first run of ``n`` words of ``text`` found in ``said`` (from ``runs``), as words; None if none."""
    mine = words(text)
    for i in range(len(mine) - n + 1):
        if tuple(mine[i:i + n]) in said:
            return " ".join(mine[i:i + n])
    return None


def cut_mid_clause(text: str, limit: int | None = None) -> bool:
    """Whether ``text`` stops mid-clause: on a comma or dash, on a word no sentence ends on, with a quote or
    bracket left open, or with no final stop at the length limit it was generated under (``limit``)."""
    text = text.strip()
    if not text:
        return False
    if text.count('"') % 2 or text.count("“") != text.count("”") or text.count("(") != text.count(")"):
        return True
    said = words(text)
    last = said[-1] if said else ""
    if _END.search(text):
        return last in _NEVER_LAST
    if text[-1] in ",;:-–—/&":
        return True
    if limit is not None and len(text) >= limit - 2:
        return True
    return last in _OPEN_ENDED


@dataclass(frozen=True)
class Refusal:
    """One field of a draft refused, and why (``COPIED`` or ``CUT``); never the text itself, for the log."""

    field: str
    reason: str


def judge(text: str, said: frozenset[tuple[str, ...]], limit: int | None = None) -> str | None:
    """Why ``text`` cannot be the companion's own words (``COPIED`` first), or None if it can."""
    if copied_run(text, said) is not None:
        return COPIED
    if cut_mid_clause(text, limit):
        return CUT
    return None


def keep_own_voice(state: dict[str, Any], previous: Mapping[str, Any], said: frozenset[tuple[str, ...]],
                   limits: Mapping[str, int] | None = None) -> list[Refusal]:
    """Refuse the self-narrative and reflections of ``state`` that are not the companion's own (in place).

    A refused self-narrative is replaced by the previous one; refused reflections are dropped, and if none
    of the draft's are left the previous ones stay. What is kept from before is judged too, so a state
    written before these checks does not carry the person's words on. Returns what was refused.
    """
    limits = limits or {}
    refused: list[Refusal] = []
    narrative = str(state.get("self_narrative") or "")
    reason = judge(narrative, said, limits.get("self_narrative")) if narrative else None
    if reason is not None:
        refused.append(Refusal("self_narrative", reason))
        before = str(previous.get("self_narrative") or "")
        state["self_narrative"] = before if before and judge(before, said) is None else ""
    drafted = [r for r in state.get("reflections") or [] if isinstance(r, str)]
    kept = []
    for reflection in drafted:
        reason = judge(reflection, said, limits.get("reflections"))
        if reason is None:
            kept.append(reflection)
        else:
            refused.append(Refusal("reflections", reason))
    if drafted and not kept:
        kept = [r for r in previous.get("reflections") or [] if isinstance(r, str) and judge(r, said) is None]
    state["reflections"] = kept
    return refused


def reasons(refused: Sequence[Refusal]) -> list[str]:
    """The distinct reasons, in a stable order, for the log."""
    return [r for r in (COPIED, CUT) if any(x.reason == r for x in refused)]
