"""``lyra reindex``: embed what lacks a vector of the configured model, then rebuild the indexes.

Turns, gists and digests are all embedded before recall switches to the new
model (vectors of two models never mix). Turns stored before a full-text view
existed (the turn read with the one before it) get their rows too.

Run it after changing the embedding model (the server also does this in the
background), or to rebuild the FAISS indexes from SQLite by hand.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from ..config import load_settings
from ..runtime import open_runtime
from ..store import context_view, reembedding
from ..store.records import TIERS


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("reindex", help="re-embed for the configured model and rebuild the vector indexes")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with open_runtime(settings, person=args.person) as runtime:
        runtime.models.check(["embed"])  # a model that cannot embed is refused before any batch, saying why
        store, memory = runtime.store, runtime.memory  # the memory reads dates in the configured zone
        missing = reembedding.count_missing(store, memory.embedder.name)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeRemainingColumn()) as bar:
            task = bar.add_task(f"embedding with {memory.embedder.name}", total=None)
            embedded = memory.reembed(progress=_advance(bar, task))
            pending = context_view.pending(store)
            task = bar.add_task("building the turns' context view", total=pending or None)
            context_view.backfill(store, progress=_advance(bar, task))
            for tier in TIERS:
                task = bar.add_task(f"rebuilding the {tier} index", total=None)
                index = store.index(tier, memory.active_model)
                index.rebuild(progress=_advance(bar, task))
                index.save()
        print(f"embedded {embedded} vector(s) ({missing['exchange']} turn(s), {missing['gist']} gist(s), "
              f"{missing['digest']} digest(s) lacked one); context view built for {pending} stored turn(s); "
              f"active embedding model: {memory.active_model}")
    return 0


def _advance(bar: Progress, task: TaskID) -> Callable[[int, int], None]:
    return lambda done, total: bar.update(task, completed=done, total=total)
