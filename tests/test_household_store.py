"""The household database (store/household.py) and passwords (passwords.py), on a real SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lyra_local.errors import BadRequest, Conflict, NotFound
from lyra_local.passwords import check_secret, hash_secret, verify_secret
from lyra_local.store.household import FILENAME, TOKEN_PREFIX, Household
from lyra_local.store.household.schema import TABLES


def test_every_table_of_a_fresh_household_db_is_described(tmp_path: Path) -> None:
    Household(tmp_path).close()
    conn = sqlite3.connect(tmp_path / FILENAME)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if not r[0].startswith(("sqlite_", "_"))}
    conn.close()
    assert tables == {t.name for t in TABLES}


def test_the_first_person_is_the_owner_and_keeps_the_data_directory(tmp_path: Path) -> None:
    household = Household(tmp_path)
    owner = household.ensure_first("Maya")
    assert household.ensure_first("Someone else") == owner  # created once
    with pytest.raises(Conflict):  # with two people everyone logs in: the owner needs a password first
        household.add("Sam", "child", hash_secret("1234"))
    household.logins.set_secret(owner.id, hash_secret("owner-pass-1"))
    owner = household.person(owner.id)
    assert owner.owner and owner.home == "" and household.person_dir(owner) == tmp_path
    sam = household.add("Sam", "child", hash_secret("1234"))
    assert household.person_dir(sam) == tmp_path / "people" / sam.id
    assert [p.name for p in household.people()] == ["Maya", "Sam"]
    assert household.by_name("  SAM ") == sam  # names compare as a person reads them
    with pytest.raises(Conflict):
        household.add("sam", "adult", hash_secret("another-pass"))
    with pytest.raises(Conflict):
        household.begin_removal(owner.id)
    household.close()


def test_sessions_and_tokens_keep_only_hashes_and_end(tmp_path: Path) -> None:
    household = Household(tmp_path)
    household.logins.set_secret(household.ensure_first("Maya").id, hash_secret("owner-pass-1"))
    sam = household.add("Sam", "adult", hash_secret("sam-pass-1"))
    raw = household.logins.open(sam.id)
    token, secret = household.tokens.create(sam.id, "mcp")
    assert secret.startswith(TOKEN_PREFIX)
    assert household.logins.person_of(raw) == sam and household.tokens.person_of(secret) == sam
    household.close()
    data = b"".join(p.read_bytes() for p in tmp_path.glob(FILENAME + "*"))
    assert raw.encode() not in data and secret.encode() not in data  # a copy of the file logs nobody in

    household = Household(tmp_path)
    assert household.logins.end_all(sam.id) == 1
    assert household.logins.person_of(raw) is None
    household.tokens.revoke(sam.id, token.id)
    assert household.tokens.person_of(secret) is None
    with pytest.raises(NotFound):
        household.tokens.revoke(sam.id, token.id)
    household.close()


def test_a_removal_takes_the_persons_rows_and_what_they_shared(tmp_path: Path) -> None:
    household = Household(tmp_path)
    owner = household.ensure_first("Maya")
    household.logins.set_secret(owner.id, hash_secret("owner-pass-1"))
    sam = household.add("Sam", "adult", hash_secret("sam-pass-1"))
    household.shared.write("bins go out on Tuesday", owner)
    household.shared.write("Sam-shared-zebra-marker", sam)
    raw = household.logins.open(sam.id)
    household.begin_removal(sam.id)
    assert household.logins.person_of(raw) is None and household.by_name("Sam") is None
    assert [p.id for p in household.people(removing=True)] == [sam.id]
    household.finish_removal(sam.id)
    shared = household.shared.current()
    assert shared is not None and shared.content == "bins go out on Tuesday"
    household.close()
    data = b"".join(p.read_bytes() for p in tmp_path.glob(FILENAME + "*"))
    assert b"zebra-marker" not in data


def test_passwords_are_scrypt_and_pins_are_for_children() -> None:
    stored = hash_secret("correct horse battery")
    assert stored.startswith("scrypt$") and "correct" not in stored
    assert verify_secret("correct horse battery", stored)
    assert not verify_secret("correct horse batterz", stored)
    assert not verify_secret("anything", None) and not verify_secret("x", "garbage")
    check_secret("child", "4821")
    check_secret("adult", "long enough")
    for kind, secret in (("adult", "1234"), ("adult", "short"), ("child", "123"), ("child", "123456789")):
        with pytest.raises(BadRequest):
            check_secret(kind, secret)  # type: ignore[arg-type]
