"""Cut the slice of LoCoMo that the test suite ships (``tests/data/locomo/conv-26.json``) from its dev half.

The suite reads nothing outside the repository, so the two tests that run the
real models on real conversation (``tests/test_grounded_dream_real.py``,
``tests/test_web_memory_panel.py``) read this slice, not ``../shared/data``.
It keeps exactly what they use, in LoCoMo's own JSON shape (a list of items,
read by ``scripts/recall_sets.py:locomo`` and ``scripts/gold.py:observations``):

- the first conversation, ``conv-26`` (Caroline and Melanie);
- the dates of its 19 sessions; sessions 1-4 whole (the grounded dream test
  dreams over them), sessions 5-19 their first 8 turns (the Memory panel test
  imports 19 sessions of 8 turns);
- the gold observations of sessions 1-4 (whose evidence lies in those sessions);
- no questions (``qa`` is empty), no event or session summaries.

Run it again to check or rebuild the slice (it prints what it wrote)::

    python scripts/locomo_slice.py [../shared/data/locomo-dev.json]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "data" / "locomo-dev.json"
SLICE = REPO / "tests" / "data" / "locomo" / "conv-26.json"
SAMPLE = "conv-26"
WHOLE_SESSIONS = 4
SESSIONS = 19
TURNS = 8


def cut(item: dict[str, Any]) -> dict[str, Any]:
    conv = item["conversation"]
    kept: dict[str, Any] = {"speaker_a": conv["speaker_a"], "speaker_b": conv["speaker_b"]}
    for n in range(1, SESSIONS + 1):
        kept[f"session_{n}_date_time"] = conv[f"session_{n}_date_time"]
        turns = conv[f"session_{n}"]
        kept[f"session_{n}"] = turns if n <= WHOLE_SESSIONS else turns[:TURNS]
    observation = {key: value for key, value in item["observation"].items()
                   if int(re.sub(r"\D", "", key)) <= WHOLE_SESSIONS}  # session_N_observation
    return {"sample_id": item["sample_id"], "conversation": kept, "observation": observation, "qa": []}


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else SOURCE
    item = next(i for i in json.loads(source.read_text(encoding="utf-8")) if i["sample_id"] == SAMPLE)
    text = json.dumps([cut(item)], ensure_ascii=False, indent=1) + "\n"
    SLICE.parent.mkdir(parents=True, exist_ok=True)
    SLICE.write_text(text, encoding="utf-8")
    turns = sum(len(v) for k, v in json.loads(text)[0]["conversation"].items() if re.fullmatch(r"session_\d+", k))
    print(f"wrote {SLICE.relative_to(REPO)}: {SESSIONS} sessions, {turns} turns, {len(text.encode())} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
