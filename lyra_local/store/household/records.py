"""What the household database hands out: people, tokens and household-memory versions, and how names compare.

Plain records with no database handle, like ``store/records.py`` for a person's memory."""

from __future__ import annotations

import hashlib
import sqlite3
import unicodedata
from dataclasses import dataclass
from typing import Literal

from ...errors import BadRequest, Conflict, NotFound

MAX_NAME = 60

Kind = Literal["adult", "child"]


class OwnerNeedsSecret(Conflict):
    """Adding a person while the owner has no password: from the second person on, everyone logs in."""


class PersonNotFound(NotFound):
    """No such person in this household (or one being removed)."""


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    kind: Kind
    owner: bool
    home: str  # "" for the data directory's own memory, else "people/<id>"
    created_at: str
    has_secret: bool

    def view(self) -> dict[str, object]:
        """What the API shows of a person (never the secret's hash)."""
        return {"id": self.id, "name": self.name, "kind": self.kind, "owner": self.owner,
                "has_secret": self.has_secret, "created_at": self.created_at}


@dataclass(frozen=True)
class ApiToken:
    id: int
    person_id: str
    name: str
    created_at: str
    last_used_at: str | None


@dataclass(frozen=True)
class SharedVersion:
    """One version of the household memory, with who wrote it."""

    id: int
    content: str
    author_id: str
    author: str
    created_at: str


def name_key(name: str) -> str:
    """The form two names are compared in: "Sam", "sam" and "ＳＡＭ" are one person."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


def clean_name(name: str) -> str:
    name = " ".join(unicodedata.normalize("NFKC", name).split())
    if not name:
        raise BadRequest("a person needs a name")
    if len(name) > MAX_NAME or any(unicodedata.category(c).startswith("C") for c in name):
        raise BadRequest(f"a name is at most {MAX_NAME} printable characters")
    return name


def digest(raw: str) -> str:
    """What is kept of a login session, device cookie or token: its SHA-256 (they are 256-bit random strings,
    so a fast hash is enough; passwords get scrypt, ``passwords.py``)."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def person_of_row(row: sqlite3.Row) -> Person:
    return Person(row["id"], row["name"], row["kind"], bool(row["owner"]), row["home"], row["created_at"],
                  row["secret"] is not None)


def shared_of_row(row: sqlite3.Row) -> SharedVersion:
    return SharedVersion(row["id"], row["content"], row["author_id"], row["author_name"], row["created_at"])
