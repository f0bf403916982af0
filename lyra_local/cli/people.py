"""``lyra people``: the household from the terminal (the owner adds, resets and removes people; anyone sets
their own password).

The owner manages people, not their minds: nothing here reads what anyone said. A removal says what it will
forget in numbers only, asks, and goes through the same forget as the People page (``person_removal.py``).
Secrets are read without echo (``getpass``), or one line from standard input with ``--secret-stdin`` for
scripts; never from the command line, where other users of the box could read them in the process list.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import sys
from collections.abc import Iterator

from ..config import Settings, load_settings
from ..errors import LyraError
from ..passwords import check_secret, hash_secret
from ..people import chosen
from ..person_removal import finish_opened, opened_alone, remove_opened
from ..store.held import Held, held
from ..store.household import Household, Kind, Person

BUSY = "while `lyra serve` runs, remove them on its People page; else stop those processes first"


class NotOwner(LyraError):
    status_code = 403


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = sub.add_parser("people", help="the household: list, add, reset or remove people; set your password")
    verbs = parser.add_subparsers(dest="verb", metavar="ACTION", required=True)
    p = verbs.add_parser("list", help="who lives with this Lyra")
    p.set_defaults(run=run_list)
    p = verbs.add_parser("add", help="add a person (the owner); asks for their password, or a child's PIN")
    p.add_argument("name")
    p.add_argument("--child", action="store_true", help="a child: a PIN of 4-8 digits will do, and they read "
                                                         "the household memory without editing it")
    _secret_option(p)
    p.set_defaults(run=run_add)
    p = verbs.add_parser("reset", help="choose a new password (or PIN) for someone (the owner); their logins end")
    p.add_argument("name")
    _secret_option(p)
    p.set_defaults(run=run_reset)
    p = verbs.add_parser("remove", help="remove a person and forget everything they said (the owner)")
    p.add_argument("name")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(run=run_remove)
    p = verbs.add_parser("rename", help="change your own name, as --person (default: the owner, who is called "
                                        "'Owner' or companion.user_name until they choose)")
    p.add_argument("name", help="the new name: the one typed at the login from now on")
    p.set_defaults(run=run_rename)
    p = verbs.add_parser("passwd", help="set your own password (or PIN), as --person (default: the owner)")
    _secret_option(p)
    p.set_defaults(run=run_passwd)


def _secret_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--secret-stdin", action="store_true",
                   help="read the password (or PIN) as one line from standard input, for scripts")


@contextlib.contextmanager
def acting(settings: Settings, name: str | None, *, owner: bool) -> Iterator[tuple[Household, Person]]:
    """The household and the person this command acts as (``--person``, default the owner); ``owner``:
    refused unless that person is the household's owner."""
    with chosen(settings, name, "household") as (household, person):
        if owner and not person.owner:
            raise NotOwner(f"{person.name} is not the household's owner: only the owner manages people",
                           hint="leave out --person (the owner is the default), or ask the owner")
        yield household, person


def read_secret(kind: Kind, from_stdin: bool, whose: str) -> str:
    """A password (or a child's PIN) typed twice without echo, or one line of standard input."""
    what = "PIN or password" if kind == "child" else "password"
    if from_stdin:
        secret = sys.stdin.readline().rstrip("\r\n")
    else:
        if not sys.stdin.isatty():
            raise LyraError(f"no terminal to type {whose} {what} on", hint="pipe it in with --secret-stdin")
        secret = getpass.getpass(f"{whose} {what}: ")
        if getpass.getpass(f"{whose} {what} again: ") != secret:
            raise LyraError("the two did not match: nothing was changed", hint="type the same twice")
    check_secret(kind, secret)
    return secret


def run_list(args: argparse.Namespace) -> int:
    with acting(load_settings(args.config), args.person, owner=False) as (household, _):
        for p in household.people():
            role = "owner" if p.owner else p.kind
            login = "password set" if p.has_secret else "no password"
            print(f"{p.name}\t{role}\t{login}\tsince {p.created_at[:10]}")
        for p in household.people(removing=True):
            print(f"{p.name}\tremoval unfinished\t`lyra people remove {p.name}` finishes it")
    return 0


def run_add(args: argparse.Namespace) -> int:
    kind: Kind = "child" if args.child else "adult"
    with acting(load_settings(args.config), args.person, owner=True) as (household, owner):
        household.can_add()  # before asking for their password
        household.name_free(args.name)  # before asking for their password
        secret = read_secret(kind, args.secret_stdin, f"{args.name}'s")
        person = household.add(args.name, kind, hash_secret(secret))
    print(f"added {person.name} ({kind}): they log in with that name and "
          f"{'PIN or password' if kind == 'child' else 'password'}; their memory is their own")
    return 0


def run_reset(args: argparse.Namespace) -> int:
    with acting(load_settings(args.config), args.person, owner=True) as (household, _):
        person = household.named(args.name)
        secret = read_secret(person.kind, args.secret_stdin, f"{person.name}'s new")
        household.logins.set_secret(person.id, hash_secret(secret))
    print(f"{person.name} has a new {'PIN or password' if person.kind == 'child' else 'password'}; "
          "their logins on every device ended (their API tokens still work)")
    return 0


def run_passwd(args: argparse.Namespace) -> int:
    with acting(load_settings(args.config), args.person, owner=False) as (household, person):
        secret = read_secret(person.kind, args.secret_stdin, f"{person.name}'s new")
        household.logins.set_secret(person.id, hash_secret(secret))
    print(f"{person.name}'s password is set; their logins on other devices ended")
    return 0


def run_rename(args: argparse.Namespace) -> int:
    with acting(load_settings(args.config), args.person, owner=False) as (household, person):
        renamed = household.rename(person.id, args.name)
    print(f"{person.name} is now called {renamed.name}: they log in with that name")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    with acting(load_settings(args.config), args.person, owner=True) as (household, owner):
        leaving = household.leaving(args.name) if household.by_name(args.name) is None else None
        if leaving is not None:  # a removal cut short: finished, with nothing left to ask
            with opened_alone(household, leaving, BUSY) as store:
                finish_opened(household, leaving, store)
            print(f"finished removing {leaving.name}: their memory is forgotten and their folder deleted")
            return 0
        person = household.removable(household.named(args.name).id)
        with opened_alone(household, person, BUSY) as store:
            counts = held(store) if store is not None else Held(0, 0, 0)
            tokens = len(household.tokens.of(person.id))
            theirs, after = household.shared.by(person.id)
            print(f"removing {person.name} forgets everything they said to Lyra and everything built from it: "
                  f"{counts.conversations} conversation(s), {counts.messages} message(s), {counts.memories} "
                  f"memories, their {theirs} version(s) of the household memory, and ends their {tokens} API "
                  "token(s) and their logins")
            if after:
                print(f"{after} version(s) of the household memory others saved after theirs stay as saved and may "
                      "still hold words of theirs (edit the household memory to take them out)")
            if not args.yes and not _confirmed(f"Remove {person.name} for good? [y/N] "):
                print("nobody was removed")
                return 0
            remove_opened(household, person, store)
    print(f"removed {person.name}: their memory is forgotten and their folder deleted")
    return 0


def _confirmed(question: str) -> bool:
    if not sys.stdin.isatty():
        raise LyraError("not removing anyone without confirmation", hint="add --yes")
    return input(question).strip().lower() in ("y", "yes")
