"""``lyra recall --since/--until`` compare in UTC, whatever form the time was typed in.

Stored times are UTC text (``2024-03-01T09:00:00.000000+00:00``) compared as
text; the command passed what was typed through unchanged, so an offset time,
or a turn's own time written with ``Z``, missed the turn (or kept one it should
have left out). The command runs in-process on a temporary config, with the
real embedding model (the CLI builds its models from the config).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from lyra_local.cli import main
from lyra_local.store import Store
from lyra_local.store.db import to_iso
from lyra_local.store.exchanges import NewExchange

from .conftest import MODELS_DIR

TURNS = {"2024-02-20T09:00:00+00:00": "the wombat burrow in February",
         "2024-03-01T09:00:00+00:00": "the wombat burrow in March"}


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "data"
    monkeypatch.setenv("LYRA_DATA_DIR", str(data))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(MODELS_DIR))
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    store = Store(data)
    session = store.sessions.create("burrows", created_at=to_iso(datetime.fromisoformat(min(TURNS))))
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(session.id, "user", text, to_iso(datetime.fromisoformat(at)))
                                      for at, text in TURNS.items()], None, None)
    store.close()
    path = tmp_path / "lyra.toml"
    path.write_text("")
    return path


def recalled(config: Path, capsys: pytest.CaptureFixture[str], *bounds: str) -> list[str]:
    assert main(["--config", str(config), "recall", "wombat burrow", "--mode", "bm25", "--json", *bounds]) == 0
    return sorted(hit["content"] for hit in json.loads(capsys.readouterr().out))


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.parametrize(("bounds", "found"), [
    (["--since", "2024-03-01T10:00+02:00"], ["the wombat burrow in March"]),  # 08:00 UTC: the March turn is after
    (["--since", "2024-03-01T09:00:00Z"], ["the wombat burrow in March"]),  # the turn's own time, written with Z
    (["--since", "20240301T090000Z"], ["the wombat burrow in March"]),  # compact
    (["--since", "2024-03-01T09:00:00.000001Z"], []),  # just after it
    (["--until", "2024-03-01T10:30+02:00"], ["the wombat burrow in February"]),  # 08:30 UTC: March is after
    (["--until", "2024-03-01T09:00:00.000001Z"], ["the wombat burrow in February", "the wombat burrow in March"]),
    (["--since", "2024-02-20", "--until", "2024-03-01"], ["the wombat burrow in February"]),  # dates alone
])
def test_recall_bounds_compare_in_utc(config: Path, capsys: pytest.CaptureFixture[str], bounds: list[str],
                                      found: list[str]) -> None:
    assert recalled(config, capsys, *bounds) == found


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_a_bound_that_is_not_a_time_is_refused_naming_the_option(
        config: Path, capsys: pytest.CaptureFixture[str], option: str) -> None:
    assert main(["--config", str(config), "recall", "wombat", option, "last tuesday"]) == 2
    err = capsys.readouterr().err
    assert f"{option} 'last tuesday' is not a time" in err and "hint: write it as YYYY-MM-DD" in err
    assert "Traceback" not in err
