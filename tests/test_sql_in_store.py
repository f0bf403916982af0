"""The store alone speaks SQL: ``scripts/check_sql_in_store.py`` (run by ``make lint``) passes on the tree and
fails, naming the file and line, on a package with a SQL call outside its ``store/``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import REPO, run_script

CHECKER = REPO / "scripts" / "check_sql_in_store.py"


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return run_script(CHECKER, *args)


def test_the_tree_speaks_sql_only_in_the_store() -> None:
    result = check()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no SQL outside lyra_local/store/" in result.stdout


def test_a_sql_call_outside_the_store_fails_naming_it(tmp_path: Path) -> None:
    package = tmp_path / "lyra_local"
    (package / "store").mkdir(parents=True)
    (package / "mind").mkdir()
    (package / "store" / "rows.py").write_text('def rows(conn):\n    return conn.execute("SELECT 1")\n')
    (package / "mind" / "quiet.py").write_text('HINT = "conn.execute(sql)"  # execute( in words is no call\n')
    (package / "mind" / "reads.py").write_text(
        "def count(store):\n"
        "    conn = store.conn()\n"
        '    conn.executemany("UPDATE t SET x = ?", [(1,)])\n'
        '    return conn.execute("SELECT count(*) FROM gists").fetchone()[0]\n')
    (package / "coord.py").write_text('def setup(conn):\n    conn.executescript("CREATE TABLE t (x)")\n')
    result = check(str(package))
    assert result.returncode == 1
    named = [line.split(": ")[0] for line in result.stdout.splitlines()]
    assert named == ["lyra_local/coord.py:2", "lyra_local/mind/reads.py:3", "lyra_local/mind/reads.py:4"]


def test_a_package_with_sql_only_in_its_store_passes(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "store").mkdir(parents=True)
    (package / "store" / "rows.py").write_text('def rows(conn):\n    return conn.execute("SELECT 1")\n')
    (package / "app.py").write_text("def rows(store):\n    return store.rows()\n")
    assert check(str(package)).returncode == 0
