"""``lyra mcp``: serve one person's memory to a local agent over MCP (stdio).

The agent acts as the person of its API token (``--token``, or ``$LYRA_TOKEN`` so that the token stays out
of the process list): a personal token (``lyra_...``) is its person, ``server.api_token`` is the owner, and a
token that is unknown or revoked is refused before any memory opens. Without a token, ``--person`` (or the
only person) as for every memory command.
"""

from __future__ import annotations

import argparse
import logging
import os

from ..config import Settings, load_settings
from ..coord import Coordinator, agent_name
from ..errors import LyraError
from ..mcp_server import build_server, run_stdio
from ..people import as_person, choose, first_person, is_bootstrap_token
from ..runtime import open_runtime
from ..store.household import Household, Person

TOKEN_ENV = "LYRA_TOKEN"  # not a setting: config.NOT_SETTINGS must name it


class TokenRefused(LyraError):
    status_code = 401


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("mcp", help="serve your memory to a local agent over MCP (stdio)")
    p.add_argument("--agent", default="agent", help="name the writes are attributed to (default: agent)")
    p.add_argument("--token", metavar="TOKEN",
                   help=f"act as the person of this API token (default: ${TOKEN_ENV}, which keeps it out of the "
                        "process list); without one, --person or the only person")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    logging.getLogger().setLevel(logging.WARNING)  # stdout is the protocol: logs go to stderr only
    settings = load_settings(args.config, env={k: v for k, v in os.environ.items() if k != TOKEN_ENV})
    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is not None and args.person is not None:
        raise LyraError("a token already says whose memory this is: leave out --person",
                        hint=f"or leave out --token (and unset ${TOKEN_ENV})")
    household = Household(settings.data_dir)
    try:
        person = acting_as(household, settings, token, args.person)
        if token is not None:  # what opens the memory below proves the person with it (people.prove)
            os.environ[TOKEN_ENV] = token
        with open_runtime(settings, person=person.name) as runtime:
            coordinator = Coordinator(runtime.store, as_person(settings, person), runtime.memory)
            server = build_server(coordinator, agent_name(args.agent), person=person.name,
                                  still_allowed=lambda: still_acting_as(household, settings, token, person))
            run_stdio(server)  # FastMCP's stdio, with lone surrogates in requests repaired
    finally:
        household.close()
    return 0


def still_acting_as(household: Household, settings: Settings, token: str | None, person: Person) -> None:
    """Refuse the next call once the token was revoked or its person removed (checked on every call)."""
    if token is None or is_bootstrap_token(settings, token):
        return
    now = household.tokens.person_of(token)
    if now is None or now.id != person.id:
        raise TokenRefused("this API token was revoked (or its person removed): no more calls are answered",
                           hint="make a new one under Tokens in the web UI, or with `lyra tokens create`")


def acting_as(household: Household, settings: Settings, token: str | None, name: str | None) -> Person:
    """The person of ``token`` (refused if unknown or revoked), else the one ``name`` (or the rule) chooses."""
    if token is None:
        return choose(household, settings, name, "memory")
    if is_bootstrap_token(settings, token):
        return first_person(household, settings)  # the owner's bootstrap credential
    person = household.tokens.person_of(token)
    if person is None:
        raise TokenRefused("this API token is unknown or was revoked: no memory was opened",
                           hint="make a new one under Tokens in the web UI, or with `lyra tokens create`")
    return person
