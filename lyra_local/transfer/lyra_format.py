"""Lyra's portable format: JSON Lines, one session per line (also what ``lyra export`` writes).

    {"id": "...", "name": "...", "messages": [{"role": "user"|"assistant", "content": "...",
     "created_at": "2023-05-08T13:56:00+00:00"}, ...]}

Optional keys keep a round trip lossless: the session's ``created_at``,
``source`` and ``source_id`` (where it was imported from), a message's
``source_id`` (an export writes one for every turn: ``store/portable.py``),
its ``author`` (the assistant an imported reply came from, ``null`` for the
companion's: ``authors``) and ``ending`` (how a reply that did not end by
itself ended: ``length``, ``stopped``, ``error``), its ``caption`` (what a
photo it carries shows: found by recall, shown as a caption and never as its
sender's words; a photo with no text has empty ``content``), and ``asides``: the
versions set aside by a regenerate or an edit, each with the ``parent`` it
follows (a message's ``source_id``) and its ``set_aside_seq``. Ids are kept,
so importing the same file again adds nothing, whatever was edited,
regenerated or forgotten since.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from ..authors import author_at_import
from ..store import Store
from ..store.db import MAX_INTEGER
from ..store.portable import NewAside, conversations
from ..store.records import ENDINGS, Ending
from ..textsafe import well_formed
from .records import ImportedConversation, ImportedMessage, ImportFormatError, ImportProblem
from .timestamps import utc_timestamp

ROLES = ("user", "assistant")


def read_lyra_jsonl(path: Path) -> Iterator[ImportedConversation | ImportProblem]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ImportFormatError(f"cannot read {path}: {exc}") from exc
    with handle:
        yield from read_lyra_lines(handle, path.name)


def read_lyra_lines(lines: Iterable[str], name: str) -> Iterator[ImportedConversation | ImportProblem]:
    """Sessions from JSON Lines; a bad line is a problem naming it, a bad first line means a wrong file."""
    hint = 'one JSON object per line: {"id", "name", "messages"}'
    try:
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except (ValueError, RecursionError) as exc:  # also a number of over 4,300 digits, nesting too deep
                what = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
                if n == 1:
                    raise ImportFormatError(f"{name} is not Lyra JSON Lines: line 1: {what}", hint=hint) from exc
                yield ImportProblem(f"{name} line {n}", f"not valid JSON: {what}")
                continue
            if n == 1 and not (isinstance(raw, dict) and "messages" in raw):
                raise ImportFormatError(f"{name} is not Lyra JSON Lines: its first line is not a session", hint=hint)
            try:
                yield parse_session(raw)
            except (ValueError, TypeError, KeyError) as exc:
                yield ImportProblem(f"{name} line {n}", str(exc))
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{name} is not UTF-8 text: {exc}") from exc


def parse_session(raw: Any) -> ImportedConversation:
    """One line as a conversation, times in UTC; a ``ValueError`` says what is wrong with it."""
    if not isinstance(raw, dict):
        raise ValueError("a line must be a JSON object")
    uid, name, messages = raw.get("id"), raw.get("name", ""), raw.get("messages")
    if not isinstance(uid, str) or not uid.strip():
        raise ValueError("'id' must be a non-empty string")
    if not isinstance(messages, list):
        raise ValueError("'messages' must be a list")
    source = raw.get("source")
    source = well_formed(source) if isinstance(source, str) and source else "lyra"
    out = []
    for i, m in enumerate(messages, 1):
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            raise ValueError(f"message {i} needs a role (user or assistant) and a content string")
        at = utc_timestamp(m.get("created_at"), f"message {i}: created_at")
        source_id = _optional_id(m.get("source_id"))
        author, ending = _author_and_ending(m, source, source_id, f"message {i}")
        out.append(ImportedMessage(m["role"], well_formed(m["content"]), at, source_id, author, ending,
                                   _caption(m, f"message {i}")))
    asides = [_parse_aside(a, i, source) for i, a in enumerate(raw.get("asides") or [], 1)]
    created = raw.get("created_at")
    created = utc_timestamp(created, "the session's created_at") if created else (out[0].created_at if out else "")
    if not created:
        raise ValueError("the session has no created_at and no messages to take it from")
    return ImportedConversation(well_formed(name) if isinstance(name, str) else str(name),
                                created, out, source, _optional_id(raw.get("source_id")), well_formed(uid),
                                asides=asides)


def _author_and_ending(raw: dict[str, Any], source: str, source_id: str | None,
                       what: str) -> tuple[str | None, Ending | None]:
    """A turn's author and ending; a ``ValueError`` says what is wrong. An export made before authors were
    stored has no ``author`` key: who wrote the turn is then read as a store migrated to them reads it
    (``authors.author_at_import``), so a Lyra reply in an imported conversation stays Lyra's."""
    if "author" in raw:
        author = raw["author"]
        if author is not None and (not isinstance(author, str) or not author.strip()):
            raise ValueError(f"{what}: author must be a name or null")
        author = well_formed(author) if author is not None and raw.get("role") == "assistant" else None
    else:
        author = author_at_import(str(raw.get("role")), source, source_id)
    ending = raw.get("ending")
    if ending is not None and ending not in ENDINGS:
        raise ValueError(f"{what}: ending must be one of {', '.join(ENDINGS)} or null")
    return author, ending


def _parse_aside(raw: Any, i: int, source: str) -> NewAside:
    """A version set aside (of a conversation from ``source``); a ``ValueError`` says what is wrong with it."""
    if not isinstance(raw, dict) or raw.get("role") not in ROLES or not isinstance(raw.get("content"), str):
        raise ValueError(f"aside {i} needs a role (user or assistant) and a content string")
    source_id = _optional_id(raw.get("source_id"))
    seq = raw.get("set_aside_seq")
    if source_id is None or isinstance(seq, bool) or not isinstance(seq, int) or not -MAX_INTEGER <= seq <= MAX_INTEGER:
        raise ValueError(f"aside {i} needs a source_id and a whole set_aside_seq (of at most 63 bits)")
    author, ending = _author_and_ending(raw, source, source_id, f"aside {i}")
    return NewAside(raw["role"], well_formed(raw["content"]), utc_timestamp(raw.get("created_at"),
                    f"aside {i}: created_at"), source_id, _optional_id(raw.get("parent")), seq, author, ending,
                    _caption(raw, f"aside {i}"))


def _caption(raw: dict[str, Any], what: str) -> str | None:
    """A photo's caption (``caption``: what the photo shows, kept apart from the words), or ``None``."""
    caption = raw.get("caption")
    if caption is not None and not isinstance(caption, str):
        raise ValueError(f"{what}: caption must be text or null")
    return well_formed(caption) if caption and caption.strip() else None


def _optional_id(value: Any) -> str | None:
    """An id as text (a number is kept as its digits); ``None`` when absent; anything else is refused."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"source_id must be a string, not {type(value).__name__}")
    return well_formed(str(value))


def write_sessions(store: Store, out: IO[str]) -> tuple[int, int]:
    """Every remembered session (not one off the record) as one line, in a stable order, each with its current
    path and the versions set aside, every turn with its portable id; returns (sessions, messages)."""
    sessions = messages = 0
    for c in conversations(store):
        s = c.session
        line: dict[str, Any] = {"id": s["uid"], "name": s["name"], "created_at": s["created_at"]}
        if s["source"] != "lyra" or s["source_id"]:
            line.update(source=s["source"], source_id=s["source_id"])
        line["messages"] = c.messages
        if c.asides:
            line["asides"] = c.asides
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        sessions += 1
        messages += len(c.messages)
    return sessions, messages
