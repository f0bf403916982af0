"""The pure ranking helpers: question-answer pairs and how far full-text matches are trusted."""

from __future__ import annotations

import pytest

from lyra_local.memory.fusion import answers_to, asks, specificity


@pytest.mark.parametrize(("text", "expected"), [
    ("What did you name him?", True), ("Whose is it? ", True), ('He said "really?"', True),
    ("We adopted a cat!", False), ("Is it? No, it isn't.", False), ("", False)])
def test_a_turn_asks_when_it_ends_with_a_question(text: str, expected: bool) -> None:
    assert asks(text) is expected


def test_the_answer_follows_the_question_a_hit_asks_or_raises() -> None:
    chains = [
        [(1, "We adopted a cat!"), (2, "What did you name him?"), (3, "Pixel, the kids chose it.")],  # raised
        [(10, "Which one did you buy?"), (11, "A green Skoda."), (12, "Congratulations!")],  # asked
        [(20, "It rained all day."), (21, "That sounds grey."), (22, "Yes.")],  # neither: nothing
        [(30, "Who is it?"), (31, "Why do you ask?"), (32, "Just curious.")],  # both
        [(3, "Pixel, the kids chose it.")],  # the session ends: nothing
    ]
    assert answers_to(chains) == [3, 11, 31, 32]


def test_an_answer_reached_twice_is_listed_once_in_the_first_place() -> None:
    chains = [[(2, "What did you name him?"), (3, "Pixel.")], [(1, "A cat!"), (2, "What did you name him?"), (3, "Pixel.")]]
    assert answers_to(chains) == [3]


def test_specificity_is_the_mean_idf_on_a_zero_to_one_scale() -> None:
    assert specificity({"okafor": 1}, 1000) == 1.0
    assert specificity({"the": 1000}, 1000) == 0.0
    assert specificity({"okafor": 1, "the": 1000}, 1000) == pytest.approx(0.5)
    assert specificity({"sister": 10}, 1000) == pytest.approx(2 / 3)
    assert specificity({"absent": 0}, 1000) == 1.0  # nothing matched: nothing to distrust
    assert specificity({}, 1) == 1.0
