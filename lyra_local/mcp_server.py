"""``lyra mcp``: Lyra's memory for local agents over the Model Context Protocol (stdio).

Built with the official ``mcp`` SDK. Local only by construction (stdio: the
agent starts this process). It serves one person's memory: the one ``lyra mcp``
chose (the person of its token, or ``--person``). Every write is attributed to the agent named with
``--agent`` (or per call): notes land in that agent's own session, world-state
changes are proposals for the user to review.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterable, AsyncIterator, Callable
from io import TextIOWrapper
from typing import Any, cast

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.stdio import stdio_server

from .coord import Coordinator
from .errors import LyraError
from .textsafe import well_formed

log = logging.getLogger(__name__)

INSTRUCTIONS = """Lyra is the user's long-term memory and the coordination point of their local processes.
Call sitrep first. Register an instance for your task, heartbeat while you work, complete it when done.
Take a lock before touching a shared resource; a refused lock says who holds it. Recall before asking
the user something they may have said already; remember what the user would want kept."""


def build_server(coordinator: Coordinator, agent: str, person: str | None = None,
                 still_allowed: Callable[[], None] | None = None) -> FastMCP:
    """The MCP server over one person's memory (``person``: their name, told to the agent). ``still_allowed``
    runs before every call and raises once the credential it was started with is no more (a revoked token,
    a removed person): the agent is refused from the next call on, not at its next start."""
    whose = f"\nThis is {person}'s memory and nobody else's: what you recall and remember is theirs." if person else ""
    mcp = FastMCP("lyra", instructions=INSTRUCTIONS + whose)
    calls = _Calls(coordinator, agent, still_allowed)
    _memory_tools(mcp, calls)
    _instance_tools(mcp, calls)
    _lock_tools(mcp, calls)
    return mcp


class _Calls:
    """What every tool shares: the coordinator, the agent a write is attributed to, and how one call runs."""

    def __init__(self, coordinator: Coordinator, agent: str, still_allowed: Callable[[], None] | None) -> None:
        self.coordinator = coordinator
        self.agent = agent
        self.still_allowed = still_allowed

    def who(self, name: str | None) -> str:
        return name or self.agent

    def safe(self, call: Any, *args: Any) -> Any:
        """Run one tool call; whatever fails becomes that call's error result, and the server goes on."""
        args = tuple(well_formed(a) if isinstance(a, str) else a for a in args)  # "\ud800" from JSON
        try:
            if self.still_allowed is not None:
                self.still_allowed()
            return call(*args)
        except LyraError as exc:  # a tool error the agent can read and act on
            raise ValueError(str(exc)) from exc
        except Exception as exc:
            # Logged to stderr (stdout is the protocol), with the traceback a user cannot act on.
            log.error("MCP tool %s failed", getattr(call, "__name__", call), exc_info=exc)
            raise ValueError(f"Lyra failed on this call ({type(exc).__name__}: {exc}); "
                             "the other tools still work") from exc


def _memory_tools(mcp: FastMCP, calls: _Calls) -> None:
    """The sitrep, recall and notes, and the world state (changes to it are proposals)."""
    @mcp.tool()
    def sitrep() -> str:
        """A short report: world state, running and stale instances, held locks, what changed recently."""
        return str(calls.safe(calls.coordinator.sitrep_text))

    @mcp.tool()
    def recall(query: str, k: int = 8) -> list[dict[str, Any]]:
        """Search the user's memory (vectors and full text fused); best first."""
        return list(calls.safe(calls.coordinator.recall, query, k))

    @mcp.tool()
    def remember(content: str, agent_name: str | None = None) -> dict[str, Any]:
        """Keep a note in the memory, attributed to this agent (its own session)."""
        return dict(calls.safe(calls.coordinator.remember, calls.who(agent_name), content))

    @mcp.tool()
    def world_read() -> dict[str, Any]:
        """The core memory (world state) as it stands, and the changes proposed for review."""
        return dict(calls.safe(calls.coordinator.world))

    @mcp.tool()
    def world_propose(content: str, reason: str, agent_name: str | None = None) -> dict[str, Any]:
        """Propose a new version of the whole world-state document; the user accepts or rejects it."""
        return dict(calls.safe(calls.coordinator.propose_world, calls.who(agent_name), content, reason))


def _instance_tools(mcp: FastMCP, calls: _Calls) -> None:
    """Registering a task as a running instance, its heartbeats and its end."""
    @mcp.tool()
    def instance_register(summary: str, kind: str = "agent", instance_id: str | None = None) -> dict[str, Any]:
        """Register this task as a running instance; returns its id for heartbeats."""
        return dict(calls.safe(calls.coordinator.register, kind, f"{calls.who(None)}: {summary}", instance_id))

    @mcp.tool()
    def instance_heartbeat(instance_id: str, message: str | None = None) -> dict[str, Any]:
        """Say the instance is alive, optionally with a progress entry."""
        return dict(calls.safe(calls.coordinator.heartbeat, instance_id, message))

    @mcp.tool()
    def instance_complete(instance_id: str, result: str, status: str = "done") -> dict[str, Any]:
        """Mark the instance finished with a one-line result (status done, failed or cancelled)."""
        return dict(calls.safe(calls.coordinator.complete, instance_id, result, status))


def _lock_tools(mcp: FastMCP, calls: _Calls) -> None:
    """Leases on shared resources, held by the agent (or a holder it names)."""
    @mcp.tool()
    def lock_acquire(resource: str, ttl_s: float = 300.0, note: str | None = None,
                     holder: str | None = None) -> dict[str, Any]:
        """Take a lease on a resource; if someone else holds it, ok is false and held_by says who."""
        return dict(calls.safe(calls.coordinator.acquire, resource, calls.who(holder), ttl_s, note))

    @mcp.tool()
    def lock_renew(resource: str, ttl_s: float = 300.0, holder: str | None = None) -> dict[str, Any]:
        """Extend a lease this agent holds."""
        return dict(calls.safe(calls.coordinator.renew, resource, calls.who(holder), ttl_s))

    @mcp.tool()
    def lock_release(resource: str, holder: str | None = None) -> dict[str, Any]:
        """Give a lease back."""
        return dict(calls.safe(calls.coordinator.release, resource, calls.who(holder)))

    @mcp.tool()
    def lock_check(resource: str) -> dict[str, Any]:
        """Whether a resource is leased, and by whom until when."""
        return dict(calls.safe(calls.coordinator.check, resource))


def run_stdio(mcp: FastMCP) -> None:
    """Serve ``mcp`` over stdio, as ``FastMCP.run("stdio")`` does, with requests made well formed first.

    The SDK parses each line with pydantic, which refuses a lone surrogate escape
    (``"\\ud800"``, valid JSON); the SDK then logs it and answers nothing, and the
    agent waits for ever. Such a line is re-encoded with U+FFFD in its place.
    """

    async def serve() -> None:
        stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
        async with stdio_server(cast(Any, _WellFormedLines(stdin))) as (read, write):
            server = mcp._mcp_server  # what FastMCP.run_stdio_async runs, on our stdin
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


class _WellFormedLines:
    """The lines of ``lines``, each JSON line holding a lone surrogate escape re-encoded without it."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            yield repair_line(line)


def repair_line(line: str) -> str:
    """``line`` with lone surrogates replaced, or as it was when it holds none (or is not JSON at all)."""
    if "\\ud" not in line.lower():
        return line
    try:
        return json.dumps(_well_formed_json(json.loads(line))) + "\n"
    except (ValueError, RecursionError):  # not JSON: left as it came, for the SDK to report
        return line


def _well_formed_json(value: Any) -> Any:
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [_well_formed_json(v) for v in value]
    if isinstance(value, dict):
        return {well_formed(k): _well_formed_json(v) for k, v in value.items()}
    return value
