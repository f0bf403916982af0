"""What the readers produce: conversations ready to store, and problems that name where and what."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..errors import LyraError
from ..store.portable import NewAside
from ..store.records import Ending


class ImportFormatError(LyraError):
    """The file as a whole cannot be read; nothing was imported from it."""

    status_code = 400


@dataclass(frozen=True)
class ImportedMessage:
    role: str
    content: str
    created_at: str
    source_id: str | None = None
    author: str | None = None  # the assistant an imported reply came from ("ChatGPT"); None: the companion's
    ending: Ending | None = None  # how a reply that did not end by itself ended (a Lyra export says)
    caption: str | None = None  # a photo's caption (a Lyra export or a chat's photo description): not the words


@dataclass
class ImportedConversation:
    """One conversation: ``source``/``source_id`` (or ``uid``) make a re-import add nothing twice."""

    name: str
    created_at: str
    messages: list[ImportedMessage]
    source: str = "lyra"
    source_id: str | None = None
    uid: str | None = None
    skipped: Counter[str] = field(default_factory=Counter)
    asides: list[NewAside] = field(default_factory=list)  # versions set aside (a Lyra export's branches)


@dataclass(frozen=True)
class ImportProblem:
    """A part of the input that was not imported: ``where`` names it, ``what`` says why."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"
