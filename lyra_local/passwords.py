"""Passwords and PINs: what a person may choose, and how it is kept (a memory-hard hash, never the secret).

scrypt (hashlib, no extra dependency) with N=2^15, r=8: about 32 MiB and a few
tens of milliseconds per check on a home box, so a stolen ``household.db`` costs
an attacker the same per guess. A child's PIN is short by nature; what keeps it
from being guessed over the network is the login's rate limit
(``web/logins.py``), and the hash keeps it from a copied file only as well
as four digits can be kept.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
from typing import Literal

from .errors import BadRequest

Kind = Literal["adult", "child"]
N, R, P = 2**15, 8, 1
MAXMEM = 64 * 1024 * 1024
MIN_PASSWORD = 8
PIN_DIGITS = (4, 8)
SCHEME = "scrypt"


def check_secret(kind: Kind, secret: str) -> None:
    """Refuse a secret a person of ``kind`` may not choose: a password under 8 characters, a PIN not of 4-8
    digits (a child may also choose a password)."""
    if kind == "child" and secret.isdigit():
        low, high = PIN_DIGITS
        if not low <= len(secret) <= high:
            raise BadRequest(f"a PIN has {low} to {high} digits, this one has {len(secret)}")
        return
    if len(secret) < MIN_PASSWORD:
        what = "a password (or, for a child, a PIN of 4 to 8 digits)" if kind == "child" else "a password"
        raise BadRequest(f"{what} needs at least {MIN_PASSWORD} characters",
                         hint="a few words strung together are easy to remember and hard to guess")
    if len(secret) > 1024:
        raise BadRequest("a password is at most 1024 characters")


def hash_secret(secret: str) -> str:
    """``scrypt$N$r$p$salt$hash`` (base64), with a fresh 16-byte salt."""
    salt = os.urandom(16)
    digest = _scrypt(secret, salt, N, R, P)
    return "$".join((SCHEME, str(N), str(R), str(P), _b64(salt), _b64(digest)))


def verify_secret(secret: str, stored: str | None) -> bool:
    """Whether ``secret`` is the one ``stored`` was made from. With nothing stored (a name nobody has, a person
    without a password) it is checked against a hash made for no one, through the very same steps, so the time
    taken never tells whether a name exists: a caller must call this for every attempt, never skip it."""
    matched = _verify(secret, _nobody() if stored is None else stored)
    return matched and stored is not None


@functools.cache
def _nobody() -> str:
    """A stored form no secret matches (a random digest, with today's parameters), made without hashing so
    that even the first unknown name of a process costs one scrypt, like any other."""
    return "$".join((SCHEME, str(N), str(R), str(P), _b64(os.urandom(16)), _b64(os.urandom(32))))


def _verify(secret: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != SCHEME:
            return False
        computed = _scrypt(secret, base64.b64decode(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(computed, base64.b64decode(digest))


def _scrypt(secret: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(secret.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=MAXMEM, dklen=32)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")
