"""Which rows of every kind hold a text, read the way forgetting by text reads it (``store/forget/folding.py``).

The kinds and their word columns come from the registry (``store/kinds.py``),
so a kind added there is searched here with no change. The scan folds every
row (a full table scan): forgetting by text is rare and must not miss a
spelling that a full-text index would tokenize away.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from ..kinds import KINDS, Kind
from .folding import fold


def holds(kind: Kind, alias: str = "t") -> str:
    """SQL true when a row's words hold the folded needle bound as ``:needle``."""
    function = "lyra_fold_json" if kind.json_words else "lyra_fold"
    return "(" + " OR ".join(f"instr({function}({alias}.{column}), :needle) > 0" for column in kind.words) + ")"


needle = fold  # what a row's folded words are searched for


def rows_holding(conn: sqlite3.Connection, kind: Kind, text: str) -> list[Any]:
    """The keys of ``kind``'s rows whose words hold ``text``."""
    rows = conn.execute(f"SELECT t.{kind.key} FROM {kind.table} t WHERE {holds(kind)}", {"needle": needle(text)})
    return [r[0] for r in rows]


def derived_holding(conn: sqlite3.Connection, text: str) -> dict[str, list[int]]:
    """Memories built by the dream or written by the person (not turns) whose own words hold ``text``."""
    out: dict[str, list[int]] = {}
    for kind in derived_kinds():
        ids = [int(i) for i in rows_holding(conn, kind, text)]
        if ids:
            out[kind.name] = ids
    return out


def derived_kinds() -> Iterable[Kind]:
    """Nodes that hold words and are not turns: forgetting by text forgets a matching one with what is built on it."""
    return (k for k in KINDS.values() if k.node and k.words and k.on_text == "forget" and k.name != "exchange")


def _blanked() -> Iterable[Kind]:
    return (k for k in KINDS.values() if k.on_text == "blank")


def logs_holding(conn: sqlite3.Connection, text: str) -> int:
    """How many rows of the logs that hold words (task notes, locks, failed passes) hold ``text``."""
    return sum(int(conn.execute(f"SELECT count(*) FROM {kind.table} t WHERE {holds(kind)}",
                                {"needle": needle(text)}).fetchone()[0]) for kind in _blanked())


def blank_holding(conn: sqlite3.Connection, text: str, replacement: str) -> int:
    """Inside a write transaction: in the logs that hold words (task notes, locks, failed passes), every word
    column that holds ``text`` says ``replacement`` instead; how many rows changed."""
    return sum(conn.execute(f"UPDATE {kind.table} SET {column} = :replacement WHERE instr(lyra_fold({column}), "
                            ":needle) > 0", {"needle": needle(text), "replacement": replacement}).rowcount
               for kind in _blanked() for column in kind.words)
