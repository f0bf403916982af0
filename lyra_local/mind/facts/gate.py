"""The profile's gate: a fact is kept only when the person's own words, quoted, say it.

A model proposes each fact with the exact words it drew on (a ``Proposal``:
key, value, quote: the "source grounding" of extraction libraries). The gate
checks what can be checked for any wording, in this order, and names the first
check a proposal fails:

- ``quote_not_found`` / ``quote_not_theirs``: the quote is verbatim (up to
  case, spacing and quote marks) in one of the person's own turns, outside a
  photo caption, a placeholder or a line quoting a message ("> ..."); words
  found only in a reply (the companion's, an imported assistant's) are not the
  person's;
- ``value_not_in_quote``: every content word of the value is in the quote;
- ``question``, ``negation``, ``hypothetical``, ``past``, ``plan``,
  ``taken_back``, ``someone_else`` (``statement.read``, from the dependency
  parse): the quote asserts the value of the person, now; "my sister is a
  nurse" is the sister's job, "moving to Leeds in September" a plan;
- ``value_is_a_speakers_name``: a name of one of the speakers is no one's job;
- ``key_does_not_fit``: the key fits by meaning: the embedding model puts the
  value's clause (or its possessive phrase and its nouns, "my cat" and "cat" for
  "my cat Miso", averaged: a name says nothing of the key) nearer the key's own
  statements (``memory/keys.py``) than ``FIT`` and within ``MARGIN`` of the
  nearest key. A key outside the vocabulary (a model's odd one, the floor's
  none) is the nearest key, when that one is clear;
- ``rejected_by_the_person``: the person said this key's fact was wrong, and
  no later turn says it anew.

Pure: text and callables in, verdicts out. ``FIT`` and ``MARGIN`` are
calibrated by ``scripts/eval_facts.py`` on facts built from LoCoMo's gold
observations (docs/benchmarks.md), conversations this project did not write.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ...memory.keys import BY_NAME, KEYS, canonical_key
from ..grounding.checks import split_speaker
from . import statement

FIT = 0.15  # the clause's cosine with the key's nearest statement must reach this
MARGIN = 0.10  # ... and be at most this far below the nearest key's
CLEAR = 0.35  # with no key in the vocabulary (the floor's, or a model's odd one), the nearest key needs this
GAP = 0.04  # ... and this lead over the second nearest: a clause between two keys is neither

Embed = Callable[[list[str]], npt.NDArray[np.float32]]
ASIDE = re.compile(r"\[[^\]]*\]")  # a photo's caption, a placeholder; reported speech is the parse's to tell


@dataclass(frozen=True)
class Proposal:
    """A fact as proposed: by a model (``kind`` empty), or by the parse floor with the kind of value it read
    (``memory/keys.py`` ``Key.kinds``), which only the keys taking that kind may hold."""

    key: str
    value: str
    quote: str
    kind: str = ""


@dataclass(frozen=True)
class Turn:
    """A turn for the gate: its text and whether the person said it (``own``); ``at``: when, ISO."""

    text: str
    own: bool
    at: str | None = None


@dataclass(frozen=True)
class Judged:
    proposal: Proposal
    key: str | None = None  # the canonical key it is kept under
    turn: int | None = None  # the index (in the turns given) of the turn that says it
    failed: str | None = None

    @property
    def kept(self) -> list[tuple[str, str]]:
        return [(self.key, self.proposal.value)] if self.key and not self.failed else []


def plain(text: str) -> str:
    """Text as the quote check compares it: one form of each character, quote mark and space, folded."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'").replace("“", '"')
    return " ".join(text.replace("”", '"').casefold().split())


def said(turn: str) -> str:
    """What a turn says in its speaker's own words: no ``Name:`` label, captions, quotes of others, or lines
    quoting a message ("> ...")."""
    lines = [line for line in split_speaker(turn)[1].splitlines() if not line.lstrip().startswith(">")]
    return ASIDE.sub(" ", "\n".join(lines))


def find_quote(quote: str, turns: Sequence[Turn]) -> tuple[int | None, str | None]:
    """The person's turn holding the quote (the last one: the freshest saying), or the check it fails."""
    wanted = plain(quote).strip(" .!?,;:\"'")
    if len(wanted) < 2:
        return None, "quote_not_found"
    own = [n for n, t in enumerate(turns) if t.own and wanted in plain(said(t.text))]
    if own:
        return own[-1], None
    if any(wanted in plain(t.text) for t in turns):
        return None, "quote_not_theirs"
    return None, "quote_not_found"


@dataclass
class KeyFit:
    """The profile's keys by meaning: each key's statements embedded once, a quote's nearest keys."""

    embed: Embed
    _vectors: npt.NDArray[np.float32] | None = field(default=None, init=False)
    _owners: list[str] = field(default_factory=list, init=False)

    def scores(self, texts: Sequence[str]) -> list[dict[str, float]]:
        """For each text, every key's best cosine with one of its statements."""
        if self._vectors is None:
            self._owners = [key.name for key in KEYS for _ in key.says]
            self._vectors = _unit(self.embed([s for key in KEYS for s in key.says]))
        if not texts:
            return []
        sims = _unit(self.embed(list(texts))) @ self._vectors.T
        out = []
        for row in sims:
            best: dict[str, float] = {}
            for owner, sim in zip(self._owners, row, strict=True):
                best[owner] = max(best.get(owner, -1.0), float(sim))
            out.append(best)
        return out


def _unit(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    matrix = np.asarray(matrix, dtype=np.float32)
    unit: npt.NDArray[np.float32] = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
    return unit


def fitting_key(proposed: str | None, scores: Mapping[str, float], kind: str = "") -> str | None:
    """The key a quote is kept under: the proposed one where it fits (``FIT``, ``MARGIN``), else the nearest
    key when none was named in the vocabulary and that one is clear (``CLEAR``, ``GAP``); ``None``: it fits none."""
    if kind:
        scores = {k: v for k, v in scores.items() if kind in BY_NAME[k].kinds}
        if proposed is not None and proposed not in scores:
            return None
    nearest = max(scores, key=lambda k: scores[k])
    if proposed is not None:
        ok = scores[proposed] >= FIT and scores[proposed] >= scores[nearest] - MARGIN
        return proposed if ok else None
    second = max((v for k, v in scores.items() if k != nearest), default=-1.0)
    clear = FIT if kind in ("doing", "place") else CLEAR  # a habit or a place has few keys it may be
    return nearest if scores[nearest] >= clear and scores[nearest] - second >= GAP else None


def gate(proposals: Sequence[Proposal], turns: Sequence[Turn], *, parse: statement.Parse, fit: KeyFit,
         names: Collection[str] = frozenset(), since: Mapping[str, int] | None = None) -> list[Judged]:
    """Each proposal judged against the turns (``names``: the speakers', folded; ``since``: key -> the index of
    the first turn that may say it, after the person said its fact was wrong)."""
    since = since or {}
    found: list[tuple[Proposal, int, int, str | None, str, str, str]] = []
    out: dict[int, Judged] = {}
    for n, proposal in enumerate(proposals):
        turn, failed = find_quote(proposal.quote, turns)
        key = canonical_key(proposal.key)
        clause, phrase, noun = proposal.quote, "", ""
        if failed is None and turn is not None:
            reading = statement.read(parse, said(turns[turn].text), proposal.quote, proposal.value, key,
                                     strict=bool(proposal.kind))
            failed, clause = reading.refusal, reading.clause
            phrase, noun = reading.phrase, reading.noun
        if failed is None and key != "name" and statement.names_someone(proposal.value, names):
            failed = "value_is_a_speakers_name"
        if failed is not None or turn is None:
            out[n] = Judged(proposal, failed=failed)
        else:
            found.append((proposal, n, turn, key, clause, phrase, noun))
    by_clause = fit.scores([clause for *_, clause, _, _ in found])
    by_phrase = fit.scores([phrase or clause for *_, clause, phrase, _ in found])
    by_noun = fit.scores([noun or phrase or clause for *_, clause, phrase, noun in found])
    scored = [{k: max(c[k], (p[k] + o[k]) / 2) for k in c} for c, p, o in zip(by_clause, by_phrase, by_noun,
                                                                               strict=True)]
    for (proposal, n, turn, key, *_), scores in zip(found, scored, strict=True):
        chosen = fitting_key(key, scores, proposal.kind)
        if chosen == "name" and key != "name":
            chosen = None  # a name is learnt only where it was proposed as one: "call me crazy" is no name
        if chosen is not None and key is None:  # read again as the key it fits: a move under way is no home
            chosen_reading = statement.read(parse, said(turns[turn].text), proposal.quote, proposal.value, chosen,
                                            strict=bool(proposal.kind))
            if chosen_reading.refusal:
                out[n] = Judged(proposal, failed=chosen_reading.refusal)
                continue
        if chosen is None:
            out[n] = Judged(proposal, failed="key_does_not_fit")
        elif turn < since.get(chosen, 0):
            out[n] = Judged(proposal, failed="rejected_by_the_person")
        else:
            out[n] = Judged(proposal, chosen, turn)
    return [out[n] for n in range(len(proposals))]


def judge_case(turns: Sequence[Mapping[str, str]], proposals: Sequence[Mapping[str, Any]], *,
               parser: statement.Parse, embed: Embed) -> list[Judged]:
    """``gate`` on plain data (``scripts/eval_facts.py``): turns as ``{"role", "content"}`` ("user": the
    person's own), proposals as ``{"key", "value", "quote"}``."""
    said_turns = [Turn(str(t["content"]), t["role"] == "user") for t in turns]
    speakers = {(split_speaker(t.text)[0] or "").casefold() for t in said_turns} - {""}
    return gate([Proposal(str(p["key"]), str(p["value"]), str(p["quote"])) for p in proposals], said_turns,
                parse=parser, fit=_fit_for(embed), names=speakers)


@functools.lru_cache(maxsize=4)
def _fit_for(embed: Embed) -> KeyFit:
    return KeyFit(embed)
