"""The paths answered without a login, or without holding the models, are one list (``web/open_paths.py``)."""

from __future__ import annotations

import pytest

from lyra_local.web.open_paths import needs_no_login, needs_no_models


@pytest.mark.parametrize("path", ["/health", "/", "/static/app.js", "/api/auth/state", "/api/auth/login"])
def test_liveness_the_page_and_logging_in_need_no_login(path: str) -> None:
    assert needs_no_login(path)


@pytest.mark.parametrize("path", ["/api/sessions", "/api/auth/logout", "/healthz", "/static", "/v1/models"])
def test_everything_else_needs_a_login(path: str) -> None:
    assert not needs_no_login(path)


def test_only_liveness_and_the_assets_are_answered_without_holding_the_models() -> None:
    assert needs_no_models("/health") and needs_no_models("/static/app.js")
    assert not needs_no_models("/") and not needs_no_models("/api/auth/login") and not needs_no_models("/api/me")


def test_the_server_answers_its_open_paths_to_nobody(client) -> None:
    assert client.get("/health").status_code == 200
    assert client.get("/api/auth/state").status_code == 200
