"""``lyra sessions [--limit N] [--json]``: the conversations, newest activity first.

Each with its id (``#12``, what ``lyra forget --session`` and ``lyra recall
--session`` take), its name, how many turns its current path has, when it was
last active (UTC) and whether it is off the record. Reads the store only: no
model is loaded.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from ..config import load_settings
from ..runtime import open_runtime
from ..store import Store


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("sessions", help="list the conversations, newest first, with their turns")
    parser.add_argument("--limit", type=int, metavar="N", help="only the N most recently active (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


def listing(store: Store, limit: int | None = None) -> list[dict[str, Any]]:
    """Every session (the ``limit`` most recent), newest activity first, with ``turns`` and ``off_the_record``."""
    sessions = store.sessions.list(limit=limit if limit is not None else max(store.sessions.count(), 1))
    return [{**dataclasses.asdict(s), "turns": store.exchanges.count_in(s.id), "off_the_record": not s.remember}
            for s in sessions]


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with open_runtime(settings, person=args.person) as runtime:
        rows = listing(runtime.store, args.limit if args.limit is None else max(args.limit, 0))
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no conversations yet: `lyra chat` starts one")
        return 0
    ids = [f"#{row['id']}" for row in rows]
    names = [" ".join(row["name"].split()) for row in rows]  # an imported name may hold line breaks
    id_w, name_w = max(map(len, ids)), max(len("name"), *map(len, names))
    print(f"{'id':>{id_w}}  {'name':<{name_w}}  turns  last active (UTC)")
    for row, shown_id, name in zip(rows, ids, names, strict=True):
        record = "  (off the record)" if row["off_the_record"] else ""
        print(f"{shown_id:>{id_w}}  {name:<{name_w}}  {row['turns']:>5}  "
              f"{row['updated_at'][:16].replace('T', ' ')}{record}")
    return 0
