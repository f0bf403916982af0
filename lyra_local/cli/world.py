"""``lyra world`` (the core memory: show, edit, history, review proposals) and ``lyra sitrep``."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
from pathlib import Path

from ..config import load_settings
from ..coord import Coordinator
from ..errors import LyraError
from ..runtime import open_runtime
from ..store import Store
from ..store.files.outgoing import world_draft, writing_outside


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("world", help="the core memory: show, edit, history, proposals, accept, reject")
    p.add_argument("action", nargs="?", default="show",
                   choices=("show", "edit", "history", "proposals", "accept", "reject", "set"))
    p.add_argument("arg", nargs="?", help="a proposal id (accept/reject) or a file (set)")
    p.set_defaults(run=run_world)
    p = sub.add_parser("sitrep", help="world state, running instances, locks and recent changes, in short")
    p.add_argument("--json", action="store_true", help="the data behind it, as JSON")
    p.set_defaults(run=run_sitrep)


def run_sitrep(args: argparse.Namespace) -> int:
    import json

    settings = load_settings(args.config)
    with open_runtime(settings, person=args.person) as runtime:
        c = Coordinator(runtime.store, settings)
        print(json.dumps(c.sitrep(), indent=2, ensure_ascii=False) if args.json else c.sitrep_text())
    return 0


def run_world(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with open_runtime(settings, person=args.person) as runtime:
        store = runtime.store
        coord = store.coord
        if args.action == "show":
            current = coord.world()
            print(current.content if current else "(no core memory yet: `lyra world edit` writes it)")
        elif args.action == "history":
            for v in coord.world_history():
                print(f"#{v.id} {v.created_at[:16]} {v.status:<8} {v.author}" + (f" — {v.reason}" if v.reason else "")
                      + (f" ({v.status} by {v.decided_by})" if v.decided_by and v.status != "accepted" else ""))
        elif args.action == "proposals":
            for p in coord.proposals():
                print(f"#{p.id} by {p.author}: {p.reason}\n{p.content}\n")
            if not coord.proposals():
                print("no proposals waiting")
        elif args.action in ("accept", "reject"):
            if not args.arg or not args.arg.isdigit():
                raise LyraError(f"`lyra world {args.action}` needs a proposal id", hint="`lyra world proposals`")
            version = coord.decide(int(args.arg), args.action == "accept", "user")
            print(f"proposal #{version.id} {version.status}")
        elif args.action == "set":
            if not args.arg:
                raise LyraError("`lyra world set FILE` needs a file")
            content = Path(args.arg).read_text(encoding="utf-8")
            print(f"version #{coord.write_world(content, 'user', 'set from ' + args.arg).id} saved")
        else:
            return _edit(store)
    return 0


def _edit(store: Store) -> int:
    current = store.coord.world()
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    path = world_draft()
    with writing_outside(store.data_dir, path):  # killed while the editor runs: the next open removes the draft
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(current.content if current else "# The world as it stands\n\n")
            if subprocess.run([*shlex.split(editor), str(path)]).returncode != 0:
                raise LyraError(f"the editor ({editor}) failed; nothing was saved")
            content = path.read_text(encoding="utf-8")
        finally:
            path.unlink(missing_ok=True)
    if current is not None and content == current.content:
        print("no change")
        return 0
    version = store.coord.write_world(content, "user", "edited with lyra world edit")
    print(f"version #{version.id} saved (every earlier version is kept: `lyra world history`)")
    return 0
