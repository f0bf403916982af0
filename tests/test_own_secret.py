"""Choosing a new password asks for the one it replaces: a stolen login cookie cannot lock its
person out, and a wrong guess there counts against the login limits. The real app on scripted models."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from lyra_local.llm.registry import Models
from lyra_local.web import create_app
from lyra_local.web.logins import PER_DEVICE

from .fakes import FakeChatModel, FakeEmbedder

BASE = "http://127.0.0.1"


def test_a_new_password_needs_the_current_one(make_settings: Any) -> None:
    settings = make_settings('[companion]\nuser_name = "Ada"\n')
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(), embed=FakeEmbedder()))  # type: ignore[arg-type]
    with TestClient(app, base_url=BASE) as ada:
        assert ada.put("/api/me/secret", json={"secret": "ada-password-1"}).status_code == 200  # the first: none
        assert ada.post("/api/people", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        stolen = TestClient(app, base_url=BASE)
        assert stolen.post("/api/auth/login", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        refused = stolen.put("/api/me/secret", json={"secret": "locked-out-1"})
        assert refused.status_code == 403 and "current password" in refused.json()["error"]["message"]
        for _ in range(PER_DEVICE):
            wrong = stolen.put("/api/me/secret", json={"secret": "locked-out-1", "current": "a-guess-123"})
            assert wrong.status_code == 403
        assert stolen.put("/api/me/secret", json={"secret": "locked-out-1", "current": "a-guess-12"}
                          ).status_code == 429  # guessed as fast as at the login, no faster
        ben = TestClient(app, base_url=BASE)
        assert ben.post("/api/auth/login", json={"name": "Ben", "secret": "ben-password-1"}).status_code == 200
        assert ben.put("/api/me/secret", json={"secret": "ben-password-2", "current": "ben-password-1"}
                       ).status_code == 200
        assert TestClient(app, base_url=BASE).post(
            "/api/auth/login", json={"name": "Ben", "secret": "ben-password-2"}).status_code == 200
