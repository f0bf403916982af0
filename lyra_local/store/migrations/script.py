"""What every migration is, and how one runs a block of SQL inside the migration's own transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def script(conn: sqlite3.Connection, sql: str) -> None:
    """Run ``sql``'s statements in order: executescript() would COMMIT the migration's transaction."""
    for statement in _split(sql):
        conn.execute(statement)


def _split(sql: str) -> list[str]:
    statements, current = [], ""
    for line in sql.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    assert not current.strip(), f"incomplete SQL: {current}"
    return statements
