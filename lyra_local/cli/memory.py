"""``lyra memory``: what the dream has consolidated — gists, facts, digests, the arc — and, with ``--sources``,
the turns each was built from (dated, with their conversation), so any of it can be checked against what was said.

Facts are shown as the "About you" cards are (where each was said, confirmed, new since the person last looked;
listing them counts as looking), and ``--confirm ID`` / ``--reject ID`` say "That's right" / "That's wrong"."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from ..config import load_settings
from ..memory.plans import described
from ..mind.facts.about import cards
from ..mind.grounding.checks import cited
from ..runtime import open_runtime
from ..store import Store

KINDS = ("gists", "facts", "digests", "narrative")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("memory", help="list the consolidated memory: gists, facts, digests, the arc")
    parser.add_argument("kind", nargs="?", choices=KINDS, help="only this kind (default: all)")
    parser.add_argument("--sources", action="store_true", help="with the turns each was built from")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--confirm", type=int, metavar="FACT_ID",
                        help="that's right: the fact becomes your statement, the dream never changes it")
    parser.add_argument("--reject", type=int, metavar="FACT_ID",
                        help="that's wrong: the fact goes and is not learnt again from what was said so far")
    parser.set_defaults(run=run)


def listing(store: Store, kinds: tuple[str, ...], sources: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if "gists" in kinds:
        names = {s.id: s.name for s in store.sessions.list(limit=100_000)}
        out += [{"kind": "gist", "id": g.id, "label": names.get(g.session_id, f"session {g.session_id}"),
                 "method": g.method, "text": g.content} for g in store.derived.gists()]
    if "facts" in kinds:
        out += [{"kind": "fact", "id": c.id, "label": c.key, "method": c.author,
                 "text": described(c.value, c.planned_for, c.plan_past), "new": c.new,
                 "said": dataclasses.asdict(c.said) if c.said else None} for c in cards(store)[0]]
    if "digests" in kinds:
        out += [{"kind": "digest", "id": d.id, "label": f"{d.granularity} {d.period}", "method": d.method,
                 "text": d.content} for d in store.derived.digests()]
    arc = store.derived.current_narrative() if "narrative" in kinds else None
    if arc:
        out.append({"kind": "narrative", "id": arc["id"], "label": "the current arc", "method": arc["method"],
                    "text": arc["content"]})
    if sources:
        for item in out:
            item["sources"] = cited(item["text"], store.corrections.sources(item["kind"], item["id"]))
    return out


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with open_runtime(settings, person=args.person) as runtime:
        if args.confirm is not None:
            fact = runtime.store.corrections.confirm_fact(args.confirm)
            print(f"confirmed: {fact.key} = {fact.value} (yours now: the dream will not change it)")
            return 0
        if args.reject is not None:
            runtime.store.corrections.reject_fact(args.reject)
            print(f"fact #{args.reject} rejected: it is gone and will not be learnt again from what was said so far")
            return 0
        items = listing(runtime.store, (args.kind,) if args.kind else KINDS, args.sources)
        if not args.json and any(item["kind"] == "fact" for item in items):
            runtime.store.derived.mark_profile_seen()
    if args.json:
        print(json.dumps(items, indent=2, ensure_ascii=False))
        return 0
    if not items:
        print("nothing consolidated yet: `lyra dream --force` builds it now")
    for item in items:
        print(f"{item['kind']} #{item['id']}  {item['label']}  ({item['method']}{', new' if item.get('new') else ''})")
        print(f"    {item['text']}")
        if item.get("said"):
            said = item["said"]
            print(f"    said {said['created_at'][:10]} in “{said['session_name']}”")
        for turn in item.get("sources", []):
            print(f"      ← {turn['created_at'][:10]} · {turn['session_name']} · turn #{turn['id']} "
                  f"({turn['role']}): {turn['content'][:200]}")
    return 0
