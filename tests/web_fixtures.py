"""The web fixtures every test module shares (conftest.py loads this module as a plugin).

- ``client``: the real app on scripted fake models, through FastAPI's test client. Its lyra.toml is the
  ``app_toml`` fixture, its chat model the ``chat`` fixture and its embedder ``app_embedder``: a module that
  needs another overrides that one fixture, never ``client`` itself.
- ``served``: a `lyra serve` process with the real tiny model, one per module, configured by the module-scoped
  ``serve_toml`` fixture (``CONFIG`` below unless a module overrides it). A test using it carries the ``slow``
  and ``models`` marks in its own module (tests/test_markers.py holds it to that).
- ``browser`` (Debian's Chromium, driven by playwright, one per module) and ``page``: a fresh desktop-size page
  on ``served``, recording dialogs and page errors; ``page_settled`` (False unless overridden) waits for the
  network to be idle before the test starts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, Page, sync_playwright

from lyra_local.config import Settings

from .conftest import MODELS_DIR, Served, base_env, fake_client, serve_lyra
from .fakes import FakeChatModel, FakeEmbedder

CONFIG = """
[companion]
user_name = "Sam"
[dream]
enabled = false
summary_tokens = 64
[models.chat.sampling]
max_tokens = 48
seed = 42
"""


@pytest.fixture
def app_toml() -> str:
    """The lyra.toml of ``client``'s app."""
    return ""


@pytest.fixture
def chat() -> FakeChatModel:
    """The scripted chat model of ``client``'s app: ``chat.enqueue(...)`` scripts it, ``chat.history`` is what it
    was asked."""
    return FakeChatModel()


@pytest.fixture
def app_embedder() -> object:
    """The embedding model of ``client``'s app: the deterministic fake unless a module needs the real one."""
    return FakeEmbedder()


@pytest.fixture
def client(make_settings: Callable[..., Settings], app_toml: str, chat: FakeChatModel,
           app_embedder: object) -> Iterator[TestClient]:
    with fake_client(make_settings(app_toml), chat=chat, embed=app_embedder) as test_client:
        yield test_client


def chromium() -> str:
    path = os.environ.get("LYRA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("chromium is missing: `make test` installs Debian's chromium (apt-get install chromium)")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        yield instance
        instance.close()


def start(tmp_path: Path, config: str = CONFIG) -> Iterator[Served]:
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    with serve_lyra(tmp_path, env, config) as served:
        yield served


@pytest.fixture(scope="module")
def serve_toml() -> str:
    """The lyra.toml of the module's ``served``."""
    return CONFIG


@pytest.fixture(scope="module")
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           serve_toml: str) -> Iterator[Served]:
    yield from start(tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2]), serve_toml)


@contextlib.contextmanager
def opened(browser: Browser, url: str, *, settled: bool = False) -> Iterator[Page]:
    """A fresh page at ``url``, desktop size, recording native dialogs (dismissed) and page errors; none of
    those errors may have happened when it closes. ``settled``: wait until the network is idle first."""
    context = browser.new_context(viewport={"width": 1280, "height": 820})
    page = context.new_page()
    page.dialogs = []  # type: ignore[attr-defined]
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))  # type: ignore[attr-defined]
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: page.errors.append(str(e)))  # type: ignore[attr-defined]
    page.goto(url)
    if settled:
        page.wait_for_load_state("networkidle")
    yield page
    assert page.errors == []  # type: ignore[attr-defined]
    context.close()


@pytest.fixture
def page_settled() -> bool:
    """Whether ``page`` waits for the network to be idle before the test starts."""
    return False


@pytest.fixture
def page(browser: Browser, served: Served, page_settled: bool) -> Iterator[Page]:
    with opened(browser, served.url, settled=page_settled) as fresh:
        yield fresh
