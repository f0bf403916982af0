"""`lyra mcp` driven by the official MCP SDK's own client over stdio, as a coding agent would."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from lyra_local.memory import Memory
from lyra_local.store import Store

from .conftest import MODELS_DIR, base_env

TOOLS = {"sitrep", "recall", "remember", "world_read", "world_propose", "instance_register", "instance_heartbeat",
         "instance_complete", "lock_acquire", "lock_renew", "lock_release", "lock_check"}


def payload(result: Any) -> Any:
    assert not result.isError, result.content
    if result.structuredContent is not None:
        content = result.structuredContent
        return content.get("result", content) if isinstance(content, dict) and set(content) == {"result"} else content
    return json.loads(result.content[0].text) if result.content[0].text[:1] in "[{" else result.content[0].text


@pytest.mark.slow
def test_an_mcp_client_lists_tools_recalls_and_registers_an_instance_seen_in_sitrep(
        tmp_path: Path, embedder: Any) -> None:
    data = tmp_path / "data"
    store = Store(data)
    session = store.sessions.create("garden")
    Memory(store, embedder).remember(session.id, "user", "The tomatoes on the balcony need water every morning")
    store.close()
    env = {**base_env(tmp_path), "LYRA_DATA_DIR": str(data), "LYRA_MODELS_DIR": str(MODELS_DIR)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "lyra_local", "mcp", "--agent", "coder"],
                                   env=env)

    async def talk() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tools = {t.name for t in (await client.list_tools()).tools}
            hits = payload(await client.call_tool("recall", {"query": "balcony tomatoes water"}))
            instance = payload(await client.call_tool("instance_register", {"summary": "refactoring the importer"}))
            beat = payload(await client.call_tool("instance_heartbeat", {"instance_id": instance["id"],
                                                                         "message": "tests green"}))
            lock = payload(await client.call_tool("lock_acquire", {"resource": "repo/main", "ttl_s": 120}))
            note = payload(await client.call_tool("remember", {"content": "Sam wants small commits"}))
            proposal = payload(await client.call_tool("world_propose", {"content": "# Now\n- refactor", "reason": "x"}))
            sitrep = payload(await client.call_tool("sitrep", {}))
            return {"tools": tools, "hits": hits, "instance": instance, "beat": beat, "lock": lock, "note": note,
                    "proposal": proposal, "sitrep": sitrep}

    got = asyncio.run(asyncio.wait_for(talk(), 120))
    assert got["tools"] == TOOLS
    assert "tomatoes" in got["hits"][0]["content"]
    assert got["beat"]["ok"] and got["lock"]["ok"] and got["lock"]["lease"]["holder"] == "agent:coder"
    assert got["note"]["author"] == "agent:coder" and got["proposal"]["status"] == "proposed"
    assert "refactoring the importer" in got["sitrep"] and "repo/main by agent:coder" in got["sitrep"]

    out = subprocess.run([sys.executable, "-m", "lyra_local", "sitrep"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"[running] agent {got['instance']['id']}: agent:coder: refactoring the importer — tests green" in out.stdout
    assert "Proposed changes waiting for review" in out.stdout and "agent:coder" in out.stdout
    store = Store(data)
    assert [e.content for e in store.exchanges.history(got["note"]["session_id"])] == ["Sam wants small commits"]
    store.close()
