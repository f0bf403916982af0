#!/usr/bin/env python3
"""What the English parser (lyra_local/parser.py) costs: its load, and the parse of 100 short sentences.

The load is measured in this fresh process, as a `lyra` command pays it: checking the pipeline's files against
their pin, importing spaCy and loading the pipeline. Each round parses 100 sentences not seen before (one by one,
as a reader of one turn does, then in one ``pipe`` batch), then the same 100 again from the parser's recent parses.
Prints one markdown table and writes nothing. Usage: ``python scripts/bench_parser.py [--models-dir DIR]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SENTENCES = (
    "i'm a nurse at st james hospital", "my sister moved to Leeds last year", "we walked the dog this morning",
    "I used to work as a chef in Paris", "are you a teacher?", "Sam here, back from the gym",
    "I never liked coffee much", "my husband Tom plays guitar on weekends", "I'm going to Spain in September",
    "the kids are at school until three",
)
ROUNDS = 5


def main(argv: list[str]) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--models-dir", type=Path, default=REPO / "models")
    models_dir: Path = args.parse_args(argv).models_dir

    start = time.perf_counter()
    from lyra_local.parser import load_parser, pipeline_problem  # the import is part of what a command pays

    parser = load_parser(models_dir)
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    pipeline_problem(models_dir)
    verified = time.perf_counter() - start
    parser("warm up")

    def batch(round_: int) -> list[str]:
        return [f"{text} ({round_}.{i})" for i, text in enumerate(SENTENCES * 10)]

    def timed(run: Callable[[list[str]], object], texts: list[str]) -> float:
        start = time.perf_counter()
        run(texts)
        return (time.perf_counter() - start) * 1000

    one_by_one, piped, recent = [], [], []
    for round_ in range(ROUNDS):
        texts = batch(2 * round_)
        one_by_one.append(timed(lambda ts: [parser(t) for t in ts], texts))
        recent.append(timed(lambda ts: [parser(t) for t in ts[-50:]], texts))  # still among the last RECENT
        piped.append(timed(parser.pipe, batch(2 * round_ + 1)))
    print(f"{parser.version}, {models_dir / parser.path.name}; median of {ROUNDS} rounds\n")
    print("| measure | time |\n|---|---:|")
    print(f"| load in a fresh process (verify, import spaCy, load) | {loaded:.2f} s |")
    print(f"| verify the pipeline's files against the pin | {verified * 1000:.0f} ms |")
    print(f"| 100 short sentences, one call each | {statistics.median(one_by_one):.0f} ms |")
    print(f"| 100 short sentences, one `pipe` call | {statistics.median(piped):.0f} ms |")
    print(f"| 50 of them again, from the recent parses | {statistics.median(recent):.2f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
