#!/usr/bin/env python3
"""Questions find statements: a search or a recall asked "what is my job?" finds "I teach chemistry at a ...".

A question about the person is near other questions, and the companion's "my job is to help you", not the
statement that answers it. Recall's ``statement`` stage (``lyra_local/memory/stages.py``, ``questions.py``)
searches with the asked profile key's statements; the search (``lyra_local/memory/search.py``) shows a turn that
states it even below its meaning floor. This script measures both, with the stage and without it, and through
the search with its floor and without it (recall's first 10), as evidence recall@k (``eval_recall.py``'s
measure: the share of a question's evidence turns among the first k):

- ``locomo-dev``: LoCoMo's dev half (real conversations), its single-hop questions (category 4; ``--all`` for
  every category), imported as ``eval_recall.py`` does;
- ``questions``: our own regression set (``eval/question_statements.json``): "what is my ..." / "where do I ..."
  questions over a few people's first-person statements said in passing, among chit-chat and distractors (the
  companion's "my job is to help you", a sister's job). Written by hand: a regression test, not evidence.

For our set it also prints which key a question asks at each threshold (``Tuning.asked_min``), against
MemoryBank's questions, and how many results the search shows when a person asks about a key they never spoke
of (the others' questions: nothing to find). The search is asked for its default 20 (``SearchQuery.k``), as
``/api/search`` is; the first 10 it shows count. ``--tuning NAME=V1,V2`` measures other values of one of
recall's knobs (``Tuning``; ``statement`` for the stage's weight), one row each.

    python scripts/eval_question_search.py                       # both sets
    python scripts/eval_question_search.py --dataset questions --misses
    python scripts/eval_question_search.py --tuning asked_min=0.5,0.55,0.6,0.65 --cache /tmp/eval
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import fields, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.memory import Memory, RecallQuery
from lyra_local.memory.questions import KeyVectors
from lyra_local.memory.recall import without
from lyra_local.memory.search import SearchQuery, meaning_floor, shown
from lyra_local.memory.stages import Tuning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_recall import open_memory  # noqa: E402
from messy_sets import origin  # noqa: E402
from recall_sets import REPO, MemorySet, Question, load  # noqa: E402

OWN = REPO / "eval" / "question_statements.json"
KS = (1, 3, 10)
SHOWN = 10  # the search's first results that count
ASKED_SWEEP = (0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
WAYS = (("recall", True, False), ("search", True, True), ("recall, no statement stage", False, False),
        ("search, no statement stage", False, True))  # (name, the stage on, the search's floor on)


CHATTER_SESSION = 5  # chit-chat exchanges per session


def own_set(path: Path = OWN, today: datetime | None = None) -> Iterator[MemorySet]:
    """Our regression set as memories to import: each person's sessions among the chit-chat's (its exchanges in a
    different order for each person), their questions with their evidence."""
    today = today or datetime.now(timezone.utc).replace(hour=9, minute=0, second=0, microsecond=0)
    data = json.loads(path.read_text(encoding="utf-8"))
    chatter = data["chatter"]
    for n, person in enumerate(data["people"]):
        turned = chatter[7 * n % len(chatter):] + chatter[:7 * n % len(chatter)]
        chat = [{"name": "chat", "day": -3 - 33 * j,
                 "turns": [[role, text] for pair in turned[i:i + CHATTER_SESSION]
                           for role, text in zip(("user", "assistant"), pair, strict=True)]}
                for j, i in enumerate(range(0, len(turned), CHATTER_SESSION))]
        sessions, labelled = [], defaultdict(set)
        for si, s in enumerate(sorted(person["sessions"] + chat, key=lambda s: s["day"])):
            day = today + timedelta(days=s["day"])
            messages = []
            for ti, (role, text, *label) in enumerate(s["turns"]):
                messages.append({"role": role, "content": text, "source_id": f"{si}:{ti}",
                                 "created_at": (day + timedelta(minutes=ti)).isoformat()})
                for name in label:
                    labelled[name].add(f"{si}:{ti}")
            sessions.append({"id": f"questions-{n}-{si}", "name": s["name"], "created_at": day.isoformat(),
                             "messages": messages})
        questions = [Question(text, key, frozenset(t for name in evidence for t in labelled[name]))
                     for text, key, evidence in person["questions"]]
        yield MemorySet(f"questions-{n}", person["person"], sessions, questions)


def tunings(option: str | None) -> list[tuple[str, Tuning]]:
    """The knobs to measure: the default, or each value of one knob (a stage's name: its weight)."""
    if not option:
        return [("default", Tuning())]
    name, _, values = option.partition("=")
    known = {f.name for f in fields(Tuning)} - {"weights"}
    out = []
    for value in values.split(","):
        if name in known:
            kind = type(getattr(Tuning(), name))
            out.append((f"{name}={value}", replace(Tuning(), **{name: kind(value)})))
        else:
            weights = tuple((n, float(value) if n == name else w) for n, w in Tuning().weights)
            if name not in dict(weights):
                raise SystemExit(f"--tuning: {name} is neither a knob ({', '.join(sorted(known))}) nor a weight")
            out.append((f"{name} weight {value}", replace(Tuning(), weights=weights)))
    return out


def unasked(sets: list[MemorySet]) -> dict[str, list[str]]:
    """For each person of our set, the others' questions about a key they never spoke of: nothing to find."""
    out = {}
    for memory_set in sets:
        theirs = {q.category for q in memory_set.questions}
        questions = {q.text for other in sets for q in other.questions if q.category not in theirs}
        out[memory_set.name] = sorted(questions)
    return out


def asked_table(models: Models, own: list[MemorySet]) -> None:
    """Which key a question asks, by threshold (``Tuning.asked_min``): our set's questions (each about a key)
    asked of the right key or of a wrong one, and MemoryBank's probing questions (a person asking their
    companion about what they said; hardly any about a profile key) that ask one at all."""
    keys = KeyVectors(models.embed.embed)
    ours = [(q.text, q.category) for s in own for q in s.questions]
    theirs = [q.text for s in load("memorybank") for q in s.questions]
    asked_ours = [keys.asked(v, 0.0) for v in models.embed.embed([text for text, _ in ours])]
    asked_theirs = [keys.asked(v, 0.0) for v in models.embed.embed(theirs)]
    print(f"\n### which key a question asks: our {len(ours)} questions, MemoryBank's {len(theirs)}\n")
    print("| asked_min | ours: the right key | ours: a wrong key | MemoryBank: some key | MemoryBank's asked |")
    print("|---:|---:|---:|---:|---|")
    for least in ASKED_SWEEP:
        right = sum(a is not None and a.closeness >= least and a.key == key
                    for a, (_, key) in zip(asked_ours, ours, strict=True))
        wrong = sum(a is not None and a.closeness >= least and a.key != key
                    for a, (_, key) in zip(asked_ours, ours, strict=True))
        some = [(text, a.key) for a, text in zip(asked_theirs, theirs, strict=True)
                if a is not None and a.closeness >= least]
        print(f"| {least:.2f} | {right} | {wrong} | {len(some)} | {'; '.join(f'{t!r}: {k}' for t, k in some[:3])} |")


def measure(sets: list[MemorySet], models: Models, base: Path, tuning: Tuning, misses: bool,
            nothing: dict[str, list[str]]) -> dict[str, Any]:
    found: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    shown_for_nothing: dict[str, list[int]] = defaultdict(list)
    latency: dict[str, list[float]] = defaultdict(list)
    for memory_set in sets:
        store, _, _ = open_memory(base, memory_set, models.embed)
        memory = Memory(store, models.embed)
        memory.retune(tuning)
        messages_of: dict[str, set[int]] = defaultdict(set)
        for source, exchange in store.exchanges.ids_by_source().items():
            messages_of[origin(source)].add(exchange)
        k = SearchQuery("k").k
        vectors = np.asarray(models.embed.embed([q.text for q in memory_set.questions]), dtype=np.float32)
        for question, v in zip(memory_set.questions, vectors, strict=True):
            evidence = [messages_of[e] for e in question.evidence]
            floor = meaning_floor(memory.active_model, question.text)
            for name, stage, floored in WAYS:
                t0 = time.perf_counter()
                hits = memory.recall(RecallQuery(question.text, k=k, stages=None if stage else without("statement")),
                                     vector=v)
                if not floored:
                    latency[name].append((time.perf_counter() - t0) * 1000)
                if floored:
                    how = shown(memory, "exchange", hits, question.text, v, floor)
                    hits = [h for h in hits if h.id in how]
                ranked = [h.id for h in hits[:SHOWN]]
                for at in KS:
                    found[name][at].append(sum(bool(m & set(ranked[:at])) for m in evidence) / len(evidence))
                if misses and name == "search" and found[name][SHOWN][-1] < 1:
                    print(f"  missed by the search: {question.text!r} ({question.category}); shown first: "
                          f"{[h.content[:50] for h in hits[:3]]}")
        for text in nothing.get(memory_set.name, []):
            v = np.asarray(models.embed.embed([text])[0], dtype=np.float32)
            for name, stage, floored in WAYS:
                hits = memory.recall(RecallQuery(text, k=k, stages=None if stage else without("statement")), vector=v)
                how = shown(memory, "exchange", hits, text, v, meaning_floor(memory.active_model, text)
                            if floored else -2.0)
                shown_for_nothing[name].append(len([h for h in hits if h.id in how][:SHOWN]))
        store.close()
    return {"questions": len(found[WAYS[0][0]][KS[0]]),
            "p50_ms": {name: statistics.median(v) for name, v in latency.items()},
            "nothing": {name: statistics.mean(v) for name, v in shown_for_nothing.items()},
            "ways": {name: {at: statistics.mean(v) for at, v in by_k.items()} for name, by_k in found.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("locomo-dev", "questions", "all"), default="all")
    parser.add_argument("--all", action="store_true", help="LoCoMo's questions of every category, not single-hop")
    parser.add_argument("--tuning", help="NAME=V1,V2,...: one row per value of a recall knob or a stage's weight")
    parser.add_argument("--cache", type=Path, help="keep the imported data directories here and reuse them")
    parser.add_argument("--misses", action="store_true", help="print the questions the search misses")
    args = parser.parse_args()
    datasets = ["locomo-dev", "questions"] if args.dataset == "all" else [args.dataset]
    with tempfile.TemporaryDirectory() as tmp:
        base = args.cache or Path(tmp)
        settings = load_settings(None, env={**os.environ, "LYRA_DATA_DIR": str(base)})
        models = Models(settings)
        print(f"Questions find statements, with {models.embed.name}; {os.cpu_count()} CPUs")
        for dataset in datasets:
            if dataset == "questions":
                sets = list(own_set())
                asked_table(models, sets)
            else:
                sets = [replace(s, questions=[q for q in s.questions if args.all or q.category == "single-hop"])
                        for s in load(dataset)]
            label = dataset if dataset == "questions" or args.all else f"{dataset} single-hop"
            print(f"\n### {label}: {sum(len(s.questions) for s in sets)} questions, "
                  f"{sum(s.turns for s in sets):,} turns\n")
            nothing = unasked(sets) if dataset == "questions" else {}
            print("| tuning | way | " + " | ".join(f"R@{k}" for k in KS) + " | recall p50 ms |"
                  + (" shown for a key never spoken of |" if nothing else ""))
            print("|---|---|" + "---:|" * (len(KS) + 1 + bool(nothing)))
            for name, tuning in tunings(args.tuning):
                r = measure(sets, models, base / dataset, tuning, args.misses, nothing)
                for way, at in r["ways"].items():
                    ms = r["p50_ms"].get(way.replace("search", "recall"), 0.0)
                    print(f"| {name} | {way} | " + " | ".join(f"{at[k]:.3f}" for k in KS) + f" | {ms:.1f} |"
                          + (f" {r['nothing'][way]:.1f} |" if nothing else ""))
        models.close()


if __name__ == "__main__":
    main()
