"""Logging in to a household: who a request acts as, the cookie, the rate limit, tokens and the owner's reach.

The real app (routes, middleware, SQLite files) on scripted models.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from lyra_local.config import Settings
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder

BASE = "http://127.0.0.1"
OWNER_PASS = "owner-pass-1"


@pytest.fixture
def app(make_settings: Any) -> Iterator[FastAPI]:
    settings: Settings = make_settings()
    chat = FakeChatModel(respond=lambda messages, options: "noted")
    app = create_app(settings, models=Models(settings, chat=chat, embed=FakeEmbedder()))  # type: ignore[arg-type]
    app.state.chat = chat
    with TestClient(app, base_url=BASE):  # runs the lifespan
        yield app


def household(app: FastAPI) -> tuple[TestClient, TestClient, dict[str, Any]]:
    """The owner (logged in) and Sam, an adult (logged in), in a household of two."""
    owner = TestClient(app, base_url=BASE)
    assert owner.put("/api/me/secret", json={"secret": OWNER_PASS}).status_code == 200
    sam = owner.post("/api/people", json={"name": "Sam", "kind": "adult", "secret": "sam-pass-1"}).json()["person"]
    other = TestClient(app, base_url=BASE)
    assert other.post("/api/auth/login", json={"name": "sam", "secret": "sam-pass-1"}).status_code == 200
    return owner, other, sam


def test_one_person_on_loopback_logs_in_to_nothing(app: FastAPI) -> None:
    client = TestClient(app, base_url=BASE)
    state = client.get("/api/auth/state").json()
    assert state["login_required"] is False and state["person"]["owner"] is True
    assert client.get("/api/sessions").status_code == 200
    # an OpenAI client always sends a key: alone on loopback, whatever it is, it asks for no one
    assert client.get("/v1/models", headers={"Authorization": "Bearer unused"}).status_code == 200


def test_with_two_people_every_browser_logs_in(app: FastAPI) -> None:
    household(app)
    stranger = TestClient(app, base_url=BASE)
    assert stranger.get("/v1/models", headers={"Authorization": "Bearer unused"}).status_code == 401
    answer = stranger.get("/api/sessions")
    assert answer.status_code == 401 and answer.json()["error"]["type"] == "login_required"
    assert stranger.get("/api/auth/state").json() == {"login_required": True, "person": None, "people_count": 2}
    assert stranger.get("/health").status_code == 200 and stranger.get("/").status_code == 200


def test_the_login_cookie_is_httponly_strict_and_expires(app: FastAPI) -> None:
    household(app)
    client = TestClient(app, base_url=BASE)
    answer = client.post("/api/auth/login", json={"name": "Sam", "secret": "sam-pass-1"})
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "max-age=" in cookie and "path=/" in cookie
    assert answer.json()["person"]["name"] == "Sam"


def test_a_wrong_password_is_refused_then_rate_limited(app: FastAPI) -> None:
    household(app)
    client = TestClient(app, base_url=BASE)
    for _ in range(5):
        wrong = client.post("/api/auth/login", json={"name": "Sam", "secret": "not-the-password"})
        assert wrong.status_code == 401 and wrong.json()["error"]["type"] == "LoginFailed"
    limited = client.post("/api/auth/login", json={"name": "Sam", "secret": "sam-pass-1"})  # even the right one
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) > 0
    other = TestClient(app, base_url=BASE).post("/api/auth/login", json={"name": "Nobody", "secret": "x" * 8})
    assert other.status_code == 401  # that name on that device: another name is not locked with it


def test_log_out_everywhere_ends_the_other_session(app: FastAPI) -> None:
    _, sam, _ = household(app)
    laptop = TestClient(app, base_url=BASE)
    assert laptop.post("/api/auth/login", json={"name": "Sam", "secret": "sam-pass-1"}).status_code == 200
    assert laptop.post("/api/auth/logout-everywhere").json()["ended"] == 2
    assert sam.get("/api/sessions").status_code == 401
    assert laptop.get("/api/sessions").status_code == 401


def test_personal_tokens_act_as_their_person_until_revoked(app: FastAPI) -> None:
    owner, sam, _ = household(app)
    made = sam.post("/api/tokens", json={"name": "laptop script"}).json()
    assert made["secret"].startswith("lyra_") and made["token"]["name"] == "laptop script"
    script = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {made['secret']}"})
    answer = script.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "from the script"}]})
    assert answer.status_code == 200
    assert script.get("/api/me").json()["name"] == "Sam"
    assert owner.get("/api/sessions").json()["sessions"] == []  # Sam's conversation is Sam's
    assert owner.delete(f"/api/tokens/{made['token']['id']}").status_code == 404  # not the owner's to revoke
    assert sam.delete(f"/api/tokens/{made['token']['id']}").status_code == 200
    assert script.get("/api/me").status_code == 401


def test_the_api_token_is_the_owners_bootstrap_credential(make_settings: Any) -> None:
    settings = make_settings(LYRA_SERVER__API_TOKEN="a-long-bootstrap-token-1234")
    app = create_app(settings, models=Models(settings, chat=FakeChatModel(), embed=FakeEmbedder()))  # type: ignore[arg-type]
    with TestClient(app, base_url=BASE) as client:
        assert client.get("/api/sessions").json()["error"]["type"] == "unauthorized"
        client.headers["Authorization"] = "Bearer a-long-bootstrap-token-1234"
        me = client.get("/api/me").json()
        assert me["owner"] is True and me["login_free"] is False


def test_the_owner_manages_people_not_their_minds(app: FastAPI) -> None:
    owner, sam, sam_person = household(app)
    sid = sam.post("/api/sessions", json={"name": "Sam's diary"}).json()["id"]
    assert sam.post(f"/api/sessions/{sid}/chat", json={"message": "quokka-marker"}).status_code == 200
    removal = owner.get(f"/api/people/{sam_person['id']}/removal").json()
    assert removal["conversations"] == 1 and removal["messages"] == 2
    assert "quokka" not in str(removal)
    assert owner.get("/api/search", params={"q": "quokka-marker"}).json()["results"] == []
    for path in ("/api/people", "/admin/reload"):
        assert (sam.get(path) if path == "/api/people" else sam.post(path)).status_code == 403
    assert sam.post("/api/people", json={"name": "Eve", "secret": "eve-pass-1"}).status_code == 403


def test_removing_a_person_forgets_them_and_deletes_their_folder(app: FastAPI) -> None:
    owner, sam, sam_person = household(app)
    sid = sam.post("/api/sessions", json={"name": "Sam's diary"}).json()["id"]
    sam.post(f"/api/sessions/{sid}/chat", json={"message": "axolotl-marker"})
    state = app.state.lyra
    folder = state.household.data_dir / "people" / sam_person["id"]
    assert folder.is_dir()
    assert owner.delete(f"/api/people/{owner.get('/api/me').json()['id']}").status_code == 409
    assert owner.delete(f"/api/people/{sam_person['id']}").json() == {"removed": sam_person["id"]}
    assert not folder.exists()
    assert sam.get("/api/sessions").status_code == 401  # Sam's login ended with Sam
    assert TestClient(app, base_url=BASE).get("/api/me").json()["owner"] is True  # alone again: no login asked
    everything = b"".join(p.read_bytes() for p in Path(state.household.data_dir).rglob("*") if p.is_file())
    assert b"axolotl-marker" not in everything
    assert owner.post("/api/auth/login", json={"name": "Sam", "secret": "sam-pass-1"}).status_code == 401


def test_the_household_memory_is_in_everyones_context_and_only_adults_edit_it(app: FastAPI) -> None:
    owner, sam, _ = household(app)
    kid = owner.post("/api/people", json={"name": "Kit", "kind": "child", "secret": "4821"}).json()["person"]
    child = TestClient(app, base_url=BASE)
    assert child.post("/api/auth/login", json={"name": "Kit", "secret": "4821"}).status_code == 200
    assert owner.put("/api/household/memory", json={"content": "The dog is called Rex."}).status_code == 200
    assert child.put("/api/household/memory", json={"content": "no bedtime"}).status_code == 403
    assert child.get("/api/household/memory").json()["can_edit"] is False
    chat: FakeChatModel = app.state.chat
    sid = child.post("/api/sessions", json={"name": "homework"}).json()["id"]
    child.post(f"/api/sessions/{sid}/chat", json={"message": "what is the dog called?"})
    prompt = "\n".join(m["content"] for m in chat.history[-1][0])
    assert "The dog is called Rex." in prompt and kid["name"] == "Kit"
    history = sam.get("/api/household/memory/history").json()["versions"]
    assert [v["author"] for v in history] == ["Owner"]


def test_a_page_opened_for_one_person_cannot_act_as_the_next(app: FastAPI) -> None:
    owner, sam, sam_person = household(app)
    ada_id = owner.get("/api/me").json()["id"]
    sid = owner.post("/api/sessions", json={"name": "Ada's"}).json()["id"]
    # Sam logs in on Ada's browser (the cookie is the browser's): Ada's tab still says it is Ada's page
    owner.post("/api/auth/login", json={"name": "Sam", "secret": "sam-pass-1"})
    refused = owner.delete(f"/api/sessions/{sid}", headers={"X-Lyra-Person": ada_id})
    assert refused.status_code == 409 and refused.headers["x-lyra-person-changed"] == "1"
    assert owner.get("/api/me", headers={"X-Lyra-Person": sam_person["id"]}).json()["name"] == "Sam"


def test_a_personal_token_uses_the_memory_but_never_changes_how_its_person_logs_in(app: FastAPI) -> None:
    owner, sam, _ = household(app)
    made = sam.post("/api/tokens", json={"name": "leaked"}).json()
    script = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {made['secret']}"})
    assert script.get("/api/sessions").status_code == 200
    assert script.put("/api/me/secret", json={"secret": "taken-over-1"}).status_code == 403
    assert script.post("/api/tokens", json={"name": "another"}).status_code == 403
    mine = owner.post("/api/tokens", json={"name": "owner script"}).json()["secret"]
    owner_script = TestClient(app, base_url=BASE, headers={"Authorization": f"Bearer {mine}"})
    assert owner_script.get("/api/people").status_code == 403
    assert owner_script.get("/api/household/backup").status_code == 403
    assert script.delete(f"/api/tokens/{made['token']['id']}").status_code == 200  # revoking itself is fine
    assert script.get("/api/sessions").status_code == 401


def test_lyra_mcp_refuses_the_next_call_once_its_token_is_revoked(make_settings: Any) -> None:
    from lyra_local.cli.mcp import TokenRefused, still_acting_as
    from lyra_local.passwords import hash_secret
    from lyra_local.store.household import Household

    settings: Settings = make_settings()
    household = Household(settings.data_dir)
    household.logins.set_secret(household.ensure_first("Ada").id, hash_secret("ada-pass-1"))
    sam = household.add("Sam", "adult", hash_secret("sam-pass-1"))
    token, raw = household.tokens.create(sam.id, "agent")
    still_acting_as(household, settings, raw, sam)  # answered
    household.tokens.revoke(sam.id, token.id)
    with pytest.raises(TokenRefused):
        still_acting_as(household, settings, raw, sam)
    household.close()


def test_an_ended_login_alone_is_said_so_unless_no_password_could_answer_it(app: FastAPI) -> None:
    client = TestClient(app, base_url=BASE, cookies={"lyra_session": "from-a-household-db-since-replaced"})
    assert client.get("/api/me").json()["owner"] is True  # the owner has no password: nothing to log in with
    TestClient(app, base_url=BASE).put("/api/me/secret", json={"secret": OWNER_PASS})
    ended = client.get("/api/me")
    assert ended.status_code == 401 and ended.json()["error"]["type"] == "login_required"
