"""A turn's events are declared once (``turn_events.py``): one class per kind, and what the page reads of each."""

from __future__ import annotations

import typing

from lyra_local.turn_events import Delta, Done, Notice, Stored, TurnError, TurnEvent, TurnEventKind


def test_every_kind_has_exactly_one_event_class() -> None:
    classes = typing.get_args(TurnEvent)
    assert sorted(c.type for c in classes) == sorted(TurnEventKind)


def test_what_the_page_reads_of_each_kind() -> None:
    assert Stored(7).payload() == {"text": "", "exchange_id": 7, "replacing": None, "continuing": None}
    assert Delta("Hel").payload() == {"text": "Hel"}
    assert Notice("cut to fit").payload() == {"text": "cut to fit"}
    assert TurnError("the model is down", 503).payload() == {"text": "the model is down", "status": 503}
    assert Done(9, "length", "length", 120).payload() == {"text": "", "exchange_id": 9, "finish_reason": "length",
                                                          "ending": "length", "context_tokens": 120}
