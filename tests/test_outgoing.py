"""Copies written outside the data directory leave nothing behind when their writer is killed (store/files/outgoing.py).

A backup, an export, a household backup and `lyra world edit` write a person's words outside the data directory
under a temporary name first. Killed before the rename, the temporary file would stay for good, out of reach of
every later forget; so a note in the data directory names it, and the next open removes it and says so.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from pathlib import Path

import pytest

from lyra_local.memory import Memory
from lyra_local.store import Store
from lyra_local.store.files.outgoing import writing_outside
from lyra_local.store.files.registry import OUTGOING_DIR, sweep_leftovers

from .fakes import FakeEmbedder
from .test_files_registry import explained, killed_at, lyra_process, next_open

SECRET = "marmalade-okapi"
SAID = "removed the half-written copies"


def memory_with_secret(data: Path) -> None:
    store = Store(data)
    try:
        session = store.sessions.create("the secret")
        Memory(store, FakeEmbedder()).remember(session.id, "user", f"the {SECRET} is my secret")
        store.coord.write_world(f"# The world\n\nThe {SECRET} lives here.\n", "user")
    finally:
        store.close()


def holding(folder: Path, word: str) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and word.encode() in p.read_bytes())


@pytest.fixture()
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "lyra.toml").write_text("")
    memory_with_secret(tmp_path / "data")
    (tmp_path / "out").mkdir()
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize(("point", "args", "left"), [
    ("backup-written", ["backup", "OUT/b.db"], ["b.db.partial"]),
    ("backup-written", ["backup", "--household", "OUT"], None),
    ("export-written", ["export", "OUT"], [".memory.json.partial", ".sessions.jsonl.partial"]),
], ids=["backup", "household-backup", "export"])
def test_a_copy_killed_before_its_rename_is_removed_by_the_next_open(
        tmp: Path, point: str, args: list[str], left: list[str] | None) -> None:
    out = tmp / "out"
    killed_at(point, tmp, *[a.replace("OUT", str(out)) for a in args])
    partials = sorted(p.name for p in out.iterdir())
    assert partials == left if left is not None else len(partials) == 1 and partials[0].endswith(".tar.partial")
    assert holding(out, SECRET) != []  # the person's words, outside the data directory
    assert len(list((tmp / "data" / OUTGOING_DIR).iterdir())) == 1  # and the note that names them

    said = next_open(tmp)
    assert SAID in said and str(out / partials[0]) in said, said
    assert list(out.iterdir()) == [] and list((tmp / "data" / OUTGOING_DIR).iterdir()) == []
    explained(tmp / "data")


@pytest.mark.slow
def test_lyra_world_edit_killed_in_its_editor_leaves_no_draft_after_the_next_open(tmp: Path) -> None:
    drafts = tmp / "tmpdir"
    drafts.mkdir()
    editor = f"{sys.executable} -c " + shlex.quote("import os, signal; os.kill(os.getppid(), signal.SIGKILL)")
    proc = lyra_process(tmp, "world", "edit", EDITOR=editor, VISUAL="", TMPDIR=str(drafts))
    proc.communicate(timeout=120)
    assert proc.returncode == -9
    assert holding(drafts, SECRET) != []

    assert SAID in next_open(tmp)
    assert list(drafts.iterdir()) == []
    explained(tmp / "data")


@pytest.mark.slow
def test_lyra_world_edit_saves_what_the_editor_wrote_and_leaves_nothing(tmp: Path) -> None:
    drafts = tmp / "tmpdir"
    drafts.mkdir()
    append = "import sys; open(sys.argv[1], 'a').write('The cat is called Biscuit.\\n')"
    proc = lyra_process(tmp, "world", "edit", EDITOR=f"{sys.executable} -c {shlex.quote(append)}", VISUAL="",
                TMPDIR=str(drafts))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    store = Store(tmp / "data")
    try:
        world = store.coord.world()
        assert world is not None and "Biscuit" in world.content and SECRET in world.content
    finally:
        store.close()
    assert list(drafts.iterdir()) == [] and list((tmp / "data" / OUTGOING_DIR).iterdir()) == []


def dead_note(data: Path, named: object) -> Path:
    """A note as a killed writer leaves it: no flock held on it."""
    (data / OUTGOING_DIR).mkdir(exist_ok=True)
    note = data / OUTGOING_DIR / "0123456789abcdef0123456789abcdef.json"
    note.write_text(json.dumps(named))
    return note


def test_a_note_removes_only_half_written_copies_of_ours(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data, out = tmp_path / "data", tmp_path / "out"
    Store(data).close()
    out.mkdir()
    partial, finished, elsewhere = out / "b.db.partial", out / "b.db", out / "notes.txt"
    for path in (partial, finished, elsewhere):
        path.write_text(SECRET)
    (out / "link.partial").symlink_to(finished)
    draft = out / ("lyra-world-" + "ab" * 16 + ".md")
    draft.write_text(SECRET)
    note = dead_note(data, [str(partial), str(finished), str(elsewhere), str(out / "link.partial"), str(draft),
                            "relative.partial", str(data / "lyra.db"), 7])
    with caplog.at_level(logging.WARNING):
        swept = sweep_leftovers(data)
    assert note in swept and not note.exists()
    assert sorted(p.name for p in out.iterdir()) == ["b.db", "link.partial", "notes.txt"]
    assert finished.read_text() == SECRET and (data / "lyra.db").is_file()
    assert str(partial) in caplog.text and str(draft) in caplog.text


def test_a_note_that_cannot_be_read_goes_alone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    Store(data).close()
    note = dead_note(data, None)
    note.write_bytes(b"\xff{not json")
    assert sweep_leftovers(data) == [note]


@pytest.mark.parametrize("lock", ["writer holds the memory open", "writer holds no lock"])
def test_a_live_writers_note_and_copy_are_left_alone(tmp_path: Path, lock: str) -> None:
    """Also when the recovery step finds the data directory free: the household backup writes its note before it
    opens anyone's memory, and opening the owner's then runs the recovery step in the writer's own process."""
    data, out = tmp_path / "data", tmp_path / "out"
    Store(data).close()
    store = Store(data) if lock == "writer holds the memory open" else None
    out.mkdir()
    partial = out / "b.db.partial"
    try:
        with writing_outside(data, partial):
            partial.write_text(SECRET)
            Store(data).close()  # an open runs the recovery step while this writer lives
            assert sweep_leftovers(data) == [] and partial.exists()
            assert len(list((data / OUTGOING_DIR).iterdir())) == 1
            partial.unlink()
        assert list((data / OUTGOING_DIR).iterdir()) == []  # the note goes with its writer
    finally:
        if store is not None:
            store.close()


def test_a_name_the_sweep_would_not_remove_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a temporary name of ours"), \
            writing_outside(tmp_path, tmp_path / "b.db"):
        pass
    assert os.listdir(tmp_path) == []  # refused before any note was written
