"""Checking a login: the same work for every name, and failure limits no one can use to lock out someone else.

OWASP's "device cookies": a browser that logged in before carries a random
``lyra_device`` cookie (``Household.remember_device``). An attempt for a person
on a device they logged in on before is limited by that device's own failures
only (``PER_DEVICE``), so nobody else's failures (a child's mistyped PIN on the
shared computer, a stranger behind the same NAT or Docker port mapping, someone
guessing from the network) ever refuse it the right password. Every other
attempt is limited three ways, each within ``WINDOW``: that name from that
address (``PER_DEVICE``: a mistyped PIN locks at most that name on that
device), that name from everywhere (``PER_NAME``: guesses spread over many
addresses), and that address for every name (``PER_ADDRESS``: one client trying
name after name). The address is the socket's, never a forwarded header unless
``server.trusted_proxies`` names the proxy (``web/serving.py``).

A refused attempt is not counted. A success un-counts itself and clears only
its own count (that name on that device), never an address's or another
name's: a person's own login buys no more tries at someone else's name.

Every attempt runs scrypt once, against a hash made for nobody when the name
is unknown (``passwords.verify_secret``), and reads the same rows, so the time
taken does not tell who lives here (``scripts/bench_login.py``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ..errors import LyraError
from ..passwords import verify_secret
from ..store import db
from ..store.household import Household, Person, name_key

WINDOW = timedelta(minutes=15)
PER_DEVICE = 5
PER_NAME = 20
PER_ADDRESS = 20
_ATTEMPT = threading.Lock()  # a limit's check and the attempt it counts are one step, or a burst outruns it


class RateLimited(LyraError):
    status_code = 429

    def __init__(self, retry_after: int) -> None:
        minutes = max(1, retry_after // 60 + (retry_after % 60 > 0))
        super().__init__(f"too many failed logins: try again in {minutes} minute(s)",
                         hint=f"a name may be tried {PER_DEVICE} times in 15 minutes on one device; a device "
                              "you logged in on before is limited on its own tries only")
        self.retry_after = retry_after
        self.headers = {"Retry-After": str(retry_after)}  # the app's error handler sends them


class LoginFailed(LyraError):
    status_code = 401


@dataclass(frozen=True)
class Limit:
    key: str
    most: int


def limits(name: str, address: str, known_device: str | None) -> tuple[Limit, ...]:
    """What an attempt counts under, its own count first; ``known_device``: the key of a device cookie this
    person logged in with before (``Household.known_device``), else None."""
    if known_device is not None:
        return (Limit(f"device:{known_device}", PER_DEVICE),)
    key = name_key(name)
    return (Limit(f"name:{key}@{address}", PER_DEVICE), Limit(f"name:{key}", PER_NAME),
            Limit(f"client:{address}", PER_ADDRESS))


def wait_s(failures: list[str], most: int, now: datetime) -> int:
    """Seconds until one of ``failures`` (oldest first) leaves the window, once there are ``most`` of them."""
    if len(failures) < most:
        return 0
    oldest = db.from_iso(failures[-most])
    return max(1, int((oldest + WINDOW - now).total_seconds()) + 1)


def check_login(household: Household, name: str, secret: str, address: str, device: str | None) -> Person:
    """The person ``name`` and ``secret`` prove, or ``LoginFailed`` / ``RateLimited``; ``address``: the client's,
    ``device``: the browser's ``lyra_device`` cookie, if any."""
    person = household.by_name(name)
    counted = limits(name, address, household.devices.known(device, None if person is None else person.id))
    now = datetime.now(timezone.utc)
    with _ATTEMPT:  # counted as a failure before the slow hash, un-counted below if it succeeds
        wait = max(wait_s(household.failures.since(c.key, now - WINDOW), c.most, now) for c in counted)
        if wait > 0:
            raise RateLimited(wait)
        attempt = household.failures.record(tuple(c.key for c in counted), now - WINDOW)
    stored = household.logins.secret_of("" if person is None else person.id)  # the same query for a name nobody has
    if not verify_secret(secret, stored) or person is None:  # scrypt whatever the name: never short-circuited
        raise LoginFailed("that name and password do not match", hint="names are as the owner wrote them")
    household.failures.succeeded(counted[0].key, attempt)
    return person
