#!/usr/bin/env python3
"""Build the upgrade fixture: a populated single-person data directory written by the PREVIOUS release's code.

The household must open a data directory of the schema before it and keep every conversation and
memory of it, asking no login until a second person is added. A directory written by the current code would
prove nothing about that, so this script is run with the previous release's own code on the import path: it
drives that release's real app (``create_app`` through FastAPI's test client, on the scripted fakes of that
release's ``tests/fakes.py``) the way a person does — conversations whose words are unique markers, a
regenerated reply, an edited message, a dream pass whose summary model copies the markers it read into gists,
facts and digests, the core memory written, a fact, a gist and the self-state corrected — closes the app
cleanly, and packs the data directory into ``tests/data/upgrade/single-person-v37.tar.gz`` with a manifest
beside it (``single-person-v37.json``): what the old API answered for each conversation and memory, the rows per table,
the files and their hashes, and the schema's last migration. ``tests/test_household_upgrade.py`` opens a copy
with the current code and checks all of it.

Regenerate it (only when the previous release changes: the fixture IS that release's output)::

    git worktree add /tmp/prev37 4a0f14f          # the release before the household
    PYTHONPATH=/tmp/prev37 .venv/bin/python scripts/make_upgrade_fixture.py
    git worktree remove --force /tmp/prev37

It refuses to run on code that already knows the household (``lyra_local/store/household.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lyra_local.llm.base import GenerationOptions, Message

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "upgrade"
NAME = "single-person-v37"
MARK = re.compile(r"upg[a-z]+\d+")
USER = "Sam"
# Each conversation: its name and what the person says in it, every word of substance a marker of its own.
CONVERSATIONS: list[tuple[str, list[str]]] = [
    ("Garden upgheron1", ["I love growing upgtomato1 in the garden.", "The shed needs upgshed1 paint."]),
    ("Music upglute2", ["I play the upglute2.", "My teacher is called upgmarta2.",
                        "We practise upgscales2 every morning."]),
    ("Work upgdesk3", ["I work as a upgjoiner3.", "My manager upgkeller3 was pleased."]),
    ("Travel upgfjord4", ["I live in upgbergen4.", "I want to see the upgglacier4."]),
]
# What the scripted summary model proposes as a profile fact when it reads the marker (grounding keeps each
# one the person said as that kind of fact).
FACT_KEYS = {"upgtomato1": "likes", "upglute2": "music", "upgjoiner3": "job", "upgbergen4": "home city"}
WORLD = "# Home\n- the dog is called upgrex5\n- bins go out on upgtuesday5"
FACT = ("favourite tea", "upgoolong6")
SELF = "I think of upgcompass8 when Sam talks."
GIST = "In my own words: we talked about upgtomato1 and the upgcorrection7 of the shed."


def copy_markers(messages: Sequence[Message], options: GenerationOptions | None) -> str:
    """A summary model that writes the markers it read into whatever it is asked to write (as the promises test
    scripts it), so every gist, fact and digest holds words that can be looked for after the upgrade."""
    found = list(dict.fromkeys(MARK.findall("\n".join(m["content"] for m in messages))))
    said = " ".join(f"{USER} spoke of {m}." for m in found[:6]) or f"{USER} and Lyra talked."
    schema = options.json_schema if options is not None else None
    if schema is not None:
        if "facts" in schema.get("properties", {}):
            return json.dumps({"facts": [{"key": FACT_KEYS[m], "value": m} for m in found if m in FACT_KEYS]})
        return json.dumps({"mood": "curious", "energy": 0.6,
                           "self_narrative": " ".join(f"{USER} spoke of {m}." for m in found[:3]) or said,
                           "reflections": [f"{USER} spoke of {m}." for m in found[:2]]})
    return said


class Replies:
    """The chat model's replies: numbered, so a regenerated reply differs from the one it replaces."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, messages: Sequence[Message], options: GenerationOptions | None) -> str:
        self.n += 1
        return f"I hear you, reply {self.n}."


def previous_release() -> str:
    """The commit of the code on the import path; refuses code that already has the household."""
    import lyra_local

    package = Path(lyra_local.__file__).resolve().parent
    if (package / "store" / "household.py").exists():
        sys.exit(f"{package} already has the household: run this with the previous release's code on PYTHONPATH "
                 "(see the docstring)")
    head = subprocess.run(["git", "-C", str(package), "rev-parse", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip() or "unknown"


def populate(data: Path, tmp: Path) -> dict[str, Any]:
    """Drive the previous release's app through a person's day; return what its API answered at the end."""
    from fastapi.testclient import TestClient

    from lyra_local.config import load_settings
    from lyra_local.llm.registry import Models
    from lyra_local.mind import Dreamer
    from lyra_local.web import create_app
    from tests.fakes import FakeChatModel, FakeEmbedder

    config = tmp / "lyra.toml"
    config.write_text(f'[companion]\nuser_name = "{USER}"\n[dream]\nsession_idle_s = 0\nmin_turns = 1\n'
                      '[coordination]\nworld_updates = "propose"\n')
    settings = load_settings(config, env={"LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(REPO / "models"),
                                          "LYRA_DREAM__ENABLED": "false"})
    summary, embedder = FakeChatModel(respond=copy_markers), FakeEmbedder()
    models = Models(settings, chat=FakeChatModel(respond=Replies()), summary=summary, embed=embedder)
    with TestClient(create_app(settings, models=models), base_url="http://127.0.0.1") as client:
        def ok(method: str, path: str, **kw: Any) -> Any:
            response = client.request(method, path, **kw)
            assert response.status_code < 300, (method, path, response.status_code, response.text[:500])
            return response

        ids = []
        for name, said in CONVERSATIONS:
            session = ok("POST", "/api/sessions", json={"name": name}).json()["id"]
            ids.append(session)
            for text in said:
                assert "event: done" in ok("POST", f"/api/sessions/{session}/chat", json={"message": text}).text
        first = ok("GET", f"/api/sessions/{ids[0]}/messages").json()["messages"]
        reply = next(m for m in first if m["role"] == "assistant")
        ok("POST", f"/api/exchanges/{reply['id']}/regenerate")  # the first reply is kept as a version set aside
        second = ok("GET", f"/api/sessions/{ids[1]}/messages").json()["messages"]
        mine = [m for m in second if m["role"] == "user"][-1]
        ok("POST", f"/api/exchanges/{mine['id']}/edit", json={"content": "Actually we practise upgarpeggio2."})
        dreamer = Dreamer(client.app.state.lyra.owner_runtime().store, summary, embedder, settings)  # type: ignore[attr-defined]
        try:
            status = dreamer.run_pass(force=True).status
            assert status == "done", status
        finally:
            dreamer.close()
        ok("PUT", "/api/world", json={"content": WORLD})
        ok("PUT", "/api/profile", json={"key": FACT[0], "value": FACT[1]})
        ok("PUT", f"/api/sessions/{ids[0]}/gist", json={"content": GIST})
        ok("PATCH", "/api/self", json={"mood": "calm", "self_narrative": SELF})
        return answers(client, ids)


def answers(client: Any, ids: list[int]) -> dict[str, Any]:
    """What the API says about every conversation and memory: what the upgraded directory must still say."""
    def get(path: str) -> Any:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code, response.text[:300])
        return response.json()

    listed = {s["id"]: s for s in get("/api/sessions")["sessions"]}
    sessions = []
    for session in ids:
        messages = get(f"/api/sessions/{session}/messages")["messages"]
        gist = get(f"/api/sessions/{session}/gist")
        sessions.append({
            "id": session, "name": listed[session]["name"],
            "messages": [{"id": m["id"], "role": m["role"], "content": m["content"],
                          "versions": m["versions"]} for m in messages],
            "gist": gist["gist"]["content"] if gist["gist"] else None,
        })
    profile = get("/api/profile")
    world = get("/api/world")
    return {
        "sessions": sessions,
        "facts": sorted(({"key": f["key"], "value": f["value"]} for f in profile["facts"]),
                        key=lambda f: (f["key"], f["value"])),
        "digests": sorted(({"granularity": d["granularity"], "period": d["period"], "content": d["content"]}
                           for d in get("/api/digests")["digests"]), key=lambda d: (d["granularity"], d["period"])),
        "world": world["world"]["content"],
        "world_versions": len(get("/api/world/history")["versions"]),
        "narrative": get("/api/narrative")["narrative"],
        "self_narrative": get("/api/self")["self_state"]["self_narrative"],
    }


def checkpoint(data: Path) -> tuple[dict[str, int], str]:
    """Fold the WAL into lyra.db (so the file alone is the memory) and count the rows of each table."""
    conn = sqlite3.connect(data / "lyra.db")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                             "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        counts = {t: int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in tables}
        last = conn.execute("SELECT name FROM _migrations ORDER BY rowid DESC LIMIT 1").fetchone()[0]
        conn.execute("PRAGMA journal_mode = DELETE")  # no -wal/-shm beside it: the tarball holds one file
    finally:
        conn.close()
    return counts, str(last)


def pack(data: Path, archive: Path) -> list[dict[str, Any]]:
    """Tar the data directory (paths relative to it, fixed times and owners so a rebuild is byte-stable)."""
    files = []
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=9) as tar:
        for path in sorted(p for p in data.rglob("*") if p.is_file()):
            name = path.relative_to(data).as_posix()
            body = path.read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(body), 0, 0o644
            tar.addfile(info, io.BytesIO(body))
            files.append({"path": name, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()})
    archive.write_bytes(buffer.getvalue())
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the tarball and its manifest")
    args = parser.parse_args(argv)
    release = previous_release()
    with tempfile.TemporaryDirectory(prefix="lyra-upgrade-") as scratch:
        tmp = Path(scratch)
        data = tmp / "data"
        said = populate(data, tmp)
        counts, last = checkpoint(data)
        args.out.mkdir(parents=True, exist_ok=True)
        archive = args.out / f"{NAME}.tar.gz"
        files = pack(data, archive)
    markers = sorted({m for name, lines in CONVERSATIONS for m in MARK.findall(" ".join([name, *lines]))}
                     | set(MARK.findall(" ".join([WORLD, FACT[1], GIST, SELF, "upgarpeggio2"]))))
    manifest = {
        "about": "A single-person data directory written by the release before the household; see "
                 "scripts/make_upgrade_fixture.py",
        "release": release, "last_migration": last, "user_name": USER, "markers": markers,
        "files": files, "rows": counts, **said,
    }
    (args.out / f"{NAME}.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    print(f"{archive}: {archive.stat().st_size} bytes, {len(files)} files, {counts.get('exchanges')} exchanges, "
          f"last migration {last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
