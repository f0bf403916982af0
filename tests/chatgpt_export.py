"""Building ChatGPT-shaped exports in tests: a mapping tree with branches, as ChatGPT writes it."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

T0 = 1683553000.0  # 2023-05-08 13:36:40 UTC


def message(node: str, role: str, parts: list[Any] | None = None, *, at: float | None = None,
            content_type: str = "text", hidden: bool = False, **content: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"content_type": content_type, **content}
    if parts is not None:
        body["parts"] = parts
    return {"id": node, "author": {"role": role, "name": None, "metadata": {}}, "create_time": at,
            "update_time": None, "content": body, "status": "finished_successfully", "end_turn": True,
            "weight": 1.0, "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
            "recipient": "all"}


def conversation(conv_id: str, title: str, turns: list[tuple[str, str]], *, start: float = T0,
                 current: str | None = None, extra: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """A linear conversation (after a hidden system root), optionally with extra nodes (branches)."""
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": ["sys"]},
                               "sys": {"id": "sys", "message": message("sys", "system", [""], hidden=True),
                                       "parent": "root", "children": []}}
    parent = "sys"
    for i, (role, text) in enumerate(turns):
        node = f"{conv_id}-m{i}"
        mapping[node] = {"id": node, "message": message(node, role, [text], at=start + 60 * i), "parent": parent,
                         "children": []}
        mapping[parent]["children"].append(node)
        parent = node
    for node, spec in (extra or {}).items():
        mapping[node] = spec
        if spec.get("parent") in mapping:
            mapping[spec["parent"]]["children"].append(node)
    return {"title": title, "create_time": start, "update_time": start + 3600, "mapping": mapping,
            "current_node": current or parent, "conversation_id": conv_id, "id": conv_id,
            "moderation_results": [], "is_archived": False}


def write_export(path: Path, conversations: list[dict[str, Any]], *, as_zip: bool = True) -> Path:
    data = json.dumps(conversations, ensure_ascii=False)
    if as_zip:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("conversations.json", data)
            archive.writestr("user.json", json.dumps({"id": "user-1"}))
            archive.writestr("chat.html", "<html></html>")
    else:
        path.write_text(data, encoding="utf-8")
    return path
