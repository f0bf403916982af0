"""``lyra recall QUERY``: search the memory the way the companion does."""

from __future__ import annotations

import argparse
import dataclasses
import json

from ..config import load_settings
from ..memory import RecallQuery
from ..runtime import open_runtime
from ..store import Hit
from ..transfer.timestamps import time_bound


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("recall", help="search the memory (hybrid: vectors + full text)")
    parser.add_argument("query", help="what to look for")
    parser.add_argument("--k", type=int, default=10, help="how many hits (default 10)")
    parser.add_argument("--tier", choices=("exchange", "gist", "digest"), default="exchange")
    parser.add_argument("--session", metavar="REF", help="only this conversation (its id or name as `lyra sessions` "
                                                          "shows it; #ID is always the id)")
    parser.add_argument("--exclude-session", metavar="REF", help="not this conversation")
    parser.add_argument("--since", metavar="DATE", help="from this date or ISO time on (no offset means UTC)")
    parser.add_argument("--until", metavar="DATE", help="before this date or ISO time (no offset means UTC)")
    parser.add_argument("--role", choices=("user", "assistant"), help="only turns of this role")
    parser.add_argument("--recency", type=float, default=0.0, help="weight of recency, 0 (off) to 1")
    parser.add_argument("--context", type=int, default=0, help="neighbouring turns to include per hit")
    parser.add_argument("--mode", choices=("hybrid", "dense", "bm25"), default="hybrid")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


def hit_json(hit: Hit) -> dict[str, object]:
    return dataclasses.asdict(hit)


def run(args: argparse.Namespace) -> int:
    since, until = time_bound(args.since, "--since"), time_bound(args.until, "--until")  # compared as UTC text
    settings = load_settings(args.config)
    with open_runtime(settings, person=args.person) as runtime:
        session, excluded = (runtime.store.sessions.resolve(ref).id if ref else None
                             for ref in (args.session, args.exclude_session))
        query = RecallQuery(args.query, k=args.k, tier=args.tier, session_id=session, exclude_session_id=excluded,
                            since=since, until=until, role=args.role, recency_weight=args.recency,
                            neighbours=args.context, mode=args.mode)
        hits = runtime.memory.recall(query)
    if args.json:
        print(json.dumps([hit_json(h) for h in hits], indent=2, ensure_ascii=False))
        return 0
    if not hits:
        print("nothing found")
    for hit in hits:
        print(f"{hit.score:.4f}  {hit.kind} #{hit.id}  session {hit.session_id}  {hit.created_at[:16]}  "
              f"[{'+'.join(hit.stages)}]")
        print(f"    {hit.role or hit.kind}: {hit.content[:300]}")
        for turn in hit.context:
            print(f"      ~ {turn.role}: {turn.content[:200]}")
    return 0
