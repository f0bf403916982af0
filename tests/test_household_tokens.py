"""Personal API tokens act as their person: the OpenAI route driven by the real `openai` client, and
`lyra mcp` driven by the MCP SDK's own client; a revoked or unknown token is refused, and `server.api_token` is
the owner."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from lyra_local.config import Settings
from lyra_local.llm.registry import Models
from lyra_local.memory import Memory
from lyra_local.passwords import hash_secret
from lyra_local.store import Store
from lyra_local.store.household import Household
from lyra_local.web import create_app

from .conftest import MODELS_DIR, base_env
from .fakes import FakeChatModel, FakeEmbedder
from .test_mcp import payload
from .threaded_server import serve_in_thread

CONFIG = '[companion]\nuser_name = "Ada"\n'
ADA, SAM = ("Ada", "ada-password-1"), ("Sam", "sam-password-1")


def echoing(messages: Any, options: Any) -> str:
    return "Noted."


def make_app(settings: Settings) -> FastAPI:
    models = Models(settings, chat=FakeChatModel(respond=echoing), embed=FakeEmbedder())  # type: ignore[arg-type]
    return create_app(settings, models=models)


def household_with_tokens(app: FastAPI) -> tuple[TestClient, dict[str, str], dict[str, int]]:
    """Ada (the owner) adds Sam; each makes a token under Tokens. Returns Ada's logged-in client, the tokens and
    their ids, by name."""
    ada = TestClient(app, base_url="http://127.0.0.1")
    assert ada.put("/api/me/secret", json={"secret": ADA[1]}).status_code == 200
    assert ada.post("/api/people", json={"name": SAM[0], "kind": "adult", "secret": SAM[1]}).status_code == 200
    sam = TestClient(app, base_url="http://127.0.0.1")
    assert sam.post("/api/auth/login", json={"name": SAM[0], "secret": SAM[1]}).status_code == 200
    tokens, ids = {}, {}
    for name, client in (("Ada", ada), ("Sam", sam)):
        made = client.post("/api/tokens", json={"name": "openai client"}).json()
        tokens[name], ids[name] = made["secret"], made["token"]["id"]
        assert tokens[name].startswith("lyra_")
    return ada, tokens, ids


def two_people_chat_through_openai(base_url: str, http: httpx.Client, ada: TestClient,
                                   tokens: dict[str, str], ids: dict[str, int]) -> None:
    """Each token's conversation is its person's alone; once revoked, the token is refused (401)."""
    for name, marker in (("Ada", "ADA-MARKER the roses"), ("Sam", "SAM-MARKER the bike")):
        client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=tokens[name], http_client=http, max_retries=0)
        reply = client.chat.completions.create(model="lyra", messages=[{"role": "user", "content": marker}])
        assert reply.choices[0].message.content == "Noted."
    seen = {}
    for name in ("Ada", "Sam"):
        bearer = {"Authorization": f"Bearer {tokens[name]}"}
        sessions = http.get(f"{base_url}/api/sessions", headers=bearer).json()["sessions"]
        assert len(sessions) == 1, sessions
        seen[name] = sessions[0]["id"]
        text = http.get(f"{base_url}/api/sessions/{seen[name]}/messages", headers=bearer).text
        mine, theirs = ("ADA-MARKER", "SAM-MARKER") if name == "Ada" else ("SAM-MARKER", "ADA-MARKER")
        assert mine in text and theirs not in text
    other = http.get(f"{base_url}/api/sessions/{seen['Sam']}/messages",
                     headers={"Authorization": f"Bearer {tokens['Ada']}"})
    assert "SAM-MARKER" not in other.text  # Sam's conversation's id names nothing of his for Ada (ids are per store)
    assert ada.delete(f"/api/tokens/{ids['Ada']}").status_code == 200
    revoked = openai.OpenAI(base_url=f"{base_url}/v1", api_key=tokens["Ada"], http_client=http, max_retries=0)
    with pytest.raises(openai.AuthenticationError) as refused:
        revoked.chat.completions.create(model="lyra", messages=[{"role": "user", "content": "still me?"}])
    assert refused.value.status_code == 401 and "revoked" in str(refused.value)
    still = http.get(f"{base_url}/api/sessions", headers={"Authorization": f"Bearer {tokens['Sam']}"})
    assert still.status_code == 200 and [s["id"] for s in still.json()["sessions"]] == [seen["Sam"]]


def test_the_openai_client_acts_as_the_person_of_its_token(make_settings: Callable[..., Settings]) -> None:
    app = make_app(make_settings(CONFIG))
    with TestClient(app, base_url="http://127.0.0.1"):  # the lifespan runs
        ada, tokens, ids = household_with_tokens(app)
        two_people_chat_through_openai("http://127.0.0.1", TestClient(app, base_url="http://127.0.0.1"), ada,
                                       tokens, ids)


@pytest.mark.slow
def test_the_openai_client_acts_as_the_person_of_its_token_over_loopback(
        make_settings: Callable[..., Settings]) -> None:
    app = make_app(make_settings(CONFIG))
    with serve_in_thread(app) as url:
        ada, tokens, ids = household_with_tokens(app)
        with httpx.Client(timeout=30) as http:
            two_people_chat_through_openai(url, http, ada, tokens, ids)


@pytest.fixture
def box(tmp_path: Path, embedder: Any) -> Iterator[tuple[dict[str, str], dict[str, str]]]:
    """A household on disk: Ada (the owner) and Sam, each remembering something of their own, each with a token;
    yields the environment of a `lyra` process on it and the tokens by name."""
    data = tmp_path / "data"
    household = Household(data)
    try:
        ada = household.ensure_first("Ada")
        household.logins.set_secret(ada.id, hash_secret(ADA[1]))
        sam = household.add("Sam", "adult", hash_secret(SAM[1]))
        tokens = {}
        for person, text in ((ada, "ADA-MARKER The roses on the balcony need pruning in March"),
                             (sam, "SAM-MARKER The bike in the shed has a flat front tyre")):
            store = Store(household.person_dir(person))
            try:
                session = store.sessions.create("notes")
                Memory(store, embedder).remember(session.id, "user", text)
            finally:
                store.close()
            tokens[person.name] = household.tokens.create(person.id, "agent")[1]
    finally:
        household.close()
    config = tmp_path / "lyra.toml"
    config.write_text(CONFIG + '[server]\napi_token = "owner-bootstrap-token"\n')
    yield ({**base_env(tmp_path), "LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR),
            "LYRA_CONFIG": str(config)}, tokens)


def mcp_recall(env: dict[str, str], args: list[str], query: str) -> list[str]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "lyra_local", "mcp", *args], env=env)

    async def talk() -> list[str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            hits = payload(await client.call_tool("recall", {"query": query}))
            return [hit["content"] for hit in hits]

    return asyncio.run(asyncio.wait_for(talk(), 120))


@pytest.mark.slow
def test_lyra_mcp_acts_as_the_person_of_its_token(box: tuple[dict[str, str], dict[str, str]]) -> None:
    env, tokens = box
    sams = " ".join(mcp_recall({**env, "LYRA_TOKEN": tokens["Sam"]}, [], "MARKER bike roses balcony shed"))
    adas = " ".join(mcp_recall(env, ["--token", tokens["Ada"]], "MARKER bike roses balcony shed"))
    owners = " ".join(mcp_recall({**env, "LYRA_TOKEN": "owner-bootstrap-token"}, [], "MARKER roses bike"))
    assert "SAM-MARKER" in sams and "ADA-MARKER" not in sams
    assert "ADA-MARKER" in adas and "SAM-MARKER" not in adas
    assert "ADA-MARKER" in owners and "SAM-MARKER" not in owners  # server.api_token is the owner


@pytest.mark.slow
def test_lyra_mcp_refuses_a_revoked_or_unknown_token_and_asks_whose_memory_without_one(
        box: tuple[dict[str, str], dict[str, str]]) -> None:
    env, tokens = box
    household = Household(Path(env["LYRA_DATA_DIR"]))
    try:
        sam = household.by_name("Sam")
        assert sam is not None
        household.tokens.revoke(sam.id, household.tokens.of(sam.id)[0].id)
    finally:
        household.close()
    for extra, args in (({"LYRA_TOKEN": tokens["Sam"]}, []), ({}, ["--token", "lyra_not-a-token"])):
        done = subprocess.run([sys.executable, "-m", "lyra_local", "mcp", *args], env={**env, **extra},
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, done.stderr
        assert "unknown or was revoked: no memory was opened" in done.stderr and "Traceback" not in done.stderr
        assert done.stdout == ""  # not a word of the protocol: nothing was served
    done = subprocess.run([sys.executable, "-m", "lyra_local", "mcp"], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "whose memory?" in done.stderr and "--person" in done.stderr
