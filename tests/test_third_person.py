"""Third-person edits of what someone said (mind/third_person.py): mechanical where they are, refused where not."""

from __future__ import annotations

import pytest

from lyra_local.mind.grounding import sentences
from lyra_local.mind.third_person import edited, in_their_words, reply_about, third_person, third_person_verb


@pytest.mark.parametrize(("said", "summary"), [
    ("I'm thinking of moving from Leeds to Edinburgh in September",
     "Maya is thinking of moving from Leeds to Edinburgh in September."),
    ("i work night shifts as a nurse at st james's hospital so im always tired lol",
     "Maya works night shifts as a nurse at st james's hospital so Maya is always tired."),
    ("im moving to leeds", "Maya is moving to leeds."),
    ("ive got a dog", "Maya has got a dog."),
    ("I work nights", "Maya works nights."),
    ("I go swimming every morning before my shift", "Maya goes swimming every morning before Maya's shift."),
    ("i started a saturday pottery class w/ jess, it's so relaxing",
     "Maya started a saturday pottery class w/ jess, it's so relaxing."),
    ("my sister Jess lives there already, she's a teacher", "Maya's sister Jess lives there already, she's a teacher."),
    ("I really want to study counseling.", "Maya really wants to study counseling."),
    ("I studied nursing in 2015 😀", "Maya studied nursing in 2015."),
    ("I'll start at the bakery on monday!!", "Maya will start at the bakery on monday."),
    ("I have a cat who hates my neighbour", "Maya has a cat who hates Maya's neighbour."),
    ("I watch films with my partner every friday", "Maya watches films with Maya's partner every friday."),
    ("I try to study every day", "Maya tries to study every day."),
    ("Me and Jess went to Leith", "Maya and Jess went to Leith."),
])
def test_a_first_person_statement_is_turned_to_the_third_person(said: str, summary: str) -> None:
    assert edited(said, "Maya", "ChatGPT") == summary


@pytest.mark.parametrize(("said", "summary"), [
    ("I'm not a nurse", "Maya is not a nurse."),
    ("I don't work on Sundays", "Maya doesn't work on Sundays."),
    ("i dont have a car", "Maya doesn't have a car."),
    ("I haven't told my sister yet", "Maya hasn't told Maya's sister yet."),
    ("I never go swimming", "Maya never goes swimming."),
    ("I can't drive", "Maya can't drive."),
    ("I was a teacher", "Maya was a teacher."),
    ("I didn't go to the party", "Maya didn't go to the party."),
    ("I moved to Porto last year", "Maya moved to Porto last year."),
    ("I went to a support group yesterday", "Maya went to a support group yesterday."),
])
def test_negations_and_tenses_are_kept(said: str, summary: str) -> None:
    assert third_person(said, "Maya") == summary


@pytest.mark.parametrize("said", [
    "we adopted a rescue greyhound called Biscuit last month",  # "we": who else is not said
    "I'd love to go",  # "I would" or "I had": the edit must not choose
    "I read a lot",  # "read" is present and past in one spelling
    "Tell me more about it.",  # an imperative has no subject
    "I blorp the thing",  # a verb it does not know
    "I enjoy it myself",
    "I and Jess are going to Leith",  # a subject of two
    "thank you so much for everything",
    "What happened that was so awesome?",  # a question of another shape
    "Wow, that's cool, Caroline!",
])
def test_what_is_not_mechanical_is_not_edited(said: str) -> None:
    assert edited(said, "Maya", "ChatGPT") is None


@pytest.mark.parametrize(("said", "summary"), [
    ("I have an interview on 2 May for a ward manager job, can you help me prepare?",
     "Maya has an interview on 2 May for a ward manager job and asked for help to prepare."),
    ("How do I ask for a raise?", "Maya asked how to ask for a raise."),
    ("should i tell my boss?", "Maya asked whether to tell Maya's boss."),
    ("Could you give me some tips for the interview?", "Maya asked ChatGPT to give Maya some tips for the interview."),
    ("any tips on sleeping after night shifts?", "Maya asked for tips on sleeping after night shifts."),
    ("Can you help me with my CV?", "Maya asked for help with Maya's CV."),
])
def test_a_question_is_said_as_what_it_asked(said: str, summary: str) -> None:
    assert edited(said, "Maya", "ChatGPT") == summary


def test_a_request_to_no_one_named_is_not_edited() -> None:
    """Between two people (an imported "Caroline: …" talk) "can you …" asks someone the edit cannot name."""
    assert edited("Can you send me the photos?", "Caroline", None) is None


@pytest.mark.parametrize(("said", "summary"), [
    ("Jess says the flats near Leith are cheaper", "Maya mentioned that Jess says the flats near Leith are cheaper."),
    ("The flat near the river has a huge kitchen.", "Maya mentioned that the flat near the river has a huge kitchen."),
])
def test_a_plain_statement_without_a_first_person_is_said_as_mentioned(said: str, summary: str) -> None:
    assert edited(said, "Maya") == summary


def test_without_a_name_the_person_is_the_user_and_a_sentence_still_opens_with_a_capital() -> None:
    assert edited("my sister lives in Leeds", "the user") == "The user's sister lives in Leeds."
    assert in_their_words("we did it!", "the user") == "In the user's words: “we did it!”"


def test_verbs_agree_with_a_third_person_subject() -> None:
    assert [third_person_verb(v) for v in ("work", "go", "watch", "try", "play", "have", "do", "am", "can", "went",
                                           "adopted", "need", "xyzzy")] == [
        "works", "goes", "watches", "tries", "plays", "has", "does", "is", "can", "went", "adopted", "needs", None]


ADVICE = """Congratulations on the interview! Here are some ways to prepare:

1. **Research the trust**: read their values and recent reports.
2. **Prepare STAR examples** of leadership and conflict.
3. **Know your numbers**: staffing ratios and budgets.
4. Ask about the team's priorities.

Good luck, you've got this!"""


def test_a_listed_reply_is_reduced_to_the_heads_of_its_points() -> None:
    assert reply_about(ADVICE, "ChatGPT", "Maya", sentences(ADVICE)) == \
        "ChatGPT listed: Research the trust; Prepare STAR examples; Know Maya's numbers; and more."


def test_a_prose_reply_is_reduced_to_its_first_plain_statement() -> None:
    reply = ("That's a big move! That's lovely, having family nearby helps. "
             "It is normal to feel nervous about moving to a new city. You could look at flats first.")
    assert reply_about(reply, "ChatGPT", "Maya", sentences(reply)) == \
        "ChatGPT replied that it is normal to feel nervous about moving to a new city."
    you = "You could look at several flats in Leith before you decide."
    assert reply_about(you, "Lyra", "Sam", sentences(you)) is None  # "before you decide": "you" as a subject of
    # a verb it knows ("decide" is not among them), so no edit
    short = "Sounds fun! How does it feel?"
    assert reply_about(short, "Lyra", "Sam", sentences(short)) is None  # nothing it was about is said plainly


@pytest.mark.parametrize(("said", "summary"), [
    ("I hope you are well", "Maya hopes ChatGPT is well."),  # "you" before a verb: a subject
    ("I want to thank you so much", "Maya wants to thank ChatGPT so much."),  # after a verb: an object
])
def test_the_one_spoken_to_is_named_as_subject_or_object(said: str, summary: str) -> None:
    assert edited(said, "Maya", "ChatGPT") == summary


def test_a_reply_names_the_person_it_was_said_to_without_changing_a_bare_infinitive() -> None:
    reply = "Swimming is excellent exercise for shift workers: it is low impact and can help you sleep."
    assert reply_about(reply, "ChatGPT", "Maya", sentences(reply)) == (
        "ChatGPT replied that swimming is excellent exercise for shift workers: it is low impact and can help Maya "
        "sleep.")
    general = reply[:-1] + ", so you feel rested."  # "so you feel": anyone who swims, not only Maya
    assert reply_about(general, "ChatGPT", "Maya", sentences(general)) is None
    advice = "Think about work first: whether your job can transfer to a hospital in Edinburgh."
    assert reply_about(advice, "ChatGPT", "Maya", sentences(advice)) == (
        "ChatGPT advised: think about work first: whether Maya's job can transfer to a hospital in Edinburgh.")


SAID = "Jess says the flats near Leith are cheaper"  # the conversation: "Leith" written as a name


def test_after_replied_that_a_common_word_loses_its_capital_and_a_name_keeps_it() -> None:
    for reply, summary in [
        ("Having family nearby makes a move much easier. Ok.", "ChatGPT replied that having family nearby makes a "
                                                               "move much easier."),
        ("Leith is popular for its waterfront and food scene.", "ChatGPT replied that Leith is popular for its "
                                                               "waterfront and food scene."),
        ("Night shifts are hard on sleep, and a night shift before an interview is harder.",
         "ChatGPT replied that night shifts are hard on sleep, and a night shift before an interview is harder.")]:
        assert reply_about(reply, "ChatGPT", "Maya", sentences(reply), context=SAID) == summary


@pytest.mark.parametrize("said", [
    'She said "I hate my job" and walked out',  # her words, not Maya's
    'My boss told me "you are fired" today',
    'I said "I love you" to Tom',  # Maya's words to Tom: "you" is Tom, not ChatGPT
    "He goes, I'm a doctor",  # reported without quote marks
    "she was like, i can't do this anymore",
    "Jess texted me: you need to see this flat",
    "My mum said ‘I’m proud of you’",
    "My mum said “I’m proud of you”",
])
def test_words_in_someone_elses_mouth_are_not_renamed(said: str) -> None:
    assert edited(said, "Maya", "ChatGPT") is None
    assert third_person(said, "Maya", "ChatGPT") is None


def test_an_apostrophe_is_no_quote_and_indirect_speech_is_the_reporters() -> None:
    assert edited("I work at St James’ and I don’t mind nights", "Maya", "ChatGPT") == \
        "Maya works at St James’ and Maya doesn't mind nights."
    assert edited("I went home early", "Maya", "ChatGPT") == "Maya went home early."
    assert edited("She said that I was right", "Maya", "ChatGPT") == "She said that Maya was right."


@pytest.mark.parametrize("said", [
    "You never know what will happen",  # anyone, not the one spoken to
    "you have to be careful with dogs",
    "honestly you can't win with night shifts",
    "I think you never really get used to nights",
    "when you work nights you sleep all day",
    "you're never ready for an interview lol",
])
def test_a_general_you_is_not_the_one_spoken_to(said: str) -> None:
    assert edited(said, "Maya", "ChatGPT") is None


def test_a_question_to_the_other_side_still_names_them() -> None:
    assert edited("Could you give me some tips?", "Maya", "ChatGPT") == "Maya asked ChatGPT to give Maya some tips."


def test_a_reply_skips_a_general_you_for_a_plain_statement() -> None:
    reply = ("You never know how an interview will go. Interview panels for ward manager roles usually ask about "
             "leadership.")
    assert reply_about(reply, "ChatGPT", "Maya", sentences(reply)) == \
        "ChatGPT replied that interview panels for ward manager roles usually ask about leadership."
    only = "You never know how an interview will go."
    assert reply_about(only, "ChatGPT", "Maya", sentences(only)) is None


def test_a_reply_skips_a_quote_it_suggests() -> None:
    reply = ('You might open with "I am excited to lead this team" at the start. '
             "Panels value a clear example of handling conflict on a ward.")
    assert reply_about(reply, "ChatGPT", "Maya", sentences(reply)) == \
        "ChatGPT replied that panels value a clear example of handling conflict on a ward."


@pytest.mark.parametrize(("reply", "summary"), [
    ("Here is my take:\n- Moving to Edinburgh: not a good idea right now\n- Staying in Leeds: cheaper for a year",
     "ChatGPT listed: Moving to Edinburgh: not a good idea right now; Staying in Leeds: cheaper for a year."),
    ("Some rules:\n- **Don't** move in winter\n- **Do** visit flats first\n- **Avoid** signing unseen",
     "ChatGPT listed: Don't move in winter; Do visit flats first; Avoid signing unseen."),
    ("For sleep:\n- **Stop:** coffee after 2pm\n- **Start:** a wind-down routine before bed",
     "ChatGPT listed: Stop: coffee after 2pm; Start: a wind-down routine before bed."),
])
def test_a_list_whose_labels_lose_its_meaning_is_said_whole(reply: str, summary: str) -> None:
    assert reply_about(reply, "ChatGPT", "Maya", sentences(reply)) == summary


def test_a_list_of_bare_labels_and_long_items_is_not_listed() -> None:
    reply = ("Two options.\n- **Stop:** drinking coffee after two in the afternoon, because it stays in your body "
             "for hours and hours\n- **Start:** a routine")
    assert reply_about(reply, "ChatGPT", "Maya", sentences(reply)) is None  # no plain statement either


def test_after_replied_that_a_word_that_is_no_name_loses_its_capital() -> None:
    reply = "Fear of the vacuum cleaner is very common in rescue greyhounds."
    assert reply_about(reply, "ChatGPT", "Maya", sentences(reply), context="he's scared of the hoover") == \
        "ChatGPT replied that fear of the vacuum cleaner is very common in rescue greyhounds."
    named = "Biscuit will settle in over a few weeks, with patience."
    assert reply_about(named, "ChatGPT", "Maya", sentences(named), context="a greyhound called Biscuit") == \
        "ChatGPT replied that Biscuit will settle in over a few weeks, with patience."
    acronym = "NHS Lothian runs most of the hospitals in Edinburgh."
    assert reply_about(acronym, "ChatGPT", "Maya", sentences(acronym), context="") == \
        "ChatGPT replied that NHS Lothian runs most of the hospitals in Edinburgh."
