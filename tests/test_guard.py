"""The loopback server answers only to this machine's own pages.

A foreign ``Host`` (DNS rebinding), a cross-site ``Origin`` on a write and an
empty or short API token are each refused against a real ``lyra serve`` on
127.0.0.1; the guard's parsing and the token rules also run fast on the app
built with scripted fakes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from lyra_local.config import Settings
from lyra_local.errors import ConfigError
from lyra_local.web.guard import same_origin, split_host

from .conftest import MODELS_DIR, Served, base_env, fake_client, free_port, serve_lyra
from .web_fixtures import Serving

TOKEN = "tok-" + "abcdefghij" * 2  # 24 characters
CONFIG = '[server]\nallowed_hosts = ["lyra.test"]\n[models.chat.sampling]\nmax_tokens = 16\n'


def lyra_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
            "LYRA_DREAM__ENABLED": "false", **extra}


def host_of(served: Served) -> str:
    return served.url.removeprefix("http://")


# --- the parsing, without a server -------------------------------------------------------------


def test_host_headers_are_split_strictly() -> None:
    assert split_host("LocalHost:8000") == ("localhost", 8000)
    assert split_host("[::1]:80") == ("::1", 80) and split_host("127.0.0.1") == ("127.0.0.1", None)
    for bad in ("", "::1", "a:b", "localhost:0", "localhost:70000", "x y", "evil.example/x", "u@localhost"):
        assert split_host(bad) is None, bad


def test_an_origin_is_same_only_with_scheme_host_and_port_equal() -> None:
    here = ("127.0.0.1", 8000)
    assert same_origin("http://127.0.0.1:8000", "http", here)
    assert same_origin("http://localhost", "http", ("localhost", None))
    assert same_origin("http://localhost:80", "http", ("localhost", None))
    for other in ("null", "http://evil.example", "http://localhost:8000", "https://127.0.0.1:8000",
                  "http://127.0.0.1:8001", "http://127.0.0.1:8000/path", "file://", ""):
        assert not same_origin(other, "http", here), other


# --- the token at start-up -------------------------------------------------------------------


@pytest.mark.parametrize("token,says", [("", "is empty"), ("0123456789", "is 10 characters"),
                                        (" " + TOKEN, "whitespace")])
def test_an_empty_or_short_token_is_refused_by_the_settings(make_settings: Callable[..., Settings], token: str,
                                                            says: str) -> None:
    with pytest.raises(ConfigError) as err:
        make_settings(LYRA_SERVER__API_TOKEN=token)
    assert "server.api_token" in str(err.value) and "LYRA_SERVER__API_TOKEN" in str(err.value)
    assert says in str(err.value)
    assert not token.strip() or token.strip() not in str(err.value)  # the secret is not echoed


def test_allowed_hosts_from_the_environment_are_a_list(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(LYRA_SERVER__ALLOWED_HOSTS="Lyra.lan, 192.168.1.5:8000 fe80::1")
    assert settings.server.allowed_hosts == ("lyra.lan", "192.168.1.5:8000", "[fe80::1]")
    with pytest.raises(ConfigError, match="no scheme or path"):
        make_settings(LYRA_SERVER__ALLOWED_HOSTS="http://lyra.lan/")


@pytest.mark.slow  # a `lyra serve` process, refused before it loads a model
@pytest.mark.parametrize("token", ["", "0123456789"])
def test_serve_with_an_empty_or_short_token_exits_and_never_listens(tmp_path: Path, token: str) -> None:
    port = free_port()
    done = subprocess.run([sys.executable, "-m", "lyra_local", "serve", "--port", str(port)], capture_output=True,
                          text=True, timeout=120, env=lyra_env(tmp_path, LYRA_SERVER__API_TOKEN=token))
    assert done.returncode != 0
    assert "server.api_token" in done.stderr and "LYRA_SERVER__API_TOKEN" in done.stderr, done.stderr
    assert "secrets.token_urlsafe" in done.stderr and "Traceback" not in done.stderr
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0
    assert not (tmp_path / "data").exists()  # it stopped before touching anything


# --- fast: the app on fakes --------------------------------------------------------------------


def test_the_guard_on_the_app_built_with_fakes(make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings()) as client:
        assert client.get("/health").status_code == 200  # Host: 127.0.0.1
        refused = client.get("/api/sessions", headers={"Host": "attacker.example"})
        assert refused.status_code == 421
        error = refused.json()["error"]
        assert "attacker.example" in error["message"] and "server.allowed_hosts" in error["hint"]
        assert client.get("/health", headers={"Host": "attacker.example"}).status_code == 421
        assert client.get("/", headers={"Host": "localhost:1"}).status_code == 200
        evil = client.post("/api/sessions", json={"name": "evil"}, headers={"Origin": "http://evil.example"})
        assert evil.status_code == 403 and "http://evil.example" in evil.json()["error"]["message"]
        assert client.post("/api/sessions", json={}, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
        assert client.post("/api/sessions", json={}, headers={"Sec-Fetch-Site": "same-site"}).status_code == 403
        assert client.get("/api/sessions").json()["sessions"] == []
        own = client.post("/api/sessions", json={"name": "mine"},
                          headers={"Origin": "http://127.0.0.1", "Sec-Fetch-Site": "same-origin"})
        assert own.status_code == 201
        # Two Origin headers are not one same origin.
        twice = client.post("/api/sessions", json={}, headers=[("Origin", "http://127.0.0.1"),
                                                                ("Origin", "http://evil.example")])
        assert twice.status_code == 403


def test_the_bind_address_is_a_name_the_guard_answers_to(make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings(LYRA_SERVER__HOST="192.168.1.5")) as client:
        assert client.get("/health", headers={"Host": "192.168.1.5:8000"}).status_code == 200
        assert client.get("/health", headers={"Host": "192.168.1.6:8000"}).status_code == 421
    with fake_client(make_settings(LYRA_SERVER__HOST="0.0.0.0")) as client:
        assert client.get("/health", headers={"Host": "0.0.0.0:8000"}).status_code == 421


def test_an_allowed_host_with_a_port_allows_that_port_only(make_settings: Callable[..., Settings]) -> None:
    with fake_client(make_settings(LYRA_SERVER__ALLOWED_HOSTS="lyra.lan:8000")) as client:
        assert client.get("/health", headers={"Host": "lyra.lan:8000"}).status_code == 200
        assert client.get("/health", headers={"Host": "lyra.lan:9000"}).status_code == 421


# --- a real `lyra serve` on 127.0.0.1 ----------------------------------------------------------


@pytest.fixture(scope="module")
def serving() -> Serving:
    return Serving(CONFIG + "[dream]\nenabled = false\n")


@pytest.mark.slow
@pytest.mark.models
@pytest.mark.parametrize("path", ["/api/export", "/api/sessions", "/api/dream/events?after=0&follow=false",
                                  "/health", "/"])
def test_a_foreign_host_is_refused_on_reads(served: Served, path: str) -> None:
    resp = httpx.get(served.url + path, headers={"Host": "attacker.example"})
    assert resp.status_code == 421
    assert "server.allowed_hosts" in resp.json()["error"]["hint"]
    assert b"PK" not in resp.content[:2]  # no export zip came back


@pytest.mark.slow
@pytest.mark.models
def test_loopback_names_and_a_configured_host_are_served(served: Served) -> None:
    port = served.url.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost", f"lyra.test:{port}", "LYRA.TEST"):
        assert httpx.get(served.url + "/api/sessions", headers={"Host": host}).status_code == 200, host
    export = httpx.get(served.url + "/api/export", headers={"Host": f"localhost:{port}"})
    assert export.status_code == 200 and export.content[:2] == b"PK"


@pytest.mark.slow
@pytest.mark.models
def test_cross_site_writes_are_refused_and_change_nothing(served: Served) -> None:
    before = httpx.get(served.url + "/api/dream/events?after=0&follow=false").json()["events"]
    last_pass = httpx.get(served.url + "/api/dream").json()["last_pass"]
    sessions = httpx.get(served.url + "/api/sessions").json()["sessions"]
    for origin in ("http://evil.example", "null", f"http://localhost:{served.url.rsplit(':', 1)[1]}"):
        for path in ("/api/dream?force=true", "/admin/reload", "/api/sessions"):
            resp = httpx.post(served.url + path, json={"name": "x"}, headers={"Origin": origin})
            assert resp.status_code == 403, (origin, path)
            assert resp.json()["error"]["type"] == "cross_origin"
    upload = httpx.put(served.url + "/api/import?filename=x.jsonl", content=b'{"id": "s", "messages": []}\n',
                       headers={"Origin": "http://evil.example"})
    assert upload.status_code == 403
    time.sleep(1.0)  # a pass, had one started, would have logged by now
    assert httpx.get(served.url + "/api/dream/events?after=0&follow=false").json()["events"] == before
    assert httpx.get(served.url + "/api/dream").json()["last_pass"] == last_pass
    assert httpx.get(served.url + "/api/sessions").json()["sessions"] == sessions
    assert not list((Path(served.config).parent / "data" / "imports").glob("*"))


@pytest.mark.slow
@pytest.mark.models
def test_same_origin_and_originless_writes_are_served(served: Served) -> None:
    own = {"Origin": served.url, "Sec-Fetch-Site": "same-origin"}
    created = httpx.post(served.url + "/api/sessions", json={"name": "from the page"}, headers=own)
    assert created.status_code == 201
    session = created.json()["id"]
    assert httpx.patch(f"{served.url}/api/sessions/{session}", json={"name": "renamed"},
                       headers=own).status_code == 200
    assert httpx.delete(f"{served.url}/api/sessions/{session}",
                        headers={"Origin": "http://evil.example"}).status_code == 403
    assert httpx.delete(f"{served.url}/api/sessions/{session}").status_code == 200  # no Origin: a script
    assert httpx.post(served.url + "/admin/reload", headers=own).status_code == 200
    started = httpx.post(served.url + "/api/dream?force=true", headers=own)
    assert started.status_code == 202 and started.json()["started"]
    deadline = time.monotonic() + 60
    while not httpx.get(served.url + "/api/dream/events?after=0&follow=false").json()["events"]:
        assert time.monotonic() < deadline, "the same-origin dream pass never logged"
        time.sleep(0.3)


@pytest.mark.slow
@pytest.mark.models
def test_a_reload_applies_a_new_allowed_host(served: Served) -> None:
    assert httpx.get(served.url + "/health", headers={"Host": "other.test"}).status_code == 421
    served.config.write_text(CONFIG.replace('["lyra.test"]', '["lyra.test", "other.test"]'))
    try:
        refused = httpx.post(served.url + "/admin/reload", headers={"Origin": "http://other.test"})
        assert refused.status_code == 403
        assert httpx.get(served.url + "/health", headers={"Host": "other.test"}).status_code == 421
        assert httpx.post(served.url + "/admin/reload").status_code == 200
        assert httpx.get(served.url + "/health", headers={"Host": "other.test"}).status_code == 200
    finally:
        served.config.write_text(CONFIG)
        httpx.post(served.url + "/admin/reload")


@pytest.mark.slow
@pytest.mark.models
def test_a_24_character_token_serves_and_requests_without_it_get_401(tmp_path: Path) -> None:
    with serve_lyra(tmp_path, lyra_env(tmp_path, LYRA_SERVER__API_TOKEN=TOKEN)) as served:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(served.url + "/api/sessions").status_code == 401
        wrong = {"Authorization": "Bearer " + TOKEN[:-1]}
        assert httpx.get(served.url + "/api/sessions", headers=wrong).status_code == 401
        assert httpx.get(served.url + "/api/sessions", headers=auth).status_code == 200
        # The guard comes first: the token does not make a foreign Host or a cross-site write acceptable.
        assert httpx.get(served.url + "/api/export", headers={**auth, "Host": "attacker.example"}).status_code == 421
        evil = httpx.post(served.url + "/api/dream", headers={**auth, "Origin": "http://evil.example"})
        assert evil.status_code == 403
        assert httpx.post(served.url + "/api/sessions", json={}, headers=auth).status_code == 201
    assert TOKEN not in served.log.read_text() and json.dumps(TOKEN) not in served.log.read_text()
