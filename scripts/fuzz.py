#!/usr/bin/env python3
"""Fuzz the GGUF header reader or the import parsers for a given time.

The same properties as ``tests/test_gguf_fuzz.py`` and ``tests/test_import_fuzz.py``
(``tests/gguf_mutations.py``, ``tests/import_mutations.py``), run by hypothesis
in rounds of fresh random examples until the time is up:

- ``gguf``: the reader returns a summary a JSON answer can carry or raises
  ``ModelFileInvalid``, in under 5 s and 8 MB. Seeds: hand-written valid files,
  the ``*.gguf`` of the corpus, and the headers of the real models in
  ``models/`` when they are there (their tensor data a sparse hole).
- ``imports``: a whole import into a fresh data directory reports or raises a
  ``LyraError``, in under 5 s, and writes nothing outside that directory.
  Seeds: the import files of the corpus.

    python scripts/fuzz.py gguf --minutes 10 [--corpus tests/data/fuzz] [--round 200]
    python scripts/fuzz.py imports --minutes 10
    python scripts/fuzz.py write-corpus   # the import seeds, from the real exporter (a dreamed store)

An example that runs 60 s is stopped and counted as a hang. Prints the examples
run, the outcomes, and each distinct failure with the smallest example hypothesis
found; exit 1 if any. Writes only temporary folders (each example's own).
"""

from __future__ import annotations

import argparse
import atexit
import collections
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HANG_S = 60


class Hang(BaseException):
    """An example still running after ``HANG_S``: a BaseException, so no ``except Exception`` swallows it."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang(f"an example ran over {HANG_S} s")


def fuzz(name: str, strategy: st.SearchStrategy[Any], prop: Callable[[Any], str], minutes: float,
         per_round: int) -> int:
    """Rounds of ``per_round`` random examples until ``minutes`` are up; prints a table, returns the exit code."""
    outcomes: collections.Counter[str] = collections.Counter()
    failures: dict[str, str] = {}
    slowest = [0.0]

    def timed(case: Any) -> None:
        signal.alarm(HANG_S)
        started = time.perf_counter()
        try:
            outcomes[prop(case)] += 1
        finally:
            signal.alarm(0)
            slowest[0] = max(slowest[0], time.perf_counter() - started)

    run = settings(max_examples=per_round, database=None, deadline=None, derandomize=False,
                   phases=[Phase.generate, Phase.target, Phase.shrink], print_blob=True,
                   suppress_health_check=list(HealthCheck))(given(strategy)(timed))
    signal.signal(signal.SIGALRM, _alarm)
    end, rounds = time.monotonic() + 60 * minutes, 0
    while time.monotonic() < end:
        rounds += 1
        try:
            run()
        except (Exception, Hang) as exc:  # a property failed: keep the smallest example, go on
            key = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
            failures.setdefault(key, "".join(traceback.format_exception(exc))[-3000:])
            outcomes["FAILED"] += 1
    total = sum(outcomes.values())
    print(f"\nfuzz {name}: {total:,} examples in {rounds} rounds, {minutes:g} min; slowest example "
          f"{slowest[0]:.2f} s")
    for outcome, count in outcomes.most_common(25):
        print(f"  {count:8,}  {outcome}")
    for key, trace in failures.items():
        print(f"\nFAILURE {key}\n{trace}")
    print(f"\n{len(failures)} distinct failure(s)")
    return 1 if failures else 0


def gguf_target(corpus: Path) -> tuple[st.SearchStrategy[Any], Callable[[Any], str]]:
    import tempfile

    from tests.conftest import CHAT_GGUF, EMBED_GGUF
    from tests.gguf_mutations import Seed, built_seeds, check_gguf, mutated, real_seed

    seeds = built_seeds() + [Seed(p.name, p.read_bytes(), p.stat().st_size) for p in sorted(corpus.glob("*.gguf"))]
    seeds += [real_seed(p) for p in (EMBED_GGUF, CHAT_GGUF) if p.is_file()]
    print("seeds: " + ", ".join(f"{s.name} ({len(s.head):,} header bytes)" for s in seeds))
    folder = Path(tempfile.mkdtemp(prefix="lyra-fuzz-gguf-"))
    atexit.register(shutil.rmtree, folder, True)

    def prop(case: tuple[bytes, int, list[str]]) -> str:
        summary = check_gguf(folder / "fuzz.gguf", case[0], case[1])
        return "summary" if summary is not None else "ModelFileInvalid"

    return mutated(seeds), prop


def imports_target(corpus: Path) -> tuple[st.SearchStrategy[Any], Callable[[Any], str]]:
    from tests.import_mutations import check_import, mutated_import
    from tests.import_mutations import seeds as read_seeds

    seeds = read_seeds(corpus)
    print("seeds: " + ", ".join(f"{n} ({len(b):,} bytes)" for n, b in seeds.items()))

    def prop(case: tuple[str, bytes, str]) -> str:
        outcome = check_import(*case)
        return outcome if not outcome.startswith("imported") else "imported (a report)"

    return mutated_import(seeds), prop


def write_corpus(corpus: Path) -> None:
    """The four import seeds, written by the real exporters: small, valid, with branches, asides and memory."""
    from tests.fuzz_corpus import write_import_seeds

    for path in write_import_seeds(corpus):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", choices=["gguf", "imports", "write-corpus"])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--corpus", type=Path, default=REPO / "tests" / "data" / "fuzz")
    parser.add_argument("--round", type=int, default=200, help="examples per hypothesis round")
    args = parser.parse_args()
    if args.target == "write-corpus":
        write_corpus(args.corpus)
        return 0
    strategy, prop = (gguf_target if args.target == "gguf" else imports_target)(args.corpus)
    return fuzz(args.target, strategy, prop, args.minutes, args.round)


if __name__ == "__main__":
    sys.exit(main())
