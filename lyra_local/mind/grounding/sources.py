"""The dream's grounding, wired to the store: each kind's sources, the checks, and the floor.

``Ground`` is built per unit of work (it uses that unit's scribe for token
counts and names). It decides what may be written and how (``abstractive``:
the model's draft, checked; ``extractive``: the sources' own sentences) and
reports each rejection as the names of the failed checks, for the log. The
floor quotes each sentence under its author and the day it was said: the
person's under their name, a reply under the companion's, or under the
assistant's it was imported from (``authors``), never reworded. It never
writes: the ``Dreamer`` does, in one transaction per memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timezone, tzinfo
from typing import Any

import numpy as np
import numpy.typing as npt

from ...authors import IMPORTED_FROM, author_of, imported_author
from ...store import Exchange, Store
from ...store.db import from_iso
from ...store.recall_index import RecallIndex
from ..facts.floor import proposals as floor_proposals
from ..facts.gate import KeyFit, Proposal, Turn, gate
from ..facts.statement import Parse
from . import checks as grounding
from .checks import Quote, Said, Source, Verdict

COMPANION = 0.5  # a reply's sentences weigh less than the person's own: the floor is about the person
NAME_SESSIONS, NAME_TURNS = 20, 3  # where a person's name is looked for before the profile has it
ONE_PIECE = 3  # the extract of a roll-up over one piece: its three most central sentences
KEEP = 0.5  # a summary keeps its supported sentences if at least half are; else the floor is written
MOODS = frozenset("""calm content happy glad cheerful curious hopeful grateful thoughtful reflective tired
sad worried anxious restless excited proud relaxed peaceful focused quiet warm playful concerned
determined inspired steady uncertain""".split())


@dataclass(frozen=True)
class Written:
    """What may be written: the text, how it was made, and the verdict on the model's draft (if any)."""

    text: str
    method: str
    verdict: Verdict | None = None


def when(turns: Sequence[Exchange], session_name: str, zone: tzinfo = timezone.utc) -> str:
    """The session's name and its first turn's date and time, in the ways a summary may write them."""
    if not turns:
        return session_name
    at = from_iso(turns[0].created_at).astimezone(zone)
    return (f"{session_name} {at:%Y-%m-%d} {grounding.day_of(at)} {at:%B} {at.day}, {at.year} {at:%A} "
            f"{at.hour % 12 or 12}:{at:%M} {at:%p} {at:%H:%M}")


class Ground:
    def __init__(self, store: Store, embed: Callable[[list[str]], npt.NDArray[np.float32]], model: str,
                 count: Callable[[str], int], names: dict[str, str], budget: int, *, parse: Parse | None = None,
                 fit: KeyFit | None = None) -> None:
        self.store = store
        self.parse = parse  # the English parse the profile's gate and floor read (``lyra_local/parser.py``)
        self.fit = fit or KeyFit(embed)
        self.embed = embed
        self.model = model
        self.count = count
        self.names = names
        self.budget = budget

    def _check(self, text: str, sources: Sequence[Source], keep: float = 1.0,
               not_speaking: Sequence[str] = ()) -> tuple[Verdict, str]:
        # A name the model is given is allowed unsaid only for someone who speaks in the sources: in an
        # imported talk between two people ("Caroline: ..."), the companion's name would put their words
        # in the wrong mouth. Roll-ups allow a name that their pieces say.
        speaking = {s.who for s in sources if s.who}
        names = [n for n in (self.names.get("user", ""), self.names.get("name", "")) if n in speaking]
        return grounding.check(text, sources, self.embed, budget=self.budget, count=self.count, names=names, keep=keep,
                               not_speaking=not_speaking)

    def replier(self, turn: Exchange) -> str:
        """Who wrote a reply: the assistant it was imported from, else the companion (``authors.author_of``:
        stored with the reply, so a reply the companion wrote in an imported conversation is the companion's)."""
        return author_of(turn, self.names.get("name", "the companion"))

    def person(self, turns: Sequence[Exchange]) -> str:
        """The person's name: configured or in the profile (``names``), else one they give in these turns or in
        the first turns of their recent conversations ("Hi! I'm Maya": the profile learns it only after the
        gists), else "the user"."""
        known = self.names.get("user", "")
        if known and known != "the user":
            return known
        speakers = {self.names.get("name", "").casefold()}

        def given(said: Sequence[Exchange]) -> str | None:
            if self.parse is None:
                return None
            own = [Turn(t.content, True) for t in said if t.role == "user"]
            named = [p for p in floor_proposals(own, self.parse) if p.key == "name"]
            kept = gate(named, own, parse=self.parse, fit=self.fit, names=speakers)
            return next((j.proposal.value for j in kept if j.kept), None)

        found = given(turns)
        for session in self.store.sessions.list(limit=NAME_SESSIONS) if found is None else ():
            found = given([t for t in self.store.exchanges.history(session.id) if t.role == "user"][:NAME_TURNS])
            if found:
                break
        return found or "the user"

    def _who(self, turn: Exchange) -> str:
        return self.names.get("user", "the user") if turn.role == "user" else self.replier(turn)

    def turn_sources(self, turns: Sequence[Exchange]) -> list[Source]:
        vectors = RecallIndex(self.store).vectors("exchange", self.model, [t.id for t in turns])
        return [Source(t.content, grounding.split_speaker(t.content)[0] or self._who(t), vectors.get(t.id))
                for t in turns]

    def floor(self, quotes: Sequence[Quote], most: int = grounding.FLOOR_QUOTES) -> str:
        return grounding.extractive(quotes, self.embed, budget=self.budget, count=self.count, most=most)

    def said(self, turns: Sequence[Exchange], zone: tzinfo = timezone.utc) -> list[Said]:
        """The turns as the floor reads them, each under its author and the day it was said (in ``zone``): the
        person's under their name, a reply under its author's (ChatGPT's for one imported from there), weighing
        less."""
        person = self.person(turns) if any(t.role == "user" and not grounding.split_speaker(t.content)[0]
                                           for t in turns) else "the user"

        def day(turn: Exchange) -> str:
            return grounding.day_of(from_iso(turn.created_at).astimezone(zone))

        return [Said(person, t.content, 1.0, day(t)) if t.role == "user" else
                Said(self.replier(t), t.content, COMPANION, day(t)) for t in turns if t.role in ("user", "assistant")]

    def gist(self, draft: str | None, turns: Sequence[Exchange], session_name: str = "",
             zone: tzinfo = timezone.utc) -> Written:
        """The model's gist if it passes every check, else the session's own most central sentences, quoted.

        The model is shown the session's name and date, so a gist may say them too. Over a conversation whose
        replies were imported, a draft naming the companion fails whole: the replies were never the companion's.
        """
        verdict = None
        if draft is not None:
            header = Source(when(turns, session_name, zone))
            companion = self.names.get("name", "")
            replies = [t for t in turns if t.role == "assistant"]
            imported = bool(replies) and all(imported_author(t) is not None for t in replies)
            verdict, kept = self._check(draft, [*self.turn_sources(turns), header], KEEP,
                                        not_speaking=[companion] if imported and companion else [])
            if verdict.ok:
                return Written(kept, "abstractive", verdict)
        return Written(self.floor(grounding.candidate_quotes(self.said(turns, zone))), "extractive", verdict)

    def rollup(self, draft: Callable[[], str], pieces: Sequence[tuple[str, str]], facts: Sequence[str] = ()
               ) -> Written:
        """A digest or an arc over (text, method) pieces: extractive over any extractive piece, else the checked
        draft, else extractive over the pieces' sentences. ``facts`` may be drawn on too, not quoted."""
        if any(method == "extractive" for _, method in pieces):
            return self.extract_of(pieces)
        verdict, kept = self._check(draft(), [Source(t) for t in [*(t for t, _ in pieces), *facts]], KEEP)
        if verdict.ok:
            return Written(kept, "abstractive", verdict)
        return self.extract_of(pieces, verdict)

    def extract_of(self, pieces: Sequence[tuple[str, str]], verdict: Verdict | None = None) -> Written:
        """The floor of a roll-up: the pieces' own sentences, their quotes quoted again as they were (the same
        sentence, author and day), a reply's weighing less. The extract of one piece keeps fewer of its sentences
        (``ONE_PIECE``): a day of one conversation reads shorter than the conversation's gist, not the same text
        again."""
        replies = {name: COMPANION for name in (self.names.get("name", "the companion"), *IMPORTED_FROM.values())}
        quotes = [q for n, (text, _) in enumerate(pieces) for q in grounding.quotes_of(text, n, replies)]
        most = ONE_PIECE if len(pieces) == 1 else grounding.FLOOR_QUOTES
        return Written(self.floor(quotes, most), "extractive", verdict)

    def facts(self, proposed: Sequence[Proposal], session_id: int, rejected: Mapping[str, int] | None = None
              ) -> tuple[list[tuple[str, str, int]], list[str]]:
        """The facts the person's own turns of that session say, each with the turn that says it (its source),
        and the failed check of each of the model's proposals dropped. The model's proposals come first; the
        parse floor's fill the keys they left empty. A key in ``rejected`` (key -> the session's last turn id when
        the person said its fact was wrong) is learnt only from a later turn."""
        if self.parse is None:
            raise ValueError("the profile's gate needs the English parse")
        history = self.store.exchanges.history(session_id)
        turns = [Turn(t.content, t.role == "user") for t in history]
        speakers = {grounding.split_speaker(t.content)[0] or "" for t in history}
        names = {n.casefold() for n in (*speakers, self.names.get("user", ""), self.names.get("name", "")) if n}
        since = {key: next((n for n, t in enumerate(history) if t.id > basis), len(history))
                 for key, basis in (rejected or {}).items()}
        floor = floor_proposals(turns, self.parse)
        judged = gate([*proposed, *floor], turns, parse=self.parse, fit=self.fit, names=names, since=since)
        kept: dict[str, tuple[str, int]] = {}
        for verdict in judged:
            if verdict.kept and verdict.turn is not None:
                key, value = verdict.kept[0]
                kept.setdefault(key, (value, history[verdict.turn].id))
        failed = [j.failed for j in judged[:len(proposed)] if j.failed]
        return [(key, value, turn) for key, (value, turn) in kept.items()], failed

    def reflection(self, state: dict[str, Any], previous: dict[str, Any], sources: Sequence[str]) -> list[str]:
        """Keep only the grounded parts of a new self-state (in place); returns the failed checks."""
        failed = []
        if not isinstance(state.get("mood"), str) or state["mood"].strip().lower() not in MOODS:
            failed.append("mood_outside_vocabulary")
            state["mood"] = previous.get("mood", "calm")
        material = [Source(text) for text in sources if text]
        narrative = str(state.get("self_narrative", ""))
        if narrative and not self._check(narrative, material)[0].ok:
            failed.append("self_narrative_unsupported")
            state["self_narrative"] = previous.get("self_narrative", "")
        kept = [r for r in state.get("reflections", []) if isinstance(r, str) and self._check(r, material)[0].ok]
        if len(kept) != len(state.get("reflections", [])):
            failed.append("reflections_unsupported")
        state["reflections"] = kept
        return failed

    def world(self, text: str, sources: Sequence[str]) -> Verdict:
        """A world document is proposed whole or not at all: every sentence must hold."""
        return self._check(text, [Source(s) for s in sources if s])[0]
