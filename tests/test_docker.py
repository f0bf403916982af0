"""The Docker files, checked statically (no Docker engine runs here), and their install step run for real.

The compose file must wire what it claims: GPU reservations on the model
servers, health checks, restart policies, named volumes, the same lyra.toml
and ``LYRA_*`` configuration, and commands that exist — Lyra's are parsed by
Lyra's own CLI parser. The Dockerfiles must install with the repository's own
``make setup``; the slow test runs that very command into a fresh directory.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from lyra_local.cli import build_parser
from lyra_local.config import DEFAULT_CHAT_FILE, DEFAULT_EMBED_FILE, ServerModel, load_settings
from lyra_local.modelfiles.fetch import PARSER, tree_sha256
from lyra_local.web.open_paths import needs_no_login

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
GPU_SERVICES = {"llm", "embed"}
LYRA_SERVICES = {"lyra", "dream", "lyra-cpu"}
INSTALL = "make setup"
IMAGE_PATHS = {"VENV": "/opt/lyra", "MODELS_DIR": "/models", "EXTRAS": ""}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yml").read_text(encoding="utf-8"))
    return data


def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = compose["services"]
    return out


def command(service: dict[str, Any]) -> list[str]:
    cmd = service["command"]
    return list(cmd) if isinstance(cmd, list) else shlex.split(cmd)


def defaults(text: str) -> str:
    """Compose's ``${VAR:-default}`` with the defaults filled in (what runs with an empty .env)."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", text)


def flag(args: list[str], name: str) -> str:
    return defaults(args[args.index(name) + 1])


def dockerfile(name: str) -> list[list[tuple[str, str]]]:
    """A Dockerfile as stages of (instruction, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DOCKER / name).read_text(encoding="utf-8"))
    stages: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((instruction.upper(), " ".join(rest.split())))
    return stages


def test_every_service_has_a_health_check_and_a_restart_policy(compose: dict[str, Any]) -> None:
    assert set(services(compose)) == GPU_SERVICES | LYRA_SERVICES
    for name, service in services(compose).items():
        assert service["restart"] == "unless-stopped", name
        check = service["healthcheck"]
        assert check["test"][0] == "CMD" and len(check["test"]) > 1, name
        assert {"interval", "timeout", "retries", "start_period"} <= set(check), name


def test_model_servers_reserve_the_gpu_and_nothing_else_does(compose: dict[str, Any]) -> None:
    for name, service in services(compose).items():
        devices = service.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices")
        if name in GPU_SERVICES:
            assert devices and devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"], name
        else:
            assert devices is None, f"{name} does no GPU work and must not hold a GPU"


def test_profiles_split_the_gpu_box_from_the_cpu_only_machine(compose: dict[str, Any]) -> None:
    profiles = {name: s["profiles"] for name, s in services(compose).items()}
    assert {n for n, p in profiles.items() if p == ["gpu"]} == {"llm", "embed", "lyra", "dream"}
    assert {n for n, p in profiles.items() if p == ["cpu"]} == {"lyra-cpu"}


def test_models_and_memory_live_in_named_volumes(compose: dict[str, Any]) -> None:
    assert {"models", "data"} <= set(compose["volumes"])
    for name, service in services(compose).items():
        mounts = {m.split(":")[1]: m.split(":")[0] for m in service["volumes"]}
        assert mounts["/models"] == "models", name
        if name in LYRA_SERVICES:
            assert mounts["/data"] == "data", name
            env = service["environment"]
            assert env["LYRA_DATA_DIR"] == "/data" and env["LYRA_MODELS_DIR"] == "/models", name


def test_model_servers_serve_what_the_lyra_config_points_at(compose: dict[str, Any]) -> None:
    s = services(compose)
    config = DOCKER / "lyra.gpu.toml"
    for name in ("lyra", "dream"):
        mounts = {m.split(":")[1]: m.split(":")[0] for m in s[name]["volumes"]}
        assert (DOCKER / mounts[s[name]["environment"]["LYRA_CONFIG"]]).resolve() == config.resolve()
        assert s[name]["depends_on"]["llm"]["condition"] == "service_healthy"
    settings = load_settings(config, env={"LYRA_DATA_DIR": "/data", "LYRA_MODELS_DIR": "/models"})
    chat, embed = settings.role_spec("chat"), settings.role_spec("embed")
    assert isinstance(chat, ServerModel) and isinstance(embed, ServerModel)
    assert settings.role_spec("summary") == chat
    for spec, service in ((chat, "llm"), (embed, "embed")):
        url = urlparse(spec.base_url)
        args = command(s[service])
        assert args[0] == "llama-server" and url.hostname == service
        assert str(url.port) == flag(args, "--port") and flag(args, "--host") == "0.0.0.0"
        assert str(url.port) in s[service]["healthcheck"]["test"][-1]
    llm, emb = command(s["llm"]), command(s["embed"])
    assert flag(llm, "--model") == f"/models/{DEFAULT_CHAT_FILE}"  # fetched into the image's /models
    assert flag(emb, "--model") == f"/models/{DEFAULT_EMBED_FILE}"
    assert "--embeddings" in emb and flag(emb, "--pooling") == "mean"
    assert settings.dream.concurrency == int(flag(llm, "--parallel"))
    assert chat.n_ctx == int(flag(llm, "--ctx-size")) // int(flag(llm, "--parallel"))  # no prompt outgrows a slot


def test_lyra_commands_exist_in_the_package(compose: dict[str, Any]) -> None:
    parser = build_parser()
    for name in LYRA_SERVICES:
        service = services(compose)[name]
        for args in (command(service), service["healthcheck"]["test"][1:]):
            if args[0] == "lyra":
                parsed = parser.parse_args(args[1:])
                assert callable(parsed.run), args
            else:  # a Python one-liner probing the HTTP health route, which needs no token
                assert args[0].startswith("python") and "/health" in args[-1] and needs_no_login("/health")
    assert services(compose)["lyra"]["environment"]["LYRA_DREAM__ENABLED"] == "false"  # the dream service dreams
    assert command(services(compose)["dream"])[:3] == ["lyra", "dream", "--loop"]


def test_the_app_needs_a_token_and_listens_on_loopback_only(compose: dict[str, Any]) -> None:
    for name in ("lyra", "lyra-cpu"):
        service = services(compose)[name]
        assert re.fullmatch(r"\$\{LYRA_API_TOKEN:\?.+\}", service["environment"]["LYRA_SERVER__API_TOKEN"]), name
        assert all(p.startswith("127.0.0.1:") for p in service["ports"]), name


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.cuda"])
def test_dockerfiles_are_multi_stage_non_root_with_volumes_and_a_health_check(name: str) -> None:
    stages = dockerfile(name)
    assert len(stages) >= 2 and stages[0][0][1].endswith("AS build")
    final = dict(stages[-1])
    assert final["USER"] not in ("root", "0")
    assert "/data" in final["VOLUME"] and "/models" in final["VOLUME"]
    assert "/health" in final["HEALTHCHECK"] and "8000" in final["HEALTHCHECK"]
    assert final["CMD"] == '["lyra", "serve"]'
    env = final["ENV"]
    assert "LYRA_DATA_DIR=/data" in env and "LYRA_MODELS_DIR=/models" in env and "PATH=/opt/lyra/bin" in env
    for instruction, args in stages[0]:
        if instruction == "COPY":
            assert (REPO / args.split()[0]).exists(), args


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.cuda"])
def test_dockerfiles_install_with_the_same_make_setup_as_ci(name: str) -> None:
    runs = " && ".join(args for instruction, args in dockerfile(name)[0] if instruction == "RUN")
    assert INSTALL in runs
    for key, value in IMAGE_PATHS.items():
        assert f"{key}={value}" in runs.split(INSTALL, 1)[1], key
    if name == "Dockerfile.cuda":
        env = dict(dockerfile(name)[0])["ENV"]
        assert "-DGGML_CUDA=on" in env
        assert "scripts/build_llama_server.sh /opt/llama-server" in runs
        assert os.access(REPO / "scripts" / "build_llama_server.sh", os.X_OK)
        copies = [args for instruction, args in dockerfile(name)[-1] if instruction == "COPY"]
        assert "--from=build /opt/llama-server/bin/llama-server /usr/local/bin/llama-server" in copies


def test_make_setup_honours_the_image_paths() -> None:
    """The Makefile's dry run with the images' variables installs without extras and fetches into /models."""
    dry = subprocess.run(["make", "-n", "-B", "setup", *(f"{k}={v}" for k, v in IMAGE_PATHS.items())],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    dry = " ".join(dry.replace("\\\n", " ").split())
    assert "/opt/lyra/bin/pip install --disable-pip-version-check -c constraints.txt -e '.'" in dry
    assert "/opt/lyra/bin/lyra models fetch --models-dir /models" in dry
    assert ".venv" not in dry


@pytest.mark.slow
def test_the_docker_install_step_runs(tmp_path: Path) -> None:
    """The Dockerfile's `make setup` for real, into a fresh virtualenv and models folder (pip's cache is warm)."""
    venv, models = tmp_path / "venv", tmp_path / "models"
    done = subprocess.run(["make", "setup", f"VENV={venv}", f"MODELS_DIR={models}", "EXTRAS=",
                           f"PYTHON={sys.executable}"], cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (models / DEFAULT_CHAT_FILE).stat().st_size > 50_000_000
    assert (models / DEFAULT_EMBED_FILE).stat().st_size > 20_000_000
    assert tree_sha256(models / PARSER.filename) == PARSER.member_sha256  # the parsing pipeline, unpacked and verified
    listed = subprocess.run([str(venv / "bin" / "lyra"), "models", "list"], capture_output=True, text=True,
                            env={**os.environ, "LYRA_MODELS_DIR": str(models), "LYRA_DATA_DIR": str(tmp_path)})
    assert listed.returncode == 0 and DEFAULT_CHAT_FILE in listed.stdout, listed.stderr
    playwright = subprocess.run([str(venv / "bin" / "python"), "-c", "import playwright"], capture_output=True)
    assert playwright.returncode != 0, "the image install must leave the test extras out"


def test_the_docker_check_is_wired_and_parses() -> None:
    """`make docker-check` runs scripts/docker_check.sh with the venv's Python; the script is valid bash and
    its probe starts (the run itself, minutes long, is recorded in docs/benchmarks.md, not part of make test)."""
    script = REPO / "scripts" / "docker_check.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True)
    dry = subprocess.run(["make", "-n", "docker-check"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "PY=.venv/bin/python scripts/docker_check.sh" in dry
    probe = subprocess.run([sys.executable, str(REPO / "scripts" / "docker_probe.py"), "--help"],
                           capture_output=True, text=True, check=True).stdout
    assert "--engine" in probe and "--image" in probe
