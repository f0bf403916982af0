"""`lyra chat` says when a reply was cut at the length limit, with the real tiny model in a real terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from lyra_local.store import Store

from .test_cli_chat import chat, env  # noqa: F401  (env: the terminal's environment fixture)

pytestmark = [pytest.mark.slow, pytest.mark.models]


def test_a_reply_cut_at_the_length_limit_says_so(tmp_path: Path, env: dict[str, str]) -> None:  # noqa: F811
    with chat({**env, "LYRA_MODELS__CHAT__SAMPLING__MAX_TOKENS": "6"}, "--session", "Evening") as terminal:
        terminal.wait_for(r"^you> ")
        terminal.type("Tell me a long story about a lighthouse keeper and her cat.\n")
        terminal.wait_for(r"\[cut at the length limit\]$")
        terminal.wait_for(r"^you> ", count=2)
        terminal.quit()
    store = Store(tmp_path / "data")
    try:
        session = store.sessions.find(name="Evening")
        assert session is not None
        reply = store.exchanges.history(session.id)[-1]
        assert (reply.role, reply.ending) == ("assistant", "length")  # stored with the reply, as the page shows it
    finally:
        store.close()
