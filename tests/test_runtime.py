"""``open_runtime``: what the app and every command run on, built on first use and closed in one order."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from lyra_local import runtime as runtime_module
from lyra_local.cli import main
from lyra_local.config import Settings
from lyra_local.llm.registry import Models
from lyra_local.memory import Memory
from lyra_local.runtime import RuntimeClosed, open_runtime
from lyra_local.store.files.dirlock import DirLock
from lyra_local.transfer.backup import backup, restore

from .conftest import MODELS_DIR
from .fakes import FakeChatModel, FakeEmbedder

TOKYO = '[companion]\ntimezone = "Asia/Tokyo"\n'


def fake_models(settings: Settings) -> Models:
    return Models(settings, chat=FakeChatModel(), embed=FakeEmbedder())  # type: ignore[arg-type]


def lock_is_free(data_dir: Path) -> bool:
    """Whether a `lyra restore` could take the data directory now (nobody holds its lock)."""
    probe = DirLock(data_dir)
    try:
        return probe.try_exclusive()
    finally:
        probe.release()


def test_everything_closes_in_one_order_and_the_lock_is_let_go(make_settings: Callable[..., Settings],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_settings()
    models = fake_models(settings)
    closed: list[str] = []
    with open_runtime(settings, models=models) as runtime:
        companion, store = runtime.companion, runtime.store
        store.sessions.create("a conversation")
        assert runtime.memory is companion.memory and runtime.built_models is models
        assert not lock_is_free(settings.data_dir)  # an open runtime holds the memory: restore must refuse
        close_companion, close_store = companion.close, store.close
        monkeypatch.setattr(companion, "close", lambda: (closed.append("companion"), close_companion()))
        monkeypatch.setattr(store, "close", lambda: (closed.append("store"), close_store()))
        models.add_close_hook(lambda: closed.append("models"))  # runs after the runtime's own hook
    assert closed == ["companion", "models", "store"]
    assert models.closed and store.open_connections() == 0
    assert lock_is_free(settings.data_dir)


def test_a_failing_command_still_closes_everything(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    models = fake_models(settings)
    with pytest.raises(KeyError), open_runtime(settings, models=models) as runtime:
        runtime.companion  # noqa: B018 - built, so there is something to close
        raise KeyError("the command failed")
    assert models.closed and runtime.store.open_connections() == 0 and lock_is_free(settings.data_dir)


def test_a_restore_can_take_the_memory_once_the_runtime_is_closed(make_settings: Callable[..., Settings],
                                                                  tmp_path: Path) -> None:
    settings = make_settings()
    with open_runtime(settings) as runtime:
        runtime.store.sessions.create("kept in the backup")
        backup(runtime.store, tmp_path / "b.db")
    restore(tmp_path / "b.db", settings.data_dir)
    with open_runtime(settings) as runtime:
        assert [s.name for s in runtime.store.sessions.list()] == ["kept in the backup"]


def test_a_store_only_command_builds_no_models(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(LYRA_MODELS_DIR="/nonexistent/models")  # a model load would fail loudly
    with open_runtime(settings) as runtime:
        assert runtime.store.sessions.count() == 0
        assert runtime.built_models is None
    with pytest.raises(RuntimeClosed):
        runtime.models  # noqa: B018 - a closed runtime builds nothing again


def test_nothing_is_opened_until_asked(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    with open_runtime(settings) as runtime:
        assert runtime.built_models is None
    assert not settings.data_dir.exists()  # not even the data directory


@pytest.mark.parametrize("command", [["memory"], ["world"], ["sitrep"], ["forget", "--matching", "x", "--yes"]])
def test_store_only_commands_run_without_model_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     command: list[str]) -> None:
    monkeypatch.setenv("LYRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(tmp_path / "no-models"))
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    (tmp_path / "lyra.toml").write_text("")
    assert main(["--config", str(tmp_path / "lyra.toml"), *command]) == 0
    assert lock_is_free(tmp_path / "data")


def test_memory_reads_dates_in_the_configured_zone(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(TOKYO)
    with open_runtime(settings, models=fake_models(settings)) as runtime:
        assert runtime.memory.zone == ZoneInfo("Asia/Tokyo")
        assert runtime.companion.memory.zone == ZoneInfo("Asia/Tokyo")


def test_a_renewed_runtime_borrows_the_store(make_settings: Callable[..., Settings]) -> None:
    """A configuration reload: fresh models on the same store, which outlives them."""
    settings = make_settings()
    with open_runtime(settings, models=fake_models(settings)) as first:
        second = first.renewed(settings)
        assert second.store is first.store and second.built_models is None
        second.close()
        assert first.store.sessions.count() == 0  # still open
    assert lock_is_free(settings.data_dir)


@pytest.mark.models
def test_reindex_reads_dates_in_the_configured_zone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lyra reindex` built its memory without the zone; every command now gets it from the runtime."""
    zones: list[object] = []

    class Recording(Memory):
        def __init__(self, *args: object, **kwargs: object) -> None:
            zones.append(kwargs.get("zone"))
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runtime_module, "Memory", Recording)
    monkeypatch.setenv("LYRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(MODELS_DIR))
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    (tmp_path / "lyra.toml").write_text(TOKYO)
    assert main(["--config", str(tmp_path / "lyra.toml"), "reindex"]) == 0
    assert zones == [ZoneInfo("Asia/Tokyo")]
