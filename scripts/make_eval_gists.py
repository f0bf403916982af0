#!/usr/bin/env python3
"""Gist every session of the recall evaluation set with the real summary model: ``eval/recall_gists.json``.

The dream cycle's own ``draft_gist`` writes them, with the configured summary
model (SmolLM2-135M by default) and greedy decoding, so a run is repeatable on
one build. They take long to make (seconds per session on a CPU), so they are
made once and kept; ``scripts/eval_recall.py`` reads them to measure gists as a
first recall stage (find the session, then its turns). Run it again after
``make_eval_set.py`` changes the set, or to measure another summary model.

    python scripts/make_eval_gists.py [--set eval/recall_set.json] [--out eval/recall_gists.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from lyra_local.config import load_settings
from lyra_local.llm.registry import Models
from lyra_local.memory import Memory
from lyra_local.mind.gists import draft_gist
from lyra_local.mind.scribe import Scribe
from lyra_local.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_recall import load_person  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=REPO / "eval" / "recall_set.json")
    parser.add_argument("--out", type=Path, default=REPO / "eval" / "recall_gists.json")
    args = parser.parse_args()
    data = json.loads(args.set.read_text(encoding="utf-8"))
    today = datetime.now(timezone.utc).replace(hour=9, minute=0, second=0, microsecond=0)
    out: dict[str, list[str]] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "LYRA_DATA_DIR": tmp, "LYRA_MODELS__CHAT__SAMPLING__TEMPERATURE": "0"}
        settings = load_settings(None, env=env)
        models = Models(settings)
        for person in data["people"]:
            store = Store(Path(tmp) / person["person"])
            load_person(Memory(store, models.embed), person, today)
            scribe = Scribe(models.summary, reply_tokens=settings.dream.summary_tokens,
                            names={"user": person["person"], "name": settings.companion.name})
            gists = []
            for session in sorted(store.sessions.list(limit=1000), key=lambda s: s.id):  # the set's order
                draft = draft_gist(scribe, store, session.id)
                gists.append(draft.text if draft else "")
            out[person["person"]] = gists
            store.close()
            print(f"{person['person']}: {len(gists)} gists ({time.perf_counter() - start:.0f} s)", flush=True)
        model = models.summary.name
        models.close()
    args.out.write_text(json.dumps({"format": "lyra-recall-gists", "model": model, "people": out},
                                   ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
