"""What a path holds: a ChatGPT export, Lyra JSON Lines, or a Lyra export (folder or zip); chosen or detected."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .archive import MEMBER_ERRORS, check_members, open_member, read_member
from .chatgpt import conversations_member, read_chatgpt
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
                        return dict(json.loads(read_member(archive, MEMORY_FILE)))
        # ValueError: bad JSON, a number of over 4,300 digits, or not an object; RecursionError: nested too deep.
        except (ValueError, TypeError, RecursionError, zipfile.BadZipFile) as exc:
            raise ImportFormatError(f"the {MEMORY_FILE} of {self.path} is not readable: {exc}") from exc
        except OSError as exc:
            raise ImportFormatError(f"cannot read {self.path}: {exc}") from exc
        return None

    def _zipped_sessions(self) -> Iterator[ImportedConversation | ImportProblem]:
        try:
            with zipfile.ZipFile(self.path) as archive, open_member(archive, SESSIONS_FILE) as raw:
                yield from read_lyra_lines(io.TextIOWrapper(raw, encoding="utf-8"),
                                           f"{self.path.name}:{SESSIONS_FILE}")
        except MEMBER_ERRORS as exc:  # a damaged member (CRC, a broken stream) shows only as it is read
            raise ImportFormatError(f"{self.path} is a damaged zip file: {exc}",
                                    hint="export again; nothing was imported from it") from exc


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
        try:
            with zipfile.ZipFile(path) as archive:
                # Every member the import will read is checked before any is: a bomb imports nothing.
                names = archive.namelist()
                check_members(archive, [SESSIONS_FILE, MEMORY_FILE, *conversations_member(names)])
                if SESSIONS_FILE in names and fmt != "chatgpt":
                    return Source("lyra", path, zipped=True)
        except zipfile.BadZipFile as exc:
            raise ImportFormatError(f"{path} is a damaged zip file: {exc}", hint="download the export again") from exc
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
