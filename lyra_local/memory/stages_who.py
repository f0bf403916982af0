"""Recall stages about who: turns said by the one a question is about (``Speaker``), and statements of what a
question asks of the person (``Statements``). Registered in ``stages.STAGES``."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from ..store import provenance
from ..store.recall_index import Filters
from .fusion import asks
from .keys import canonical_key
from .speakers import speaker_of, turns_of
from .stage_base import KeyQuestion, Search, Stage, is_turns

SPEAKER = re.compile(r"^([A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*)?):\s")
WORD = re.compile(r"[\w'’]+")
FIRST_PERSON = frozenset("i i'm i've i'd i'll we we've we're".split())
SECOND_PERSON = frozenset("you you've you're you'd you'll".split())
ASKING_COMPANION = re.compile(r"^\s*(?:do|can|could|would|will)\s+you\s+(?:remember|recall|know|tell me|say)\b",
                              re.IGNORECASE)


def named_speakers(question: str, turns: Sequence[dict[str, Any]],
                   called: Mapping[str, str] | None = None) -> tuple[set[str], str | None]:
    """Who a question is about: transcript speakers it names ("Name: ..."), a speaker by the name or nickname
    it is called (``called``: the question's words naming one, to its key, ``speakers.py``), or else the person
    or the companion by its pronouns.

    "When did Caroline go ..." is about Caroline's own turns; "I recommended a
    film, which?" about the user's; "What did you recommend to me?" about the
    companion's. "Do you remember ..." addresses the companion without being about it.
    """
    words = [w.lower().replace("’", "'") for w in WORD.findall(ASKING_COMPANION.sub("", question))]
    bare = {w[:-2] if w.endswith("'s") else w for w in words}
    names = {m.group(1).lower() for t in turns if (m := SPEAKER.match(t["content"]))}
    named = {n for n in names if n in bare or n.split()[0] in bare}
    if named:
        return named, None
    sides = set((called or {}).values())
    if len(sides) == 1:
        return set(), sides.pop()
    for w in words:  # the first subject pronoun decides
        if w in FIRST_PERSON:
            return set(), "user"
        if w in SECOND_PERSON:
            return set(), "assistant"
    return set(), "user" if {"my", "me", "mine", "myself"} & bare else None


class Speaker(Stage):
    """Turns said by the one the question is about rank higher than turns said to them."""

    name = "speaker"

    def applies(self, s: Search) -> bool:
        return is_turns(s) and s.query.mode == "hybrid"

    def score(self, s: Search) -> None:
        rows = s.rows(list(s.pool))
        names, role = named_speakers(s.query.text, list(rows.values()), s.named)
        s.speakers |= {part for name in names for part in name.split()}
        if not names and role is None:
            return
        raw = {}
        for i, row in rows.items():
            m = SPEAKER.match(row["content"])
            said_by = m.group(1).lower() if m else None
            by_them = said_by in names if names else role is not None and said(row, role) and said_by is None
            raw[i] = 1.0 if by_them else 0.0
        s.raw[self.name] = raw



class Statements(Stage):
    """A question about the person ("what is my job?") is answered by a statement ("i teach chemistry in leeds")
    that shares neither its words nor its vector's neighbourhood: when the question is close to a profile key's
    asks (``questions.py``), the key's statements search the turns of the one it is about, and a turn gains as
    much as it is close to them. The source turn of the profile's fact for that key is a candidate too.

    A turn at least ``stated_min`` close is marked as brought by this stage (a search shows it as a match).
    """

    name, scaling = "statement", "peak"

    def applies(self, s: Search) -> bool:
        return is_turns(s) and s.query.mode == "hybrid" and s.vector is not None and s.keys is not None

    def gather(self, s: Search) -> None:
        assert s.vector is not None and s.model is not None and s.keys is not None
        asked = s.keys.asked(s.vector, s.tuning.asked_min)
        if asked is None:
            return
        names, role = self.subject(s)
        narrowed = s.filters if role is None else s.filters.said_by(*turns_of(role))
        near = {i for says in asked.says for i, sim in s.index.dense(s.model, says, narrowed,
                                                                    s.tuning.statement_candidates)
                if sim >= s.tuning.stated_min}
        found = [i for i, row in s.rows(sorted(near)).items() if states(row, names, role)]
        told = self.fact_turns(s, asked.key, narrowed)
        s.add(self.name, [*found, *told])
        s.key_question = KeyQuestion(asked, frozenset(names), role, frozenset(told))

    def score(self, s: Search) -> None:
        q = s.key_question
        if q is None:
            return
        rows = s.rows(list(s.pool))
        vectors = s.vectors([i for i, row in rows.items() if states(row, q.names, q.role)])
        ids = list(vectors)
        closeness = q.asked.stated(np.stack([vectors[i] for i in ids])).tolist() if ids else []
        stated = dict(zip(ids, closeness, strict=True))
        top = max(stated.values(), default=1.0)
        for i in q.told:  # the turn the profile's fact was read from: as close as the closest
            stated[i] = max(top, stated.get(i, 0.0))
        for i, value in stated.items():
            if value >= s.tuning.stated_min:
                s.pool.setdefault(i, set()).add(self.name)
        s.raw[self.name] = {i: max(0.0, value) for i, value in stated.items()}

    @staticmethod
    def subject(s: Search) -> tuple[set[str], str | None]:
        """Whose turns answer: the speakers the question names (their side, when they are all on one), the side
        it is about, or else the person's own (a profile key is theirs)."""
        rows = s.rows(list(s.pool))
        names, role = named_speakers(s.query.text, list(rows.values()), s.named)
        if not names:
            return set(), role or "user"
        sides = {speaker_of(row["role"], row.get("author")) for row in rows.values()
                 if (m := SPEAKER.match(row["content"])) and m.group(1).lower() in names}
        return names, sides.pop() if len(sides) == 1 else None

    TOLD_MAX = 3

    @classmethod
    def fact_turns(cls, s: Search, key: str, narrowed: Filters) -> list[int]:
        """The turns that say the profile's current facts of ``key``: a dream's fact names the turn it was read
        from. One older than that record is shown with its whole conversation: no candidate, more than
        ``TOLD_MAX`` turns."""
        store = s.index.store
        turns = []
        for fact in store.derived.profile():
            if canonical_key(fact.key) == key:
                behind = provenance.turns_behind(store.conn(), "fact", fact.id)
                turns.extend(behind if len(behind) <= cls.TOLD_MAX else [])
        return s.index.passing(narrowed, list(dict.fromkeys(turns)))


def states(row: Mapping[str, Any], names: Collection[str], role: str | None) -> bool:
    """Whether a turn may state something of the one a question is about: said by one of ``names`` (a
    transcript's "Name: ..." label) or, naming none, by ``role``, and not asking (a turn that asks "what can
    you do?" states nothing)."""
    if asks(row["content"]):
        return False
    if names:
        m = SPEAKER.match(row["content"])
        return m is not None and m.group(1).lower() in names
    return role is None or said(row, role)


def said(row: Mapping[str, Any], speaker: str) -> bool:
    """Whether a turn's row was said by the speaker of this key (``speakers.py``)."""
    return speaker_of(row["role"], row.get("author")) == speaker


