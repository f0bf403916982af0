"""The terminal around ``lyra chat``: a reply owns the screen while it streams, and nothing typed is lost.

On a terminal, stdout, stderr and the echo of the keyboard share one screen. Left
alone, a log record (the index's "no snapshot; rebuilding", a background
embedding's warning) lands inside a reply, and so does the echo of what the
person types while it streams; that text then reaches the next prompt without
being shown, or not at all. So:

- ``FileLogs`` stands in for the root logger's handlers for the whole chat: a
  record goes to the chat's log file in the data directory (``logs/chat.log``,
  only its owner reads it), never onto the screen, and when the chat ends one
  line on stderr says how many warnings were written there;
- ``Keyboard`` turns the terminal's echo off while a reply streams (the line
  discipline still collects what is typed, erase and all, and a Ctrl-C that
  stops the reply does not flush it: ``NOFLSH``), reads it back after the reply, and
  hands it to the next prompts: a finished line is sent in turn, shown after
  its prompt; an unfinished one fills the next prompt, where it can be edited
  (readline) or finished.

It never leaves the terminal changed (its settings come back however a reply
ends) and never touches input that is not a terminal: piped lines are read in
order by ``input`` and nothing is lost.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

LOG_MOST_BYTES = 1_000_000  # past this when a chat starts, the log moves to chat.log.1 (one older file kept)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class FileLogs(logging.Handler):
    """The chat's log records, written to its log file; counts the warnings, to say so when the chat ends."""

    def __init__(self, path: Path, level: int) -> None:
        super().__init__(level)
        self.path = path
        self.warnings = 0
        self._file = _log_file(path)
        self.setFormatter(logging.Formatter(LOG_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:  # called under the handler's lock
        self.warnings += record.levelno >= logging.WARNING
        self._file.write(self.format(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
        super().close()

    @classmethod
    @contextlib.contextmanager
    def installed(cls, path: Path) -> Iterator[FileLogs]:
        """In place of the root logger's handlers for the block, at the level the least of them had; they come
        back after it, and a line on stderr names the file if a warning was written there."""
        root = logging.getLogger()
        targets = list(root.handlers)
        logs = cls(path, min((h.level for h in targets), default=logging.WARNING))
        root.handlers = [logs]
        try:
            yield logs
        finally:
            root.handlers = targets
            logs.close()
            if logs.warnings:
                print(f"({logs.warnings} warning{'s' if logs.warnings > 1 else ''} written to {path})",
                      file=sys.stderr)


def _log_file(path: Path) -> TextIO:
    """The log, appended to, made readable by its owner only; moved aside first when it has grown too long."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size > LOG_MOST_BYTES:
            path.replace(path.with_name(path.name + ".1"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8")


class Keyboard:
    """The person's side of a chat on a terminal: prompts (pre-filled with what was typed ahead) and quiet replies.

    ``fd`` is a terminal (``sys.stdin.isatty()``); the chat reads its lines with ``ask`` and streams each reply
    inside ``quiet``.
    """

    def __init__(self, fd: int, readline: ModuleType | None) -> None:
        self.fd = fd
        self._readline = readline
        self._ahead = ""  # typed while a reply streamed, not yet asked for

    @classmethod
    def of_stdin(cls) -> Keyboard:
        try:
            import readline  # line editing, and the pre-filled prompt; absent from some builds of Python
        except ImportError:
            readline = None  # type: ignore[assignment]
        return cls(sys.stdin.fileno(), readline)

    def ask(self, prompt: str) -> str:
        """The next line: one typed ahead (shown after its prompt), else one read with what was typed ahead in it.

        Raises ``EOFError`` at the end of input, like ``input``.
        """
        line, newline, rest = self._ahead.partition("\n")
        if newline:
            self._ahead = rest
            print(f"{prompt}{line}", flush=True)
            return line
        self._ahead = ""
        return self._read(prompt, line)

    def _read(self, prompt: str, prefill: str) -> str:
        if not prefill:
            return input(prompt)
        readline = self._readline
        if readline is None or not hasattr(readline, "set_pre_input_hook"):
            print(f"{prompt}{prefill}", end="", flush=True)  # shown, not editable: finished by what follows
            return prefill + input()

        def fill() -> None:
            readline.insert_text(prefill)
            readline.redisplay()

        readline.set_pre_input_hook(fill)
        try:
            return input(prompt)
        finally:
            readline.set_pre_input_hook()

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Echo off for the block; what is typed meanwhile is kept for ``ask``. The terminal's settings come back."""
        try:
            saved = termios.tcgetattr(self.fd)
        except termios.error:  # not a terminal after all (closed, or redirected meanwhile): nothing to keep
            yield
            return
        quiet = list(saved)
        quiet[3] = (saved[3] & ~(termios.ECHO | termios.ECHONL)) | termios.NOFLSH
        termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        try:
            yield
        finally:
            try:
                self._ahead += self._drain(saved)
            finally:
                termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    def _drain(self, saved: list[Any]) -> str:
        """Everything typed and not yet read, finished line or not: read without waiting, byte mode."""
        raw = list(saved)
        raw[3] = saved[3] & ~(termios.ICANON | termios.ECHO | termios.ECHONL)
        cc = list(saved[6])
        cc[termios.VMIN], cc[termios.VTIME] = 0, 0
        raw[6] = cc
        termios.tcsetattr(self.fd, termios.TCSANOW, raw)
        chunks = []
        while chunk := os.read(self.fd, 4096):
            chunks.append(chunk)
        text = b"".join(chunks).replace(b"\0", b"")  # an end-of-file key typed meanwhile leaves a NUL
        return text.decode(sys.stdin.encoding or "utf-8", errors="surrogateescape")
