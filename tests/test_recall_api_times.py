"""``GET /api/recall`` compares ``since``/``until`` in UTC, whatever form the time was written in.

Stored times are UTC text (``2024-03-01T09:00:00.000000+00:00``) compared as
text; the route passed ``since``/``until`` through as written, so an offset
time, or a turn's own time written with ``Z``, missed the turn (or kept one it
should have left out), as ``lyra recall --since`` did (tests/test_cli_recall_times.py).
The real app on the scripted fake models; the turns are stored at known times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.store import Store
from lyra_local.store.db import to_iso
from lyra_local.store.exchanges import NewExchange

from .conftest import fake_client

TURNS = {"2024-02-20T09:00:00+00:00": "the wombat burrow in February",
         "2024-03-01T09:00:00+00:00": "the wombat burrow in March"}
FEBRUARY, MARCH = TURNS.values()


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with fake_client(make_settings()) as client:
        store: Store = client.app.state.lyra.owner_runtime().store  # type: ignore[attr-defined]
        session = store.sessions.create("burrows", created_at=to_iso(datetime.fromisoformat(min(TURNS))))
        with store.write() as conn:
            store.exchanges.insert(conn, [NewExchange(session.id, "user", text, to_iso(datetime.fromisoformat(at)))
                                          for at, text in TURNS.items()], None, None)
        yield client


def recalled(client: TestClient, **bounds: str) -> list[str]:
    answer = client.get("/api/recall", params={"q": "wombat burrow", "mode": "bm25", **bounds})
    assert answer.status_code == 200, answer.text
    return sorted(hit["content"] for hit in answer.json()["hits"])


@pytest.mark.parametrize(("bounds", "found"), [
    ({}, [FEBRUARY, MARCH]),
    ({"since": "2024-03-01T10:00+02:00"}, [MARCH]),  # 08:00 UTC: the March turn is after
    ({"since": "2024-03-01T09:00:00Z"}, [MARCH]),  # the turn's own time, written with Z
    ({"since": "20240301T090000Z"}, [MARCH]),  # compact
    ({"since": "2024-03-01T09:00:00.000001Z"}, []),  # just after it
    ({"since": "2024-03-01T11:00:01+02:00"}, []),  # 09:00:01 UTC: after it
    ({"until": "2024-03-01T10:30+02:00"}, [FEBRUARY]),  # 08:30 UTC: March is after
    ({"until": "2024-03-01T09:00:00.000001Z"}, [FEBRUARY, MARCH]),
    ({"since": "2024-02-20", "until": "2024-03-01"}, [FEBRUARY]),  # dates alone: midnight UTC
])
def test_since_and_until_compare_in_utc(client: TestClient, bounds: dict[str, str], found: list[str]) -> None:
    assert recalled(client, **bounds) == found


@pytest.mark.parametrize(("parameter", "value"), [("since", "not a time"), ("until", "2024-13-01"),
                                                  ("since", "0001-01-01T00:00+05:00"), ("until", "9" * 100)])
def test_a_bound_that_is_not_a_time_is_refused_by_name(client: TestClient, parameter: str, value: str) -> None:
    answer = client.get("/api/recall", params={"q": "wombat", parameter: value})
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["message"].startswith(f"{parameter} ") and error["type"] == "BadRequest", error
