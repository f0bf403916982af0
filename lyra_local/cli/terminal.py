"""The terminal around ``lyra chat``: a reply owns the screen while it streams, and nothing typed is lost.

On a terminal, stdout, stderr and the echo of the keyboard share one screen. Left
alone, a log record (the index's "no snapshot; rebuilding", a background
embedding's warning) lands inside a reply, and so does the echo of what the
person types while it streams; that text then reaches the next prompt without
being shown, or not at all. So:

- ``HeldLogs`` stands in for the root logger's handlers for the whole chat: a
  record waits until the screen is between lines (after a reply, after the
  person's Enter) and is then written by the handlers it was meant for, on
  stderr as before, on its own line;
- ``Keyboard`` turns the terminal's echo off while a reply streams (the line
  discipline still collects what is typed, erase and all, and a Ctrl-C that
  stops the reply no longer flushes it), reads it back after the reply, and
  hands it to the next prompts: a finished line is sent in turn, shown after
  its prompt; an unfinished one fills the next prompt, where it can be edited
  (readline) or finished.

It never leaves the terminal changed (its settings come back however a reply
ends) and never touches input that is not a terminal: piped lines are read in
order by ``input`` and nothing is lost.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import sys
import termios
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

HELD_RECORDS = 10_000  # a runaway logger cannot grow the chat without bound; what is dropped is counted


class HeldLogs(logging.Handler):
    """Keeps the records meant for the root logger's handlers until ``write_held``; ``installed`` puts it there."""

    def __init__(self, targets: list[logging.Handler]) -> None:
        super().__init__(logging.NOTSET)
        self._targets = targets
        self._held: collections.deque[logging.LogRecord] = collections.deque(maxlen=HELD_RECORDS)
        self._dropped = 0
        self._writing = threading.Lock()  # records leave in the order they came

    def emit(self, record: logging.LogRecord) -> None:  # called under the handler's lock
        if len(self._held) == HELD_RECORDS:
            self._dropped += 1
        self._held.append(record)

    def write_held(self) -> None:
        """Write what is held through the handlers it was meant for (each with its own level)."""
        with self._writing:
            with self.lock or contextlib.nullcontext():
                records, self._held = list(self._held), collections.deque(maxlen=HELD_RECORDS)
                dropped, self._dropped = self._dropped, 0
            if dropped:
                records.insert(0, logging.makeLogRecord({
                    "name": __name__, "levelno": logging.WARNING, "levelname": "WARNING",
                    "msg": f"{dropped} earlier log record(s) were dropped while the chat held them"}))
            for record in records:
                for target in self._targets:
                    if record.levelno >= target.level:
                        target.handle(record)

    @classmethod
    @contextlib.contextmanager
    def installed(cls) -> Iterator[HeldLogs]:
        """In place of the root logger's handlers for the block; they come back after it, with what was held."""
        root = logging.getLogger()
        targets = list(root.handlers)
        held = cls(targets)
        root.handlers = [held]
        try:
            yield held
        finally:
            root.handlers = targets
            held.write_held()


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
