"""Fuzzing the import parsers: whatever bytes a ChatGPT export (zip or JSON), Lyra JSON Lines or a
Lyra export zip holds, the import answers with a report or a ``LyraError``, within seconds, and writes nothing
outside its data directory.

``tests/test_hostile_imports.py`` mutates the conversations' *shape* and checks what is stored; this file
mutates the files themselves (bytes, zip members, JSON values, the memory file) and checks only that nothing
escapes: the same property ``scripts/fuzz_imports.py`` runs for minutes.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from lyra_local.store import Store
from lyra_local.store.kinds import KINDS, MEMORY_FILE
from lyra_local.transfer.importer import import_source
from lyra_local.transfer.memory_file import has_derived_memory
from lyra_local.transfer.memory_schema import SCHEMA
from lyra_local.transfer.records import ImportFormatError
from lyra_local.transfer.sources import open_source

from .fakes import FakeEmbedder
from .import_mutations import IMPORT_SEEDS, check_import, mutated_import, seeds

CORPUS = seeds()


@pytest.mark.parametrize("name", IMPORT_SEEDS)
def test_each_seed_imports_whole(name: str) -> None:
    """The corpus is valid: what the fuzz mutates is a file that imports."""
    assert check_import(name, CORPUS[name], "auto").startswith("imported")
    assert "0 problem(s)" in check_import(name, CORPUS[name], "auto")


@settings(max_examples=200, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=mutated_import(CORPUS))
def test_a_mutated_import_file_gives_a_report_or_a_lyra_error(case: tuple[str, bytes, str]) -> None:
    check_import(*case)


# What the fuzz found, each as a test of its own (they failed before the fix with the error in the comment).

def _export_zip(path: Path, memory: dict[str, Any] | None = None, sessions: str | None = None,
                method: int = zipfile.ZIP_DEFLATED) -> Path:
    """The corpus' Lyra export zip, its memory.json or sessions.jsonl replaced."""
    with zipfile.ZipFile(io.BytesIO(CORPUS["lyra-export.zip"])) as seed:
        members = {name: seed.read(name) for name in seed.namelist()}
    if memory is not None:
        members["memory.json"] = json.dumps(memory).encode()
    if sessions is not None:
        members["sessions.jsonl"] = sessions.encode()
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return path


def _patched(data: bytes, member: str, field: int, value: int) -> bytes:
    """``data`` with one byte of ``member``'s central directory entry set (8: flags, 10: compression method)."""
    at = data.find(b"PK\x01\x02")
    while data[at + 46:at + 46 + int.from_bytes(data[at + 28:at + 30], "little")] != member.encode():
        at = data.find(b"PK\x01\x02", at + 4)
    out = bytearray(data)
    out[at + field] = value
    return bytes(out)


def _memory() -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(CORPUS["lyra-export.zip"])) as seed:
        return dict(json.loads(seed.read("memory.json")))


@pytest.mark.parametrize(("section", "key", "value", "says"), [
    ("digests", "basis", None, "digests[0].basis must be a text"),  # IntegrityError: NOT NULL digests.basis
    ("digests", "source_count", 1 << 70, "digests[0].source_count must be a whole number"),  # OverflowError
    ("profile", "superseded_by", 7, "profile[0].superseded_by names no fact"),  # IndexError
    ("gists", "content", ["a"], "gists[0].content must be a text"),  # AttributeError in the embedder, or stored
    ("gists", "created_at", "yesterday", "gists[0].created_at 'yesterday' is not a time"),  # stored as it was
    ("digests", "granularity", "year", "digests[0].granularity must be one of day, week, month"),  # CHECK
])
def test_a_memory_file_with_a_value_the_exporter_never_writes_is_refused_naming_it(
        tmp_path: Path, store: Store, section: str, key: str, value: Any, says: str) -> None:
    memory = _memory()
    memory[section][0][key] = value
    with pytest.raises(ImportFormatError, match=re.escape(says)):
        import_source(store, FakeEmbedder(), open_source(_export_zip(tmp_path / "export.zip", memory)))
    assert not has_derived_memory(store)  # nothing of it restored; the conversations are imported


def test_two_gists_of_one_conversation_are_refused_not_a_constraint_error(tmp_path: Path, store: Store) -> None:
    memory = _memory()
    memory["gists"].append(dict(memory["gists"][0]))  # IntegrityError: UNIQUE gists.session_id
    with pytest.raises(ImportFormatError, match="two gists sum up the same conversation"):
        import_source(store, FakeEmbedder(), open_source(_export_zip(tmp_path / "export.zip", memory)))


def test_restored_times_are_the_stores_utc_text(tmp_path: Path, store: Store) -> None:
    memory = _memory()
    memory["gists"][0]["created_at"] = "2024-03-04T10:00:00+02:00"
    import_source(store, FakeEmbedder(), open_source(_export_zip(tmp_path / "export.zip", memory)))
    assert "2024-03-04T08:00:00.000000+00:00" in {g.created_at for g in store.derived.gists()}


def test_the_memory_schema_names_every_key_the_registry_exports() -> None:
    for kind in KINDS.values():
        spec = kind.export
        if spec is not None and spec.file == MEMORY_FILE:
            rows, keys = SCHEMA[spec.section]
            assert rows == spec.rows and set(keys) == {*spec.columns, *spec.portable.values()}, spec.section


@pytest.mark.parametrize("member", ["sessions.jsonl", "memory.json"])
def test_an_encrypted_member_is_refused_before_it_is_read(tmp_path: Path, store: Store, member: str) -> None:
    data = _export_zip(tmp_path / "export.zip", method=zipfile.ZIP_STORED).read_bytes()
    import_source(store, FakeEmbedder(), open_source(tmp_path / "export.zip"))  # stored: read as deflated ones
    assert store.sessions.count() == 2
    encrypted = tmp_path / "encrypted.zip"
    encrypted.write_bytes(_patched(data, member, 8, 0x01))  # RuntimeError: password required for extraction
    other = Store(tmp_path / "other")
    try:
        with pytest.raises(ImportFormatError, match=f"{member} in .* is encrypted; nothing was imported"):
            import_source(other, FakeEmbedder(), open_source(encrypted))
        assert other.sessions.count() == 0
    finally:
        other.close()


def test_a_member_of_an_unknown_compression_or_a_broken_stream_is_refused(tmp_path: Path, store: Store) -> None:
    data = CORPUS["chatgpt-export.zip"]
    unknown = tmp_path / "unknown.zip"
    unknown.write_bytes(_patched(data, "conversations.json", 10, 99))  # NotImplementedError: not supported
    with pytest.raises(ImportFormatError, match="compressed with method 99"):
        import_source(store, FakeEmbedder(), open_source(unknown))
    broken = bytearray(data)
    start = broken.find(b"conversations.json") + len("conversations.json")
    broken[start + 20:start + 60] = bytes(40)  # zlib.error: invalid stored block lengths, or a bad CRC
    (tmp_path / "broken.zip").write_bytes(broken)
    with pytest.raises(ImportFormatError, match="damaged"):
        import_source(store, FakeEmbedder(), open_source(tmp_path / "broken.zip"))
    assert store.sessions.count() == 0


def test_a_set_aside_seq_past_sqlite_integers_is_a_named_problem(tmp_path: Path, store: Store) -> None:
    line = json.loads(CORPUS["sessions.jsonl"].decode().splitlines()[0])
    line["asides"][0]["set_aside_seq"] = 1 << 64  # OverflowError: Python int too large for SQLite INTEGER
    path = tmp_path / "sessions.jsonl"
    path.write_text(json.dumps(line) + "\n")
    report, _ = import_source(store, FakeEmbedder(), open_source(path))
    assert [p.what for p in report.problems] == ["aside 1 needs a source_id and a whole set_aside_seq (of at most "
                                                 "63 bits)"]
