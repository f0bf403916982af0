"""``lyra mcp``: serve Lyra's memory to a local agent over MCP (stdio)."""

from __future__ import annotations

import argparse
import logging

from ..config import load_settings
from ..coord import Coordinator, agent_name
from ..mcp_server import build_server, run_stdio
from ..runtime import open_runtime


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("mcp", help="serve the memory to a local agent over MCP (stdio)")
    p.add_argument("--agent", default="agent", help="name the writes are attributed to (default: agent)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    logging.getLogger().setLevel(logging.WARNING)  # stdout is the protocol: logs go to stderr only
    settings = load_settings(args.config)
    with open_runtime(settings) as runtime:
        server = build_server(Coordinator(runtime.store, settings, runtime.memory), agent_name(args.agent))
        run_stdio(server)  # FastMCP's stdio, with lone surrogates in requests repaired
    return 0
