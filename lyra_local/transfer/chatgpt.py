"""Reading a ChatGPT export (the ``.zip``, or its ``conversations.json``).

Each conversation's ``mapping`` is a tree of message nodes (edits and
regenerations are branches); the conversation as the user last saw it is the
path from ``current_node`` back to the root. On that path we keep user and
assistant text (``text``, the text parts of ``multimodal_text``, ``code`` as a
fenced block) with its real timestamp, and count what we skip (system and tool
messages, hidden ones, images, tool output) so the import can say so.
"""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..authors import imported_from
from ..store.db import to_iso
from ..textsafe import well_formed
from .archive import read_member
from .records import ImportedConversation, ImportedMessage, ImportFormatError, ImportProblem

SOURCE = "chatgpt"
KEPT_ROLES = ("user", "assistant")


class BrokenConversation(Exception):
    """This conversation cannot be read; the others still can."""


def load_export(path: Path) -> list[Any]:
    """The list of conversations in a ChatGPT export zip or conversations.json."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = conversations_member(archive.namelist())
                if not names:
                    raise ImportFormatError(f"{path} is a zip without a conversations.json",
                                            hint="pass the export .zip ChatGPT mailed you, or its conversations.json")
                raw = read_member(archive, names[0])
        elif path.suffix.lower() == ".zip":
            raise ImportFormatError(f"{path} is not a complete zip file (truncated or damaged)",
                                    hint="download the export again, or unzip it and pass conversations.json")
        else:
            raw = path.read_bytes()
        data = json.loads(raw)
    except zipfile.BadZipFile as exc:
        raise ImportFormatError(f"{path} is a damaged zip file: {exc}", hint="download the export again") from exc
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
                                hint="is the file complete? an export is a JSON list of conversations") from exc
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path} is not a text file: {exc}", hint="pass the export .zip or .json") from exc
    except (ValueError, RecursionError) as exc:  # a number of over 4,300 digits; nesting too deep
        raise ImportFormatError(f"{path} is not a ChatGPT export: {exc}",
                                hint="an export is a JSON list of conversations") from exc
    except (OSError, EOFError) as exc:
        raise ImportFormatError(f"cannot read {path}: {exc}") from exc
    if not looks_like_chatgpt(data):
        raise ImportFormatError(f"{path} does not look like a ChatGPT export",
                                hint="expected a list of conversations with a 'mapping' of messages")
    return list(data)


def conversations_member(names: list[str]) -> list[str]:
    """The zip member an export keeps its conversations in (the shallowest ``conversations.json``), if any."""
    found = sorted((n for n in names if n.rsplit("/", 1)[-1] == "conversations.json"), key=len)
    return found[:1]


def looks_like_chatgpt(data: Any) -> bool:
    return isinstance(data, list) and (not data or any(isinstance(c, dict) and "mapping" in c for c in data[:20]))


def read_chatgpt(path: Path) -> Iterator[ImportedConversation | ImportProblem]:
    for n, raw in enumerate(load_export(path), 1):
        where = _describe(raw, n)
        try:
            yield parse_conversation(raw)
        except BrokenConversation as exc:
            yield ImportProblem(where, str(exc))
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
            # A shape no export has: this conversation is reported, the others still import.
            yield ImportProblem(where, f"not readable ({type(exc).__name__}: {exc})")


def parse_conversation(raw: Any) -> ImportedConversation:
    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        raise BrokenConversation("not a conversation (no 'mapping' of messages)")
    conv_id = raw.get("conversation_id") or raw.get("id")
    if not isinstance(conv_id, (str, int)) or isinstance(conv_id, bool) or not str(conv_id).strip():
        raise BrokenConversation("the conversation has no id")
    mapping: dict[str, Any] = raw["mapping"]
    started = _iso(raw.get("create_time")) or _iso(raw.get("update_time"))
    messages: list[ImportedMessage] = []
    skipped: Counter[str] = Counter()
    last = started
    for node_id in _current_branch(mapping, raw.get("current_node")):
        message = mapping[node_id].get("message")
        if not message:
            continue
        if not isinstance(message, dict):
            raise BrokenConversation(f"node {node_id} holds no message object")
        kept = _message(message, skipped)
        if kept is None:
            continue
        role, text = kept
        at = _iso(message.get("create_time")) or last or _iso(raw.get("update_time"))
        if at is None:
            raise BrokenConversation(f"message {node_id} has no timestamp, and neither has the conversation")
        last = at
        message_id = message.get("id")
        messages.append(ImportedMessage(role, well_formed(text), at, well_formed(
            str(message_id if isinstance(message_id, str) and message_id else node_id)),
            author=imported_from(SOURCE) if role == "assistant" else None))
    created = started or (messages[0].created_at if messages else None)
    if created is None:
        raise BrokenConversation("the conversation has no timestamp")
    title = raw.get("title")
    title = well_formed(title.strip() if isinstance(title, str) else "") or "Untitled (ChatGPT)"
    return ImportedConversation(title, created, messages, SOURCE, well_formed(str(conv_id)), skipped=skipped)


def _current_branch(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to ``current_node`` (the branch the user last saw)."""
    if current is None:
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        if len(leaves) != 1:
            raise BrokenConversation("no current_node, and the tree does not have exactly one leaf")
        current = leaves[0]
    if not isinstance(current, str) or current not in mapping:
        raise BrokenConversation(f"current_node {current} is not in the mapping")
    path: list[str] = []
    seen: set[str] = set()
    node: Any = current
    while node is not None:
        if not isinstance(node, str) or node not in mapping or not isinstance(mapping[node], dict):
            raise BrokenConversation(f"node {path[-1] if path else current} points to a parent {node} that "
                                     f"is not in the mapping")
        if node in seen:
            raise BrokenConversation(f"the message tree loops at node {node}")
        seen.add(node)
        path.append(node)
        node = mapping[node].get("parent")
    path.reverse()
    return path


# Who else a ChatGPT export has speak, as the import report names what it left out of them.
SENDERS = {"system": "instructions to ChatGPT", "tool": "results of ChatGPT's tools"}


def _message(message: dict[str, Any], skipped: Counter[str]) -> tuple[str, str] | None:
    role = _object(message.get("author")).get("role")
    if not isinstance(role, str) or role not in KEPT_ROLES:
        skipped[SENDERS.get(role, "messages from other senders") if isinstance(role, str) else
                "messages from other senders"] += 1
        return None
    metadata = _object(message.get("metadata"))
    if metadata.get("is_visually_hidden_from_conversation") or metadata.get("is_user_system_message"):
        skipped["hidden messages"] += 1
        return None
    content = _object(message.get("content"))
    kind = content.get("content_type")
    kind = kind if isinstance(kind, str) else None
    parts = content.get("parts")
    parts = parts if isinstance(parts, list) else []
    if kind == "text":
        text = "\n".join(p for p in parts if isinstance(p, str))
    elif kind == "multimodal_text":
        pieces = []
        for part in parts:  # images, audio, files: counted, and a placeholder says where one was
            if isinstance(part, str):
                pieces.append(part)
                continue
            kind_of_part = part.get("content_type") if isinstance(part, dict) else None
            kind_of_part = kind_of_part if isinstance(kind_of_part, str) else "non-text"
            skipped[_plural_of(kind_of_part)] += 1
            pieces.append(placeholder(kind_of_part))
        text = "\n".join(pieces)
    elif kind == "code":
        code, language = content.get("text"), content.get("language")
        code = code if isinstance(code, str) else ""
        language = language if isinstance(language, str) else ""
        text = f"```{language}\n{code}\n```" if code.strip() else ""
    else:
        skipped["messages that were not text"] += 1  # browsing results, app data: nothing a person wrote
        return None
    if not text.strip():
        skipped["empty messages"] += 1
        return None
    return role, text


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _iso(value: Any) -> str | None:
    """A Unix time as the store's UTC text; ``None`` for anything else (or a time no calendar holds)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        try:
            return to_iso(datetime.fromtimestamp(float(value), timezone.utc))
        except (OverflowError, ValueError, OSError):  # inf, nan, past the year 9999
            return None
    return None


def _describe(raw: Any, n: int) -> str:
    if isinstance(raw, dict):
        title = well_formed(str(raw.get("title") or "untitled"))[:80]
        conv_id = well_formed(str(raw.get("conversation_id") or raw.get("id") or "no id"))[:80]
        return f"conversation {n} \u201c{title}\u201d ({conv_id})"
    return f"conversation {n}"


def placeholder(kind_of_part: str) -> str:
    """Where a part that is not text was: "[an image was here; not imported]", so a message that showed a photo
    does not read as if it said nothing about it."""
    return f"[{_kind_of_part(kind_of_part)[0]} was here; not imported]"


def _plural_of(kind_of_part: str) -> str:
    """What the import report counts a part that is not text as: "images", "audio clips", "attachments"."""
    return _kind_of_part(kind_of_part)[1]


def _kind_of_part(kind_of_part: str) -> tuple[str, str]:
    """ChatGPT's name of a part ("image_asset_pointer") as a person says it, one and many."""
    if "image" in kind_of_part:
        return "an image", "images"
    if "audio" in kind_of_part:
        return "audio", "audio clips"
    return "an attachment", "attachments"
