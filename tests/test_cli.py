"""The `lyra` command as a user runs it: real processes, the real tiny models."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

from lyra_local.cli import main
from lyra_local.cli.serve import is_loopback
from lyra_local.memory import Memory
from lyra_local.store import Store

from .conftest import CHAT_GGUF, EMBED_GGUF, MODELS_DIR, Served, base_env, require_file, serve_lyra
from .fakes import FakeEmbedder
from .sse import sse_events

LYRA = [sys.executable, "-m", "lyra_local"]


def run_lyra(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LYRA, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**base_env(tmp_path), "LYRA_DATA_DIR": str(tmp_path / "data"), "LYRA_MODELS_DIR": str(MODELS_DIR),
            "LYRA_DREAM__ENABLED": "false"}


def test_doctor_with_a_bad_config_says_what_and_how(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "lyra.toml"
    config.write_text("[models.chat]\nn_gpu_layer = 5\n[server]\nport = 0\n")
    done = run_lyra("--config", str(config), "doctor", env=env)
    assert done.returncode != 0
    assert "models.chat.n_gpu_layer: unknown key" in done.stderr
    assert "server.port" in done.stderr and "greater than or equal to 1" in done.stderr
    assert "Traceback" not in done.stderr


def test_doctor_with_missing_models_points_at_fetch(tmp_path: Path, env: dict[str, str]) -> None:
    env["LYRA_MODELS_DIR"] = str(tmp_path / "empty")
    done = run_lyra("doctor", env=env)
    assert done.returncode == 1
    assert "[FAIL] models.chat" in done.stdout and "lyra models fetch" in done.stdout
    assert str(tmp_path / "empty") in done.stdout


@pytest.mark.models  # reads the default models' headers
def test_doctor_warns_of_gpu_layers_a_cpu_build_ignores(env: dict[str, str]) -> None:
    from lyra_local.llm.local import gpu_offload_supported

    done = run_lyra("doctor", "--no-load", env={**env, "LYRA_MODELS__CHAT__N_GPU_LAYERS": "-1"})
    assert done.returncode == 0, done.stdout + done.stderr  # a warning, not a failure
    warned = "[warn] models.chat: n_gpu_layers = -1, but this llama-cpp-python has no GPU offload" in done.stdout
    assert warned != gpu_offload_supported()  # on a GPU build, nothing to warn of
    assert "[warn] models.summary" not in done.stdout  # the summary is chat's model


@pytest.mark.slow
@pytest.mark.models
def test_doctor_loads_every_model(env: dict[str, str]) -> None:
    require_file(CHAT_GGUF)
    done = run_lyra("doctor", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[ok] models.chat: local" in done.stdout
    assert "[ok] models.summary: same instance as chat" in done.stdout
    assert "384-d vectors" in done.stdout
    assert "[ok] parser: en_core_web_sm 3.8.0 (spaCy 3.8." in done.stdout and "St James Hospital (FAC)" in done.stdout
    assert "[ok] gpu offload:" in done.stdout
    assert "[ok] memory: 0 session(s), 0 exchange(s)" in done.stdout
    assert done.stdout.startswith("checks:\n") and '"n_ctx"' not in done.stdout  # the checks first, no config
    configured = run_lyra("doctor", "--no-load", "--config", env=env)
    assert configured.returncode == 0, configured.stdout + configured.stderr
    checks, config = configured.stdout.split("\nresolved configuration:\n")
    assert checks.startswith("checks:\n") and '"n_ctx": 2048' in config  # the configuration after, when asked


@pytest.mark.slow
def test_doctor_checks_a_configured_server(tmp_path: Path, env: dict[str, str], chat_server) -> None:
    chat_server.ensure_running()
    config = tmp_path / "lyra.toml"
    config.write_text(f'[models.chat]\nbackend = "server"\nbase_url = "{chat_server.url}"\nmodel = "smollm2"\n'
                      f'n_ctx = 2048\n')
    done = run_lyra("--config", str(config), "doctor", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"[ok] models.chat: server {chat_server.url}" in done.stdout

    config.write_text('[models.chat]\nbackend = "server"\nbase_url = "http://127.0.0.1:9"\n')
    done = run_lyra("--config", str(config), "doctor", env=env)
    assert done.returncode == 1
    assert "[FAIL] models.chat: server http://127.0.0.1:9" in done.stdout and "unreachable" in done.stdout


def test_serve_refuses_open_bind_without_token(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LYRA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LYRA_MODELS_DIR", str(MODELS_DIR))
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "without an API token" in err and "api_token" in err


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")


@pytest.fixture
def served(tmp_path: Path, env: dict[str, str]) -> Iterator[Served]:
    """`lyra serve` in its own process, as `make run` starts it."""
    with serve_lyra(tmp_path, env, "[models.chat.sampling]\nmax_tokens = 48\n") as served:
        yield served


@pytest.mark.slow
@pytest.mark.models
def test_serve_answers_with_the_real_model_streaming_and_not(served: Served) -> None:
    client = OpenAI(base_url=f"{served.url}/v1", api_key="unused")
    assert [m.id for m in client.models.list()] == ["lyra"]

    reply = client.chat.completions.create(model="lyra", max_tokens=16,
                                           messages=[{"role": "user", "content": "Say hello."}])
    assert reply.choices[0].message.content.strip()
    assert reply.usage is not None and 0 < reply.usage.completion_tokens <= 16

    pieces = [chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
        model="lyra", max_tokens=16, stream=True, messages=[{"role": "user", "content": "Say hello."}])
        if chunk.choices]
    assert len([p for p in pieces if p]) > 1 and "".join(pieces).strip()


@pytest.mark.slow
@pytest.mark.models
def test_client_disconnect_stops_generation(served: Served) -> None:
    with httpx.stream("POST", f"{served.url}/v1/chat/completions", timeout=30, json={
            "stream": True, "max_tokens": 2000, "messages": [{"role": "user", "content": "Write a long essay."}]}) as r:
        for line in r.iter_lines():
            if '"content"' in line and '"content": ""' not in line:
                break  # got a real token: hang up
    # generation stopped: the single model lock is free, so a short request is answered at once
    started = time.monotonic()
    reply = httpx.post(f"{served.url}/v1/chat/completions", timeout=30, json={
        "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == 200
    assert time.monotonic() - started < 5
    # and what was said before the hang-up was kept
    session = httpx.get(f"{served.url}/api/sessions").json()["sessions"][0]
    history = httpx.get(f"{served.url}/api/sessions/{session['id']}/messages").json()["messages"]
    # the partial essay may be stored after "hi" arrived (the hang-up is noticed asynchronously)
    assert [m["content"] for m in history if m["role"] == "user"] == ["Write a long essay.", "hi"]
    replies = [m for m in history if m["role"] == "assistant"]
    assert len(replies) == 2 and all(m["content"].strip() for m in replies)


@pytest.mark.slow
@pytest.mark.models
def test_sighup_reloads_the_config(served: Served) -> None:
    before = httpx.post(f"{served.url}/v1/chat/completions", timeout=60, json={
        "messages": [{"role": "user", "content": "Tell me a long story."}], "temperature": 0}).json()
    assert before["usage"]["completion_tokens"] > 3
    served.config.write_text("[models.chat.sampling]\nmax_tokens = 3\n")
    served.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        after = httpx.post(f"{served.url}/v1/chat/completions", timeout=60, json={
            "messages": [{"role": "user", "content": "Tell me a long story."}], "temperature": 0}).json()
        if after["usage"]["completion_tokens"] <= 3:
            break
        time.sleep(0.5)
    assert after["usage"]["completion_tokens"] <= 3
    assert served.proc.poll() is None  # still serving


def test_models_list_shows_each_role(env: dict[str, str]) -> None:
    done = run_lyra("models", "list", env=env)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["chat", "summary", "embed"]
    assert all(os.fspath(MODELS_DIR) in line for line in lines)


@pytest.mark.models
def test_models_list_fails_on_a_broken_model_file(env: dict[str, str], tmp_path: Path) -> None:
    cut = tmp_path / "cut.gguf"
    with EMBED_GGUF.open("rb") as whole:
        cut.write_bytes(whole.read(1_000_000))
    done = run_lyra("models", "list", env={**env, "LYRA_MODELS__EMBED__PATH": str(cut)})
    assert done.returncode == 1
    assert "embed    local" in done.stdout and "BROKEN" in done.stdout and "is incomplete" in done.stderr


def broken_chat_model(tmp_path: Path, kind: str) -> Path:
    """A chat model file as a person ends up with one: missing, an HTML error page saved as .gguf, a download
    cut short."""
    path = tmp_path / f"{kind}.gguf"
    if kind == "html":
        path.write_text("<!doctype html><html><body>404 Not Found</body></html>")
    elif kind == "truncated":
        with CHAT_GGUF.open("rb") as whole:
            path.write_bytes(whole.read(2_000_000))
    return path


@pytest.mark.models
@pytest.mark.parametrize("kind", ["missing", "html", "truncated"])
def test_doctor_and_models_list_fail_on_a_broken_chat_model(env: dict[str, str], tmp_path: Path, kind: str) -> None:
    broken = {**env, "LYRA_MODELS__CHAT__PATH": str(broken_chat_model(tmp_path, kind))}
    doctor = run_lyra("doctor", "--no-load", env=broken)
    assert doctor.returncode == 1, doctor.stdout
    assert "[FAIL] models.chat" in doctor.stdout and "all good" not in doctor.stdout
    listed = run_lyra("models", "list", env=broken)
    assert listed.returncode == 1, listed.stdout
    assert "chat" in listed.stdout and ("MISSING" in listed.stdout or "BROKEN" in listed.stdout)


def test_error_output_has_no_traceback(tmp_path: Path, env: dict[str, str]) -> None:
    done = run_lyra("--config", str(tmp_path / "missing.toml"), "models", "list", env=env)
    assert done.returncode == 2
    assert "config file not found" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_recall_command_prints_json_hits(env: dict[str, str], tmp_path: Path, embedder) -> None:
    memory = Memory(Store(tmp_path / "data"), embedder)
    session = memory.store.sessions.create("pets")
    memory.remember(session.id, "user", "Our dog Bruno loves the beach.")
    memory.remember(session.id, "user", "The quarterly numbers look fine.")
    memory.store.close()

    done = run_lyra("recall", "Bruno at the seaside", "--k", "1", "--json", env=env)
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert [h["content"] for h in hits] == ["Our dog Bruno loves the beach."]
    assert set(hits[0]) >= {"kind", "id", "session_id", "role", "content", "created_at", "score"}

    text = run_lyra("recall", "Bruno", "--k", "1", env=env)
    assert "Our dog Bruno loves the beach." in text.stdout


@pytest.mark.slow
def test_reindex_switches_to_the_configured_embedding_model(env: dict[str, str], tmp_path: Path) -> None:
    old = Memory(Store(tmp_path / "data"), FakeEmbedder(name="old-model"))
    session = old.store.sessions.create("pets")
    for text in ["Our dog Bruno loves the beach.", "The quarterly numbers look fine."]:
        old.remember(session.id, "user", text)
    old.store.close()

    done = run_lyra("reindex", env=env)
    assert done.returncode == 0, done.stderr
    assert ("embedded 2 vector(s) (2 turn(s), 0 gist(s), 0 digest(s) lacked one); "
            "context view built for 0 stored turn(s); active embedding model: all-MiniLM-L6-v2.F16") in done.stdout
    store = Store(tmp_path / "data")
    assert store.get_meta("embed_model") == "all-MiniLM-L6-v2.F16"
    assert store.index("exchange", "all-MiniLM-L6-v2.F16").size == 2
    store.close()
    hits = json.loads(run_lyra("recall", "a puppy at the seaside", "--mode", "dense", "--k", "1", "--json",
                               env=env).stdout)
    assert hits[0]["content"] == "Our dog Bruno loves the beach."


@pytest.mark.slow
@pytest.mark.models
def test_streamed_chat_remembers_across_sessions(served: Served) -> None:
    api = f"{served.url}/api"
    garden = httpx.post(f"{api}/sessions", json={"name": "garden"}).json()
    with httpx.stream("POST", f"{api}/sessions/{garden['id']}/chat", timeout=60,
                      json={"message": "My sister Ana just adopted a parrot named Kiwi."}) as resp:
        got = sse_events(resp.iter_lines())
    assert got[0][0] == "stored" and got[-1][0] == "done"
    assert len([k for k, _ in got if k == "delta"]) > 1  # streamed token by token

    later = httpx.post(f"{api}/sessions", json={"name": "later"}).json()
    with httpx.stream("POST", f"{api}/sessions/{later['id']}/chat", timeout=60,
                      json={"message": "What kind of pet did Ana get?"}) as resp:
        got = sse_events(resp.iter_lines())
    reply_id = got[-1][1]["exchange_id"]
    trace = httpx.get(f"{api}/exchanges/{reply_id}/trace").json()
    recalled = [m["content"] for m in trace["memories"] if m["layer"] == "recalled"]
    assert "My sister Ana just adopted a parrot named Kiwi." in recalled

    # the reply is embedded in the background, after the stream ended
    deadline = time.monotonic() + 20
    reply = httpx.get(f"{api}/sessions/{later['id']}/messages").json()["messages"][-1]
    while time.monotonic() < deadline:
        hits = httpx.get(f"{api}/recall", params={"q": reply["content"], "k": 3, "mode": "dense"}).json()["hits"]
        if any(h["id"] == reply["id"] for h in hits):
            break
        time.sleep(0.3)
    assert any(h["id"] == reply["id"] for h in hits)


@pytest.mark.slow
@pytest.mark.models
def test_terminal_chat_streams_and_stores(env: dict[str, str], tmp_path: Path) -> None:
    require_file(CHAT_GGUF)
    done = subprocess.run([*LYRA, "chat", "--session", "Evening"], input="Hello, how are you?\n", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("lyra> ") and len(done.stdout.strip()) > len("lyra>")
    store = Store(tmp_path / "data")
    session = store.sessions.find(name="Evening")
    assert session is not None
    assert [e.role for e in store.exchanges.history(session.id)] == ["user", "assistant"]
    store.close()


@pytest.mark.slow
@pytest.mark.models
def test_terminal_chat_off_the_record_leaves_nothing(env: dict[str, str], tmp_path: Path) -> None:
    require_file(CHAT_GGUF)
    store = Store(tmp_path / "data")
    kept = store.sessions.create("Evening")  # the remembered session of that name is not the one used
    left = store.sessions.create("Evening", remember=False)  # nor is one off the record left behind
    assert store.sessions.find(name="Evening") == kept
    store.close()
    short = {**env, "LYRA_MODELS__CHAT__SAMPLING__MAX_TOKENS": "32"}  # a reply's length is not what is tested
    done = subprocess.run([*LYRA, "chat", "--session", "Evening", "--off-the-record"],
                          input="My locker code is marmosetvelvet.\n", env=short, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("lyra> ") and len(done.stdout.strip()) > len("lyra>")
    store = Store(tmp_path / "data")
    assert {s.id for s in store.sessions.list()} == {kept.id, left.id} and store.exchanges.history(kept.id) == []
    store.close()
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            assert b"marmosetvelvet" not in path.read_bytes(), path


def test_memory_lists_what_was_consolidated_with_its_sources(env: dict[str, str], tmp_path: Path) -> None:
    from lyra_local.store.exchanges import NewExchange

    store = Store(tmp_path / "data")
    session = store.sessions.create("moving day", created_at="2024-03-04T09:00:00+00:00")
    said = store.exchanges.add(NewExchange(session.id, "user", "I moved to Lisbon with my cat.",
                                           "2024-03-04T09:00:00+00:00"))
    store.exchanges.add(NewExchange(session.id, "assistant", "How exciting!", "2024-03-04T09:01:00+00:00"))
    gist = store.derived.put_gist(session.id, "Sam, 4 March 2024: “I moved to Lisbon with my cat.”", 2,
                                  method="extractive")
    store.derived.apply_facts(gist, [("home city", "Lisbon", said.id)], "2024-03-04T09:00:00+00:00")
    store.close()

    done = run_lyra("memory", "--sources", env=env)
    assert done.returncode == 0, done.stderr
    assert "gist #1  moving day  (extractive)" in done.stdout
    line = f"← 2024-03-04 · moving day · turn #{said.id} (user): I moved to Lisbon with my cat."
    assert done.stdout.count(line) == 2  # the gist quotes it, the fact is said in it
    assert "How exciting!" not in done.stdout  # an extractive gist shows the turns it quotes
    assert "fact #1  home city  (dream, new)" in done.stdout and "said 2024-03-04 in “moving day”" in done.stdout
    listed = json.loads(run_lyra("memory", "facts", "--json", env=env).stdout)
    assert [(f["label"], f["text"]) for f in listed] == [("home city", "Lisbon")] and "sources" not in listed[0]
    assert listed[0]["new"] is False and listed[0]["said"]["turn_id"] == said.id  # the listing above was a look

    assert run_lyra("memory", "facts", "--confirm", "1", env=env).returncode == 0
    assert "fact #1  home city  (user)" in run_lyra("memory", "facts", env=env).stdout
    assert run_lyra("memory", "facts", "--reject", "1", env=env).returncode == 0
    assert json.loads(run_lyra("memory", "facts", "--json", env=env).stdout) == []
    missing = run_lyra("memory", "facts", "--confirm", "1", env=env)
    assert missing.returncode != 0 and "no current fact 1" in missing.stderr
