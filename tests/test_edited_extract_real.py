"""Issue 37 with the real default models: the gist of an imported ChatGPT conversation reads as a summary and never
puts ChatGPT's replies in the companion's mouth, whether the 135M model's draft passed the checks or the floor wrote
it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lyra_local.config import Settings
from lyra_local.llm.local import LocalChatModel, LocalEmbedder
from lyra_local.mind import Dreamer
from lyra_local.mind.grounding import sentences
from lyra_local.store import Store

from .test_edited_extract import MOVING, add_conversation

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


def test_a_gist_of_an_imported_chatgpt_conversation_has_no_quote_chain_and_never_credits_lyra(
        store: Store, chat_model: LocalChatModel, embedder: LocalEmbedder,
        make_settings: Callable[..., Settings]) -> None:
    sessions = [add_conversation(store, "Interview prep", "2024-03-09", INTERVIEW),
                add_conversation(store, "Moving plans", "2024-03-10", MOVING)]
    settings = make_settings('[dream]\nsession_idle_s = 0\n')
    report = Dreamer(store, chat_model, embedder, settings).run_pass(force=True)
    assert report.status == "done"
    written = []
    for session in sessions:
        gist = store.derived.gist(session)
        assert gist is not None and gist.content.strip()
        written.append(gist.content)
    written += [d.content for d in store.derived.digests()]
    for text in written:
        assert "said, “" not in text and 'said, "' not in text, text  # no chain of quotes
        assert text.count("“") <= 1, text
        assert "Lyra" not in text, text  # the replies were ChatGPT's; the companion said nothing here
        assert not any(s.startswith(("The user said", "Maya said")) for s in sentences(text)), text
