"""An open stream ends with the login or token it was opened with: the live dream log opened with a
cookie stops after "Log out everywhere", after the owner resets that person's password and after that person's
removal, and one opened with a personal token stops once the token is revoked.

The real app served by uvicorn on scripted models; each stream is read in a thread of its own until it ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

import httpx
import pytest

from lyra_local.config import Settings
from lyra_local.llm.registry import Models
from lyra_local.web import create_app

from .fakes import FakeChatModel, FakeEmbedder
from .threaded_server import serve_in_thread

WAIT_S = 40.0  # the dream log pings every 15 s: a stream left open is seen as open well within this


class Stream:
    """``GET /api/dream/events`` followed in a thread; ``ended`` is set when the server ends the body."""

    def __init__(self, url: str, **client: object) -> None:
        self.ended = threading.Event()
        self.opened = threading.Event()
        self.client = httpx.Client(base_url=url, timeout=WAIT_S * 2, **client)  # type: ignore[arg-type]
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            with self.client.stream("GET", "/api/dream/events", params={"follow": "true"}) as answer:
                assert answer.status_code == 200
                self.opened.set()
                for _ in answer.iter_bytes():
                    pass
            self.ended.set()
        except httpx.HTTPError:  # closed by the test at its end
            pass


def login(url: str, name: str, secret: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=WAIT_S)
    assert client.post("/api/auth/login", json={"name": name, "secret": secret}).status_code == 200
    return client


@contextlib.contextmanager
def closing_all() -> Iterator[list[httpx.Client]]:
    """Clients closed at the end (an open stream would hold the server's shutdown)."""
    clients: list[httpx.Client] = []
    try:
        yield clients
    finally:
        for client in clients:
            client.close()


def test_a_stream_ends_when_its_login_or_token_does(make_settings: Callable[..., Settings],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    settings = make_settings('[companion]\nuser_name = "Ada"\n')
    models = Models(settings, chat=FakeChatModel(), embed=FakeEmbedder())  # type: ignore[arg-type]
    with serve_in_thread(create_app(settings, models=models)) as url, closing_all() as clients:
        ada = httpx.Client(base_url=url)
        clients.append(ada)
        assert ada.put("/api/me/secret", json={"secret": "ada-password-1"}).status_code == 200
        people = {}
        for name in ("Ben", "Cleo", "Dan"):
            added = ada.post("/api/people", json={"name": name, "secret": f"{name.lower()}-password-1"})
            people[name] = added.json()["person"]["id"]
        ben, cleo, dan = (login(url, n, f"{n.lower()}-password-1") for n in ("Ben", "Cleo", "Dan"))
        clients.extend((ben, cleo, dan))
        token = ben.post("/api/tokens", json={"name": "script"}).json()
        streams = {
            "Ben's cookie": Stream(url, cookies=dict(ben.cookies)),
            "Ben's token": Stream(url, headers={"Authorization": f"Bearer {token['secret']}"}),
            "Cleo's cookie": Stream(url, cookies=dict(cleo.cookies)),
            "Dan's cookie": Stream(url, cookies=dict(dan.cookies)),
        }
        ada_stream = Stream(url, cookies=dict(ada.cookies))
        clients.extend(s.client for s in (*streams.values(), ada_stream))
        assert all(s.opened.wait(WAIT_S) for s in (*streams.values(), ada_stream))

        assert ben.post("/api/auth/logout-everywhere").status_code == 200
        assert streams["Ben's cookie"].ended.wait(WAIT_S), "a stream outlived 'Log out everywhere'"
        assert not streams["Ben's token"].ended.is_set()  # a token is no login session: it goes on
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token['secret']}"}) as script:
            assert script.delete(f"/api/tokens/{token['token']['id']}").status_code == 200
        assert streams["Ben's token"].ended.wait(WAIT_S), "a stream outlived its revoked token"
        assert ada.put(f"/api/people/{people['Cleo']}/secret", json={"secret": "new-password-1"}).status_code == 200
        assert streams["Cleo's cookie"].ended.wait(WAIT_S), "a stream outlived a password reset"
        assert ada.delete(f"/api/people/{people['Dan']}").status_code == 200
        assert streams["Dan's cookie"].ended.wait(WAIT_S), "a stream outlived its person's removal"
        assert not ada_stream.ended.is_set()  # nobody else's stream ended with them
        assert ada.post("/api/auth/logout").status_code == 200  # "Log out" ends this browser's stream too
        assert ada_stream.ended.wait(WAIT_S), "a stream outlived its logout"
    assert "unexpected failure" not in caplog.text  # each ended as a stream ends, none by a crash
