"""Times from outside in the store's UTC text: imports, ``lyra forget --before`` and ``POST /api/forget``.

Stored times are compared as text (``2024-03-01T10:00:00.000000+00:00``), so a
time written any other way (an offset, naive, compact, a date alone) must be
rewritten before it is stored or compared, or refused with a clear message.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lyra_local.cli import main
from lyra_local.store import Store
from lyra_local.store.db import to_iso
from lyra_local.store.exchanges import NewExchange
from lyra_local.transfer.importer import import_conversations
from lyra_local.transfer.sources import open_source
from lyra_local.transfer.timestamps import BadTimestamp, utc_timestamp

from .conftest import MODELS_DIR, fake_client
from .fakes import FakeEmbedder
from .test_hostile_input import isolated_settings


@pytest.mark.parametrize(("given_as", "stored"), [
    ("2023-05-08T13:56:00+02:00", "2023-05-08T11:56:00.000000+00:00"),
    ("2023-05-08T13:56:00", "2023-05-08T13:56:00.000000+00:00"),  # naive = UTC
    ("20230508T135600Z", "2023-05-08T13:56:00.000000+00:00"),
    ("20230508T135600-0530", "2023-05-08T19:26:00.000000+00:00"),
    ("2023-05-08", "2023-05-08T00:00:00.000000+00:00"),  # a date alone = midnight UTC
    ("20230508", "2023-05-08T00:00:00.000000+00:00"),
    ("2023-05-08 13:56:00.123456789Z", "2023-05-08T13:56:00.123456+00:00"),
    (" 2023-05-08T13:56Z ", "2023-05-08T13:56:00.000000+00:00"),
])
def test_every_iso_form_becomes_the_stores_utc_text(given_as: str, stored: str) -> None:
    assert utc_timestamp(given_as) == stored


@pytest.mark.parametrize("bad", ["soon", "", "  ", "2023-13-45", "0001-01-01T00:00:00+05:00",
                                 "9999-12-31T23:00:00-05:00", "9" * 100, None, 1683553000, ["2023-05-08"]])
def test_what_is_not_a_time_is_refused_clearly(bad: object) -> None:
    with pytest.raises(BadTimestamp) as refused:
        utc_timestamp(bad, "message 3: created_at")
    assert str(refused.value).startswith("message 3: created_at ")


@settings(max_examples=200)
@given(moment=st.datetimes(timezones=st.none() | st.timezones()), compact=st.booleans())
def test_any_written_time_reads_back_as_the_same_moment(moment: datetime, compact: bool) -> None:
    m = moment
    compact_form = f"{m.year:04d}{m.month:02d}{m.day:02d}T{m.hour:02d}{m.minute:02d}{m.second:02d}.{m.microsecond:06d}"
    written = compact_form + m.strftime("%z") if compact else m.isoformat()
    try:
        expected = to_iso(moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc))
    except OverflowError:  # the moment has no UTC time (year 1 east of Greenwich)
        with pytest.raises(BadTimestamp):
            utc_timestamp(written)
        return
    assert utc_timestamp(written) == expected


@settings(max_examples=200)
@given(text=st.text())
def test_any_text_is_a_time_or_a_bad_timestamp(text: str) -> None:
    try:
        assert utc_timestamp(text).endswith("+00:00")
    except BadTimestamp:
        pass


# -- forget --before compares in UTC, whatever form the date was typed in ------------------------------

TURNS = ["2024-03-01T09:00:00+00:00", "2024-03-01T10:30:00+00:00", "2024-03-01T11:00:00+00:00"]


def planted(data: Path) -> None:
    store = Store(data)
    session = store.sessions.create("times", created_at=to_iso(datetime.fromisoformat(TURNS[0])))
    with store.write() as conn:
        store.exchanges.insert(conn, [NewExchange(session.id, "user", f"turn at {at}",
                                                  to_iso(datetime.fromisoformat(at))) for at in TURNS], None, None)
    store.close()


def remaining(data: Path) -> list[str]:
    store = Store(data)
    try:
        return [e.content for s in store.sessions.list() for e in store.exchanges.history(s.id)]
    finally:
        store.close()


@pytest.mark.parametrize(("before", "left"), [
    ("2024-03-01T12:00+02:00", 2),  # 10:00 UTC: only the 09:00 turn is before it
    ("20240301T103000Z", 2),  # compact: the 10:30 turn is not before 10:30
    ("20240301T103001Z", 1),
    ("2024-03-01T10:30:00.000001", 1),  # naive = UTC
    ("2024-03-02", 0),
])
def test_forget_before_an_offset_or_compact_date_compares_in_utc(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, left: int) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("LYRA_DATA_DIR", str(data))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(MODELS_DIR))
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    planted(data)
    assert main(["forget", "--before", before, "--yes"]) == 0
    assert len(remaining(data)) == left


def test_forget_before_a_non_date_says_so_and_forgets_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("LYRA_DATA_DIR", str(data))
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    planted(data)
    assert main(["forget", "--before", "last tuesday", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "--before 'last tuesday' is not a time" in err and "hint: write it as YYYY-MM-DD" in err
    assert "Traceback" not in err and len(remaining(data)) == 3


def test_forget_before_a_compact_date_after_importing_compact_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's crash: compact times stored as given, then a forget by date. Now both are UTC text."""
    data = tmp_path / "data"
    monkeypatch.setenv("LYRA_DATA_DIR", str(data))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(MODELS_DIR))
    monkeypatch.delenv("LYRA_CONFIG", raising=False)
    lines = [{"id": f"s{i}", "name": f"s{i}", "messages": [{"role": "user", "content": f"turn {i}",
                                                            "created_at": at}]}
             for i, at in enumerate(["20230508T135600Z", "2023-05-09T01:00:00+09:00", "2023-05-09"])]
    source = tmp_path / "s.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    store = Store(data)
    import_conversations(store, FakeEmbedder(), open_source(source).read())
    store.close()
    assert main(["forget", "--before", "20230508T160000Z", "--yes"]) == 0  # 2023-05-09T01:00+09:00 is 16:00 UTC
    assert sorted(remaining(data)) == ["turn 1", "turn 2"]


def test_the_forget_api_reads_before_the_same_way(tmp_path: Path) -> None:
    settings = isolated_settings(tmp_path)
    planted(settings.data_dir)
    with fake_client(settings) as client:
        dry = client.post("/api/forget", json={"before": "2024-03-01T12:00+02:00", "dry_run": True}).json()
        assert dry["turns"] == 1
        refused = client.post("/api/forget", json={"before": "soon"})
        assert refused.status_code == 400 and "'soon' is not a time" in refused.json()["error"]["message"]


def test_year_edges_do_not_crash() -> None:
    assert utc_timestamp("0001-01-01") == "0001-01-01T00:00:00.000000+00:00"
    assert utc_timestamp("9999-12-31T23:59:59.999999") == "9999-12-31T23:59:59.999999+00:00"
    assert utc_timestamp("0001-01-01T12:00+05:00") == to_iso(datetime(1, 1, 1, 7, tzinfo=timezone.utc))
    assert utc_timestamp("2024-02-29T00:00-00:30") == to_iso(datetime(2024, 2, 29, tzinfo=timezone.utc)
                                                             + timedelta(minutes=30))
