"""Every integer a route takes is bounded: one SQLite cannot store is a 4xx with a JSON body, never a 500.

An id, a page size or an offset past SQLite's 64-bit integers could not be
bound (``OverflowError``), and the request was answered 500. Each route's
integers (path, query, body) are now the shared types of ``web/params.py``:
out of range is a 422 naming the parameter, an id in range that names nothing
is the route's 404. ``/api/search`` reads ``since``/``until`` like
``/api/recall``: a time out of range is a 400 naming the parameter. The real
app on the scripted fake models.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from lyra_local.config import load_settings

from .conftest import MODELS_DIR, fake_client

N = "{n}"  # where a route's integer goes, in its path, query or body
ABSENT = 424242  # an id in range that names nothing
ID_OUT = [0, -1, 2**63, 10**30]
COUNT_OUT = [0, -1, 2**63, 10**30]  # a page size or a number of tokens: at least 1
FROM_OUT = [-1, 2**63, 10**30]  # an offset or an event to read after: 0 is the start
SEED_OUT = [-(2**63) - 1, 2**63, 10**30]
CHAT = [{"role": "user", "content": "hello"}]
WORD = "zebrafinch"  # the one turn of conversation 1


@dataclass(frozen=True)
class Route:
    method: str
    url: str
    body: Any = None
    refused: tuple[int, ...] = tuple(ID_OUT)
    absent: int | None = 404  # the status for ABSENT; None: the integer is no id

    def request(self, client: TestClient, n: int) -> Any:
        body = None if self.body is None else json.loads(json.dumps(self.body).replace(f'"{N}"', str(n)))
        return client.request(self.method, self.url.replace(N, str(n)), json=body)

    def __str__(self) -> str:
        return f"{self.method} {self.url}" + (f" {json.dumps(self.body)}" if self.body is not None else "")


ROUTES = [
    # routes/sessions.py
    Route("GET", "/api/sessions?limit={n}", refused=tuple(COUNT_OUT), absent=None),
    Route("GET", "/api/sessions?offset={n}", refused=tuple(FROM_OUT), absent=None),
    Route("PATCH", "/api/sessions/{n}", {"name": "renamed"}),
    Route("DELETE", "/api/sessions/{n}"),
    Route("GET", "/api/sessions/{n}/messages"),
    Route("GET", "/api/sessions/1/messages?limit={n}", refused=tuple(COUNT_OUT), absent=None),
    Route("POST", "/api/sessions/{n}/chat", {"message": "hello"}),
    Route("POST", "/api/exchanges/{n}/regenerate"),
    Route("POST", "/api/exchanges/{n}/edit", {"content": "hello again"}),
    Route("POST", "/api/exchanges/{n}/choose"),
    Route("GET", "/api/exchanges/{n}/trace"),
    # routes/recall.py, search.py: filters, so an absent id finds nothing
    Route("GET", "/api/recall?q=hello&session_id={n}", absent=200),
    Route("GET", "/api/recall?q=hello&exclude_session_id={n}", absent=200),
    Route("GET", "/api/search?q=hello&session_id={n}", absent=200),
    # routes/forget.py
    Route("POST", "/api/forget", {"exchange_ids": [N], "dry_run": True}, absent=200),  # a plan with nothing in it
    Route("POST", "/api/forget", {"sessions": [N], "dry_run": True}),
    # routes/sources.py: an absent memory has no sources (200, none); then sessions.py and digests.py
    *(Route("GET", f"/api/sources/{kind}/{{n}}", absent=200) for kind in ("gist", "fact", "digest", "world")),
    Route("PUT", "/api/sessions/{n}/gist", {"content": "a gist"}),
    Route("DELETE", "/api/sessions/{n}/gist"),
    Route("PUT", "/api/digests/{n}", {"content": "a digest"}),
    Route("DELETE", "/api/digests/{n}"),
    # routes/sessions.py (a gist), dream.py
    Route("GET", "/api/sessions/{n}/gist"),
    Route("GET", "/api/dream/events?follow=false&after={n}", refused=tuple(FROM_OUT), absent=None),
    # routes/world.py
    Route("POST", "/api/world/proposals/{n}/accept", {}),
    Route("POST", "/api/world/proposals/{n}/reject", {"by": "user"}),
    # routes/v1.py
    Route("POST", "/v1/chat/completions", {"messages": CHAT, "max_tokens": N}, refused=tuple(COUNT_OUT), absent=None),
    Route("POST", "/v1/chat/completions", {"messages": CHAT, "max_completion_tokens": N}, refused=tuple(COUNT_OUT),
          absent=None),
    Route("POST", "/v1/chat/completions", {"messages": CHAT, "seed": N}, refused=tuple(SEED_OUT), absent=None),
]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for every case, with one conversation (id 1) of one turn."""
    tmp: Path = tmp_path_factory.mktemp("bounded")
    (tmp / "lyra.toml").write_text("")
    config = load_settings(tmp / "lyra.toml", env={"LYRA_DATA_DIR": str(tmp / "data"),
                                                   "LYRA_MODELS_DIR": str(MODELS_DIR), "LYRA_DREAM__ENABLED": "false"})
    with fake_client(config) as test_client:
        session = test_client.post("/api/sessions", json={"name": "bounds"}).json()["id"]
        assert session == 1
        test_client.post(f"/api/sessions/{session}/chat", json={"message": WORD})
        yield test_client


def refused_with(answer: Any, status: int) -> dict[str, Any]:
    """``answer`` is ``status`` with a JSON error body (a LyraError's ``error`` or a refusal's ``detail``)."""
    assert answer.status_code == status, f"{answer.status_code}: {answer.text[:300]}"
    assert answer.headers["content-type"].startswith("application/json"), answer.headers["content-type"]
    body: dict[str, Any] = answer.json()
    assert "error" in body or "detail" in body, body
    return body


CASES = [pytest.param(route, n, id=f"{route}={n}") for route in ROUTES for n in route.refused]


@pytest.mark.parametrize(("route", "n"), CASES)
def test_an_integer_out_of_range_is_refused_naming_it(client: TestClient, route: Route, n: int) -> None:
    body = refused_with(route.request(client, n), 422)
    named = {str(part) for error in body["detail"] for part in error["loc"]}
    assert named & {"session_id", "exclude_session_id", "exchange_id", "item_id", "digest_id", "version_id",
                    "limit", "offset", "after", "exchange_ids", "sessions", "max_tokens", "max_completion_tokens",
                    "seed"}, body


@pytest.mark.parametrize("route", [pytest.param(r, id=str(r)) for r in ROUTES if r.absent is not None])
def test_an_id_in_range_that_names_nothing_is_never_a_failure(client: TestClient, route: Route) -> None:
    answer = route.request(client, ABSENT)
    if route.absent == 404:
        refused_with(answer, 404)
    else:
        assert answer.status_code == route.absent, f"{answer.status_code}: {answer.text[:300]}"


@pytest.mark.parametrize(("url", "n"), [("/api/sessions?offset={n}", 0), ("/api/sessions?offset={n}", 2**63 - 1),
                                        ("/api/sessions?limit={n}", 100_000), ("/api/sessions/1/messages?limit={n}", 1),
                                        ("/api/dream/events?follow=false&after={n}", 0),
                                        ("/api/dream/events?follow=false&after={n}", 2**63 - 1)])
def test_the_bounds_themselves_are_taken(client: TestClient, url: str, n: int) -> None:
    answer = client.get(url.replace(N, str(n)))
    assert answer.status_code == 200, answer.text


ID_ROUTES = [r for r in ROUTES if r.refused == tuple(ID_OUT)]


@settings(max_examples=60)
@given(route=st.sampled_from(ID_ROUTES), n=st.integers(max_value=0) | st.integers(min_value=2**63))
def test_any_id_sqlite_cannot_hold_is_refused(client: TestClient, route: Route, n: int) -> None:
    refused_with(route.request(client, n), 422)


@pytest.mark.parametrize("parameter", ["since", "until"])
@pytest.mark.parametrize("value", ["0001-01-01T00:00+05:00", "9999-12-31T23:59-05:00", "soon"])
def test_a_search_time_out_of_range_is_a_400_naming_it(client: TestClient, parameter: str, value: str) -> None:
    body = refused_with(client.get("/api/search", params={"q": "hello", parameter: value}), 400)
    assert parameter in body["error"]["message"], body


def test_a_search_time_with_an_offset_compares_in_utc(client: TestClient) -> None:
    """Bounds a second either side of the turn's time, written with offsets, keep it or leave it out."""
    turn = client.get("/api/sessions/1/messages").json()["messages"][0]
    at = datetime.fromisoformat(turn["created_at"])
    second = timedelta(seconds=1)

    def found(**bound: datetime) -> bool:
        params = {"q": WORD, "tier": "exchange", **{k: v.isoformat() for k, v in bound.items()}}
        answer = client.get("/api/search", params=params)
        assert answer.status_code == 200, answer.text
        return turn["id"] in [r["id"] for r in answer.json()["results"]]

    east, west = timezone(timedelta(hours=5)), timezone(timedelta(hours=-5))
    assert found() and found(since=(at - second).astimezone(east)) and found(until=(at + second).astimezone(west))
    assert not found(since=(at + second).astimezone(west)) and not found(until=(at - second).astimezone(east))
