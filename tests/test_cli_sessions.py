"""``lyra sessions``: every conversation, newest activity first, with its turns; store only, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lyra_local.cli import main
from lyra_local.store import Store
from lyra_local.store.exchanges import NewExchange


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data directory with three conversations, and no model files anywhere (none is needed)."""
    data = tmp_path / "data"
    monkeypatch.setenv("LYRA_DATA_DIR", str(data))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(tmp_path / "no-models"))
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    store = Store(data)
    evening = store.sessions.create("Evening chat", created_at="2024-03-04T09:00:00+00:00")
    secret = store.sessions.create("Terminal", created_at="2024-03-05T20:00:00+00:00", remember=False)
    store.sessions.create("imported\nwith a line break", created_at="2023-01-02T03:04:05+00:00", source="chatgpt")
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(evening.id, "user", "Hello", "2024-03-04T09:00:00+00:00"),
                                      NewExchange(evening.id, "assistant", "Hi!", "2024-03-04T09:01:00+00:00"),
                                      NewExchange(secret.id, "user", "psst", "2024-03-05T20:30:00+00:00")],
                               None, None)
    store.close()
    path = tmp_path / "lyra.toml"
    path.write_text("")
    return path


def test_sessions_lists_newest_first_with_turns_and_off_the_record(
        config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "sessions"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "id  name                        turns  last active (UTC)",
        "#2  Terminal                        1  2024-03-05 20:30  (off the record)",
        "#1  Evening chat                    2  2024-03-04 09:01",
        "#3  imported with a line break      0  2023-01-02 03:04",
    ]


def test_sessions_json_and_limit(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(config), "sessions", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["name"], r["turns"], r["off_the_record"]) for r in rows] == [
        (2, "Terminal", 1, True), (1, "Evening chat", 2, False), (3, "imported\nwith a line break", 0, False)]
    assert rows[1]["updated_at"] == "2024-03-04T09:01:00.000000+00:00" and rows[2]["source"] == "chatgpt"
    assert main(["--config", str(config), "sessions", "--limit", "1", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [2]


def test_sessions_on_an_empty_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LYRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    (tmp_path / "lyra.toml").write_text("")
    assert main(["--config", str(tmp_path / "lyra.toml"), "sessions"]) == 0
    assert capsys.readouterr().out == "no conversations yet: `lyra chat` starts one\n"
    assert main(["--config", str(tmp_path / "lyra.toml"), "sessions", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
