"""How ``tests/data/fuzz/``'s import seeds were written: ``python scripts/fuzz.py write-corpus`` writes them again.

Small, valid and rich: a ChatGPT export with an edited branch, images, code, a
tool message and a hidden one; a Lyra export from a store the (scripted) dream
summed up, with a regenerated reply set aside, so ``memory.json`` holds gists,
facts, digests, the arc, the self state and the world.
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path

from lyra_local.config import load_settings
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange
from lyra_local.transfer.lyra_format import write_sessions
from lyra_local.transfer.memory_file import memory_json

from .chatgpt_export import conversation, write_export
from .test_dream import add_session, dreamer
from .test_import import branched, rich


def write_import_seeds(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    chats = [branched(), rich(), conversation("c-plain", "Plain", [("user", "Hello"), ("assistant", "Hi there")])]
    written = [write_export(folder / "chatgpt-export.zip", chats),
               write_export(folder / "conversations.json", chats, as_zip=False)]
    sessions, memory = _lyra_export()
    (folder / "sessions.jsonl").write_text(sessions, encoding="utf-8")
    with zipfile.ZipFile(folder / "lyra-export.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("sessions.jsonl", sessions)
        archive.writestr("memory.json", memory)
    return [*written, folder / "sessions.jsonl", folder / "lyra-export.zip"]


def _lyra_export() -> tuple[str, str]:
    """``sessions.jsonl`` and ``memory.json`` of a small dreamed store, as ``GET /api/export`` writes them."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "lyra.toml").write_text('[companion]\nuser_name = "Sam"\n[dream]\nsession_idle_s = 0\n')
        settings = load_settings(home / "lyra.toml", env={"LYRA_DATA_DIR": str(home / "data"),
                                                          "LYRA_DREAM__ENABLED": "false"})
        store = Store(home / "data")
        try:
            a = add_session(store, "moving", "2024-03-04", ["I live in Berlin with my cat Miso", "How lovely!"])
            add_session(store, "later", "2024-04-20", ["Work was long today", "Rest well"])
            last = store.exchanges.history(a)[-1]
            store.exchanges.add(NewExchange(a, "assistant", "How lovely! Tell me about Miso."), replacing=last.id)
            dreamer(store, settings).run_pass(force=True)
            out = io.StringIO()
            write_sessions(store, out)
            memory = memory_json(store)
            assert json.loads(memory)["gists"], "the dream wrote no gist: the seed would not exercise a restore"
            return out.getvalue(), memory
        finally:
            store.close()
