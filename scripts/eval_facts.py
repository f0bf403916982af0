#!/usr/bin/env python3
"""The profile's truth gate (``lyra_local/mind/facts/gate.py``) measured on proposed facts whose truth is known.

A case file is a JSON list of cases ``{"turns": [{"role", "content"}],
"proposals": [{"key", "value", "quote", "true"}]}`` ("user" turns are the
person's own; a proposal may also carry a ``kind`` and a ``source``). Each
case's proposals go through ``judge_case`` with the spaCy parser
(``lyra_local/parser.py``) and the configured embedding model (the GGUF
all-MiniLM in ``models/``, loaded as ``scripts/bench_chat.py`` loads it).

Printed: each proposal, kept (under which key) or refused (by which check);
then recall (true proposals kept under their own key / true proposals) and
precision (true proposals kept under their own key / everything kept; a true
one kept under another key counts as wrong), overall and against each kind of
false proposal, and the checks that refused each kind. Writes nothing.

    python scripts/facts_cases.py /tmp/locomo_facts.json     # LoCoMo's dev half, our labels
    python scripts/eval_facts.py --cases /tmp/locomo_facts.json
    python scripts/eval_facts.py --cases tests/data/facts_cases.json --json   # our regression set
    python scripts/eval_facts.py --cases FILE --check                          # the file's shape only, no model
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_chat import bench_embedder  # noqa: E402

ROLES = ("user", "assistant")
Verdict = tuple[list[tuple[str, str]], str | None]  # what was kept (key, value), and the check that refused it
Judge = Callable[[Sequence[dict[str, str]], Sequence[dict[str, Any]]], list[Verdict]]


def load_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a file; a case or proposal of the wrong shape stops the run, named."""
    cases = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(cases, list):
        raise SystemExit(f"{path}: a JSON list of cases is expected")
    for n, case in enumerate(cases):
        where = f"{path}: case {n} ({case.get('name', 'unnamed') if isinstance(case, dict) else '?'})"
        if not isinstance(case, dict) or not isinstance(case.get("turns"), list) \
                or not isinstance(case.get("proposals"), list):
            raise SystemExit(f"{where}: needs 'turns' and 'proposals' lists")
        for i, turn in enumerate(case["turns"]):
            if not isinstance(turn, dict) or turn.get("role") not in ROLES or not isinstance(turn.get("content"), str):
                raise SystemExit(f"{where}: turn {i} needs a role ({' or '.join(ROLES)}) and a content string")
        for i, p in enumerate(case["proposals"]):
            if not isinstance(p, dict) or not all(isinstance(p.get(f), str) for f in ("key", "value", "quote")) \
                    or not isinstance(p.get("true"), bool):
                raise SystemExit(f"{where}: proposal {i} needs key, value and quote strings and a boolean 'true'")
    return cases


def kind_of(proposal: dict[str, Any]) -> str:
    return str(proposal.get("kind") or ("true" if proposal["true"] else "false"))


def real_gate() -> tuple[Judge, str]:
    """``judge_case`` with the real parser and embedding model, and a line saying what they are."""
    # imported here, not above, so that --check reads a case file without the gate and its models
    from lyra_local.mind.facts.gate import judge_case
    from lyra_local.parser import load_parser

    settings, embedder = bench_embedder()
    parser = load_parser(settings.models_dir)
    embed = embedder.embed  # one callable for every case: the gate embeds its keys' statements once per embed

    def judge(turns: Sequence[dict[str, str]], proposals: Sequence[dict[str, Any]]) -> list[Verdict]:
        return [(list(j.kept), j.failed) for j in judge_case(turns, proposals, parser=parser, embed=embed)]

    return judge, f"embeddings {embedder.name}, parser {getattr(parser, 'meta', {}).get('name', type(parser).__name__)}"


def evaluate(cases: list[dict[str, Any]], judge: Judge) -> list[dict[str, Any]]:
    """One row per proposal: its fields, what was kept (``kept``) or the check that refused it (``failed``)."""
    rows = []
    for case in cases:
        name = case.get("name", "")
        print(f"\n## {name or 'case'}: {len(case['turns'])} turns, {len(case['proposals'])} proposals")
        for proposal, (pairs, failed) in zip(case["proposals"], judge(case["turns"], case["proposals"]), strict=True):
            kept = [list(pair) for pair in pairs]
            row = {"case": name, "kind": kind_of(proposal), "key": proposal["key"], "value": proposal["value"],
                   "true": proposal["true"], "kept": kept, "failed": failed or ("" if kept else "nothing kept")}
            rows.append(row)
            said = f"kept as {', '.join(k for k, _ in kept)}" if kept else f"refused ({row['failed']})"
            mark = "ok" if correct(row) or (not row["true"] and not kept) else "WRONG"
            print(f"  {mark:5} {row['kind']:18} {proposal['key']} = {proposal['value']!r}: {said} "
                  f"<- {proposal['quote']!r}")
    return rows


def correct(row: dict[str, Any]) -> bool:
    """A true proposal kept under its own key (labels use the profile's key names)."""
    return bool(row["true"]) and any(key == row["key"] for key, _ in row["kept"])


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "n/a"


def report(rows: list[dict[str, Any]]) -> None:
    true = [r for r in rows if r["true"]]
    right = sum(correct(r) for r in true)
    kept = [r for r in rows if r["kept"]]
    print(f"\n### The gate on {len(rows)} proposals ({len(true)} true)\n")
    print(f"recall {ratio(right, len(true))} ({right}/{len(true)}), precision {ratio(right, len(kept))} "
          f"({right}/{len(kept)} kept)\n")
    print("| kind | proposals | kept | precision against this kind | refused by |")
    print("|---|---:|---:|---:|---|")
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_kind[r["kind"]].append(r)
    for kind, these in sorted(by_kind.items(), key=lambda item: (item[0] != "true", item[0])):
        held = [r for r in these if r["kept"]]
        refused = Counter(r["failed"] for r in these if not r["kept"])
        against = "" if kind == "true" else ratio(right, right + len(held))
        print(f"| {kind} | {len(these)} | {len(held)} | {against} | "
              + ", ".join(f"{check} {n}" for check, n in refused.most_common()) + " |")
    keys: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in true:
        keys[r["key"]].append(r)
    print("\nrecall by key: " + ", ".join(f"{k} {sum(correct(r) for r in rs)}/{len(rs)}"
                                          for k, rs in sorted(keys.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=Path, required=True, help="a case file (scripts/facts_cases.py writes one)")
    parser.add_argument("--json", action="store_true", help="also one JSON list of the verdicts on the last line")
    parser.add_argument("--check", action="store_true", help="only read the file and count its proposals")
    args = parser.parse_args()
    cases = load_cases(args.cases)
    kinds = Counter(kind_of(p) for c in cases for p in c["proposals"])
    print(f"{args.cases}: {len(cases)} cases, {sum(kinds.values())} proposals: "
          + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    if args.check:
        return
    judge, models = real_gate()
    print(f"Truth gate evaluation: {models}")
    started = time.perf_counter()
    rows = evaluate(cases, judge)
    report(rows)
    print(f"\n{time.perf_counter() - started:.1f} s")
    if args.json:
        print(json.dumps([{k: r[k] for k in ("key", "value", "true", "kept", "kind", "failed", "case")}
                          for r in rows], ensure_ascii=False))


if __name__ == "__main__":
    main()
