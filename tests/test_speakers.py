"""Who is who (``memory/speakers.py``, ``memory/names.py``): every turn's speaker, and the names they go by."""

from __future__ import annotations

from lyra_local.memory.names import nickname_of, roles_named
from lyra_local.memory.speakers import KnownNames, conversation, kind_of, speaker_names, speaker_of, turns_of, who_said


def test_a_turns_speaker_follows_from_its_role_and_author() -> None:
    assert speaker_of("user", None) == "user" and kind_of("user", None) == "person"
    assert speaker_of("assistant", None) == "assistant" and kind_of("assistant", None) == "companion"
    # an imported assistant is "you" to the person, like the companion; another participant is themselves
    assert speaker_of("assistant", "ChatGPT") == "assistant" and kind_of("assistant", "ChatGPT") == "assistant"
    assert speaker_of("assistant", "Melanie") == "author:Melanie" and kind_of("assistant", "Melanie") == "participant"
    assert turns_of("author:Melanie") == ("assistant", ("Melanie",))
    assert turns_of("user") == ("user", ())


def test_the_person_speaks_to_the_other_speaker_of_their_session() -> None:
    rows = [(1, "assistant", "Melanie", "hey caroline!"), (1, "user", None, "hey mel!"),
            (2, "user", None, "hi lyra"), (2, "assistant", None, "Hello!")]
    assert list(conversation(rows)) == [("author:Melanie", "user", "hey caroline!"),
                                        ("user", "author:Melanie", "hey mel!"),
                                        ("user", "assistant", "hi lyra"), ("assistant", "user", "Hello!")]


def test_names_come_from_greetings_labels_the_profile_and_settings() -> None:
    rows = [(1, "assistant", "Melanie Ross", "hey caroline!"), (1, "user", None, "hey mel!"),
            (1, "assistant", "Melanie Ross", "thanks, caroline!"), (1, "user", None, "thanks mel!")]
    names = speaker_names(rows, ["Melanie Ross"], KnownNames(("Caro",), ("Lyra",)), ["Caroline Lee"])
    assert names == {"caroline": "user", "mel": "author:Melanie Ross", "melanie": "author:Melanie Ross",
                     "ross": "author:Melanie Ross", "lee": "user", "caro": "user", "lyra": "assistant"}


def test_a_nickname_no_turn_uses_names_the_speaker_it_shortens() -> None:
    names = {"caroline": "user", "melanie": "author:Melanie"}
    unused = {"mellie", "carrie", "mel"}.__contains__
    assert roles_named("What did Mellie paint?", names) == {"mellie": "author:Melanie"}  # a capital: a name
    assert roles_named("what did mellie paint?", names, unused) == {"mellie": "author:Melanie"}
    assert roles_named("what did carrie paint?", names, unused) == {"carrie": "user"}
    assert roles_named("what does she care about?", names, unused) == {}  # the turns say "care": a word
    assert nickname_of("timmie", "tim") and nickname_of("jam", "james") and not nickname_of("jim", "james")


def test_who_said_names_each_kind() -> None:
    known = KnownNames(("Caroline",), ("Lyra",))
    assert who_said("user", None, known) == {"kind": "person", "name": "Caroline"}
    assert who_said("assistant", None, known) == {"kind": "companion", "name": "Lyra"}
    assert who_said("assistant", "ChatGPT", known) == {"kind": "assistant", "name": "ChatGPT"}
    assert who_said("user", None, KnownNames()) == {"kind": "person", "name": None}
