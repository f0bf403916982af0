"""``lyra tokens``: a person's API tokens for the OpenAI route, ``lyra mcp`` and scripts, each acting as them.

A token is a key to one person's memory, so this never guesses whose: with several people it needs
``--person`` (as memory commands do). A new token is printed once; only its hash is kept
(``store/household.py``), so a lost one is revoked and replaced, never shown again.
"""

from __future__ import annotations

import argparse
import sys

from ..config import load_settings
from ..people import chosen


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("tokens", help="your API tokens (as --person): list, create, revoke")
    verbs = parser.add_subparsers(dest="verb", metavar="ACTION", required=True)
    p = verbs.add_parser("list", help="your tokens: id, name, when made and last used (never the token itself)")
    p.set_defaults(run=run_list)
    p = verbs.add_parser("create", help="a new token acting as you, printed once")
    p.add_argument("name", nargs="?", default="token", help="what it is for (default: token)")
    p.set_defaults(run=run_create)
    p = verbs.add_parser("revoke", help="revoke one of your tokens at once")
    p.add_argument("id", type=int, help="its id, as `lyra tokens list` shows it")
    p.set_defaults(run=run_revoke)


def run_list(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with chosen(settings, args.person, "memory") as (household, person):
        tokens = household.tokens.of(person.id)
    if not tokens:
        print(f"{person.name} has no API tokens (`lyra tokens create NAME` makes one)")
    for token in tokens:
        print(f"#{token.id}\t{token.name}\tmade {token.created_at[:16]}\t"
              f"last used {token.last_used_at[:16] if token.last_used_at else 'never'}")
    return 0


def run_create(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with chosen(settings, args.person, "memory") as (household, person):
        token, raw = household.tokens.create(person.id, args.name)
    print(raw, flush=True)  # alone on standard output: `TOKEN=$(lyra tokens create ci)`
    print(f"token #{token.id} \u201c{token.name}\u201d acts as {person.name}: keep it secret, it is shown only now "
          f"(`lyra tokens revoke {token.id}` ends it)", file=sys.stderr)
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    settings = load_settings(args.config)
    with chosen(settings, args.person, "memory") as (household, person):
        household.tokens.revoke(person.id, args.id)
    print(f"revoked {person.name}'s token #{args.id}: it is refused from now on")
    return 0
