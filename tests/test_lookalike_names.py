"""Look-alike names cannot join a household: "Аda" with a Cyrillic А beside "Ada" would make
household-memory versions "by Ada" that Ada never wrote. Unicode TR39 skeletons (``store/household/lookalike.py``) on
the real app, and the real commands."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from lyra_local.llm.registry import Models
from lyra_local.store.household.lookalike import look_alike
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder
from .test_cli_people import Lyra, lyra, two  # noqa: F401  (fixtures)

BASE = "http://127.0.0.1"


@pytest.mark.parametrize(("a", "b"), [("Ada", "\u0410da"), ("ada", "\u0410DA"), ("Cleo", "CIeo"), ("Ben", "B\u0435n"),
                                      ("Olga", "0lga")])
def test_names_that_look_alike(a: str, b: str) -> None:
    assert look_alike(a, b)


@pytest.mark.parametrize(("a", "b"), [("Eli", "Ell"), ("Mia", "Nia"), ("Jo", "J\u00f6"), ("Sam", "Sarn"),
                                      ("Dan", "Don"), ("Zo\u00eb", "Zoe")])
def test_names_that_do_not(a: str, b: str) -> None:
    assert not look_alike(a, b)


def test_the_page_refuses_a_name_that_looks_like_someone_elses(make_settings: Any) -> None:
    settings = make_settings('[companion]\nuser_name = "Ada"\n')
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(), embed=FakeEmbedder()))  # type: ignore[arg-type]
    with TestClient(app, base_url=BASE) as ada:
        assert ada.put("/api/me/secret", json={"secret": "ada-password-1"}).status_code == 200
        impostor = ada.post("/api/people", json={"name": "\u0410da", "secret": "impostor-1"})
        assert impostor.status_code == 409 and "looks like Ada" in impostor.json()["error"]["message"]
        assert ada.post("/api/people", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        ben = TestClient(app, base_url=BASE)
        assert ben.post("/api/auth/login", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        assert ben.put("/api/me/name", json={"name": "\u0410DA"}).status_code == 409  # nor by renaming
        assert ben.put("/api/me/name", json={"name": "B\u0435n"}).status_code == 200  # their own name: theirs


def test_lyra_people_add_refuses_a_look_alike(two: Lyra) -> None:  # noqa: F811
    code, _, err = two("people", "add", "S\u0430m", "--secret-stdin", stdin="sam-pass-2\n")
    assert code == 2 and "looks like Sam" in err
