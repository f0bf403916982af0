"""Logging in without telling who lives here and without letting one person lock out another.

The real app (routes, middleware, ``household.db``) on scripted models; the
forwarded-address test runs the real `lyra serve` process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError

from lyra_local import passwords
from lyra_local.config import ServerSettings, Settings
from lyra_local.llm.registry import Models
from lyra_local.passwords import hash_secret
from lyra_local.store.household import Household
from lyra_local.web import create_app
from lyra_local.web.logins import PER_ADDRESS, PER_DEVICE

from .conftest import MODELS_DIR, base_env, serve_lyra
from .fakes import FakeChatModel, FakeEmbedder

BASE = "http://127.0.0.1"
ADA, BEN, KIT = ("Ada", "ada-pass-12"), ("Ben", "ben-pass-12"), ("Kit", "4821")


@pytest.fixture
def app(make_settings: Any) -> Iterator[FastAPI]:
    """Ada (the owner), Ben (an adult) and Kit (a child with a PIN) on one box."""
    settings: Settings = make_settings('[companion]\nuser_name = "Ada"\n')
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(), embed=FakeEmbedder()))  # type: ignore[arg-type]
    with TestClient(app, base_url=BASE) as owner:  # runs the lifespan
        assert owner.put("/api/me/secret", json={"secret": ADA[1]}).status_code == 200
        for name, secret, kind in ((*BEN, "adult"), (*KIT, "child")):
            assert owner.post("/api/people", json={"name": name, "kind": kind, "secret": secret}).status_code == 200
        yield app


def login(client: TestClient, who: tuple[str, str], secret: str | None = None) -> int:
    return client.post("/api/auth/login", json={"name": who[0], "secret": secret or who[1]}).status_code


def device(app: FastAPI) -> TestClient:
    """A browser of its own (its own cookie jar); every one of them reaches the server from the same address,
    as on one shared computer, behind one NAT or through Docker's port mapping."""
    return TestClient(app, base_url=BASE)


def test_a_name_nobody_has_costs_the_same_scrypt_as_a_real_one(app: FastAPI, monkeypatch: Any) -> None:
    calls: list[int] = []
    real = passwords._scrypt

    def counted(secret: str, salt: bytes, n: int, r: int, p: int) -> bytes:
        calls.append(n)
        return real(secret, salt, n, r, p)

    monkeypatch.setattr(passwords, "_scrypt", counted)
    assert login(device(app), BEN, "not-bens-password") == 401
    known = list(calls)
    calls.clear()
    assert login(device(app), ("Nobody", ""), "not-bens-password") == 401
    assert known == calls == [passwords.N]  # one scrypt of the same cost, whether the name lives here or not


def test_a_success_for_ones_own_name_buys_no_more_tries_at_other_names(app: FastAPI) -> None:
    bens = device(app)
    tried = 0
    while tried < PER_ADDRESS:
        assert login(bens, (f"guess{tried}", ""), "password-guess") == 401
        tried += 1
        if tried % 3 == 0:
            assert login(bens, BEN) == 200  # his own login clears nothing but his own count
    refused = bens.post("/api/auth/login", json={"name": "Ada", "secret": "password-guess"})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0


def test_a_mistyped_pin_locks_at_most_that_name_on_that_device(app: FastAPI) -> None:
    adas, kits_before = device(app), device(app)
    assert login(adas, ADA) == 200 and login(kits_before, KIT) == 200  # both logged in here before
    shared = device(app)  # where Kit never logged in: the child mistypes their PIN
    for _ in range(PER_DEVICE):
        assert login(shared, KIT, "1111") == 401
    assert login(shared, KIT) == 429  # that name, on that device
    assert login(adas, ADA) == 200  # the owner, with the right password, on a device she used before
    assert login(device(app), BEN) == 200  # and another name on a new device behind the same address
    assert login(kits_before, KIT) == 200  # Kit on a device Kit logged in on before


def test_a_known_device_is_limited_on_its_own_failures_only(app: FastAPI) -> None:
    adas, elsewhere = device(app), device(app)
    assert login(adas, ADA) == 200 and login(elsewhere, ADA) == 200
    for _ in range(PER_DEVICE):  # someone else guesses Ada's password from a browser of their own
        assert login(device(app), ADA, "wrong-guess-1") == 401
    assert login(device(app), ADA, "wrong-guess-1") == 429  # Ada is limited for new devices
    assert login(adas, ADA) == 200  # but never where she logged in before
    for _ in range(PER_DEVICE):
        assert login(adas, ADA, "typo-typo-1") == 401
    assert login(adas, ADA) == 429  # her own mistakes on that device count there
    assert login(elsewhere, ADA) == 200  # and nowhere else


def test_a_device_cookie_is_no_login_and_is_httponly(app: FastAPI) -> None:
    adas = device(app)
    answer = adas.post("/api/auth/login", json={"name": "Ada", "secret": ADA[1]})
    device_cookie = next(c for c in answer.headers.get_list("set-cookie") if "lyra_device=" in c).lower()
    assert "httponly" in device_cookie and "samesite=strict" in device_cookie
    only_device = device(app)
    only_device.cookies.set("lyra_device", adas.cookies["lyra_device"])
    assert only_device.get("/api/sessions").status_code == 401


def test_trusted_proxies_takes_addresses_only() -> None:
    assert ServerSettings(trusted_proxies=("127.0.0.1", "[::1]", "172.17.0.0/16")).trusted_proxies == (
        "127.0.0.1", "::1", "172.17.0.0/16")
    with pytest.raises(ValidationError, match="not an IP address"):
        ServerSettings(trusted_proxies=("*",))


@pytest.mark.slow
@pytest.mark.models  # lyra serve loads the real tiny models
def test_lyra_serve_counts_the_sockets_address_not_a_forwarded_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    household = Household(data)
    household.logins.set_secret(household.ensure_first("Ada").id, hash_secret(ADA[1]))
    household.add("Ben", "adult", hash_secret(BEN[1]))
    household.close()
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    with serve_lyra(tmp_path, env, "[dream]\nenabled = false\n") as served, \
            httpx.Client(base_url=served.url, timeout=60) as client:
        answers = [client.post("/api/auth/login", json={"name": f"name{i}", "secret": "password-guess"},
                               headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
                   for i in range(PER_ADDRESS + 1)]
    assert answers == [401] * PER_ADDRESS + [429]  # one client, whatever address it claims
