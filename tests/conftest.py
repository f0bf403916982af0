"""Shared fixtures: isolated settings, a store and a memory on a temporary data
directory, the real tiny models (once per session), and real llama.cpp server
processes on loopback. The web fixtures every module shares (``client``, ``served``, ``browser``, ``page``)
are in tests/web_fixtures.py, loaded from here.

A missing model file or dependency fails the test with what to run; it never
skips, so a green run always means the real components were exercised.

Marks say what a test needs (tests/test_markers.py holds every test to them):
``models`` loads the real tiny models from models/ (the GGUF files, or the
English parsing pipeline), ``slow`` starts a
process or a browser, or is long. A test using one of the model fixtures below
is marked for it here; a test that loads the models another way (``serve_lyra``,
a ``lyra`` process, ``CHAT_GGUF``) is marked in its own file.

``--gpu-layers N`` (or ``PYTEST_GPU_LAYERS=N`` in the environment) runs the real models of these
fixtures with N layers on the GPU (-1: all, "auto": as many as fit): the GPU check
(scripts/gpu_check.sh) runs ``pytest -m models --gpu-layers -1``. Without it nothing changes: the
fixtures build their settings from a private environment, so the developer's LYRA_* never reach them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import settings as hypothesis_settings

from lyra_local.config import DEFAULT_CHAT_FILE, DEFAULT_EMBED_FILE, LocalModel, Settings, load_settings
from lyra_local.llm.local import LocalChatModel, LocalEmbedder
from lyra_local.memory import Memory
from lyra_local.modelfiles.fetch import PARSER
from lyra_local.parser import Parser, load_parser
from lyra_local.store import Store

from .fakes import FakeEmbedder

REPO = Path(__file__).resolve().parents[1]
MODELS_DIR = REPO / "models"
CHAT_GGUF = MODELS_DIR / DEFAULT_CHAT_FILE
EMBED_GGUF = MODELS_DIR / DEFAULT_EMBED_FILE
EMBED_SOURCE = MODELS_DIR / "sources" / "all-MiniLM-L6-v2"
PARSER_DIR = MODELS_DIR / PARSER.filename

# Conversations written outside this project (tests/real_data/) are not the repository's to hold: collected only
# when their folder is given (`make test-real-data`), so a bare clone passes `make test`.
collect_ignore = [] if os.environ.get("LYRA_REAL_DATA") else ["real_data"]

# Property-based tests (hypothesis): no example database in the tree, no deadline (the
# machine is shared), and in CI the same examples on every run, so a red build can be reproduced.
hypothesis_settings.register_profile(
    "lyra", database=None, deadline=None,
    derandomize=os.environ.get("CI", "").lower() in ("1", "true", "yes"))
hypothesis_settings.load_profile("lyra")

# A run started in the background (`make test &`, nohup, some CI runners) inherits SIGINT ignored, and so would
# every process the tests start: the tests that press Ctrl-C (a chat reply, a pull) need it delivered, as a
# person's terminal does. A Python handler here is the default again in each program the tests exec.
signal.signal(signal.SIGINT, signal.default_int_handler)

# The web fixtures (client, served, browser, page and the small fixtures a module overrides to configure them).
pytest_plugins = ("tests.web_fixtures",)

# The session fixtures that load the real models, and those of them that are a server process.
MODEL_FIXTURES = frozenset({"chat_model", "embedder", "parser", "chat_server", "embed_server"})
PROCESS_FIXTURES = frozenset({"chat_server", "embed_server"})


# The GPU switch: the option sets the variable (not LYRA_*: `lyra` refuses LYRA_* names it does not know), so
# that every process the suite starts sees it too.
GPU_LAYERS_ENV = "PYTEST_GPU_LAYERS"
LOCAL_ROLES = ("chat", "summary", "embed", "rerank")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--gpu-layers", default=None, metavar="N",
                     help='n_gpu_layers for every local model the fixtures load (-1 all, "auto"); default: the '
                          f"settings' own (${GPU_LAYERS_ENV} sets it too)")


def pytest_configure(config: pytest.Config) -> None:
    layers = config.getoption("--gpu-layers")
    if layers is not None:
        try:
            LocalModel.model_validate({"path": "check.gguf", "n_gpu_layers": layers})
        except ValueError as exc:
            raise pytest.UsageError(f"--gpu-layers {layers}: must be -1, 0, a number of layers or auto") from exc
        os.environ[GPU_LAYERS_ENV] = str(layers)


def gpu_layers() -> int | str | None:
    """The switch's value: None (off), an int, or "auto"."""
    value = os.environ.get(GPU_LAYERS_ENV)
    if value is None or value == "auto":
        return value
    return int(value)


def offloaded(settings: Settings) -> Settings:
    """``settings`` with the switch's n_gpu_layers on every local role (unchanged when it is off)."""
    layers = gpu_layers()
    if layers is None:
        return settings
    roles = {name: getattr(settings.models, name) for name in LOCAL_ROLES}
    update = {name: spec.model_copy(update={"n_gpu_layers": layers})
              for name, spec in roles.items() if isinstance(spec, LocalModel)}
    return settings.model_copy(update={"models": settings.models.model_copy(update=update)})


def gpu_env(toml: str = "", env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The LYRA_MODELS__<ROLE>__N_GPU_LAYERS variables that carry the switch into a `lyra` process whose
    config is ``toml`` and environment ``env``: for each local role only (a server role, ``same_as`` or an
    absent re-ranker would refuse the key). Empty when the switch is off."""
    layers = gpu_layers()
    if layers is None:
        return {}
    try:
        tables = tomllib.loads(toml).get("models", {})
    except tomllib.TOMLDecodeError:  # a test of a broken config: `lyra` refuses it before any model loads
        tables = {}
    out = {}
    for role in LOCAL_ROLES:
        prefix = f"LYRA_MODELS__{role.upper()}__"
        table = tables.get(role) if isinstance(tables, dict) else None
        keys = {**(table if isinstance(table, dict) else {}),
                **{name.removeprefix(prefix).lower(): value for name, value in (env or {}).items()
                   if name.startswith(prefix)}}
        present = role in ("chat", "embed") or "path" in keys  # summary is same_as chat, rerank off, unless given
        if present and "same_as" not in keys and keys.get("backend", "local") == "local":
            out[f"{prefix}N_GPU_LAYERS"] = str(layers)
    return out


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test for what its fixtures (direct or through other fixtures) need."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & MODEL_FIXTURES and item.get_closest_marker("models") is None:
            item.add_marker(pytest.mark.models)
        if used & PROCESS_FIXTURES and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


def run_script(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python path args...``, as `make` runs a check, its output captured (it may fail: the caller reads it)."""
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=120,
                          check=False)


def require_file(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make test`, which fetches the default models first")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def base_env(tmp: Path) -> dict[str, str]:
    """An environment with no LYRA_* from the developer's shell and a private HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LYRA_")}
    env.update({"HOME": str(tmp / "home"), "XDG_CONFIG_HOME": str(tmp / "home" / ".config"),
                "XDG_DATA_HOME": str(tmp / "home" / ".local" / "share")})
    return env


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    """``make_settings(toml_text, **env)``: settings from a temporary lyra.toml."""

    def make(toml: str = "", **env: str) -> Settings:
        config = tmp_path / "lyra.toml"
        config.write_text(toml)
        # The scheduled dream cycle stays off unless a test turns it on: it would use the models in the background.
        merged = {"LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
                  "LYRA_DREAM__ENABLED": "false", **env}
        return offloaded(load_settings(config, env=merged))

    return make


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A real store on a fresh data directory (``tmp_path / "data"``, as ``make_settings`` has it), closed after."""
    with contextlib.closing(Store(tmp_path / "data")) as opened:
        yield opened


@pytest.fixture
def memory(store: Store) -> Memory:
    """A ``Memory`` on ``store`` with the scripted ``FakeEmbedder`` (``memory.embedder``)."""
    return Memory(store, FakeEmbedder())


def default_spec(role: str) -> LocalModel:
    """The default settings' local model for ``role`` ("chat", "embed"), with the GPU switch applied."""
    settings = offloaded(load_settings(None, env={"LYRA_MODELS_DIR": str(MODELS_DIR),
                                                  "LYRA_DATA_DIR": "/tmp/lyra-unused"}))
    spec = getattr(settings.models, role)
    assert isinstance(spec, LocalModel)
    return spec


@pytest.fixture(scope="session")
def chat_model() -> Iterator[LocalChatModel]:
    spec = default_spec("chat")
    model = LocalChatModel(require_file(CHAT_GGUF), spec.model_copy(update={"sampling": spec.sampling.model_copy(
        update={"seed": 42, "temperature": 0.0})}))
    yield model
    model.close()


@pytest.fixture(scope="session")
def embedder() -> Iterator[LocalEmbedder]:
    model = LocalEmbedder(require_file(EMBED_GGUF), default_spec("embed"))
    yield model
    model.close()


@pytest.fixture(scope="session")
def parser() -> Parser:
    """spaCy's English pipeline from models/ (fetched and verified like the GGUF models), loaded once."""
    require_file(PARSER_DIR / "config.cfg")
    return load_parser(MODELS_DIR)


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Until ``condition()`` holds, asked every 2 ms; the test fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not so after {timeout} s"
        time.sleep(0.002)


def wait_until_up(proc: subprocess.Popen[bytes], url: str, log_path: Path, timeout: float = 60.0) -> None:
    """Until ``url`` answers 200; ``RuntimeError`` with the log's tail if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server did not come up: {log_path.read_text()[-2000:]}")


class LlamaServer:
    """A real llama.cpp server process (llama-cpp-python's) serving one model on loopback."""

    def __init__(self, model: Path, alias: str, log_path: Path, **model_settings: object) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.alias = alias
        self.log_path = log_path
        self.config_path = log_path.with_suffix(".json")
        layers = gpu_layers()
        if isinstance(layers, int):  # llama_cpp.server takes a number only ("auto" is Lyra's)
            model_settings = {"n_gpu_layers": layers, **model_settings}
        self.config_path.write_text(json.dumps({
            "host": "127.0.0.1", "port": self.port, "interrupt_requests": False,
            "models": [{"model": str(model), "model_alias": alias, "verbose": False, **model_settings}],
        }))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        with self.log_path.open("ab") as log:  # the child keeps its own copy of the handle
            self.proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--config_file",
                                          str(self.config_path)], stdout=log, stderr=subprocess.STDOUT)
        wait_until_up(self.proc, f"{self.url}/v1/models", self.log_path, timeout)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def ensure_running(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.start()


@pytest.fixture(scope="session")
def chat_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = LlamaServer(require_file(CHAT_GGUF), "smollm2", tmp_path_factory.mktemp("srv") / "chat.log",
                         n_ctx=2048)
    server.start()
    yield server
    server.kill()


@pytest.fixture(scope="session")
def embed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = LlamaServer(require_file(EMBED_GGUF), "minilm", tmp_path_factory.mktemp("srv") / "embed.log",
                         embedding=True, n_ctx=512, n_batch=256, n_ubatch=256)
    server.start()
    yield server
    server.kill()


class Served:
    """A running `lyra serve` process: its URL, its config file and its log."""

    def __init__(self, proc: subprocess.Popen[str], url: str, config: Path, log: Path) -> None:
        self.proc, self.url, self.config, self.log = proc, url, config, log


@contextlib.contextmanager
def serve_lyra(tmp_path: Path, env: dict[str, str], toml: str = "") -> Iterator[Served]:
    """`lyra serve` in its own process on a free loopback port, as `make run` starts it."""
    require_file(CHAT_GGUF)
    port = free_port()
    config = tmp_path / "lyra.toml"
    config.write_text(toml)
    log = tmp_path / "serve.log"
    env = {**env, **gpu_env(toml, env)}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "lyra_local", "--config", str(config), "serve", "--port",
                                 str(port)], env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
    try:
        yield Served(proc, url, config, log)
    finally:
        stop_process(proc)


def stop_process(proc: subprocess.Popen[str]) -> None:
    """Ask a served process to stop, and kill it if it has not within 20 s (a generation still running on a loaded
    box), so that a slow test leaves no process behind to fail a later test when it is collected."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=20)


@contextlib.contextmanager
def fake_client(settings: Settings, *, chat: object = None, embed: object = None) -> Iterator[TestClient]:
    """The real app (store, scheduler, routes) on scripted fake models, through FastAPI's test client."""
    from lyra_local.llm.registry import Models
    from lyra_local.web import create_app

    from .fakes import FakeChatModel

    models = Models(settings, chat=chat or FakeChatModel(), embed=embed or FakeEmbedder())  # type: ignore[arg-type]
    with TestClient(create_app(settings, models=models), base_url="http://127.0.0.1") as client:
        yield client
