"""``lyra dream`` prints what the dream did in the Dream panel's sentences, with the conversation's title."""

from __future__ import annotations

from rich.console import Console

from lyra_local.cli.dream import _print_event
from lyra_local.store import Store

from .test_dream import add_session


def test_lyra_dream_says_what_it_did_with_the_conversation_title(store: Store) -> None:
    session = add_session(store, "Interview prep", "2024-03-10", ["I'm a nurse", "Good luck!"])
    console = Console(record=True, width=200)
    _print_event(console, store, {"kind": "gist", "target": f"session:{session}",
                                  "detail": {"progress": "1/4"}})
    _print_event(console, store, {"kind": "pass.start", "target": None, "detail": {}})  # quiet: not printed
    printed = console.export_text()
    assert "Summarised ‘Interview prep’" in printed, printed
    assert "session:" not in printed and "pass" not in printed, printed
