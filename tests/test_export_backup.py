"""Export, backup, restore and forget through the `lyra` command, on real stores and the real embedder."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lyra_local.cli import main
from lyra_local.config import load_settings
from lyra_local.llm.local import LocalEmbedder
from lyra_local.mind import Dreamer
from lyra_local.store import Store

from .chatgpt_export import conversation, write_export
from .conftest import MODELS_DIR, REPO, base_env
from .fakes import FakeChatModel
from .test_dream import add_session, respond


def use(monkeypatch: pytest.MonkeyPatch, data: Path) -> None:
    monkeypatch.setenv("LYRA_DATA_DIR", str(data))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(MODELS_DIR))
    monkeypatch.setenv("LYRA_DREAM__ENABLED", "false")
    monkeypatch.setenv("LYRA_COMPANION__USER_NAME", "Sam")
    monkeypatch.delenv("LYRA_CONFIG", raising=False)


@pytest.mark.slow
@pytest.mark.models  # `lyra import` embeds with the real model
def test_export_then_import_into_an_empty_store_then_export_gives_identical_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: LocalEmbedder) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    use(monkeypatch, first)
    export = write_export(tmp_path / "chatgpt.zip", [
        conversation("c1", "Café ☕", [("user", "I live in Berlin with my cat Miso"), ("assistant", "Lovely")]),
        conversation("c2", "Empty one", [])])
    assert main(["import", str(export)]) == 0
    store = Store(first)
    add_session(store, "garden", "2024-05-01", ["I moved to Lisbon, the tomatoes 🍅 came too", "Wonderful"])
    store.sessions.create("never used")
    settings = load_settings(None)
    # the real embedder: the profile's gate fits keys by meaning, and the world proposal is built on the facts
    Dreamer(store, FakeChatModel(respond=respond), embedder, settings).run_pass(force=True)
    store.derived.set_fact("favourite tea", "genmaicha", author="user")
    store.coord.write_world("# Now\n- Lisbon since May", "user")
    store.coord.write_world("# Now\n- Lisbon since May\n- learning Portuguese", "user")
    store.close()

    assert main(["export", str(tmp_path / "out1")]) == 0
    use(monkeypatch, second)
    assert main(["import", str(tmp_path / "out1")]) == 0
    assert main(["export", str(tmp_path / "out2")]) == 0
    for name in ("sessions.jsonl", "memory.json"):
        assert (tmp_path / "out1" / name).read_bytes() == (tmp_path / "out2" / name).read_bytes(), name
    memory = json.loads((tmp_path / "out1" / "memory.json").read_text())
    assert memory["gists"] and memory["digests"] and memory["narrative"]
    assert sorted(w["author"] for w in memory["world"]) == ["dream", "user", "user"]  # a proposal and two edits
    assert {f["key"] for f in memory["profile"]} >= {"home city", "favourite tea"}
    lines = (tmp_path / "out1" / "sessions.jsonl").read_text().splitlines()
    assert len(lines) == 4 and any('"source": "chatgpt"' in line for line in lines)
    # importing the same export again adds nothing
    assert main(["import", str(tmp_path / "out1")]) == 0
    store = Store(second)
    assert store.sessions.count() == 4 and store.exchanges.count() == 4
    imports = [i for i in store.coord.instances() if i["kind"] == "cli"]  # each import registered itself
    assert len(imports) == 2 and all(i["status"] == "done" and "messages" in i["result"] for i in imports)
    store.close()


WRITER = """
import sys, time, numpy as np
from pathlib import Path
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange
store = Store(Path(sys.argv[1]))
end = time.monotonic() + float(sys.argv[2])
n = 0
while time.monotonic() < end:
    with store.write() as conn:  # one session of ten turns per transaction
        s = store.sessions.create(f"writer {n}", conn=conn)
        store.exchanges.insert(conn, [NewExchange(s.id, "user", f"turn {i} of session {n}") for i in range(10)],
                               np.ones((10, 8), dtype=np.float32), "m")
    n += 1
print(n)
"""


@pytest.mark.slow
def test_a_backup_taken_while_a_writer_runs_restores_to_a_consistent_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    use(monkeypatch, data)
    Store(data).close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(data), "6"], stdout=subprocess.PIPE, text=True,
                              cwd=REPO)
    time.sleep(2)
    backups = [tmp_path / f"backup{i}.db" for i in range(2)]
    for path in backups:
        assert main(["backup", str(path)]) == 0
        time.sleep(1)
    assert main(["backup", str(backups[0])]) == 2  # never overwrites
    written = int(writer.communicate(timeout=60)[0])
    assert writer.returncode == 0 and written > 0

    for i, path in enumerate(backups):
        target = tmp_path / f"restored{i}"
        use(monkeypatch, target)
        assert main(["restore", str(path)]) == 0
        conn = sqlite3.connect(target / "lyra.db")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.execute("INSERT INTO exchanges_fts(exchanges_fts) VALUES ('integrity-check')")
        sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        per_session = {r[0] for r in conn.execute(
            "SELECT count(e.id) FROM sessions s JOIN exchanges e ON e.session_id = s.id GROUP BY s.id")}
        assert 0 < sessions <= written and per_session == {10}  # whole transactions only
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 10 * sessions
        conn.close()
        store = Store(target)  # opens and migrates like any data directory
        assert store.exchanges.count() == 10 * sessions
        store.close()


def backed_up(data: Path, name: str, backup: Path) -> None:
    """A memory of one conversation, ``name``, backed up by `lyra backup` to ``backup`` (the store closed)."""
    store = Store(data)
    store.sessions.create(name)
    store.close()
    assert main(["backup", str(backup)]) == 0


def test_restore_refuses_while_a_server_runs_and_keeps_what_it_replaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    use(monkeypatch, data)
    backed_up(data, "old", tmp_path / "b.db")
    store = Store(data)
    store.sessions.create("newer")
    store.coord.register("server-x", "server", "lyra serve")
    store.close()
    assert main(["restore", str(tmp_path / "b.db")]) == 2
    assert "in use by server server-x" in capsys.readouterr().err
    assert main(["restore", str(tmp_path / "b.db"), "--force"]) == 0
    assert [s.name for s in Store(data).sessions.list()] == ["old"]
    assert not list(data.glob("*before-restore*"))  # never inside the data directory: forgets would not reach it
    kept = list(tmp_path.glob("data-before-restore-*.db"))
    assert len(kept) == 1 and sqlite3.connect(kept[0]).execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert main(["restore", str(tmp_path / "junk.db"), "--force"]) == 2
    assert "not a Lyra database" in capsys.readouterr().err


def test_forget_by_session_date_or_text_with_a_dry_run_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    use(monkeypatch, data)
    store = Store(data)
    old = add_session(store, "old", "2021-03-01", ["my old PIN is 4411", "noted"])
    mixed = add_session(store, "mixed", "2024-03-01", ["the wifi password is hunter2", "ok", "nice weather"])
    keep = add_session(store, "keep", "2024-06-01", ["tomatoes", "lovely"])
    store.close()

    assert main(["forget", "--matching", "HUNTER2", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "2 turn(s) of other sessions" in out and "hunter2" in out  # the message and the reply to it and "nothing was forgotten" in out
    assert main(["forget", "--matching", "hunter2"]) == 2  # no tty, no --yes: refuses
    assert main(["forget", "--matching", "hunter2", "--yes"]) == 0
    assert main(["forget", "--before", "2022-01-01", "--yes"]) == 0  # the old session goes whole
    assert main(["forget", "--session", str(keep), "--yes"]) == 0
    assert main(["forget", "--session", "nope", "--yes"]) == 2
    store = Store(data)
    assert [s.id for s in store.sessions.list()] == [mixed]
    assert [e.content for e in store.exchanges.history(mixed)] == ["nice weather"]
    assert old not in [s.id for s in store.sessions.list()]
    store.close()


@pytest.mark.slow
@pytest.mark.models  # `lyra import` embeds with the real model
def test_lyra_import_killed_mid_way_keeps_whole_conversations_and_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    convs = [conversation(f"k{i}", f"chat {i}", [("user" if j % 2 == 0 else "assistant",
                                                  f"message {j} of conversation {i} about the harbour and the rain")
                                                 for j in range(9)]) for i in range(150)]
    export = write_export(tmp_path / "export.zip", convs)
    data = tmp_path / "data"
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    proc = subprocess.Popen([sys.executable, "-m", "lyra_local", "import", str(export)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:  # wait until some batches are in, then pull the plug
        assert time.monotonic() < deadline and proc.poll() is None, "the import ended before it could be killed"
        if (data / "lyra.db").exists():
            conn = sqlite3.connect(data / "lyra.db", timeout=10)
            try:
                stored = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
            except sqlite3.OperationalError:  # the file is there, its tables not yet (the migrations run)
                stored = 0
            finally:
                conn.close()
            if stored >= 30:
                break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    conn = sqlite3.connect(data / "lyra.db")
    counts = [r[0] for r in conn.execute("SELECT count(e.id) FROM sessions s LEFT JOIN exchanges e "
                                         "ON e.session_id = s.id GROUP BY s.id")]
    conn.close()
    assert 30 <= len(counts) < 150 and set(counts) == {9}  # whole conversations only
    use(monkeypatch, data)
    assert main(["import", str(export)]) == 0  # resumes: the rest comes in, nothing twice
    store = Store(data)
    assert store.sessions.count() == 150 and store.exchanges.count() == 150 * 9
    store.close()
