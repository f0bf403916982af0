#!/usr/bin/env python3
"""Benchmark importing a ChatGPT export: messages/s end to end against the raw embedding throughput.

Writes a deterministic ChatGPT-shaped export (1,000 conversations, 50,000
messages by default: branches, multimodal parts, hidden system messages) to a
temp dir, measures the embedder alone on a sample of the same messages in the
importer's batch size (the baseline), then imports the whole export into a
fresh store exactly as ``lyra import`` does (read the zip, walk the trees,
embed in batches, insert whole conversations per transaction). Prints a
markdown table; writes only to a temp dir.

    python scripts/bench_import.py [--conversations 1000] [--messages 50000] [--sample 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from lyra_local.config import load_settings
from lyra_local.llm.local import available_cpus
from lyra_local.llm.registry import Models
from lyra_local.store import Store
from lyra_local.transfer.importer import BATCH_MESSAGES, import_source
from lyra_local.transfer.sources import open_source

WORDS = ("garden sister Lisbon coffee rain project deadline birthday guitar train mountain letter doctor recipe "
         "river festival promise morning library bicycle harbour winter Ana Miso tomatoes move flat work boss "
         "holiday beach concert marathon knee physio piano lesson budget rent plants python code review sleep "
         "bread oven weekend market museum friend call email meeting travel ticket hotel dinner").split()


def sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."


def node(node_id: str, role: str, parts: list[Any], at: float, parent: str | None, *, hidden: bool = False,
         content_type: str = "text") -> dict[str, Any]:
    return {"id": node_id, "parent": parent, "children": [], "message": {
        "id": node_id, "author": {"role": role}, "create_time": at, "content": {"content_type": content_type,
                                                                                   "parts": parts},
        "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {}, "recipient": "all"}}


def make_export(path: Path, conversations: int, messages: int) -> int:
    rng = random.Random(42)
    per = messages // conversations
    start = 1_577_836_800.0  # 2020-01-01
    data, total = [], 0
    for c in range(conversations):
        at = start + c * 86_400 * 1.5
        mapping = {"sys": node("sys", "system", [""], at, None, hidden=True)}
        parent = "sys"
        for m in range(per):
            nid = f"c{c}-m{m}"
            role = "user" if m % 2 == 0 else "assistant"
            text = sentence(rng, 6, 40) if role == "user" else " ".join(sentence(rng, 8, 24)
                                                                        for _ in range(rng.randint(1, 5)))
            parts: list[Any] = [text]
            kind = "text"
            if role == "user" and m % 17 == 0:
                parts, kind = [text, {"content_type": "image_asset_pointer", "asset_pointer": "file"}], "multimodal_text"
            mapping[nid] = node(nid, role, parts, at + 30 * m, parent, content_type=kind)
            mapping[parent]["children"].append(nid)
            if m == 2:  # an abandoned regeneration: a branch that is not current
                alt = f"c{c}-alt"
                mapping[alt] = node(alt, "assistant", ["an older answer"], at + 31 * m, parent)
                mapping[parent]["children"].append(alt)
            parent = nid
            total += 1
        data.append({"title": sentence(rng, 2, 5), "create_time": at, "update_time": at + 3600, "mapping": mapping,
                     "current_node": parent, "conversation_id": f"conv-{c}", "id": f"conv-{c}"})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", json.dumps(data))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--sample", type=int, default=10_000, help="messages embedded alone for the baseline")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        export = work / "chatgpt-export.zip"
        total = make_export(export, args.conversations, args.messages)
        settings = load_settings(None, env={**os.environ, "LYRA_DATA_DIR": str(work / "data")})
        models = Models(settings)
        embedder = models.embed
        embedder.embed(["warm up"])

        texts = [m.content for c in open_source(export).read() for m in getattr(c, "messages", [])][: args.sample]
        t0 = time.perf_counter()
        for i in range(0, len(texts), BATCH_MESSAGES):
            embedder.embed(texts[i:i + BATCH_MESSAGES])
        raw_rate = len(texts) / (time.perf_counter() - t0)

        store = Store(work / "data")
        report, _ = import_source(store, embedder, open_source(export))
        store.close()
        models.close()
    e2e_rate = report.messages / report.total_s
    print(f"Import of a ChatGPT export: {args.conversations:,} conversations, {total:,} messages "
          f"({report.messages:,} kept), {embedder.name}, {available_cpus()} CPU threads, batches of "
          f"{BATCH_MESSAGES}\n")
    print("| measure | messages | seconds | messages/s | ratio |")
    print("|---|---:|---:|---:|---:|")
    print(f"| raw embedding (baseline, sample) | {len(texts):,} | {len(texts) / raw_rate:.1f} | {raw_rate:,.0f} | 1.00 |")
    print(f"| `lyra import` end to end | {report.messages:,} | {report.total_s:.1f} | {e2e_rate:,.0f} | "
          f"{e2e_rate / raw_rate:.2f} |")
    print(f"\nshare of the import spent embedding: {report.embed_s / report.total_s:.0%}; "
          f"skipped: {dict(report.skipped)}")


if __name__ == "__main__":
    main()
