"""``lyra chat [--session NAME] [--off-the-record]``: talk in the terminal, replies streamed as they are written.

Off the record, the conversation is a new one that is never remembered, and it
is deleted when the command ends (however it ends).
"""

from __future__ import annotations

import argparse
import logging
import sys

from ..companion import Companion
from ..config import load_settings
from ..errors import LyraError
from ..runtime import open_runtime
from ..textsafe import well_formed

log = logging.getLogger(__name__)
QUIT = {"/quit", "/exit", ":q"}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("chat", help="chat in the terminal")
    parser.add_argument("--session", default="Terminal", help="session name (created if new; default Terminal)")
    parser.add_argument("--off-the-record", action="store_true",
                        help="a new conversation that is never remembered, deleted when you leave")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with open_runtime(settings) as runtime:
        store, companion = runtime.store, runtime.companion
        session = None
        try:
            if args.off_the_record:
                session = store.sessions.create(args.session, source="cli", remember=False)
            else:
                session = store.sessions.find(name=args.session) or store.sessions.create(args.session, source="cli")
            interactive = sys.stdin.isatty()
            if interactive:
                record = " (off the record: nothing is remembered, and it is deleted when you leave)" \
                    if args.off_the_record else ""
                print(f"{settings.companion.name} — session '{session.name}'{record}. Ctrl-C stops a reply, "
                      "/quit leaves.")
            while True:
                try:
                    line = input("you> " if interactive else "")
                except EOFError:
                    break
                if line.strip() in QUIT:
                    break
                if line.strip():
                    _reply(companion, session.id, line, settings.companion.name)
        finally:
            runtime.close_companion()  # the replies' background embedding ends before anything is forgotten
            if session is not None and not session.remember:
                runtime.memory.forget_session(session.id)
    return 0


def _reply(companion: Companion, session_id: int, message: str, name: str) -> None:
    turn = companion.turn(session_id, well_formed(message))  # a terminal may hand over undecodable bytes
    print(f"{name.lower()}> ", end="", flush=True)
    try:
        for event in turn:
            if event.type == "delta":
                print(event.text, end="", flush=True)
            elif event.type in ("error", "notice"):
                print(f"\n[{event.type}] {event.text}", file=sys.stderr)
    except KeyboardInterrupt:
        turn.close()  # stops generation; what was said is kept
        print(" [stopped]", end="")
    except Exception as exc:  # one failed turn does not end the conversation
        log.info("the turn failed", exc_info=exc)  # the traceback with --verbose
        text = str(exc) if isinstance(exc, LyraError) else f"this turn failed ({type(exc).__name__}: {exc})"
        print(f"\n[error] {text}", file=sys.stderr)
    print()
