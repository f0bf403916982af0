"""What a streaming turn reports, one class per kind, so that what each kind carries is declared once.

The page reads them as server-sent events (``payload``: the fields, with ``text`` on every kind), the
OpenAI-compatible route and ``lyra chat`` as these objects; none of them supplies defaults of its own."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, ClassVar


class TurnEventKind(StrEnum):
    STORED = "stored"  # the person's message is kept
    DELTA = "delta"  # a piece of the reply
    NOTICE = "notice"  # something the person should know (their message was cut to fit)
    ERROR = "error"  # the turn failed; ``status`` is the HTTP status it stands for
    DONE = "done"  # the last event of every turn


@dataclass(frozen=True)
class _Event:
    type: ClassVar[TurnEventKind]

    def payload(self) -> dict[str, Any]:
        """The event's fields as the page reads them: ``text`` is there for every kind."""
        return {"text": "", **asdict(self)}


@dataclass(frozen=True)
class Stored(_Event):
    type: ClassVar[TurnEventKind] = TurnEventKind.STORED
    exchange_id: int
    replacing: int | None = None  # the reply a regeneration or continuation writes over
    continuing: int | None = None  # the reply a continuation carries on


@dataclass(frozen=True)
class Delta(_Event):
    type: ClassVar[TurnEventKind] = TurnEventKind.DELTA
    text: str


@dataclass(frozen=True)
class Notice(_Event):
    type: ClassVar[TurnEventKind] = TurnEventKind.NOTICE
    text: str


@dataclass(frozen=True)
class TurnError(_Event):
    type: ClassVar[TurnEventKind] = TurnEventKind.ERROR
    text: str
    status: int


@dataclass(frozen=True)
class Done(_Event):
    type: ClassVar[TurnEventKind] = TurnEventKind.DONE
    exchange_id: int | None  # the reply kept, or None when none was
    finish_reason: str  # as OpenAI says it: "stop", "length", or "error"
    ending: str | None = None  # how the kept reply ended (``store.records.Ending``)
    context_tokens: int = 0  # the prompt's size, for the OpenAI route's usage


TurnEvent = Stored | Delta | Notice | TurnError | Done
