"""The registry of memory kinds describes every table and column the schema has.

A table that holds a person's words, added without saying how it is
forgotten and exported, is a promise nobody checks: this test reads a fresh
database's schema (``sqlite_master``, ``pragma table_info``) and fails on any
table or column the registry (``store/kinds.py``) does not describe.
"""

from __future__ import annotations

import sqlite3

from lyra_local.store import Store
from lyra_local.store.kinds import BOOKKEEPING, FTS_TABLES, KINDS, NODES, ORDER, Kind

FTS_SHADOWS = ("_data", "_idx", "_config", "_docsize", "_content")


def schema(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Every table of the database (SQLite's own aside) with its columns."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                         "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    return {t: [r[1] for r in conn.execute(f"PRAGMA table_info('{t}')")] for t in tables}


def undescribed(conn: sqlite3.Connection) -> list[str]:
    """What the schema has that the registry does not describe, or describes wrongly."""
    kinds_by_table = {k.table: k for k in KINDS.values()}
    shadows = {f"{fts}{suffix}" for fts in FTS_TABLES for suffix in FTS_SHADOWS}
    problems = []
    for table, columns in schema(conn).items():
        if table in FTS_TABLES or table in shadows:
            continue
        described = kinds_by_table.get(table) or BOOKKEEPING.get(table)
        if described is None:
            problems.append(f"table {table} is in no kind and is not bookkeeping")
            continue
        declared = described.columns
        for column in columns:
            if column not in declared:
                problems.append(f"column {table}.{column} is not described")
        for column in declared:
            if column not in columns:
                problems.append(f"column {table}.{column} is described but not in the schema")
    described_tables = set(kinds_by_table) | set(BOOKKEEPING)
    for table in sorted(described_tables - set(schema(conn))):
        problems.append(f"table {table} is described but not in the schema")
    return problems


def test_every_table_and_column_of_the_schema_is_in_the_registry(store: Store) -> None:
    assert undescribed(store.conn()) == []


def test_a_new_table_or_column_that_holds_words_is_caught(store: Store) -> None:
    conn = store.conn()
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("ALTER TABLE gists ADD COLUMN title TEXT")
    assert undescribed(conn) == ["column gists.title is not described",
                                 "table notes is in no kind and is not bookkeeping"]


def test_every_kind_says_how_it_is_forgotten_and_exported() -> None:
    for kind in KINDS.values():
        assert set(kind.words).isdisjoint(kind.plain), kind.name
        assert (kind.export is None) != (not kind.private), f"{kind.name}: export it, or say why not"
        if kind.node:
            assert kind.remove is not None, kind.name
            assert set(kind.built_from) <= set(NODES), kind.name
        else:
            assert kind.remove is None and not kind.built_from, kind.name
        if kind.words:
            assert kind.on_text != "none", f"{kind.name} holds words: forgetting by text must reach them"
        assert kind.same_ids_as is None or KINDS[kind.same_ids_as].node, kind.name


def test_every_column_of_an_exported_kind_is_written_translated_or_local_by_choice() -> None:
    for kind in KINDS.values():
        if kind.export is None:
            continue
        spec = kind.export
        parts = [set(spec.columns), set(spec.portable), set(spec.local)]
        assert sum(len(p) for p in parts) == len(set().union(*parts)), f"{kind.name}: a column in two places"
        assert set().union(*parts) == set(kind.columns), f"{kind.name}: {set(kind.columns) - set().union(*parts)}"
        assert set(kind.words) <= set(spec.columns), f"{kind.name}: its words must go into an export"


def test_the_deletion_order_puts_every_memory_before_what_it_was_built_from() -> None:
    assert sorted(ORDER) == sorted(NODES)
    for kind in (k for k in KINDS.values() if k.node):
        for source in kind.built_from:
            if source != kind.name:
                assert ORDER.index(kind.name) < ORDER.index(source), (kind.name, source)


def test_every_vector_tier_and_full_text_table_belongs_to_one_kind() -> None:
    tiers = [k.vector_tier for k in KINDS.values() if k.vector_tier]
    assert len(tiers) == len(set(tiers)) == 3
    assert len(FTS_TABLES) == len(set(FTS_TABLES))
    words: list[Kind] = [k for k in KINDS.values() if k.fts]
    assert all(k.words for k in words)


def test_search_tiers_and_the_pages_list_of_kinds_come_from_the_registry(make_settings) -> None:
    from typing import get_args

    from lyra_local.memory.search import SearchTier

    from .conftest import fake_client

    assert set(get_args(SearchTier)) == {k.name for k in KINDS.values() if k.searchable}
    with fake_client(make_settings()) as client:
        listed = client.get("/api/kinds").json()["kinds"]
    assert {k["name"]: k["label"] for k in listed}["gist"] == KINDS["gist"].label[0]
    assert [k["name"] for k in listed if k["searchable"]] == [k.name for k in KINDS.values() if k.searchable]
