"""Context assembly as a pure function: budgets, layer order, dedup, long sessions."""

from __future__ import annotations

import pytest

from lyra_local.memory.context import ContextInputs, Item, Turn, assemble, truncate_to
from lyra_local.memory.timeline import Entry


def words(text: str) -> int:
    return len(text.split())


def chars(text: str) -> int:  # a tokenizer that counts every 3 characters
    return (len(text) + 2) // 3


def rich_inputs(n_turns: int = 40, message: str = "How is my sister Ana doing with her move?") -> ContextInputs:
    return ContextInputs(
        message=message,
        persona="You are Lyra, a warm and attentive companion. " * 5,
        user_name="Sam",
        self_state={"mood": "curious", "energy": 0.7, "self_narrative": "I have been learning about Sam's garden."},
        drives={"continuity": 0.4, "coherence": 0.2, "curiosity": 0.6, "stability": 0.8},
        world="- Sam is moving to Lisbon in May\n- Ana (sister) lives in Porto\n" * 3,
        profile=[("home", "Berlin"), ("sister", "Ana, lives in Porto"), ("pet", "a cat named Miso")],
        narrative="Sam is preparing a move and spending more time with family. " * 3,
        timeline=[Entry("week", f"2024-W{i:02d}", f"Week {i}: planned the move, talked to Ana about flats " * 2, i)
                  for i in range(1, 8)],
        gists=[Item("gist", i, f"Session {i}: Ana visited, they cooked together and laughed " * 2, 1 / (i + 1))
               for i in range(1, 8)],
        recalled=[Item("exchange", 1000 + i, f"Ana said the flat in Porto has a balcony (turn {i})", 1 / (i + 1),
                       "dense") for i in range(10)],
        session_gist=Item("gist", 99, "Earlier Sam described packing boxes and the moving company."),
        recent=[Turn(i, "user" if i % 2 == 0 else "assistant", f"turn {i}: packing boxes and labels " * 3)
                for i in range(n_turns)],
    )


@pytest.mark.parametrize("n_ctx", [512, 1024, 2048, 8192, 32768])
@pytest.mark.parametrize("count", [words, chars])
def test_total_always_fits_the_context_minus_the_reply(n_ctx: int, count) -> None:
    reply = n_ctx // 4
    context = assemble(rich_inputs(), count=count, n_ctx=n_ctx, reply_tokens=reply)
    assert context.tokens <= n_ctx - reply
    assert context.messages[-1]["role"] == "user"
    assert context.messages[-1]["content"].startswith("How is my sister Ana")


def test_layers_come_in_order() -> None:
    system = assemble(rich_inputs(), count=words, n_ctx=32768, reply_tokens=512).messages[0]["content"]
    markers = ["You are Lyra", "Your mood", "Core memory", "What you know about Sam", "The current arc",
               "From your timeline", "Related past conversations", "Moments you remember"]
    positions = [system.index(m) for m in markers]
    assert positions == sorted(positions)


def test_user_name_comes_from_the_inputs_not_the_code() -> None:
    system = assemble(rich_inputs(), count=words, n_ctx=8192, reply_tokens=512).messages[0]["content"]
    assert "What you know about Sam" in system
    anonymous = assemble(ContextInputs("hi", "persona", profile=[("a", "b")]), count=words, n_ctx=8192,
                         reply_tokens=512).messages[0]["content"]
    assert "What you know about the user" in anonymous


def test_duplicates_across_layers_are_removed() -> None:
    same = Item("gist", 7, "Ana visited and they cooked together")
    inputs = ContextInputs("hi", "persona", gists=[same, same], recalled=[
        Item("exchange", 3, "Ana visited and they cooked together"), Item("exchange", 4, "something else")])
    context = assemble(inputs, count=words, n_ctx=8192, reply_tokens=256)
    system = context.messages[0]["content"]
    assert system.count("Ana visited and they cooked together") == 1
    assert [(t.layer, t.id) for t in context.trace if t.layer != "recent"] == [("gists", 7), ("recalled", 4)]


def test_long_session_keeps_newest_turns_and_its_gist_for_the_rest() -> None:
    context = assemble(rich_inputs(n_turns=400), count=words, n_ctx=2048, reply_tokens=256)
    turns = context.messages[1:-1]
    assert 0 < len(turns) < 400
    assert turns[-1]["content"].startswith("turn 399")  # the newest turn is kept
    ids = [t.id for t in context.trace if t.layer == "recent"]
    assert ids == list(range(400 - len(ids), 400))  # a contiguous tail, in order
    assert "Earlier in this conversation" in context.messages[0]["content"]
    assert ("session_gist", 99) in [(t.layer, t.id) for t in context.trace]


def test_short_session_needs_no_gist() -> None:
    context = assemble(rich_inputs(n_turns=4), count=words, n_ctx=8192, reply_tokens=256)
    assert len(context.messages) == 4 + 2
    assert "Earlier in this conversation" not in context.messages[0]["content"]


def test_an_over_long_message_is_truncated_with_a_notice() -> None:
    long = "word " * 5000
    context = assemble(rich_inputs(message=long), count=words, n_ctx=2048, reply_tokens=256)
    assert context.message_truncated
    assert context.messages[-1]["content"].endswith("[the message was cut here to fit the model's context]")
    assert context.tokens <= 2048 - 256


def test_trace_lists_every_memory_used_with_its_score_and_stage() -> None:
    context = assemble(rich_inputs(), count=words, n_ctx=32768, reply_tokens=512)
    recalled = [t for t in context.trace if t.layer == "recalled"]
    assert recalled and all(t.kind == "exchange" and t.stage == "dense" and t.score > 0 for t in recalled)
    assert {t.layer for t in context.trace} >= {"digests", "gists", "recalled", "recent"}


def test_tiny_context_still_answers() -> None:
    context = assemble(rich_inputs(), count=words, n_ctx=128, reply_tokens=64)
    assert context.tokens <= 64
    assert context.messages[-1]["role"] == "user"


def test_truncate_to() -> None:
    assert truncate_to("a b c d", 10, words) == "a b c d"
    assert truncate_to("a b c d e f", 3, words) == "a b …"
    assert truncate_to("anything", 0, words) == ""
