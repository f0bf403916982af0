"""Acting as one person of the household: whose memory a command or a request opens, and with what settings.

The web app binds each request to a person (``web/auth.py``); a command
chooses one here (``lyra --person NAME``). Either way the person's runtime
opens their own store and nobody else's: there is no query that could forget
to ask whose rows it reads.
"""

from __future__ import annotations

import contextlib
import getpass
import hmac
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from .config import TOKEN_ENV, Settings
from .errors import LyraError
from .passwords import verify_secret
from .store.household import Household, Person
from .store.household import exists as household_exists

Need = Literal["memory", "household"]
FIRST_NAME = "Owner"  # the first person's name until they choose one (Settings → People)


class NotProven(LyraError):
    """``--person`` names someone the command could not prove it acts for (``prove``)."""

    status_code = 401


class ChoosePerson(LyraError):
    """A memory command in a household of several people, without ``--person``."""

    status_code = 400


def first_person(household: Household, settings: Settings) -> Person:
    """The owner; created now, with the data directory's own memory as theirs, if this Lyra is new."""
    return household.ensure_first(settings.companion.user_name or FIRST_NAME)


def choose(household: Household, settings: Settings, name: str | None, need: Need) -> Person:
    """The person ``name`` names, once proven (``prove``); without one: the only person, else the owner for a
    household command, else an error naming the choice (a memory command must never guess whose memory to
    open)."""
    owner = first_person(household, settings)
    if name is not None:
        person = household.named(name)
        prove(household, settings, person)
        return person
    people = household.people()
    if len(people) == 1 or need == "household":
        return owner
    raise ChoosePerson(f"this household has {len(people)} people: whose memory? "
                       f"({', '.join(p.name for p in people)})",
                       hint="say it with --person NAME, e.g. `lyra --person " + people[-1].name + " ...`")


@contextlib.contextmanager
def chosen(settings: Settings, name: str | None, need: Need) -> Iterator[tuple[Household, Person]]:
    """The household, open for the block, and the person a command acts as (``choose``)."""
    household = Household(settings.data_dir)
    try:
        yield household, choose(household, settings, name, need)
    finally:
        household.close()


def prove(household: Household, settings: Settings, person: Person) -> None:
    """In a household of several people, acting as ``person`` (``lyra --person NAME``) needs what a login
    needs: one of their API tokens in ``$LYRA_TOKEN`` (``server.api_token`` for the owner), or their password
    (or PIN) typed on a terminal. This keeps a command from opening someone's memory for whoever types it; it
    cannot keep the files from the account Lyra runs under (README: what the administrator can read)."""
    if len(household.people()) < 2 or not person.has_secret:
        return  # alone, or someone with nothing to prove it with
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        holder = first_person(household, settings) if is_bootstrap_token(settings, token) else \
            household.tokens.person_of(token)
        if holder is None or holder.id != person.id:
            raise NotProven(f"${TOKEN_ENV} is not a token of {person.name}'s (unknown, revoked or someone else's)",
                            hint=f"set it to one of {person.name}'s tokens, or unset it and type their password")
        return
    if not on_terminal():
        raise NotProven(f"acting as {person.name} in a household of several people needs their password (typed on "
                        f"a terminal) or one of their API tokens in ${TOKEN_ENV}",
                        hint=f"run it on a terminal, or `export {TOKEN_ENV}=lyra_...` (Tokens, `lyra tokens create`)")
    secret = getpass.getpass(f"{person.name}'s password (or PIN): ")
    if not verify_secret(secret, household.logins.secret_of(person.id)):
        raise NotProven(f"that is not {person.name}'s password (or PIN): nothing was opened",
                        hint="forgotten, the owner resets it (`lyra people reset NAME`)")


def on_terminal() -> bool:
    """Whether a password can be asked for (typed without echo) rather than read from a pipe."""
    return sys.stdin.isatty()


def is_bootstrap_token(settings: Settings, token: str) -> bool:
    """Whether ``token`` is the configured ``server.api_token``: the owner's bootstrap credential (the web's
    ``Authorization`` header, ``lyra mcp --token``)."""
    configured = settings.server.api_token
    return configured is not None and hmac.compare_digest(token.encode(), configured.get_secret_value().encode())


def as_person(settings: Settings, person: Person) -> Settings:
    """The settings a person's companion runs with: everyone but the first person is called by their own
    name (the first keeps ``companion.user_name`` from the configuration, as a one-person Lyra used it)."""
    if not person.home:
        return settings
    companion = settings.companion.model_copy(update={"user_name": person.name})
    return settings.model_copy(update={"companion": companion})


def shared_reader(household: Household) -> Callable[[], str | None]:
    """What every person's context reads of the household memory: its latest version."""
    def read() -> str | None:
        version = household.shared.current()
        return version.content if version is not None and version.content.strip() else None

    return read


class PersonChoice:
    """The person a command acts as, chosen when their memory is first needed: a command that never touches
    the memory opens nothing (not even the household), one that does opens only that person's store."""

    def __init__(self, settings: Settings, name: str | None, need: Need) -> None:
        self.settings = settings
        self.name = name
        self.need = need
        self._lock = threading.Lock()
        self._household: Household | None = None
        self._person: Person | None = None

    def person(self) -> Person:
        with self._lock:
            if self._person is None:
                household = Household(self.settings.data_dir)
                try:
                    self._person = choose(household, self.settings, self.name, self.need)
                except BaseException:
                    household.close()
                    raise
                self._household = household
            return self._person

    @property
    def household(self) -> Household:
        self.person()
        assert self._household is not None
        return self._household

    def store_dir(self) -> Path:
        if self._alone():
            return self.settings.data_dir
        return self.household.person_dir(self.person())

    def shared(self) -> str | None:
        return None if self._alone() else shared_reader(self.household)()

    def person_settings(self) -> Settings:
        """The settings the person's companion runs with (``as_person``)."""
        return self.settings if self._alone() else as_person(self.settings, self.person())

    def _alone(self) -> bool:
        """A data directory with no household yet, asked for no one by name: its memory is its first person's,
        read without creating ``household.db`` (a full or read-only disk still lets a command read)."""
        return self.name is None and self._person is None and not household_exists(self.settings.data_dir)

    def close(self) -> None:
        with self._lock:
            if self._household is not None:
                self._household.close()
