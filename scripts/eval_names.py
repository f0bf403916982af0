#!/usr/bin/env python3
"""Who is who, measured: does recall know whom a question names, and are the hits that person's words?

On ``locomo-people`` (``scripts/people_sets.py``: no labels, the other speaker
an imported chat's participant, questions asking by names and by nicknames no
turn uses), for every question naming a speaker: whether recall resolves each
name to its speaker (``Memory.speakers_named``), by how the question names
them; and, for questions naming one speaker, the share of the evidence that
is that speaker's words against the share of Lyra's top 10. Prints one table.

    python scripts/eval_names.py --cache /tmp/eval    # eval_recall.py's --cache: reuses its stores
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.memory import RecallQuery
from lyra_local.memory.speakers import speaker_of

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_recall import open_memory  # noqa: E402
from messy_sets import origin, speaker_names  # noqa: E402
from people_sets import locomo_people  # noqa: E402
from recall_sets import load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, help="eval_recall.py's --cache: reuse its imported stores")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N memories")
    args = parser.parse_args()
    clean = load("locomo-dev")[:args.conversations or None]
    people = locomo_people(clean)
    resolved: dict[str, list[bool]] = defaultdict(list)
    shares: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.cache or Path(tmp)
        models = Models(load_settings(None, env={**os.environ, "LYRA_DATA_DIR": str(base)}))
        for before, memory_set in zip(clean, people, strict=True):
            a, b = speaker_names(before)  # the person's and the other participant's (people_sets.py)
            keys = {a: "user", b: f"author:{b}"}
            store, memory, _ = open_memory(base / "locomo-people", memory_set, models.embed)
            messages: dict[str, set[int]] = defaultdict(set)
            for source, exchange in store.exchanges.ids_by_source().items():
                messages[origin(source)].add(exchange)
            for asked, question in zip(before.questions, memory_set.questions, strict=True):
                named = {keys[n] for n in keys if re.search(rf"\b{re.escape(n)}\b", asked.text)}
                if not named:
                    continue
                form = "by name" if question.text.lower() == asked.text.lower() else "by nickname"
                form += ", lower case" if question.text == question.text.lower() else ""
                got = set(memory.speakers_named(question.text).values())
                resolved[form].append(got == named)
                resolved["all"].append(got == named)
                if len(named) == 1:
                    who = next(iter(named))
                    evidence = [i for e in question.evidence for i in messages[e]]
                    hits = [h.id for h in memory.recall(RecallQuery(question.text, k=10))]
                    turns = store.exchanges.get_many([*evidence, *hits])
                    said_by = {i: speaker_of(e.role, e.author) for i, e in turns.items()}
                    shares["evidence"].append(sum(said_by.get(i) == who for i in evidence) / len(evidence))
                    shares["Lyra's top 10"].append(sum(said_by.get(i) == who for i in hits) / max(1, len(hits)))
            store.close()
        models.close()
    print("\n### Names in questions resolved to their speaker (locomo-people)\n")
    print("| questions naming a speaker | n | resolved to the right speaker(s) |")
    print("|---|---:|---:|")
    for form, values in sorted(resolved.items()):
        print(f"| {form} | {len(values)} | {statistics.mean(values):.3f} |")
    print("\n| questions naming one speaker | that speaker's share |")
    print("|---|---:|")
    for what, share in shares.items():
        print(f"| {what} | {statistics.mean(share):.3f} |")


if __name__ == "__main__":
    main()
