"""Session gists: a session's raw turns compacted into one paragraph, chunked to the model's context.

A session that does not fit one request is cut into chunks sized in tokens
from the summary model's context length; each chunk is summarized and the
partial gists merged. A session that already has a gist is updated from its
new turns only. The raw turns always stay, for detail recall.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone, tzinfo

from ...authors import author_of
from ...store import Exchange, Store
from ...store.db import local_day
from ...store.derived import Gist
from ..dream import prompts
from ..dream.scribe import Scribe
from .chunks import pack


@dataclass(frozen=True)
class GistDraft:
    """A gist ready to store: it covers the session's turns up to ``covers_upto``."""

    session_id: int
    text: str
    covers_upto: int
    turns: int
    chunks: int
    updated: bool
    read: tuple[int, ...] = ()  # the turns it was drafted from
    previous: Gist | None = None  # the gist it updates


def transcript(turns: list[Exchange], names: dict[str, str]) -> list[str]:
    """The turns as lines the model reads, each under its author: the person, and each reply's own
    (``authors.author_of``: ChatGPT for one imported from there, else the companion)."""
    who = {"user": names["user"], "system": "Note"}
    return [f"{author_of(t, names['name']) if t.role == 'assistant' else who.get(t.role, t.role)}: "
            f"{' '.join(t.content.split())}" for t in turns]


def repliers(turns: list[Exchange], companion: str) -> str:
    """Who the person talked with in ``turns``, for the prompt: "ChatGPT", "Lyra", or "ChatGPT and Lyra" for a
    conversation imported and then continued here."""
    found = dict.fromkeys(author_of(t, companion) for t in turns if t.role == "assistant")
    return " and ".join(found) or companion


def draft_gist(scribe: Scribe, store: Store, session_id: int, zone: tzinfo = timezone.utc) -> GistDraft | None:
    """Summarize what the session's gist does not cover yet; ``None`` if there is nothing new."""
    session = store.sessions.get(session_id)
    previous = store.derived.gist(session_id)  # None when missing or stale: then start over
    turns = store.exchanges.history(session_id)
    if previous is not None:
        turns = [t for t in turns if t.id > previous.covers_upto]
    if not turns:
        return None
    header = f"Conversation \u201c{session.name}\u201d, {local_day(turns[0].created_at, zone)}:"
    # An imported conversation is between the person and ChatGPT (say): the model is told so, never the companion
    lines = transcript(turns, scribe.names)
    mouth = {"name": repliers(turns, scribe.names["name"])}
    count = scribe.count
    if previous is not None:
        material = f"Summary so far:\n{previous.content}\n\n"
        room = scribe.budget(prompts.GIST_UPDATE, **mouth) - count(material) - count(header) - 4
        chunks = pack(lines, room, count) if room > 64 else []
        if len(chunks) == 1:
            text = scribe.write(prompts.GIST_UPDATE, material + "New turns. " + header + "\n" + "\n".join(chunks[0]),
                                **mouth)
            return GistDraft(session_id, text, turns[-1].id, len(turns), 1, True, tuple(t.id for t in turns), previous)
    room = scribe.budget(prompts.GIST, **mouth) - count(header) - 16
    chunks = pack(lines, room, count)
    if len(chunks) == 1 and previous is None:
        text = scribe.write(prompts.GIST, header + "\n" + "\n".join(chunks[0]), **mouth)
    else:
        partials = [scribe.write(prompts.GIST, f"{header} (part {i} of {len(chunks)})\n" + "\n".join(chunk), **mouth)
                    for i, chunk in enumerate(chunks, 1)]
        earlier = [previous.content] if previous is not None else []
        text = scribe.reduce(prompts.MERGE, earlier + partials, **mouth)
    return GistDraft(session_id, text, turns[-1].id, len(turns), len(chunks), previous is not None,
                     tuple(t.id for t in turns), previous)
