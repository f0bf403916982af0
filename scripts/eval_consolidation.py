#!/usr/bin/env python3
"""What the dream writes over real conversations: how much, what its checks refused, and whether any of it is invented.

Each memory of a set (``scripts/recall_sets.py``: LoCoMo's dev half, MemoryBank)
is imported through ``lyra import`` into a fresh data directory and dreamt over
once (``Dreamer.run_pass(force=True)``) with:

- ``default``: the configured summary model (SmolLM2-135M by default);
- ``ideal``: a scripted model whose gists are LoCoMo's own session summaries
  (written by a large model for the dataset) and whose roll-ups are the pieces
  they roll up; it shows what the checks refuse of good writing (LoCoMo only:
  MemoryBank ships no summaries).

Per kind of memory it reports what was written (abstractive / extractive),
what the checks refused and why (from the dream's own log), and — on what was
written — how many carry a name, number or (for facts) a value that no source
says (the same simple test as ``tests/real_data/test_grounded_dream.py``; must be 0),
and which words it counted. What the model is shown besides the turns counts
as said: each session's name and date, and the two names it is given (the
companion's and the person's).
Coverage: the share of LoCoMo's evidence turns whose content is in their
session's gist (a gist sentence within cosine 0.6 of the turn). ``--gists FILE``
keeps the gists (by session id) of the first model run for
``scripts/eval_recall.py --gists FILE``.

    python scripts/eval_consolidation.py --dataset locomo-dev --model ideal
    python scripts/eval_consolidation.py --sessions 4 --conversations 2   # a quicker look with the default model
    python scripts/eval_consolidation.py --support    # how the sentence-support threshold was chosen
    python scripts/eval_consolidation.py --floor      # the facts floor alone over every set, in seconds
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lyra_local.config import load_settings
from lyra_local.llm.base import GenerationOptions, Message
from lyra_local.llm.registry import Models
from lyra_local.memory.keys import BY_NAME as KEYS
from lyra_local.mind import Dreamer
from lyra_local.mind.facts.statement import content_words
from lyra_local.mind.grounding.checks import SUPPORT, sentences, split_speaker
from lyra_local.mind.grounding.sources import when
from lyra_local.store import Exchange, Store
from lyra_local.store.derived import ProfileFact
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.sources import open_source

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gold import Observation, fact_supported, is_a_name, observations  # noqa: E402
from recall_sets import SHARED, MemorySet, load  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.fakes import FakeChatModel  # noqa: E402  (the scripted model of the tests: enqueue/respond)
from tests.real_data.test_grounded_dream import invented  # noqa: E402

COVERED = 0.6
GOLD = observations(SHARED / "locomo-dev.json")  # LoCoMo's gold observations by sample id; MemoryBank has none
KINDS = ("gist", "fact", "digest", "narrative", "reflect", "world")


def ideal_model(summaries: dict[str, str]) -> FakeChatModel:
    """Gists are the dataset's own summary of the session; roll-ups are their pieces; no facts, a plain self-state."""

    def respond(messages: Sequence[Message], options: GenerationOptions | None) -> str:
        prompt = messages[-1]["content"]
        if options is not None and options.json_schema is not None:
            if "standing facts" in prompt:
                return '{"facts": []}'
            return '{"mood": "calm", "energy": 0.5, "self_narrative": "I listened.", "reflections": []}'
        named = re.search(r"Conversation “([^”]+)”", prompt)
        if named and named.group(1) in summaries:
            return summaries[named.group(1)]
        material = prompt.rpartition("\n\n")[0]
        if "core memory" in prompt:
            return "\n".join(line for line in material.splitlines() if line.startswith("- ")) or "# Now"
        return " ".join(line.partition(": ")[2] or line for line in material.splitlines()[1:] if line.strip())

    return FakeChatModel(n_ctx=8192, name="ideal (LoCoMo's session summaries)", respond=respond)


def locomo_summaries(path: Path) -> dict[str, str]:
    out = {}
    for item in json.loads(path.read_text(encoding="utf-8")):
        for key, text in item.get("session_summary", {}).items():
            n = re.fullmatch(r"session_(\d+)_summary", key)
            if n:
                out[f"{item['sample_id']} session {n.group(1)}"] = text
    return out


def dream_over(memory_set: MemorySet, base: Path, models: Models,
               summary: Any) -> tuple[Store, list[dict[str, Any]], list[str]]:
    """The set imported and dreamt over once; also the names the summary model is given (companion, person)."""
    data = base / memory_set.name
    data.mkdir(parents=True)
    (data / "in.jsonl").write_text(memory_set.jsonl(), encoding="utf-8")
    store = Store(data / "store")
    import_source(store, models.embed, open_source(data / "in.jsonl", "lyra"))
    settings = load_settings(None, env={**os.environ, "LYRA_DATA_DIR": str(data / "store"),
                                        "LYRA_DREAM__SESSION_IDLE_S": "0"})
    events: list[dict[str, Any]] = []
    Dreamer(store, summary, models.embed, settings, on_event=events.append).run_pass(force=True)
    return store, events, [settings.companion.name, settings.companion.user_name or ""]


def measure(store: Store, events: list[dict[str, Any]], memory_set: MemorySet, models: Models, given: list[str],
            totals: dict[str, Counter[str]], coverage: list[float], gists: dict[str, str],
            covered: set[tuple[str, str]]) -> None:
    """Add this set's figures to ``totals``; ``totals[kind]['flagged: word']`` names what was counted invented;
    ``covered`` gathers the gold observations a correct fact stands on."""
    sessions = store.sessions.list(limit=10_000)
    sources_here = {m["source_id"] for s in memory_set.sessions for m in s["messages"]}
    turns = {s.id: store.exchanges.history(s.id) for s in sessions}
    # what the model is shown besides the turns: each session's name and date, and the two names it is given
    headers = {s.id: " ".join([when(turns[s.id], s.name), *given]) for s in sessions}
    everything = [t.content for ts in turns.values() for t in ts] + list(headers.values())

    def invented_in(kind: str, text: str, sources: list[str]) -> bool:
        words = invented(text, sources)
        totals[kind].update(f"flagged: {w}" for w in words)
        for sentence in sentences(text):  # to read what was flagged, not only count it
            if any(re.search(rf"\b{re.escape(w)}\b", sentence) for w in words):
                print(f"  flagged {kind} in {memory_set.name}: {sorted(words)} in {sentence!r}", file=sys.stderr)
        return bool(words)
    for event in events:
        kind = event["kind"].removesuffix(".rejected")
        if event["kind"].endswith(".rejected"):
            checks = event["detail"].get("checks", [])
            for check in (checks.items() if isinstance(checks, dict) else ((c, 1) for c in checks)):
                totals["fact" if kind == "profile" else kind][f"refused: {check[0]}"] += check[1]
    for s in sessions:
        gist = store.derived.gist(s.id)
        if gist is None:
            totals["gist"]["sessions without a gist"] += 1
            continue
        gists[s.uid] = gist.content
        totals["gist"][f"written: {gist.method}"] += 1
        sources = [t.content for t in turns[s.id]] + [headers[s.id]]
        totals["gist"]["invented"] += invented_in("gist", gist.content, sources)
    for d in store.derived.digests():
        totals["digest"][f"written: {d.method}"] += 1
        totals["digest"]["invented"] += invented_in("digest", d.content, everything)
    narrative = store.derived.narrative()
    if narrative:
        totals["narrative"]["written"] += 1
        totals["narrative"]["invented"] += invented_in("narrative", narrative, everything)
    own = " ".join(t.content.lower() for ts in turns.values() for t in ts if t.role == "user")
    by_source = store.exchanges.ids_by_source()
    source_of = {turn_id: source for source, turn_id in by_source.items()}
    gold = GOLD.get(memory_set.name)
    speakers = {split_speaker(t.content)[0] or "" for ts in turns.values() for t in ts} | set(given) | {
        memory_set.user}
    for fact in learnt_facts(store):
        totals["fact"]["written"] += 1
        # a value's content words must be said; framing ("a cat named Miso": "a", "named") need not be
        totals["fact"]["invented"] += not all(w in own for w in content_words(fact.value))
        told = [t for t in store.corrections.sources("fact", fact.id) if t["role"] == "user"]
        named = is_a_name(fact.key, fact.value, speakers)
        totals["fact"]["speaker names"] += named
        where = "; ".join(f"{source_of.get(t['id'])}: {t['content'][:160]!r}" for t in told)
        if gold is None:  # no gold to judge by: every fact is printed, to be read
            totals["fact"]["unjudged"] += 1
            flag = "A SPEAKER'S NAME, " if named else ""
            print(f"  fact in {memory_set.name} ({flag}unjudged): "
                  f"{fact.key} = {fact.value!r} ← {where}", file=sys.stderr)
            continue
        support = [obs for t in told if (obs := fact_supported(fact.key, fact.value, source_of.get(t["id"], ""),
                                                              memory_set.user, speakers, gold))]
        totals["fact"]["correct" if support else "wrong"] += 1
        covered.update((memory_set.name, o.text) for o in support)
        print(f"  {'correct' if support else 'WRONG'} fact in {memory_set.name}: {fact.key} = {fact.value!r} ← "
              f"{where}{f' (gold: {support[0].text!r})' if support else ''}", file=sys.stderr)
    if gold is not None:
        totals["fact"]["gold observations"] += sum(o.speaker == memory_set.user and bool(o.evidence & sources_here)
                                                   for o in gold)
        supported_sentences(store, models, turns, source_of, gold, totals)
    state = store.derived.self_state() or {}
    for text in [state.get("self_narrative", ""), *state.get("reflections", [])]:
        if text:
            totals["reflect"]["written"] += 1
            totals["reflect"]["invented"] += invented_in("reflect", text, everything)
    for w in store.coord.world_history():
        if w.author == "dream":
            totals["world"]["written"] += 1
            totals["world"]["invented"] += invented_in("world", w.content, everything)
    for question in memory_set.questions:
        for source_id in question.evidence:
            turn = store.exchanges.get(by_source[source_id])
            gist = store.derived.gist(turn.session_id) if turn else None
            if turn is None or gist is None:
                coverage.append(0.0)
                continue
            said = sentences(gist.content)
            vectors = np.asarray(models.embed.embed([turn.content, *said]), dtype=np.float32)
            coverage.append(float((vectors[1:] @ vectors[0]).max() >= COVERED))


def learnt_facts(store: Store) -> list[ProfileFact]:
    """Every fact the dream wrote, the values later superseded too."""
    keys = {f.key for f in store.derived.profile()} | set(KEYS)
    return [f for key in sorted(keys) for f in store.derived.fact_history(key) if f.author == "dream"]


def supported_sentences(store: Store, models: Models, turns: dict[int, list[Exchange]], source_of: dict[int, str],
                        gold: list[Observation], totals: dict[str, Counter[str]]) -> None:
    """Count the sentences of gists and digests by whether the turn each stands on (the closest of its sources)
    is the evidence of a gold observation; print those that stand on none."""
    evidence = {e for obs in gold for e in obs.evidence}
    every = [t for ts in turns.values() for t in ts]
    vectors = dict(zip([t.id for t in every], np.asarray(models.embed.embed([t.content for t in every]),
                                                         dtype=np.float32), strict=True))

    def judge(kind: str, label: str, text: str, behind: list[int]) -> None:
        said = sentences(text)
        behind = [i for i in behind if i in vectors]
        if not said or not behind:
            return
        closest = (np.asarray(models.embed.embed(said), dtype=np.float32) @ np.stack([vectors[i] for i in behind]).T
                   ).argmax(axis=1)
        for sentence, n in zip(said, closest, strict=True):
            on_gold = source_of.get(behind[n]) in evidence
            totals[kind]["sentences on gold" if on_gold else "sentences on no gold"] += 1
            if not on_gold:
                print(f"  {kind} sentence on no gold observation ({label}): {sentence[:200]!r}", file=sys.stderr)
    for session_id, session_turns in turns.items():
        gist = store.derived.gist(session_id)
        if gist is not None:
            judge("gist", f"session {session_id}", gist.content, [t.id for t in session_turns])
    for d in store.derived.digests():
        judge("digest", f"{d.granularity} {d.period}", d.content,
              [t["id"] for t in store.corrections.sources("digest", d.id)])


def floor_table() -> None:
    """The facts floor alone (``mind/facts/floor.py`` through the gate, ``mind/facts/gate.py``) over every turn of the
    person's in every set, judged against the gold where there is one: it reads turns, not gists, so it is the same
    with any model. Coverage: the share of the person's gold observations that some correct fact stands on."""
    from bench_chat import bench_embedder

    from lyra_local.mind.facts.floor import proposals
    from lyra_local.mind.facts.gate import KeyFit, Turn, gate
    from lyra_local.parser import load_parser

    settings, embedder = bench_embedder()
    parse = load_parser(settings.models_dir)
    fit = KeyFit(lambda texts: np.asarray(embedder.embed(texts), dtype=np.float32))

    for dataset in ("locomo-dev", "memorybank"):
        counts: Counter[str] = Counter()
        by_key: dict[str, Counter[str]] = defaultdict(Counter)
        covered: set[tuple[str, str]] = set()
        observed = 0
        for memory_set in load(dataset):
            gold = GOLD.get(memory_set.name)
            sources_here = {m["source_id"] for s in memory_set.sessions for m in s["messages"]}
            observed += sum(o.speaker == memory_set.user and bool(o.evidence & sources_here) for o in gold or [])
            for session in memory_set.sessions:
                own = [m for m in session["messages"] if m["role"] == "user"]
                speakers = {split_speaker(m["content"])[0] or "" for m in session["messages"]} | {memory_set.user,
                                                                                                  "Lyra"}
                turns = [Turn(m["content"], True) for m in own]
                kept = gate(proposals(turns, parse), turns, parse=parse, fit=fit,
                            names={n.casefold() for n in speakers if n})
                for key, value, n in [(j.key, j.proposal.value, j.turn) for j in kept if j.key and not j.failed]:
                    source = own[n]["source_id"]
                    support = None if gold is None else fact_supported(key, value, source, memory_set.user, speakers,
                                                                       gold)
                    verdict = "unjudged" if gold is None else "correct" if support else "wrong"
                    if support:
                        covered.add((memory_set.name, support.text))
                    counts[verdict] += 1
                    by_key[key][verdict] += 1
                    print(f"  {verdict} floor fact in {memory_set.name}: {key} = {value!r} ← {source}: "
                          f"{own[n]['content'][:160]!r}")
        judged = counts["correct"] + counts["wrong"]
        print(f"{dataset}: {sum(counts.values())} facts; "
              + (f"precision {counts['correct'] / judged:.3f} ({counts['correct']} of {judged}), coverage "
                 f"{len(covered) / max(observed, 1):.4f} ({len(covered)} of {observed} gold observations of the "
                 f"person)" if judged else f"{counts['unjudged']} with no gold (read them above)"))
        print("  by key: " + ", ".join(f"{key} {sum(c.values())}" + (f" ({c['wrong']} wrong)" if c["wrong"] else "")
                                      for key, c in sorted(by_key.items())) + "\n")


def support_table(models: Models) -> None:
    """How well the sentence check tells a session's own summary from another session's of the same people."""
    summaries = locomo_summaries(SHARED / "locomo-dev.json")
    rng = random.Random(0)
    own, other = [], []
    for memory_set in load("locomo-dev"):
        names = [s["name"] for s in memory_set.sessions if s["name"] in summaries]
        for session in memory_set.sessions:
            if session["name"] not in summaries:
                continue
            turns = np.asarray(models.embed.embed([m["content"] for m in session["messages"]]), dtype=np.float32)
            foreign = rng.choice([n for n in names if n != session["name"]])
            for bucket, text in ((own, summaries[session["name"]]), (other, summaries[foreign])):
                vectors = np.asarray(models.embed.embed(sentences(text)), dtype=np.float32)
                bucket.extend((vectors @ turns.T).max(axis=1).tolist())
    print(f"\n### Sentence support: {len(own)} sentences of LoCoMo's own session summaries against their session, "
          f"{len(other)} of another session's summary of the same two people (the threshold in use: {SUPPORT})\n")
    print("| cosine threshold | own sentences passing | other session's sentences passing |\n|---:|---:|---:|")
    for threshold in (0.35, 0.4, 0.45, 0.5, 0.55, 0.6):
        print(f"| {threshold} | {np.mean(np.asarray(own) >= threshold):.3f} | "
              f"{np.mean(np.asarray(other) >= threshold):.3f} |")


def report(title: str, totals: dict[str, Counter[str]], coverage: list[float], covered: set[tuple[str, str]],
           seconds: float) -> None:
    print(f"\n### {title} ({seconds:.0f} s)\n")
    print("| kind | written | refused by the checks | written with a name, number or value no source says |")
    print("|---|---|---|---:|")
    for kind in KINDS:
        c = totals[kind]
        written = ", ".join(f"{k.removeprefix('written: ') or 'all'} {v}" for k, v in sorted(c.items())
                            if k.startswith("written")) or "0"
        refused = ", ".join(f"{k.removeprefix('refused: ')} {v}" for k, v in sorted(c.items())
                            if k.startswith("refused")) or "none"
        missing = f", sessions without a gist {c['sessions without a gist']}" if c["sessions without a gist"] else ""
        flagged = ", ".join(k.removeprefix("flagged: ") for k in sorted(c) if k.startswith("flagged"))
        print(f"| {kind} | {written}{missing} | {refused} | {c['invented']}{f' ({flagged})' if flagged else ''} |")
    facts = totals["fact"]
    judged = facts["correct"] + facts["wrong"]
    if judged or facts["unjudged"]:
        precision = f"{facts['correct'] / judged:.3f} ({facts['correct']} of {judged})" if judged else "n/a"
        coverage_of = (f"{len(covered) / facts['gold observations']:.3f} ({len(covered)} of "
                       f"{facts['gold observations']} gold observations of the person)"
                       if facts["gold observations"] else "n/a")
        print(f"\nFacts against the gold: precision {precision}, coverage {coverage_of}; "
              f"{facts['speaker names']} with a speaker's name as the value; "
              f"{facts['unjudged']} with no gold to judge by (printed).")
    for kind in ("gist", "digest"):
        on, off = totals[kind]["sentences on gold"], totals[kind]["sentences on no gold"]
        if on + off:
            print(f"{kind.capitalize()} sentences standing on a turn some gold observation names: {on} of "
                  f"{on + off} ({on / (on + off):.3f}); the other {off} are printed.")
    if coverage:
        print(f"\nCoverage: {sum(coverage) / len(coverage):.3f} of {len(coverage)} evidence turns are in their "
              f"session's gist (a gist sentence within cosine {COVERED}).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=("locomo-dev", "memorybank", "all"), default="all")
    parser.add_argument("--model", choices=("default", "ideal", "both"), default="both")
    parser.add_argument("--conversations", type=int, default=0, help="only the first N memories of a set")
    parser.add_argument("--sessions", type=int, default=0, help="only the first N sessions of each memory")
    parser.add_argument("--gists", type=Path, help="write the gists by session id (for eval_recall.py --gists)")
    parser.add_argument("--support", action="store_true", help="only measure the sentence-support threshold")
    parser.add_argument("--floor", action="store_true", help="only the facts floor over every turn (no model)")
    args = parser.parse_args()
    if args.floor:
        floor_table()
        return
    if args.support:
        with tempfile.TemporaryDirectory() as tmp:
            models = Models(load_settings(None, env={**os.environ, "LYRA_DATA_DIR": tmp}))
            support_table(models)
            models.close()
        return
    datasets = ["locomo-dev", "memorybank"] if args.dataset == "all" else [args.dataset]
    kinds = ["default", "ideal"] if args.model == "both" else [args.model]
    all_gists: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(None, env={**os.environ, "LYRA_DATA_DIR": tmp})
        models = Models(settings)
        print(f"Consolidation evaluation: summary model {models.summary.name}, embeddings {models.embed.name}, "
              f"{os.cpu_count()} CPUs; grounding as in lyra_local/mind/grounding/checks.py")
        for dataset in datasets:
            sets = load(dataset)[:args.conversations or None]
            for memory_set in sets:
                memory_set.sessions = memory_set.sessions[:args.sessions or None]
                kept = {s["id"] for s in memory_set.sessions}
                ids = {m["source_id"] for s in memory_set.sessions for m in s["messages"]}
                memory_set.questions = [q for q in memory_set.questions if q.evidence <= ids] if kept else []
            for kind in kinds:
                if kind == "ideal" and dataset != "locomo-dev":
                    continue
                summary = models.summary if kind == "default" else ideal_model(locomo_summaries(
                    SHARED / "locomo-dev.json"))
                totals: dict[str, Counter[str]] = defaultdict(Counter)
                coverage: list[float] = []
                covered: set[tuple[str, str]] = set()
                started = time.perf_counter()
                for memory_set in sets:
                    store, events, given = dream_over(memory_set, Path(tmp) / kind / dataset, models, summary)
                    gists: dict[str, str] = {}
                    measure(store, events, memory_set, models, given, totals, coverage, gists, covered)
                    if kind == kinds[0]:  # with both models, the default model's gists are kept
                        all_gists.update(gists)
                    store.close()
                turns = sum(s.turns for s in sets)
                report(f"{dataset}, {kind} model: {len(sets)} memories, {sum(len(s.sessions) for s in sets)} "
                       f"sessions, {turns:,} turns", totals, coverage if dataset == "locomo-dev" else [],
                       covered, time.perf_counter() - started)
        models.close()
    if args.gists:
        args.gists.write_text(json.dumps({"format": "lyra-recall-gists", "model": f"{kinds[0]} summary model",
                                          "sessions": all_gists}, ensure_ascii=False, indent=1) + "\n",
                              encoding="utf-8")
        print(f"\nwrote {len(all_gists)} gists to {args.gists}")


if __name__ == "__main__":
    main()
