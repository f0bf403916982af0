"""Imported replies in their source's mouth, with the real default models: the gist of an imported ChatGPT
conversation never puts ChatGPT's replies in the companion's mouth, whether the 135M model's draft passed the
checks or the floor wrote it; what the floor writes is quotes, verbatim, under who said them and when, and a
roll-up of it quotes the same again."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lyra_local.config import Settings
from lyra_local.llm.local import LocalChatModel, LocalEmbedder
from lyra_local.mind import Dreamer
from lyra_local.mind.grounding.checks import quotes_of
from lyra_local.store import Store

from .test_edited_extract import MOVING, add_conversation, quoted

pytestmark = [pytest.mark.slow]

INTERVIEW = [
    "Hi! I'm Maya. I have an interview on 2 May for a ward manager job, can you help me prepare?",
    "Congratulations on the interview! Here are some ways to prepare:\n\n1. **Research the trust**: read its values "
    "and recent inspection reports.\n2. **Prepare STAR examples** of leading a team through a difficult shift.\n"
    "3. **Know your numbers**: staffing ratios, sickness rates and the ward budget.\n4. **Ask questions** about "
    "the team's priorities.\n\nGood luck, you've got this!",
    "i work night shifts as a nurse at st james's hospital so im always tired lol",
    "Night shifts are hard on sleep. It is worth planning the week before the interview so that you are rested: "
    "swap a shift if you can, keep the bedroom dark, and do your preparation in short sessions.",
]


def test_a_gist_of_an_imported_chatgpt_conversation_quotes_its_turns_and_never_credits_lyra(
        store: Store, chat_model: LocalChatModel, embedder: LocalEmbedder,
        make_settings: Callable[..., Settings]) -> None:
    sessions = [add_conversation(store, "Interview prep", "2024-03-09", INTERVIEW),
                add_conversation(store, "Moving plans", "2024-03-10", MOVING)]
    settings = make_settings('[dream]\nsession_idle_s = 0\n')
    report = Dreamer(store, chat_model, embedder, settings).run_pass(force=True)
    assert report.status == "done"
    said: set[str] = set()
    for session in sessions:
        gist = store.derived.gist(session)
        assert gist is not None and gist.content.strip()
        assert "Lyra" not in gist.content, gist.content  # the replies were ChatGPT's; the companion said nothing
        if gist.method == "extractive":  # "Hi! I'm Maya" names her, unless the profile's floor did not read it
            person = next((q.who for q in quotes_of(gist.content, 0) if q.who != "ChatGPT"), "Maya")
            said |= {q.render() for q in quoted(gist.content, store.exchanges.history(session), person)}
    for digest in store.derived.digests():
        assert "Lyra" not in digest.content, digest.content
        if digest.method == "extractive":
            assert {q.render() for q in quotes_of(digest.content, 0) if q.quoted} <= said, digest.content
