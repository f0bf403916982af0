"""The web fixtures every test module shares (conftest.py loads this module as a plugin).

- ``client``: the real app on scripted fake models, through FastAPI's test client, built from the ``app_parts``
  fixture (its lyra.toml, chat model and embedder); ``chat`` is that chat model, for a test to script. A module
  that needs other parts overrides ``app_parts``, never ``client`` itself.
- ``served``: a `lyra serve` process with the real tiny model, one per module, configured by the module-scoped
  ``serving`` fixture (``CONFIG`` below unless a module overrides it). A test using it carries the ``slow``
  and ``models`` marks in its own module (tests/test_markers.py holds it to that).
- ``browser`` (Debian's Chromium, driven by playwright, one per module) and ``page``: a fresh desktop-size page
  on ``served``, recording dialogs and page errors (``serving.settled``: after the network is idle).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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


SAM = '[companion]\nuser_name = "Sam"\n'


@dataclass
class AppParts:
    """What ``client``'s app is built from: its lyra.toml, its chat model, its embedding model, and LYRA_*
    variables over ``make_settings``' own."""

    toml: str = ""
    chat: FakeChatModel = field(default_factory=FakeChatModel)
    embed: object = field(default_factory=FakeEmbedder)  # the deterministic fake unless a module needs the real one
    env: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def app_parts() -> AppParts:
    return AppParts()


@pytest.fixture
def chat(app_parts: AppParts) -> FakeChatModel:
    """The scripted chat model of ``client``'s app: ``chat.enqueue(...)`` scripts it, ``chat.history`` is what it
    was asked."""
    return app_parts.chat


@pytest.fixture
def client(make_settings: Callable[..., Settings], app_parts: AppParts) -> Iterator[TestClient]:
    settings = make_settings(app_parts.toml, **app_parts.env)
    with fake_client(settings, chat=app_parts.chat, embed=app_parts.embed) as test_client:
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


@dataclass(frozen=True)
class Serving:
    """How a module's ``served`` and ``page`` are set up: the server's lyra.toml, and whether a page waits for
    the network to be idle before its test starts."""

    toml: str = CONFIG
    settled: bool = False


@pytest.fixture(scope="module")
def serving() -> Serving:
    return Serving()


@pytest.fixture(scope="module")
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           serving: Serving) -> Iterator[Served]:
    yield from start(tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2]), serving.toml)


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
def page(browser: Browser, served: Served, serving: Serving) -> Iterator[Page]:
    with opened(browser, served.url, settled=serving.settled) as fresh:
        yield fresh
