"""What a path holds: a ChatGPT export, Lyra JSON Lines, or a Lyra export (folder or zip); chosen or detected."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .chatgpt import read_chatgpt
from .lyra_format import read_lyra_jsonl, read_lyra_lines
from .records import ImportedConversation, ImportFormatError, ImportProblem

Format = Literal["auto", "chatgpt", "lyra"]
SESSIONS_FILE = "sessions.jsonl"
MEMORY_FILE = "memory.json"


@dataclass(frozen=True)
class Source:
    """``path`` is a file, an export folder (``folder``) or an export zip (``zipped``)."""

    format: str
    path: Path
    folder: bool = False
    zipped: bool = False

    def read(self) -> Iterator[ImportedConversation | ImportProblem]:
        if self.format == "chatgpt":
            return read_chatgpt(self.path)
        if self.folder:
            return read_lyra_jsonl(self.path / SESSIONS_FILE)
        if self.zipped:
            return self._zipped_sessions()
        return read_lyra_jsonl(self.path)

    def memory(self) -> dict[str, Any] | None:
        """The export's derived memory, if it carries one."""
        try:
            if self.folder and (self.path / MEMORY_FILE).is_file():
                return dict(json.loads((self.path / MEMORY_FILE).read_text(encoding="utf-8")))
            if self.zipped:
                with zipfile.ZipFile(self.path) as archive:
                    if MEMORY_FILE in archive.namelist():
                        return dict(json.loads(archive.read(MEMORY_FILE)))
        except (json.JSONDecodeError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
            raise ImportFormatError(f"the {MEMORY_FILE} of {self.path} is not readable: {exc}") from exc
        return None

    def _zipped_sessions(self) -> Iterator[ImportedConversation | ImportProblem]:
        with zipfile.ZipFile(self.path) as archive, archive.open(SESSIONS_FILE) as raw:
            yield from read_lyra_lines(io.TextIOWrapper(raw, encoding="utf-8"), f"{self.path.name}:{SESSIONS_FILE}")


def open_source(path: Path, fmt: Format = "auto") -> Source:
    path = path.expanduser()
    if not path.exists():
        raise ImportFormatError(f"{path} does not exist")
    if path.is_dir():
        if not (path / SESSIONS_FILE).is_file():
            raise ImportFormatError(f"{path} is a folder without {SESSIONS_FILE}",
                                    hint="pass a folder written by `lyra export`, or a file")
        return Source("lyra", path, folder=True)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            if SESSIONS_FILE in archive.namelist() and fmt != "chatgpt":
                return Source("lyra", path, zipped=True)
    return Source(detect(path) if fmt == "auto" else fmt, path)


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
        return "lyra"
    raise ImportFormatError(f"{path} is neither a ChatGPT export nor Lyra JSON Lines",
                            hint="pass the ChatGPT export .zip or conversations.json, or a file from `lyra export`")
