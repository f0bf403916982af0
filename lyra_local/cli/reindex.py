"""``lyra reindex``: embed what lacks a vector of the configured model, then rebuild the indexes.

Run it after changing the embedding model (the server also does this in the
background), or to rebuild the FAISS indexes from SQLite by hand.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from ..config import load_settings
from ..llm.registry import Models
from ..memory import Memory
from ..store import Store
from ..store.records import TIERS


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("reindex", help="re-embed for the configured model and rebuild the vector indexes")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    store = Store(settings.data_dir)
    models = Models(settings)
    try:
        memory = Memory(store, models.embed)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeRemainingColumn()) as bar:
            task = bar.add_task(f"embedding with {models.embed.name}", total=None)
            embedded = memory.reembed(progress=_advance(bar, task))
            for tier in TIERS:
                task = bar.add_task(f"rebuilding the {tier} index", total=None)
                index = store.index(tier, memory.active_model)
                index.rebuild(progress=_advance(bar, task))
                index.save()
        print(f"embedded {embedded} exchange(s); active embedding model: {memory.active_model}")
    finally:
        store.close()
        models.close()
    return 0


def _advance(bar: Progress, task: TaskID) -> Callable[[int, int], None]:
    return lambda done, total: bar.update(task, completed=done, total=total)
