"""OS errors name their cause: a full disk, a read-only one, a folder this user may not
write and a file where a folder should be are each said as such, with the path and what to do, by every CLI
command and API answer; "another process" is said only when one holds the memory.

Each test puts the data directory on a real small tmpfs (mounted here, unmounted after: these tests need
root, as CI runs them) and fills it to the brim with a filler file; the commands run as `lyra` processes.
A process whose root may not override file permissions (its bounding set without CAP_DAC_OVERRIDE) meets
a real "permission denied".
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from lyra_local.config import Settings
from lyra_local.errors import DiskFull, ReadOnlyStorage, StorageMissing, StoragePermission
from lyra_local.store import Store, db
from lyra_local.store.db import StoreBusy
from lyra_local.store.exchanges import NewExchange
from lyra_local.store.files.dirlock import DirLock
from lyra_local.store.files.registry import OUTGOING_DIR

from .conftest import MODELS_DIR, base_env, fake_client, serve_lyra
from .test_web_ui import CONFIG, opened, send, shot

pytestmark = [pytest.mark.slow]  # mounts file systems and starts `lyra` processes

NAME = "Basil on the balcony"
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("these tests mount a small tmpfs and need root (CI runs the suite as root): run them as root")


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "4m") -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted at ``where`` for the block."""
    need_root()
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (root needs CAP_SYS_ADMIN, as CI has): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], check=True)  # a process of the test still has a file open


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk") as mounted:
        yield mounted


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte with one file; returns it (delete it to free the space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 16, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    st = os.statvfs(disk)
    assert st.f_bavail == 0, f"{st.f_bavail} blocks still free"
    return filler


def seeded(data_dir: Path) -> None:
    """A memory with one conversation of two turns, closed (so its WAL files are gone, as after a clean stop)."""
    store = Store(data_dir)
    try:
        session = store.sessions.create(NAME)
        store.exchanges.add(NewExchange(session.id, "user", "Remind me to water the basil", db.utc_now()))
        store.exchanges.add(NewExchange(session.id, "assistant", "I will remind you.", db.utc_now()))
    finally:
        store.close()


def drop_dac_override() -> None:
    """In the child before it runs `lyra`: root without the power to override file permissions (a real EACCES)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def lyra(tmp_path: Path, data_dir: Path, *args: str,
         preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(data_dir), "LYRA_MODELS_DIR": str(MODELS_DIR),
           "LYRA_DREAM__ENABLED": "false"}
    return subprocess.run([sys.executable, "-m", "lyra_local", *args], env=env, capture_output=True, text=True,
                          timeout=120, preexec_fn=preexec)


def said_cleanly(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    """The command said each of ``needles`` (on stderr), never a traceback, never "another process"."""
    for needle in needles:
        assert needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "another process" not in result.stderr, result.stderr


def test_on_a_full_disk_every_command_says_so_and_reads_and_backups_still_work(tmp_path: Path, disk: Path) -> None:
    data = disk / "data"
    seeded(data)
    filler = fill(disk)
    full = f"the disk holding {data} is full (0 bytes free)"

    listed = lyra(tmp_path, data, "sessions")
    assert listed.returncode == 0, listed.stderr
    assert NAME in listed.stdout
    said_cleanly(listed, full, "nothing stored was lost")

    exported = lyra(tmp_path, data, "export", str(tmp_path / "export"))  # to another disk
    assert exported.returncode == 0, exported.stderr
    said_cleanly(exported, full)
    sessions = [json.loads(line) for line in (tmp_path / "export" / "sessions.jsonl").read_text().splitlines()]
    assert [s["name"] for s in sessions if "name" in s] == [NAME]
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["memory.json", "sessions.jsonl"]
    assert "for a note of the copy being written" in exported.stderr  # no room for it: said, and the copy made

    backed = lyra(tmp_path, data, "backup", str(tmp_path / "backup.db"))  # to another disk
    assert backed.returncode == 0, backed.stderr
    said_cleanly(backed, full)
    copy = sqlite3.connect(tmp_path / "backup.db")
    assert copy.execute("SELECT name FROM sessions").fetchall() == [(NAME,)]
    copy.close()
    assert not (tmp_path / "backup.db.partial").exists() and list((data / OUTGOING_DIR).glob("*")) == []

    forgot = lyra(tmp_path, data, "forget", "--session", "1", "--yes")  # a write: refused, with the cause
    assert forgot.returncode == 2, forgot.stderr
    said_cleanly(forgot, f"error: the disk holding {data}", "is full (0 bytes free)", "free some space")
    onto_full = lyra(tmp_path, data, "backup", str(disk / "backup.db"))  # onto the full disk itself
    assert onto_full.returncode == 2, onto_full.stderr
    said_cleanly(onto_full, "error: ", "is full")

    filler.unlink()  # space again: nothing stored was lost, and the memory writes again
    store = Store(data)
    try:
        assert [s.name for s in store.sessions.list(limit=10)] == [NAME]
        assert store.exchanges.count_in(1) == 2
        store.sessions.create("After the disk was freed")
    finally:
        store.close()


def test_an_export_onto_a_full_disk_says_so_and_leaves_no_half_written_file(tmp_path: Path, disk: Path) -> None:
    data = tmp_path / "data"  # the memory's own disk has room
    seeded(data)
    (disk / "export").mkdir()
    fill(disk)
    exported = lyra(tmp_path, data, "export", str(disk / "export"))
    assert exported.returncode == 2, exported.stderr
    said_cleanly(exported, "error: a disk is full", f"not the one holding {data}", "the destination you gave")
    assert list((disk / "export").iterdir()) == []


def test_a_full_disk_in_a_running_server_is_said_by_the_api_and_a_chat_turn(
        make_settings: Callable[..., Settings], disk: Path) -> None:
    settings = make_settings("", LYRA_DATA_DIR=str(disk / "data"))
    with fake_client(settings) as client:
        session = client.post("/api/sessions", json={"name": NAME}).json()
        hello = {"messages": [{"role": "user", "content": "Hello"}]}
        filler = fill(disk)
        refused = client.post("/api/sessions", json={"name": "Another"})
        assert refused.status_code == 507, refused.text
        error = refused.json()["error"]
        assert error["type"] == "DiskFull"
        assert error["message"].startswith(f"the disk holding {disk / 'data'} is full")
        assert "nothing stored was lost" in error["hint"]

        with client.stream("POST", f"/api/sessions/{session['id']}/chat",
                           json={"message": "Remind me to water the basil"}) as stream:
            events = _events(stream.iter_lines())
        errors = [data for event, data in events if event == "error"]
        assert len(errors) == 1 and "stored" not in [event for event, _ in events], events
        assert f"the disk holding {disk / 'data'} is full" in errors[0]["text"]
        assert "your message was not saved" in errors[0]["text"]
        assert errors[0]["status"] == 507
        assert "try again" not in errors[0]["text"].split("hint")[0]  # the cause, not "(OperationalError)"

        openai = client.post("/v1/chat/completions", json=hello)
        assert openai.status_code == 507, openai.text
        assert openai.json()["error"]["type"] == "DiskFull"
        streamed = client.post("/v1/chat/completions", json={**hello, "stream": True})
        assert streamed.status_code == 507 and streamed.json()["error"]["type"] == "DiskFull"  # before any chunk

        filler.unlink()  # the same connections write again: none was left inside a failed transaction
        again = client.post("/api/sessions", json={"name": "Another"})
        assert again.status_code == 201, again.text
        with client.stream("POST", f"/api/sessions/{session['id']}/chat",
                           json={"message": "Remind me to water the basil"}) as stream:
            assert "stored" in [event for event, _ in _events(stream.iter_lines())]
        fill(disk)  # a server that stops on a full disk (its index snapshot refused) still closes the memory
    lock = DirLock(disk / "data")
    assert lock.try_exclusive(), "the stopped server still holds the memory"
    lock.release()


def _events(lines: Iterator[str]) -> list[tuple[str, dict[str, object]]]:
    events, event = [], "message"
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            events.append((event, json.loads(line[5:].strip())))
    return events


def test_a_read_only_file_system_is_said_as_such(tmp_path: Path, disk: Path) -> None:
    data = disk / "data"
    seeded(data)
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    listed = lyra(tmp_path, data, "sessions")
    assert listed.returncode == 2, listed.stderr
    said_cleanly(listed, "error: ", f"{data}", "is on a read-only file system", "remount it read-write")


def test_a_data_directory_this_user_may_not_write_is_said_as_such(tmp_path: Path, disk: Path) -> None:
    data = disk / "data"
    seeded(data)
    data.chmod(0)
    listed = lyra(tmp_path, data, "sessions", preexec=drop_dac_override)
    assert listed.returncode == 2, listed.stderr
    said_cleanly(listed, f"error: permission denied on {data}", "read and write access")


def test_a_file_where_the_data_directory_should_be_is_said_as_such(tmp_path: Path, disk: Path) -> None:
    (disk / "blocked").write_text("not a folder")
    for data in (disk / "blocked", disk / "blocked" / "data"):
        listed = lyra(tmp_path, data, "sessions")
        assert listed.returncode == 2, listed.stderr
        said_cleanly(listed, f"error: {disk / 'blocked'} is a file where a folder should be", "create the folder")


def test_the_mapping_names_each_cause(tmp_path: Path, disk: Path) -> None:
    """The one mapping, from the OS's and SQLite's own errors, on a real full and a real read-only disk."""
    from lyra_local.oserrors import storage_error

    data = disk / "data"
    data.mkdir()
    filler = fill(disk)
    try:
        (data / "more").write_bytes(b"x" * 8192)  # a write to a descriptor: its error names no file
    except OSError as exc:
        named = storage_error(exc, data)
    assert isinstance(named, DiskFull) and named.status_code == 507
    assert named.message == f"the disk holding {data} is full (0 bytes free)" and named.path == str(data)
    conn = sqlite3.connect(data / "new.db")
    try:
        conn.execute("CREATE TABLE t (x)")
    except sqlite3.Error as exc:
        named = storage_error(exc, data)
    finally:
        conn.close()
    assert isinstance(named, DiskFull), named
    filler.unlink()
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    try:
        (data / "more").write_bytes(b"x")
    except OSError as exc:
        named = storage_error(exc)
    assert isinstance(named, ReadOnlyStorage) and named.status_code == 503
    assert isinstance(storage_error(FileNotFoundError(2, "No such file or directory", str(tmp_path / "gone"))),
                      StorageMissing)
    assert isinstance(storage_error(PermissionError(13, "Permission denied", str(data))), StoragePermission)
    assert storage_error(sqlite3.IntegrityError("UNIQUE constraint failed")) is None  # not a storage cause


def test_a_path_the_person_gave_is_not_blamed_on_the_data_directory(tmp_path: Path) -> None:
    """`lyra world set /no/such.md` said "set data_dir ($LYRA_DATA_DIR) to a folder that exists": a file outside
    the data directory is the person's own path, and the hint says so; one inside still names the setting."""
    from lyra_local.oserrors import storage_error

    data = tmp_path / "data"
    data.mkdir()
    given = storage_error(FileNotFoundError(2, "No such file or directory", str(tmp_path / "no" / "such.md")), data)
    assert isinstance(given, StorageMissing) and given.hint == "check the path you gave", given
    denied = storage_error(PermissionError(13, "Permission denied", "/root/notes.md"), data)
    assert isinstance(denied, StoragePermission) and "data_dir" not in (denied.hint or ""), denied
    inside = storage_error(FileNotFoundError(2, "No such file or directory", str(data / "index" / "x")), data)
    assert isinstance(inside, StorageMissing) and "set data_dir ($LYRA_DATA_DIR)" in (inside.hint or ""), inside
    done = lyra(tmp_path, data, "world", "set", str(tmp_path / "no" / "such.md"))
    assert done.returncode == 2 and "hint: check the path you gave" in done.stderr, done.stderr
    assert "data_dir" not in done.stderr


def test_another_process_is_named_only_when_one_holds_the_memory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    seeded(data)
    store = Store(data)
    try:
        # A write lock held by another connection of this same process: not "another process".
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with store.write():
                held.set()
                release.wait(60)

        holder_thread = threading.Thread(target=hold)
        holder_thread.start()
        try:
            assert held.wait(30)
            with pytest.raises(StoreBusy) as alone:
                impatient_write(store)
        finally:
            release.set()
            holder_thread.join()
        assert "another process" not in str(alone.value) and "no other process" in alone.value.message

        holder = subprocess.Popen(  # a real second process holding the memory and its write lock
            [sys.executable, "-c", "import sys, time; from pathlib import Path; from lyra_local.store import Store; "
             "s = Store(Path(sys.argv[1])); s.conn().execute('BEGIN IMMEDIATE'); print('holding', flush=True); "
             "time.sleep(120)", str(data)], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
            with pytest.raises(StoreBusy) as other:
                impatient_write(store)
        finally:
            holder.kill()
            holder.wait()
            holder.stdout.close()
        assert f"another process holds the memory: pid {holder.pid}" in other.value.message
    finally:
        store.close()


def impatient_write(store: Store) -> None:
    """A write on this thread's connection that waits 20 ms (not 10 s) for each try at the lock."""
    store.conn().execute("PRAGMA busy_timeout = 20")
    try:
        with store.write() as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('probe', 'x')")
    finally:
        store.conn().execute(f"PRAGMA busy_timeout = {db.BUSY_TIMEOUT_MS}")


@pytest.mark.models
def test_the_page_keeps_a_message_a_full_disk_refused_and_retry_sends_it(tmp_path: Path,
                                                                         browser: Browser) -> None:
    """In Chromium against a real `lyra serve`: the person reads that the disk is full, and nothing typed is lost."""
    with tmpfs(tmp_path / "disk", size="16m") as mounted:
        env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(mounted / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR)}
        with serve_lyra(tmp_path, env, CONFIG) as served, opened(browser, served.url, settled=True) as page:
            filler = fill(mounted)
            send(page, "Remind me to water the basil")
            unsent = page.locator(".message.user.unsent")
            expect(unsent).to_have_count(1)
            expect(unsent).to_contain_text(f"the disk holding {mounted / 'data'} is full")
            expect(page.locator("#composer-input")).to_have_value("Remind me to water the basil")
            shot(page, "not-sent-disk-full")
            filler.unlink()
            page.get_by_role("button", name="Retry sending this message").click()
            expect(page.locator(".message.assistant .why-wrap")).to_have_count(1, timeout=120_000)
            expect(page.locator(".message.user.unsent")).to_have_count(0)
            expect(page.locator(".message.user .bubble")).to_have_text(["Remind me to water the basil"])
            filler = fill(mounted)  # and a turn in a conversation that exists: the streamed turn's error
            send(page, "And the tomatoes on Sunday")
            expect(unsent).to_have_count(1)
            expect(unsent).to_contain_text(f"the disk holding {mounted / 'data'} is full")
            expect(unsent).to_contain_text("your message was not saved")
            expect(page.locator("#composer-input")).to_have_value("And the tomatoes on Sunday")
            filler.unlink()


def test_an_index_snapshot_that_a_full_disk_cuts_short_is_refused_and_the_old_one_kept(tmp_path: Path,
                                                                                      disk: Path) -> None:
    """``faiss.write_index(index, path)`` only prints a failed close: on a full disk the save went on and renamed
    a truncated snapshot into place with its sha256. Now the write goes through Python's file and raises."""
    from lyra_local.memory import Memory

    from .fakes import FakeEmbedder
    from .test_vectors import fill as remember

    data = disk / "data"
    memory = Memory(Store(data), FakeEmbedder())
    try:
        remember(memory, 20)
        index = memory.store.index("exchange", "fake-embed")
        index.save()
        saved = index.path.read_bytes()
        remember(memory, 400, "more")
        filler = fill(disk)
        with pytest.raises(DiskFull, match="is full"):
            index.save()
        assert index.path.read_bytes() == saved, "the snapshot on disk was replaced by a cut-short one"
        assert not list(index.path.parent.glob("*.tmp")), "a half-written snapshot was left behind"
        filler.unlink()
        index.save()
        assert index.path.read_bytes() != saved
    finally:
        memory.store.close()


def test_a_models_folder_this_user_may_not_read_is_said_as_such(tmp_path: Path) -> None:
    """pathlib's glob took an unreadable models_dir for an empty one ("a GGUF put there appears here")."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "my-companion.Q4_1.gguf").write_bytes(b"GGUF")
    models.chmod(0)
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(models)}
    try:
        listed = subprocess.run([sys.executable, "-c", "from pathlib import Path\n"
                                 "from lyra_local.modelfiles.on_disk import model_files\n"
                                 f"model_files(Path({str(models)!r}))"],
                                env=env, capture_output=True, text=True, timeout=60, preexec_fn=drop_dac_override)
    finally:
        models.chmod(0o755)
    assert f"StoragePermission: permission denied on {models}" in listed.stderr, listed.stderr
    assert "set models_dir ($LYRA_MODELS_DIR)" in listed.stderr and "data_dir" not in listed.stderr


def test_a_memory_opened_on_a_full_disk_refuses_a_second_thread_at_once(tmp_path: Path, disk: Path) -> None:
    """Opened so, the memory's one connection holds SQLite's exclusive lock: a second thread's connection
    waited on it for minutes (32 tries of 10 s) and then blamed another connection. It is refused at once."""
    import time

    data = disk / "data"
    seeded(data)
    filler = fill(disk)
    store = Store(data)
    try:
        assert [s.name for s in store.sessions.list()] == [NAME]  # this thread reads
        outcome: list[BaseException | None] = []

        def other_thread() -> None:
            try:
                store.sessions.list()
                outcome.append(None)
            except BaseException as exc:  # noqa: BLE001 - the test reports what the thread met
                outcome.append(exc)

        began = time.monotonic()
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(60)
        assert time.monotonic() - began < 5, "the second thread waited on the first one's lock"
        assert len(outcome) == 1 and isinstance(outcome[0], DiskFull), outcome
        assert f"the disk holding {data} is full" in outcome[0].message
    finally:
        store.close()
        filler.unlink()
