"""``lyra forget``: delete a session, everything before a date, or every turn containing a text.

Forgetting removes the rows, vectors and full-text entries and every memory
built from what goes (gists, facts, digests, narrative, self-state); the next
dream pass rebuilds them from what remains. ``--dry-run`` lists what would go.
"""

from __future__ import annotations

import argparse
import sys

from ..config import load_settings
from ..errors import LyraError
from ..runtime import open_runtime
from ..store import Store
from ..store.forget.erase import forget
from ..store.forget.plan import ForgetPlan, plan_forget
from ..store.kinds import FORGOTTEN_TEXT, KINDS
from ..transfer.timestamps import time_bound

SAMPLES = 3


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("forget", help="forget a session, everything before a date, or turns containing a text")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--session", action="append", metavar="REF",
                      help="a conversation: its id or name as `lyra sessions` shows them (#ID is always the id); "
                           "one that names several conversations is refused (repeatable)")
    what.add_argument("--before", metavar="DATE",
                      help="every turn before this date (YYYY-MM-DD or ISO time; no offset means UTC)")
    what.add_argument("--matching", metavar="TEXT",
                      help="every turn, memory and conversation name containing TEXT (any case, any Unicode form)")
    p.add_argument("--dry-run", action="store_true", help="only list what would be forgotten")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    before = time_bound(args.before, "--before")  # the store's own UTC text, whatever was typed
    settings = load_settings(args.config)
    with open_runtime(settings, person=args.person) as runtime:
        store = runtime.store
        if not args.dry_run:  # refused while another process imports: what it brings could not be planned for
            store.uploads.settle()
        plan = plan_forget(store, sessions=args.session or (), before=before, matching=args.matching)
        if plan.empty:
            if plan.matching and not args.dry_run:
                forget(store, plan)  # no row holds it, but an edited or deleted memory's words may linger on disk
            print("nothing matches: nothing to forget")
            return 0
        _describe(store, plan)
        if args.dry_run:
            print("dry run: nothing was forgotten")
            return 0
        if not args.yes:
            if not sys.stdin.isatty():
                raise LyraError("not forgetting without confirmation", hint="add --yes (or --dry-run to look first)")
            if input("Forget this for good? [y/N] ").strip().lower() not in ("y", "yes"):
                print("nothing was forgotten")
                return 0
        done = forget(store, plan)
    print(done.describe() + ("; the next dream pass rebuilds the summaries from what remains (`lyra dream`)"
                             if done.memories else ""))
    return 0


def _describe(store: Store, plan: ForgetPlan) -> None:
    for sid in plan.session_ids:
        session = store.sessions.get(sid)
        print(f"session #{session.id} \u201c{session.name}\u201d: all {store.exchanges.count_in(sid)} turn(s)")
    if plan.exchange_ids:
        print(f"{len(plan.exchange_ids)} turn(s) of other sessions, for example:")
        for turn in plan.exchange_ids[:SAMPLES]:
            e = store.exchanges.get(turn)
            if e is not None:
                print(f"  {e.created_at[:16]} {e.role}: {' '.join(e.content.split())[:100]}")
    memories = ", ".join(f"{len(ids)} {KINDS[kind].label[len(ids) != 1]}" for kind, ids in plan.memories.items())
    if memories:
        print(f"memories whose own words hold it: {memories}")
    if plan.renamed:
        print(f"{len(plan.renamed)} conversation(s) whose name holds it: renamed by the day they began")
    if plan.logs:
        print(f"{plan.logs} task note(s), lock(s) or failed pass(es) that hold it: "
              f"their text becomes \u201c{FORGOTTEN_TEXT}\u201d")
