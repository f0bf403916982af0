"""What a path holds: a ChatGPT export, Lyra JSON Lines, or a Lyra export folder; chosen or detected."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .chatgpt import read_chatgpt
from .lyra_format import read_lyra_jsonl
from .records import ImportedConversation, ImportFormatError, ImportProblem

Format = Literal["auto", "chatgpt", "lyra"]
SESSIONS_FILE = "sessions.jsonl"
MEMORY_FILE = "memory.json"


@dataclass(frozen=True)
class Source:
    format: str
    sessions: Path
    memory: Path | None = None

    def read(self) -> Iterator[ImportedConversation | ImportProblem]:
        return read_chatgpt(self.sessions) if self.format == "chatgpt" else read_lyra_jsonl(self.sessions)


def open_source(path: Path, fmt: Format = "auto") -> Source:
    path = path.expanduser()
    if not path.exists():
        raise ImportFormatError(f"{path} does not exist")
    if path.is_dir():
        sessions = path / SESSIONS_FILE
        if not sessions.is_file():
            raise ImportFormatError(f"{path} is a folder without {SESSIONS_FILE}",
                                    hint="pass a folder written by `lyra export`, or a file")
        memory = path / MEMORY_FILE
        return Source("lyra", sessions, memory if memory.is_file() else None)
    if fmt == "auto":
        fmt = detect(path)
    return Source(fmt, path)


def detect(path: Path) -> Literal["chatgpt", "lyra"]:
    if zipfile.is_zipfile(path) or path.suffix.lower() == ".zip":
        return "chatgpt"
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError as exc:
        raise ImportFormatError(f"cannot read {path}: {exc}") from exc
    if head.startswith(b"["):
        return "chatgpt"
    if head.startswith(b"{"):
        first = head.split(b"\n", 1)[0]
        try:
            if isinstance(json.loads(first), dict):
                return "lyra"
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass
        return "lyra" if b'"messages"' in head else "chatgpt"
    raise ImportFormatError(f"{path} is neither a ChatGPT export nor Lyra JSON Lines",
                            hint="pass the ChatGPT export .zip or conversations.json, or a file from `lyra export`")
