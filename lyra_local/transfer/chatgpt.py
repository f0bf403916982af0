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
                names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"]
                if not names:
                    raise ImportFormatError(f"{path} is a zip without a conversations.json",
                                            hint="pass the export .zip ChatGPT mailed you, or its conversations.json")
                raw = archive.read(min(names, key=len))
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
    except OSError as exc:
        raise ImportFormatError(f"cannot read {path}: {exc}") from exc
    if not looks_like_chatgpt(data):
        raise ImportFormatError(f"{path} does not look like a ChatGPT export",
                                hint="expected a list of conversations with a 'mapping' of messages")
    return list(data)


def looks_like_chatgpt(data: Any) -> bool:
    return isinstance(data, list) and (not data or any(isinstance(c, dict) and "mapping" in c for c in data[:20]))


def read_chatgpt(path: Path) -> Iterator[ImportedConversation | ImportProblem]:
    for n, raw in enumerate(load_export(path), 1):
        where = _describe(raw, n)
        try:
            yield parse_conversation(raw)
        except BrokenConversation as exc:
            yield ImportProblem(where, str(exc))


def parse_conversation(raw: Any) -> ImportedConversation:
    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        raise BrokenConversation("not a conversation (no 'mapping' of messages)")
    conv_id = raw.get("conversation_id") or raw.get("id")
    if not conv_id:
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
        kept = _message(message, skipped)
        if kept is None:
            continue
        role, text = kept
        at = _iso(message.get("create_time")) or last or _iso(raw.get("update_time"))
        if at is None:
            raise BrokenConversation(f"message {node_id} has no timestamp, and neither has the conversation")
        last = at
        messages.append(ImportedMessage(role, text, at, str(message.get("id") or node_id)))
    created = started or (messages[0].created_at if messages else None)
    if created is None:
        raise BrokenConversation("the conversation has no timestamp")
    title = str(raw.get("title") or "").strip() or "Untitled (ChatGPT)"
    return ImportedConversation(title, created, messages, SOURCE, str(conv_id), skipped=skipped)


def _current_branch(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to ``current_node`` (the branch the user last saw)."""
    if current is None:
        leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
        if len(leaves) != 1:
            raise BrokenConversation("no current_node, and the tree does not have exactly one leaf")
        current = leaves[0]
    if current not in mapping:
        raise BrokenConversation(f"current_node {current} is not in the mapping")
    path: list[str] = []
    seen: set[str] = set()
    node: Any = current
    while node is not None:
        if node in seen:
            raise BrokenConversation(f"the message tree loops at node {node}")
        if node not in mapping or not isinstance(mapping[node], dict):
            raise BrokenConversation(f"node {path[-1] if path else current} points to a parent {node} that "
                                     f"is not in the mapping")
        seen.add(node)
        path.append(node)
        node = mapping[node].get("parent")
    path.reverse()
    return path


def _message(message: dict[str, Any], skipped: Counter[str]) -> tuple[str, str] | None:
    role = (message.get("author") or {}).get("role")
    if role not in KEPT_ROLES:
        skipped[f"{role or 'unknown'} messages"] += 1
        return None
    metadata = message.get("metadata") or {}
    if metadata.get("is_visually_hidden_from_conversation") or metadata.get("is_user_system_message"):
        skipped["hidden messages"] += 1
        return None
    content = message.get("content") or {}
    kind = content.get("content_type")
    if kind == "text":
        text = "\n".join(p for p in content.get("parts") or [] if isinstance(p, str))
    elif kind == "multimodal_text":
        parts = content.get("parts") or []
        text = "\n".join(p for p in parts if isinstance(p, str))
        for part in parts:  # images, audio, files: counted, not kept
            if not isinstance(part, str):
                kind_of_part = part.get("content_type") if isinstance(part, dict) else None
                skipped[f"{kind_of_part or 'non-text'} parts"] += 1
    elif kind == "code":
        code = str(content.get("text") or "")
        text = f"```{content.get('language') or ''}\n{code}\n```" if code.strip() else ""
    else:
        skipped[f"{kind or 'unknown'} content"] += 1
        return None
    if not text.strip():
        skipped["empty messages"] += 1
        return None
    return role, text


def _iso(value: Any) -> str | None:
    if isinstance(value, (int, float)) and value > 0:
        return datetime.fromtimestamp(float(value), timezone.utc).isoformat()
    return None


def _describe(raw: Any, n: int) -> str:
    if isinstance(raw, dict):
        title = raw.get("title") or "untitled"
        return f"conversation {n} \u201c{title}\u201d ({raw.get('conversation_id') or raw.get('id') or 'no id'})"
    return f"conversation {n}"
