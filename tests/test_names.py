"""Who is called what: names learnt from how the two sides address each other (``memory/names.py``)."""

from __future__ import annotations

from lyra_local.memory.names import addressed_names, roles_named, same_name, without_names


def test_a_name_the_other_side_calls_someone_names_that_side() -> None:
    talk = [("assistant", "Hey Caro! How was the weekend?"), ("user", "hey mel! it was great"),
            ("assistant", "That's so cool, Caro!"), ("user", "thanks mel 😊"), ("user", "i went hiking")]
    assert addressed_names(talk) == {"caro": "user", "mel": "assistant"}


def test_a_person_naming_themselves_names_their_own_side() -> None:
    talk = [("user", "Hello, my name is Emily. Nice to meet you."), ("assistant", "Hello, Emily!"),
            ("user", "my name is emily btw")]
    assert addressed_names(talk) == {"emily": "user"}


def test_greetings_and_fillers_are_not_names() -> None:
    talk = [("assistant", "No worries!"), ("user", "hey there!"), ("assistant", "hey there!"),
            ("user", "wow, thanks!"), ("assistant", "Thanks so much!"), ("user", "Thanks so much!"),
            ("assistant", "oh huh!"), ("user", "oh huh!"), ("user", "Anyway, I went home"), ("user", "Anyway, bye")]
    assert addressed_names(talk) == {}


def test_a_name_heard_once_or_used_mostly_otherwise_is_not_learnt() -> None:
    once = [("assistant", "Hey Jo!"), ("user", "hi")]
    assert addressed_names(once) == {}
    # "Hey Paris!" twice, but Paris is mostly a place they talk about
    place = [("user", "Hey Paris!")] * 2 + [("user", f"Paris was lovely, day {i}") for i in range(10)]
    assert addressed_names(place) == {}


def test_a_question_names_a_side_by_the_name_learnt_or_another_form_of_it() -> None:
    names = {"caro": "user", "mel": "assistant"}
    assert roles_named("What did Caroline paint?", names) == {"caroline": "user"}
    assert roles_named("did melanie see caro's mum?", names) == {"caro": "user"}  # a nickname as learnt
    assert roles_named("Did Melanie see Caro's mum?", names) == {"melanie": "assistant", "caro": "user"}
    assert roles_named("Car trouble? What car did she buy?", names) == {}
    assert not same_name("me", "mel") and same_name("jim", "jim") and not same_name("jim", "james")


def test_a_name_the_question_calls_someone_by_is_not_what_it_is_about() -> None:
    names = {"lyra": "assistant", "caro": "user"}
    assert roles_named("Lyra, what did I say about my sister?", names) == {}
    assert roles_named("What did I say about my sister, Lyra?", names) == {}
    assert roles_named("What did Lyra recommend to Caro?", names) == {"lyra": "assistant", "caro": "user"}


def test_a_question_without_its_names_keeps_what_it_asks() -> None:
    assert without_names("When did Mel go to Caro's museum?", ["mel", "caro"]) == \
        "When did someone go to someone's museum?"
    assert without_names("Did Melbourne win?", ["mel"]) == "Did Melbourne win?"



def test_a_transcripts_labels_are_not_what_anyone_is_called() -> None:
    talk = [("assistant", "Melanie: Hey Caroline! How are you?"), ("user", "Caroline: Hi Mel! Great."),
            ("assistant", "Melanie: That's lovely, Caroline!"), ("user", "Caroline: Thanks, Mel!")]
    assert addressed_names(talk) == {"caroline": "user", "mel": "assistant"}
