"""The ``lyra`` command: one module per command group, errors without tracebacks.

Every command acts as one person of the household (``--person NAME``): a memory command opens that person's
memory and nobody else's (``people.choose`` says who, or names the choice), a household command (``lyra
people``, ``lyra backup --household``) acts as the owner unless told otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..config import load_settings
from ..errors import LyraError
from ..fsutil import PRIVATE_UMASK
from ..oserrors import storage_error
from . import (
    chat,
    doctor,
    dream,
    forget,
    mcp,
    memory,
    models,
    people,
    recall,
    reindex,
    serve,
    sessions,
    tokens,
    transfer,
    world,
)

SHARED_FILES = frozenset({"models"})  # commands whose files are no one's memory (main: the umask)
COMMANDS = (serve, chat, sessions, dream, recall, memory, world, transfer, forget, mcp, reindex, people, tokens, models,
            doctor)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lyra", description="Lyra, an offline companion with long-term memory.")
    parser.add_argument("--version", action="version", version=f"lyra {__version__}")
    parser.add_argument("--config", type=Path, default=None, metavar="PATH",
                        help="lyra.toml to read (default: $LYRA_CONFIG, ./lyra.toml, ~/.config/lyra/lyra.toml)")
    parser.add_argument("--person", metavar="NAME", default=None,
                        help="act as this person of the household (default: the only one; with several, the owner "
                             "for household commands, and memory commands ask)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # What a command makes (memory, indexes, backups, exports) is this account's alone; model files are not
    # memory, and another account (a container's user) may have to read them.
    umask = None if args.command in SHARED_FILES else os.umask(PRIVATE_UMASK)
    try:
        return _run(args)
    finally:
        if umask is not None:
            os.umask(umask)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        code: int = args.run(args)
        return code
    except LyraError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error) as exc:  # a full disk, a read-only one...: its cause, never a traceback
        named = storage_error(exc, _data_dir(args))
        if named is None:
            raise
        print(f"error: {named}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _data_dir(args: argparse.Namespace) -> Path | None:
    """The data directory the command used, where an OS error names no file (a write to a descriptor)."""
    try:
        return load_settings(args.config).data_dir
    except (LyraError, OSError, ValueError):  # the settings themselves failed: named without a path
        return None
