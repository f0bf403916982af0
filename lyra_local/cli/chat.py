"""``lyra chat [--session NAME] [--off-the-record]``: talk in the terminal, replies streamed as they are written.

Off the record, the conversation is a new one that is never remembered, and it
is deleted when the command ends (however it ends: /quit, end of input, Ctrl-C,
the terminal closing with SIGHUP, or SIGTERM). Those two signals would
otherwise kill the process before its cleanup; here they end it through it.

On a terminal a reply owns the screen while it streams (``terminal.py``): log
records wait until it has ended, and what is typed meanwhile is not echoed into
it but kept for the next prompt.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from ..companion import Companion
from ..config import load_settings
from ..errors import LyraError
from ..runtime import open_runtime
from ..textsafe import well_formed
from ..turn_events import Delta, Done, Notice, TurnError
from .terminal import FileLogs, Keyboard

log = logging.getLogger(__name__)
# In the data directory (store/files/registry.py): log lines never reach the screen.
CHAT_LOG = Path("logs") / "chat.log"
QUIT = {"/quit", "/exit", ":q"}
ENDING_SIGNALS = (signal.SIGHUP, signal.SIGTERM)


class Ended(SystemExit):
    """The chat was ended by a signal; the process exits with 128 + its number, after the cleanup."""


class Ending:
    """Turns SIGHUP and SIGTERM into ``Ended``, raised in the main thread, once.

    While ``deferred`` a signal waits for the end of the block (a session created
    but not yet known would be left behind); after ``cleaning_up`` signals are
    ignored, so nothing interrupts the forgetting.
    """

    def __init__(self) -> None:
        self._mode = "raise"  # "raise", "defer" or "ignore"
        self._pending: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self._mode == "raise":
            self._mode = "ignore"
            raise Ended(128 + signum)
        if self._mode == "defer" and self._pending is None:
            self._pending = signum

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        self._mode = "defer"
        try:
            yield
        finally:
            if self._mode == "defer":
                self._mode = "raise"
        if self._pending is not None:
            self._mode = "ignore"
            raise Ended(128 + self._pending)

    def cleaning_up(self) -> None:
        self._mode = "ignore"


@contextlib.contextmanager
def ended_by_signals() -> Iterator[Ending]:
    """SIGHUP and SIGTERM end the block through its cleanup; the previous handlers come back after it."""
    ending = Ending()
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield ending
        return
    previous = {sig: signal.signal(sig, ending) for sig in ENDING_SIGNALS}
    try:
        yield ending
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def interrupt_deferred() -> Iterator[None]:
    """A Ctrl-C (SIGINT) during the block raises ``KeyboardInterrupt`` after it, not inside it.

    Storing the person's message embeds it first (the embedding model may still be loading): a Ctrl-C
    meant to stop the reply would otherwise lose the message itself.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
    if pressed:
        raise KeyboardInterrupt


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("chat", help="chat in the terminal")
    parser.add_argument("--session", default="Terminal", help="session name (created if new; default Terminal)")
    parser.add_argument("--off-the-record", action="store_true",
                        help="a new conversation that is never remembered, deleted when you leave")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with (FileLogs.installed(settings.data_dir / CHAT_LOG), ended_by_signals() as ending,
          open_runtime(settings, person=args.person) as runtime):
        store, companion = runtime.store, runtime.companion
        session = None
        try:
            with ending.deferred():  # a signal now would leave the new session behind, unknown to the cleanup
                if args.off_the_record:
                    session = store.sessions.create(args.session, source="cli", remember=False)
                else:
                    session = (store.sessions.find(name=args.session)
                               or store.sessions.create(args.session, source="cli"))
            interactive = sys.stdin.isatty()
            keyboard = Keyboard.of_stdin() if interactive else None
            if interactive:
                record = " (off the record: nothing is remembered, and it is deleted when you leave)" \
                    if args.off_the_record else ""
                print(f"{settings.companion.name} — session '{session.name}'{record}. Ctrl-C stops a reply, "
                      "/quit leaves.")
            while True:
                try:
                    line = keyboard.ask("you> ") if keyboard else input("")
                except EOFError:
                    break
                if line.strip() in QUIT:
                    break
                if line.strip():
                    with keyboard.quiet() if keyboard else contextlib.nullcontext():
                        _reply(companion, session.id, line, settings.companion.name)
        finally:
            ending.cleaning_up()
            runtime.close_companion()  # the replies' background embedding ends before anything is forgotten
            if session is not None and not session.remember:
                runtime.memory.forget_session(session.id)
    return 0


def _reply(companion: Companion, session_id: int, message: str, name: str) -> None:
    turn = companion.turn(session_id, well_formed(message))  # a terminal may hand over undecodable bytes
    print(f"{name.lower()}> ", end="", flush=True)
    try:
        with interrupt_deferred():  # the person's message is stored whole before a Ctrl-C stops the turn
            stored = next(turn)
        for event in itertools.chain([stored], turn):
            if isinstance(event, Delta):
                print(event.text, end="", flush=True)
            elif isinstance(event, TurnError | Notice):
                print(f"\n[{event.type}] {event.text}", file=sys.stderr)
            elif isinstance(event, Done) and event.ending == "length":
                print(" [cut at the length limit]", end="")
    except KeyboardInterrupt:
        turn.close()  # stops generation; what was said is kept
        print(" [stopped]", end="")
    except Exception as exc:  # one failed turn does not end the conversation
        log.info("the turn failed", exc_info=exc)  # the traceback with --verbose
        text = str(exc) if isinstance(exc, LyraError) else f"this turn failed ({type(exc).__name__}: {exc})"
        print(f"\n[error] {text}", file=sys.stderr)
    finally:
        # Ended by a signal: the generation stops (and stores what was said) now, before the cleanup
        # forgets, never later when the abandoned generator is collected.
        turn.close()
    print()
