"""``lyra memory``: what the dream has consolidated — gists, facts, digests, the arc — and, with ``--sources``,
the turns each was built from (dated, with their conversation), so any of it can be checked against what was said."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..config import load_settings
from ..mind.grounding import cited
from ..runtime import open_runtime
from ..store import Store

KINDS = ("gists", "facts", "digests", "narrative")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("memory", help="list the consolidated memory: gists, facts, digests, the arc")
    parser.add_argument("kind", nargs="?", choices=KINDS, help="only this kind (default: all)")
    parser.add_argument("--sources", action="store_true", help="with the turns each was built from")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)


def listing(store: Store, kinds: tuple[str, ...], sources: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if "gists" in kinds:
        names = {s.id: s.name for s in store.sessions.list(limit=100_000)}
        out += [{"kind": "gist", "id": g.id, "label": names.get(g.session_id, f"session {g.session_id}"),
                 "method": g.method, "text": g.content} for g in store.derived.gists()]
    if "facts" in kinds:
        out += [{"kind": "fact", "id": f.id, "label": f.key, "method": f.author, "text": f.value}
                for f in store.derived.profile()]
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
    with open_runtime(settings) as runtime:
        items = listing(runtime.store, (args.kind,) if args.kind else KINDS, args.sources)
    if args.json:
        print(json.dumps(items, indent=2, ensure_ascii=False))
        return 0
    if not items:
        print("nothing consolidated yet: `lyra dream --force` builds it now")
    for item in items:
        print(f"{item['kind']} #{item['id']}  {item['label']}  ({item['method']})")
        print(f"    {item['text']}")
        for turn in item.get("sources", []):
            print(f"      ← {turn['created_at'][:10]} · {turn['session_name']} · turn #{turn['id']} "
                  f"({turn['role']}): {turn['content'][:200]}")
    return 0
