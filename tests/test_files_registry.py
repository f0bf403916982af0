"""Files are memory too: every file of a data directory is declared (``store/files/registry.py``), what a dead
process left goes at the next open, and a forget reaches an upload waiting to be imported.

The everyday scenarios run on the real app with scripted models; the crashes kill a real ``lyra serve`` and a
real ``lyra restore`` (SIGKILL and SIGTERM) at a point they are held at (``LYRATEST_PAUSE_AT``), and the next
open of the data directory is a real ``lyra sessions``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.errors import LyraError
from lyra_local.llm.base import Vectors
from lyra_local.memory import Memory
from lyra_local.store import Store, context_view
from lyra_local.store.files.registry import CREATING, FILES, explaining, locked_file, sweep_leftovers, unexplained_files
from lyra_local.store.files.uploads import ImportInProgress
from lyra_local.store.forget.erase import forget
from lyra_local.store.forget.plan import plan_forget
from lyra_local.store.records import TIERS
from lyra_local.transfer.backup import STAGING, backup, restore

from .chatgpt_export import conversation, write_export
from .conftest import MODELS_DIR, REPO, base_env, fake_client, serve_lyra
from .fakes import FakeEmbedder

STATIC = REPO / "lyra_local" / "web" / "static"
SECRET = "zanzibar-quokka"  # a word only the third conversation of the big export holds
SWEPT = "removed what a process that ended left"


def big_export(path: Path, per_conversation: int = 150) -> Path:
    """Five conversations of ``per_conversation`` messages. With 150, the importer commits them two by two
    (a batch is 256 messages or more), the third conversation alone holding ``SECRET``, then the fifth."""
    convs = []
    for n in range(5):
        turns = [("user" if i % 2 == 0 else "assistant", f"conversation {n} message {i} about the garden")
                 for i in range(per_conversation)]
        if n == 2:
            turns[10] = ("user", f"the {SECRET} is my secret")
        convs.append(conversation(f"conv-{n}", f"Talk {n}", turns, start=1683553000.0 + n * 86400))
    return write_export(path, convs)


def explained(data_dir: Path) -> None:
    left = unexplained_files(data_dir)
    assert left == [], f"files no declaration explains: {[str(p.relative_to(data_dir)) for p in left]}"


# -- the registry ----------------------------------------------------------------------------------------------


def test_every_storage_key_the_page_uses_is_declared() -> None:
    """The page's localStorage/sessionStorage keys (literals, or constants, ``+`` meaning a prefix) are declared."""
    browser = [p.pattern for p in FILES if p.where == "browser"]
    keys: set[str] = set()
    for script in sorted(STATIC.glob("*.js")):
        text = script.read_text()
        consts = dict(re.findall(r'const\s+(\w+)\s*=\s*"([^"]+)"', text))
        for arg in re.findall(r"(?:local|session)Storage\.(?:getItem|setItem|removeItem)\(\s*([^,)]+)", text):
            head = arg.split("+")[0].strip()
            literal = head[1:-1] if head[:1] in "\"'" else consts.get(head)
            if literal is not None:  # else a key read back from the storage itself (``localStorage.key(i)``)
                keys.add(literal + ("x" if "+" in arg else ""))
    assert len(keys) >= 3, keys  # the token, the first-run banner and the trash, at least
    undeclared = [key for key in keys if not any(fnmatch.fnmatchcase(key, pattern) for pattern in browser)]
    assert undeclared == [], f"browser storage keys no declaration explains: {undeclared}"


def test_patterns_explain_what_they_say_and_nothing_else(tmp_path: Path) -> None:
    cases = {"lyra.db": "the database", "lyra.db-wal": "the database's write-ahead log",
             "imports/0a1b-export.zip": "an upload", ".restoring/lyra.db-wal": "a restore's staging",
             "index/exchange--m.faiss.12-ab.tmp": "a half-written index snapshot", ".backup-ab12.db": None,
             ".backup-ab12.db-journal": "the rollback journal of a backup being written",
             "imports/0a1b-export.zip.locking": None, ".backup-ab12.db.locking": None,
             "index/x.faiss.1-ab.tmp.locking": "a file being created, before its writer's flock is held"}
    for rel, name in cases.items():
        place = explaining(tmp_path, tmp_path / rel)
        assert place is not None and (name is None or place.name == name), rel
    for rel in ("notes.txt", "imports/deeper/x.zip", "index/x.faiss.old", "lyra.db.bak", "restoring/lyra.db"):
        assert explaining(tmp_path, tmp_path / rel) is None, rel


# -- everyday scenarios leave only declared files ----------------------------------------------------------------


def wait_job(client: TestClient, job: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get(f"/api/import/{job}").json()
        if status["status"] != "running":
            return status
        time.sleep(0.05)
    raise AssertionError("the import did not finish")


def test_everyday_scenarios_leave_only_declared_files(make_settings: Callable[..., Settings],
                                                      tmp_path: Path) -> None:
    settings = make_settings()
    data = settings.data_dir
    with fake_client(settings) as client:
        session = client.post("/api/sessions", json={"name": "garden"}).json()
        for text in ("My cat Miso sleeps on the balcony", "We planted tomatoes", "The lavender is blooming"):
            assert client.post(f"/api/sessions/{session['id']}/chat", json={"message": text}).status_code == 200
        explained(data)
        job = client.put("/api/import", params={"filename": "export.zip"},
                         content=big_export(tmp_path / "export.zip", 20).read_bytes()).json()["job"]
        assert wait_job(client, job)["status"] == "done"
        explained(data)
        assert client.get("/api/export").status_code == 200
        download = client.get("/api/backup")
        assert download.content.startswith(b"SQLite format 3")
        (tmp_path / "download.db").write_bytes(download.content)
        explained(data)
        assert client.post("/api/forget", json={"matching": "lavender"}).json()["forgotten"]["exchanges"] >= 1
        assert client.delete(f"/api/sessions/{session['id']}").status_code == 200
        explained(data)
    explained(data)
    assert (data / "index").is_dir() and list((data / "index").glob("*.faiss"))  # the snapshots were saved

    store = Store(data)  # `lyra reindex`: re-embed and rebuild every index, saved on close
    try:
        memory = Memory(store, FakeEmbedder())
        memory.reembed()
        context_view.backfill(store)
        for tier in TIERS:
            index = store.index(tier, memory.active_model)
            index.rebuild()
            index.save()
        with pytest.raises(LyraError, match="inside the data directory"):
            backup(store, data / "inside.db")
        backup(store, tmp_path / "cli-backup.db")
    finally:
        store.close()
    explained(data)
    restore(tmp_path / "download.db", data, keep=tmp_path / "kept.db")
    assert not (data / STAGING).exists()
    explained(data)
    Store(data).close()
    explained(data)


# -- a forget reaches an upload -----------------------------------------------------------------------------------


class UntilForgotten(FakeEmbedder):
    """Embeds at once, except a batch holding ``SECRET``: that one only once the upload is gone from
    ``imports/`` (a forget took it), or after ``wait_s``. The import is still running when the forget comes."""

    def __init__(self, imports: Path, wait_s: float = 20.0) -> None:
        super().__init__()
        self.imports, self.wait_s = imports, wait_s

    def embed(self, texts: Sequence[str]) -> Vectors:
        if any(SECRET in text for text in texts):
            deadline = time.monotonic() + self.wait_s
            while any(self.imports.iterdir()) and time.monotonic() < deadline:
                time.sleep(0.01)
        return super().embed(texts)


def test_a_forget_during_an_import_stops_it_and_leaves_the_text_nowhere(
        make_settings: Callable[..., Settings], tmp_path: Path) -> None:
    settings = make_settings()
    data = settings.data_dir
    embedder = UntilForgotten(data / "imports")
    export = big_export(tmp_path / "export.zip").read_bytes()
    with fake_client(settings, embed=embedder) as client:
        job = client.put("/api/import", params={"filename": "export.zip"}, content=export).json()["job"]
        deadline = time.monotonic() + 30
        while client.get(f"/api/import/{job}").json()["done"] == 0:  # the first batch is in
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert len(list((data / "imports").iterdir())) == 1
        answer = client.post("/api/forget", json={"matching": SECRET})
        assert answer.status_code == 200, answer.text
        assert list((data / "imports").iterdir()) == []  # not "forgotten" while the upload sits on disk
        stopped = wait_job(client, job)
        assert stopped["status"] == "failed" and stopped["error"].startswith("stopped: a forget ran meanwhile")
        explained(data)
        rows = sqlite3.connect(data / "lyra.db").execute("SELECT content FROM exchanges").fetchall()
        assert not [r for r in rows if SECRET in r[0]]
        # the batch it was writing went in whole (then the forget took the turn and its reply); the fifth did not
        assert len(rows) == 4 * 150 - 2

        again = wait_job(client, client.put("/api/import", params={"filename": "export.zip"},
                                            content=export).json()["job"])
        assert again["status"] == "done", again
    with sqlite3.connect(data / "lyra.db") as db:  # the rest came in once; the forgotten turn stayed out
        contents = [r[0] for r in db.execute("SELECT content FROM exchanges")]
    assert len(contents) == len(set(contents)) == 5 * 150 - 2 and not [c for c in contents if SECRET in c]
    explained(data)


@contextlib.contextmanager
def uploading_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding an upload the way a server does (``locked_file``) until the block ends."""
    code = ("import sys; from pathlib import Path; from lyra_local.store.files.registry import locked_file\n"
            "with locked_file(Path(sys.argv[1])) as f:\n    f.write(b'the upload'); f.flush()\n"
            "    print('held', flush=True); sys.stdin.read()\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=REPO)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.communicate(timeout=20)  # closes its stdin (it lets go) and its stdout


def test_a_forget_refuses_while_another_process_imports(store: Store, memory: Memory) -> None:
    session = store.sessions.create("garden")
    memory.remember(session.id, "user", "the lavender is blooming")
    with uploading_elsewhere(store.data_dir / "imports" / "0abc-export.zip") as other:
        with pytest.raises(ImportInProgress, match=f"pid {other.pid}"):
            forget(store, plan_forget(store, matching="lavender"))
        assert store.exchanges.count_in(session.id) == 1  # nothing forgotten, the ledger untouched
    assert forget(store, plan_forget(store, matching="lavender")).exchanges == 1
    assert list((store.data_dir / "imports").iterdir()) == []


def test_a_file_still_taking_its_name_does_not_refuse_a_forget(store: Store, memory: Memory) -> None:
    """An upload between its creation and its flock (``*.locking``, microseconds) is no running import: it once
    refused the forget as "running in another process", naming no process."""
    session = store.sessions.create("garden")
    memory.remember(session.id, "user", "the lavender is blooming")
    (store.data_dir / "imports").mkdir(exist_ok=True)
    (store.data_dir / "imports" / f"0abc-export.zip{CREATING}").write_bytes(b"")
    assert forget(store, plan_forget(store, matching="lavender")).exchanges == 1


# -- the recovery step ----------------------------------------------------------------------------------------------


def leftovers(data: Path) -> dict[str, Path]:
    """One of each thing a dead process leaves, none of it locked."""
    files = {"upload": data / "imports" / "0abc-export.zip", "staging": data / STAGING / "lyra.db",
             "snapshot": data / "index" / "exchange--m.faiss.99-ab.tmp", "backup": data / ".backup-ab12.db"}
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"words of {SECRET}")
    return files


def test_the_next_open_sweeps_what_a_dead_process_left_and_logs_it(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    Store(data).close()
    files = leftovers(data)
    stray = data / "notes.txt"
    stray.write_text("the person's own file")
    with caplog.at_level(logging.WARNING, logger="lyra_local.store.files.registry"):
        Store(data).close()
    assert [p for p in files.values() if p.exists()] == [] and not (data / STAGING).exists()
    swept = [r.getMessage() for r in caplog.records if SWEPT in r.getMessage()]
    assert len(swept) == 1 and "imports/0abc-export.zip (an upload" in swept[0] and ".restoring (a restore" in swept[0]
    assert stray.exists() and unexplained_files(data) == [stray]  # never swept: named by the test helper instead


def test_a_live_writers_files_are_never_swept(store: Store, tmp_path: Path) -> None:
    """With the memory open elsewhere, a locked upload stays; an unlocked one under its name goes at once (its
    name appears only with its flock held, so a free flock there means a writer that ended); one still under
    its ``.locking`` name (before its flock) goes only once older than the grace; a restore's staging goes (no
    restore holds the lock while a store is open)."""
    data = store.data_dir
    files = leftovers(data)
    creating = data / "imports" / f"2ghi-export.zip{CREATING}"
    creating.write_text(f"words of {SECRET}")
    with uploading_elsewhere(data / "imports" / "1def-live.zip") as _:
        swept = sweep_leftovers(data)
        assert sorted(swept) == sorted([files["upload"], files["snapshot"], files["backup"], data / STAGING])
        assert creating.exists()  # younger than its grace: its writer may be about to lock it
        old = time.time() - 3600
        for path in (creating, data / "imports" / "1def-live.zip"):
            os.utime(path, (old, old))
        assert sweep_leftovers(data) == [creating]
        assert (data / "imports" / "1def-live.zip").exists()
    assert sweep_leftovers(data) == []  # gone with its writer: ``locked_file`` unlinks before it unlocks


def test_a_live_backups_journal_is_not_swept_while_the_memory_is_open_elsewhere(store: Store) -> None:
    """``.backup-*`` once matched the journal SQLite keeps beside a backup being written (no flock of ours on
    it): another process opening the memory unlinked it, and the download's commit failed."""
    data = store.data_dir
    with uploading_elsewhere(data / ".backup-cd34.db"):
        journal = data / ".backup-cd34.db-journal"
        journal.write_bytes(b"pages of the backup being written")
        old = time.time() - 3600
        os.utime(journal, (old, old))
        assert sweep_leftovers(data) == [] and journal.exists()
    assert sweep_leftovers(data) == []  # the memory still open here (the store): a journal is left alone
    store.close()
    assert sweep_leftovers(data) == [journal]  # alone on the memory: whatever wrote it has ended


def test_a_locked_file_is_unlinked_before_its_lock_goes(tmp_path: Path) -> None:
    path = tmp_path / "x.tmp"
    with locked_file(path) as out:
        out.write(b"half")
        assert path.exists() and not path.with_name(path.name + CREATING).exists()  # named with its flock held
    assert not path.exists()
    path.write_text("another's")
    with pytest.raises(FileExistsError), locked_file(path):
        pass  # never over a file, as O_EXCL
    assert path.read_text() == "another's" and not path.with_name(path.name + CREATING).exists()
    path.unlink()
    with locked_file(path) as out:
        os.replace(path, tmp_path / "whole")  # renamed over its target: that file stays
    assert (tmp_path / "whole").exists() and not path.exists()


# -- a real server and a real restore, killed ------------------------------------------------------------------


def lyra_env(tmp: Path, **extra: str) -> dict[str, str]:
    return {**base_env(tmp), "LYRA_DATA_DIR": str(tmp / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
            "LYRA_DREAM__ENABLED": "false", **extra}


def lyra_process(tmp: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    """``lyra ARGS`` started on ``tmp``'s data directory, its stderr piped."""
    return subprocess.Popen([sys.executable, "-m", "lyra_local", "--config", str(tmp / "lyra.toml"), *args],
                            env=lyra_env(tmp, **env), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            cwd=REPO)


def killed_at(point: str, tmp: Path, *args: str) -> None:
    """Run ``lyra ARGS`` until it pauses at ``point`` (``LYRATEST_PAUSE_AT``), then SIGKILL it."""
    proc = lyra_process(tmp, *args, LYRATEST_PAUSE_AT=point)
    assert proc.stderr is not None
    with proc.stderr:
        said = ""
        while f"paused at {point}" not in said:
            line = proc.stderr.readline()
            assert line, f"lyra {' '.join(args)} ended before {point}:\n{said}"
            said += line
        proc.kill()
        proc.wait(timeout=20)


def wait_for_line(read: Callable[[], str], needle: str, proc: subprocess.Popen[str], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while needle not in read():
        assert proc.poll() is None, read()[-3000:]
        assert time.monotonic() < deadline, f"never saw {needle!r}:\n{read()[-3000:]}"
        time.sleep(0.1)


def next_open(tmp: Path) -> str:
    """``lyra sessions`` on the data directory: the next process to open it. Returns its stderr."""
    done = subprocess.run([sys.executable, "-m", "lyra_local", "--config", str(tmp / "lyra.toml"), "sessions"],
                          env=lyra_env(tmp), capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_server_killed_mid_import_leaves_no_upload_behind(tmp_path: Path, how: signal.Signals) -> None:
    """SIGTERM: the server stops the import and removes the upload as it shuts down. SIGKILL: the upload stays
    until the next open, which removes it and says so. Either way importing the file again adds only the rest."""
    data = tmp_path / "data"
    export = big_export(tmp_path / "export.zip").read_bytes()
    with serve_lyra(tmp_path, lyra_env(tmp_path, LYRATEST_PAUSE_AT="import-batch")) as served:
        answer = httpx.put(f"{served.url}/api/import", params={"filename": "export.zip"}, content=export, timeout=60)
        assert answer.status_code == 202, answer.text
        wait_for_line(served.log.read_text, "paused at import-batch", served.proc)
        assert len(list((data / "imports").iterdir())) == 1
        served.proc.send_signal(how)
        served.proc.wait(timeout=90)
    uploads = list((data / "imports").iterdir())
    if how == signal.SIGTERM:
        assert uploads == [], "a normal stop left the upload behind"
        assert SWEPT not in next_open(tmp_path)
    else:
        assert len(uploads) == 1  # the kernel ran no `finally`
        stderr = next_open(tmp_path)
        assert SWEPT in stderr and f"imports/{uploads[0].name} (an upload" in stderr
        assert list((data / "imports").iterdir()) == []
    explained(data)
    with sqlite3.connect(data / "lyra.db") as db:
        assert db.execute("SELECT count(*) FROM exchanges").fetchone()[0] == 2 * 150  # the batch committed stays
    with serve_lyra(tmp_path, lyra_env(tmp_path)) as served:  # resumed by uploading the file again
        job = httpx.put(f"{served.url}/api/import", params={"filename": "export.zip"}, content=export,
                        timeout=60).json()["job"]
        deadline = time.monotonic() + 180
        while (status := httpx.get(f"{served.url}/api/import/{job}", timeout=10).json())["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert status["status"] == "done", status
    with sqlite3.connect(data / "lyra.db") as db:
        contents = [r[0] for r in db.execute("SELECT content FROM exchanges")]
    assert len(contents) == len(set(contents)) == 5 * 150  # nothing twice
    explained(data)


@pytest.mark.slow
def test_a_restore_killed_while_staging_leaves_nothing_after_the_next_open(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "lyra.toml").write_text("")
    store = Store(data)
    try:
        session = store.sessions.create("before the backup")
        Memory(store, FakeEmbedder()).remember(session.id, "user", f"the {SECRET} is my secret")
        backup(store, tmp_path / "b.db")
    finally:
        store.close()
    killed_at("restore-staged", tmp_path, "restore", str(tmp_path / "b.db"), "--keep", str(tmp_path / "kept.db"))
    assert (data / STAGING / "lyra.db").is_file()  # a second copy of the memory, out of every forget's reach
    stderr = next_open(tmp_path)
    assert SWEPT in stderr and ".restoring (a restore's staging" in stderr
    assert not (data / STAGING).exists()
    explained(data)
