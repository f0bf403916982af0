#!/usr/bin/env python3
"""Gist every session of a recall evaluation set with the real summary model: ``eval/recall_gists.json``.

The dream cycle's own ``draft_gist`` writes them, with the configured summary
model (SmolLM2-135M by default) and greedy decoding, so a run is repeatable on
one build. They take long to make (seconds per session on a CPU), so they are
made once and kept; ``scripts/eval_recall.py`` reads them to measure gists as a
first recall stage (find the session, then its turns). Run it again after
``make_eval_set.py`` changes the set, or to measure another summary model.
Gists are keyed by the session's id in ``scripts/recall_sets.py``.

    python scripts/make_eval_gists.py [--dataset synthetic] [--out eval/recall_gists.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.mind.dream.scribe import Scribe
from lyra_local.mind.summaries.gists import draft_gist
from lyra_local.store import Store
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.sources import open_source

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall_sets import DATASETS, REPO, load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=DATASETS, default="synthetic")
    parser.add_argument("--out", type=Path, default=REPO / "eval" / "recall_gists.json")
    args = parser.parse_args()
    out: dict[str, str] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "LYRA_DATA_DIR": tmp, "LYRA_MODELS__CHAT__SAMPLING__TEMPERATURE": "0"}
        settings = load_settings(None, env=env)
        models = Models(settings)
        for memory_set in load(args.dataset):
            store = Store(Path(tmp) / memory_set.name)
            path = Path(tmp) / f"{memory_set.name}.jsonl"
            path.write_text(memory_set.jsonl(), encoding="utf-8")
            import_source(store, models.embed, open_source(path, "lyra"))
            scribe = Scribe(models.summary, reply_tokens=settings.dream.summary_tokens,
                            names={"user": memory_set.user, "name": settings.companion.name})
            for session in store.sessions.list(limit=10_000):
                draft = draft_gist(scribe, store, session.id)
                out[session.uid] = draft.text if draft else ""
            store.close()
            print(f"{memory_set.name}: {len(out)} gists so far ({time.perf_counter() - start:.0f} s)", flush=True)
        model = models.summary.name
        models.close()
    args.out.write_text(json.dumps({"format": "lyra-recall-gists", "model": model, "dataset": args.dataset,
                                    "sessions": out},
                                   ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
