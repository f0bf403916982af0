"""Who is who: every turn's speaker as a person of the memory, and the names each one is called by.

A turn's speaker follows from its role and its author (``exchanges.author``,
set by an import: ``authors.py``):

- the person: the ``user`` role;
- the companion: an ``assistant`` turn with no author;
- an imported assistant: an author among ``authors.IMPORTED_FROM`` ("ChatGPT");
- another participant of an imported chat: any other author ("Melanie").

A speaker's key is ``user``, ``assistant`` (the companion and an imported
assistant alike: both are "you" to the person asking "what did you tell me?")
or ``author:<name>``. Names map to keys from, strongest first: the person's
edits and configured names (``KnownNames``), the profile's name fact, the
labels an import gave (an author's name), and how the speakers address each
other in the conversation (``names.addressed_speakers``).

Pure functions; recall (``memory/recall.py``) reads the rows and keeps what
is learnt until the store grows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from ..authors import IMPORTED_FROM
from .names import addressed_speakers

PERSON, COMPANION = "user", "assistant"
Kind = Literal["person", "companion", "assistant", "participant"]
AI_SERVICES = frozenset(IMPORTED_FROM.values())
NAME_WORD = re.compile(r"[^\W\d_]{2,}")


@dataclass(frozen=True)
class KnownNames:
    """Names given outright: the person's (settings, their edits) and the companion's."""

    person: tuple[str, ...] = ()
    companion: tuple[str, ...] = ()


def speaker_of(role: str | None, author: str | None) -> str:
    """The key of who said a turn (see the module's docstring)."""
    if role != "assistant":
        return PERSON
    if author is None or author in AI_SERVICES:
        return COMPANION
    return f"author:{author}"


def turns_of(key: str) -> tuple[str, tuple[str | None, ...]]:
    """The role and the authors of a speaker's turns (no author given: any), for ``Filters.said_by``."""
    if key == PERSON:
        return PERSON, ()
    if key == COMPANION:
        return COMPANION, (None, *sorted(AI_SERVICES))
    return COMPANION, (key.removeprefix("author:"),)


def kind_of(role: str | None, author: str | None) -> Kind:
    if role != "assistant":
        return "person"
    if author is None:
        return "companion"
    return "assistant" if author in AI_SERVICES else "participant"


def conversation(rows: Sequence[tuple[int, str, str | None, str]]) -> Iterator[tuple[str, str, str]]:
    """(speaker, whom they speak to, text) of each (session id, role, author, text): the person speaks to the
    session's other speaker (its most frequent), everyone else to the person."""
    others: dict[int, Counter[str]] = {}
    for session, role, author, _ in rows:
        if role == "assistant":
            others.setdefault(session, Counter())[speaker_of(role, author)] += 1
    for session, role, author, text in rows:
        speaker = speaker_of(role, author)
        if speaker == PERSON:
            around = others.get(session)
            yield speaker, around.most_common(1)[0][0] if around else COMPANION, text
        else:
            yield speaker, PERSON, text


def name_words(name: str) -> list[str]:
    """A name's words, lower case ("Mary Ann" -> "mary", "ann")."""
    return [w.lower() for w in NAME_WORD.findall(name)]


def speaker_names(rows: Sequence[tuple[int, str, str | None, str]], authors: Iterable[str],
                  known: KnownNames, profile_names: Iterable[str] = ()) -> dict[str, str]:
    """Every name (lower case) to the key of the speaker it calls: learnt from how they address each other,
    then the import's labels, the profile's name and the names given outright, each overriding the one before."""
    out = addressed_speakers(conversation(rows))
    for author in authors:
        for word in name_words(author):
            out[word] = speaker_of("assistant", author)
    for name in profile_names:
        out.update(dict.fromkeys(name_words(name), PERSON))
    for names, key in ((known.person, PERSON), (known.companion, COMPANION)):
        for name in names:
            out.update(dict.fromkeys(name_words(name), key))
    return out


def who_said(role: str | None, author: str | None, known: KnownNames) -> dict[str, str | None]:
    """Who said a turn, for the person to read: its kind and, where one is known, a name."""
    kind = kind_of(role, author)
    if kind == "person":
        name = known.person[0] if known.person else None
    elif kind == "companion":
        name = known.companion[0] if known.companion else None
    else:
        name = author
    return {"kind": kind, "name": name}
