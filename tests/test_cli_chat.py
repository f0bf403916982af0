"""`lyra chat` on a real terminal (a pseudo-terminal), with the real tiny models: a reply owns the screen.

stdin, stdout and stderr are one terminal, as when a person runs the command: a log
record (the index's "no snapshot; rebuilding", forced by a data directory whose
snapshot was removed) never lands in the conversation but in the chat's log file, and
text typed while a reply streams must neither be echoed into it nor be lost: a
finished line is sent after the reply, an unfinished one fills the next prompt,
where the person finishes it. Once a person saw the warning printed inside a reply
and what they typed echoed there and dropped.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lyra_local.cli.terminal import FileLogs, Keyboard
from lyra_local.store import Store

from .conftest import CHAT_GGUF, MODELS_DIR, base_env, require_file

# `lyra chat` with the pseudo-terminal as its controlling terminal, as a shell starts it: Ctrl-C is a SIGINT
LAUNCH = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
          "os.execv(sys.executable, [sys.executable, '-m', 'lyra_local', 'chat', *sys.argv[1:]])")
WAIT_S = 180  # a reply of the tiny model on a busy 2-core machine, with the models' loading before the first
TOKEN = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[^\[]|.", re.S)


def screen(raw: str) -> str:
    """The lines a terminal shows for ``raw``: carriage returns, backspaces, erase-to-end and cursor moves applied
    (readline redraws a pre-filled prompt with them); other escapes (bracketed paste, colours) change no text."""
    lines: list[str] = []
    line: list[str] = []
    col = 0
    for token in TOKEN.findall(raw):
        if token == "\n":
            lines.append("".join(line))
            line, col = [], 0
        elif token == "\r":
            col = 0
        elif token == "\b":
            col = max(0, col - 1)
        elif token.startswith("\x1b["):
            count = int(token[2:-1]) if token[2:-1].isdigit() else 1
            if token[-1] == "K":
                del line[col:]
            elif token[-1] == "C":
                col += count
            elif token[-1] == "D":
                col = max(0, col - count)
        elif not token.startswith("\x1b") and token.isprintable():
            line.extend(" " * (col - len(line)))
            line[col:col + 1] = [token]
            col += 1
    return "\n".join([*lines, "".join(line)])


def test_the_screen_applies_what_readline_sends() -> None:
    assert screen("you> \r\x1b[Kyou> I like\x1b[?2004h tea\r\n") == "you> I like tea\n"
    assert screen("ab\bc\x1b[1Dd") == "ad"
    assert screen("lyra> hi\r\nthere") == "lyra> hi\nthere"


def test_log_records_go_to_the_log_file_only_its_owner_reads(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    root, log = logging.getLogger(), logging.getLogger("lyra_local.test")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.WARNING)
    saved = root.handlers, root.level
    root.handlers, root.level = [handler], logging.INFO
    path = tmp_path / "data" / "logs" / "chat.log"
    try:
        with FileLogs.installed(path):
            log.warning("one")
            log.info("below the handlers' level")
            log.error("two")
        assert root.handlers == [handler] and stream.getvalue() == ""  # nothing reached the screen
    finally:
        root.handlers, root.level = saved
    lines = path.read_text().splitlines()
    assert [line.split(" ", 2)[2] for line in lines] == ["WARNING lyra_local.test: one", "ERROR lyra_local.test: two"]
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert capsys.readouterr().err == f"(2 warnings written to {path})\n"  # said once, when the chat ends


def test_what_is_typed_while_quiet_is_not_echoed_and_comes_back_to_the_prompts(
        capsys: pytest.CaptureFixture[str]) -> None:
    master, follower = pty.openpty()
    try:
        keyboard = Keyboard(follower, readline=None)
        before = termios.tcgetattr(follower)
        with keyboard.quiet():
            lflag = termios.tcgetattr(follower)[3]
            assert not lflag & termios.ECHO and lflag & termios.NOFLSH  # a Ctrl-C does not flush it either
            os.write(master, b"first line\nsecond\x7f\x7fcond\n")  # erasing works without the echo
            assert select.select([follower], [], [], 10)[0]  # the line discipline has taken it in
        assert termios.tcgetattr(follower) == before
        assert select.select([master], [], [], 0)[0] == []  # nothing was echoed
        assert keyboard.ask("you> ") == "first line"
        assert keyboard.ask("you> ") == "secocond"
        assert capsys.readouterr().out == "you> first line\nyou> secocond\n"  # shown after their prompts
    finally:
        os.close(master)
        os.close(follower)


class Terminal:
    """``lyra chat ARGS`` on a pseudo-terminal that is its stdin, stdout and stderr: what it showed, and a keyboard."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))  # no wrapped lines
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCH, *args], stdin=follower, stdout=follower,
                                     stderr=follower, env=env, start_new_session=True)
        os.close(follower)
        self._raw = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the command ended and closed the terminal
                return
            if not chunk:
                return
            with self._lock:
                self._raw += chunk

    @property
    def shown(self) -> str:
        with self._lock:
            return screen(self._raw.decode("utf-8", errors="replace"))

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait_for(self, pattern: str, count: int = 1) -> None:
        """Until a line matching ``pattern`` has been shown ``count`` times."""
        deadline = time.monotonic() + WAIT_S
        while len(re.findall(pattern, self.shown, re.M)) < count:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{pattern!r} was not shown {count} time(s); the screen:\n{self.shown}")
            time.sleep(0.02)

    def quit(self) -> str:
        """``/quit`` at an empty prompt; what the screen showed in the end."""
        self.wait_for(r"^you> $")
        self.type("/quit\n")
        assert self.proc.wait(timeout=WAIT_S) == 0, self.shown
        self._reader.join(timeout=10)
        return self.shown

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        self._reader.join(timeout=10)
        os.close(self.master)


@contextlib.contextmanager
def chat(env: dict[str, str], *args: str) -> Iterator[Terminal]:
    terminal = Terminal(list(args), env)
    try:
        yield terminal
    finally:
        terminal.close()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    require_file(CHAT_GGUF)
    return {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
            "LYRA_DREAM__ENABLED": "false", "TERM": "xterm-256color",
            # long enough a reply to type into, and the same reply on every run
            "LYRA_MODELS__CHAT__SAMPLING__MAX_TOKENS": "48", "LYRA_MODELS__CHAT__SAMPLING__SEED": "7"}


def without_snapshots(env: dict[str, str], data: Path) -> None:
    """A data directory with a conversation and its vectors, then without the index snapshots: the first recall
    of the next chat rebuilds the index and logs a warning, while its first reply streams."""
    done = subprocess.run([sys.executable, "-m", "lyra_local", "chat", "--session", "Evening"],
                          input="I keep bees on my roof.\n", capture_output=True, text=True, timeout=WAIT_S,
                          env={**env, "LYRA_MODELS__CHAT__SAMPLING__MAX_TOKENS": "8"})
    assert done.returncode == 0, done.stderr
    snapshots = [p for p in data.rglob("*.faiss") if p.is_file()]
    assert snapshots, sorted(p.name for p in data.rglob("*"))
    for path in snapshots:
        path.unlink()


def said(data: Path, name: str = "Evening") -> tuple[list[str], list[str]]:
    """The user's turns and the replies stored in session ``name``."""
    store = Store(data)
    try:
        session = store.sessions.find(name=name)
        assert session is not None
        turns = store.exchanges.history(session.id)
    finally:
        store.close()
    return [t.content for t in turns if t.role == "user"], [t.content for t in turns if t.role == "assistant"]


def shown_whole(shown: str, replies: list[str]) -> None:
    """Each stored reply is on the screen in one piece right after its ``lyra>``: nothing cut into it."""
    starts = [m.end() for m in re.finditer(r"^lyra> ", shown, re.M)]
    assert len(starts) == len(replies), shown
    for start, reply in zip(starts, replies, strict=True):
        assert reply.strip()
        after = " ".join(shown[start:].split())
        assert after.startswith(" ".join(reply.split())), f"the reply {reply!r} was cut into:\n{shown[start:]}"


@pytest.mark.slow
@pytest.mark.models
def test_a_log_line_goes_to_the_log_file_and_text_typed_meanwhile_is_sent_next(
        tmp_path: Path, env: dict[str, str]) -> None:
    without_snapshots(env, tmp_path / "data")
    with chat(env, "--session", "Evening") as terminal:
        terminal.wait_for(r"^you> ")
        terminal.type("Hello, I am Sam.\n")
        terminal.wait_for(r"^lyra> ")
        terminal.type("What do I keep on my roof?\n")  # a finished line, typed while the first reply streams
        terminal.wait_for(r"^you> What do I keep on my roof\?$")  # sent after the reply, shown after its prompt
        terminal.wait_for(r"^lyra> ", count=2)
        terminal.type("I like")  # an unfinished line, typed while the second reply streams
        terminal.wait_for(r"^you> I like$")  # it fills the next prompt
        terminal.type(" honey\n")  # where the person finishes it
        terminal.wait_for(r"^lyra> ", count=3)
        shown = terminal.quit()

    users, replies = said(tmp_path / "data")
    assert users == ["I keep bees on my roof.", "Hello, I am Sam.", "What do I keep on my roof?", "I like honey"]
    shown_whole(shown, replies[1:])
    assert "rebuilding from the database" not in shown and "WARNING" not in shown, shown  # never on the screen
    logged = (tmp_path / "data" / "logs" / "chat.log").read_text()
    assert re.search(r"^\d{4}-\d\d-\d\d [\d:,]+ WARNING .*rebuilding from the database", logged, re.M), logged
    assert "written to " in shown.splitlines()[-1], shown  # where it went, said once as the chat ends


@pytest.mark.slow
@pytest.mark.models
def test_ctrl_c_stops_a_reply_and_keeps_what_was_typed(tmp_path: Path, env: dict[str, str]) -> None:
    with chat({**env, "LYRA_MODELS__CHAT__SAMPLING__MAX_TOKENS": "400"}, "--session", "Evening") as terminal:
        terminal.wait_for(r"^you> ")
        terminal.type("Tell me a long story about a lighthouse.\n")
        terminal.wait_for(r"^lyra> ")
        terminal.type("and then?")
        terminal.type("\x03")  # Ctrl-C: the terminal sends SIGINT, which stops the reply
        terminal.wait_for(r"\[stopped\]$")
        terminal.wait_for(r"^you> and then\?$")  # what was typed before it is not flushed away
        terminal.type("\n")
        terminal.wait_for(r"^lyra> ", count=2)
        terminal.type("\x03")  # and the second reply is stopped too: the chat goes on
        terminal.wait_for(r"\[stopped\]$", count=2)
        shown = terminal.quit()

    users, replies = said(tmp_path / "data")
    assert users == ["Tell me a long story about a lighthouse.", "and then?"]
    assert "^C" not in shown and "and then?" not in shown.split("[stopped]")[0], shown
