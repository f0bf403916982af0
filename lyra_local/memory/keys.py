"""The profile's keys, each described by what a person says of it and how they ask about it.

One description per key, read by everyone who needs to know what a key means:
the profile's gate (``mind/facts/gate.py``: does a quote fit the key a model
proposed, by meaning?), the floor that proposes facts without a model, and
recall (a question such as "what is my job?" is asked in the words of a
question, while the answer was said as a statement: the key's statements are
searched too). A key is matched by the embedding model against these
sentences, never by a list of cue words: the sentences say what the key is
about, in general words, so that "I teach chemistry at a secondary school" is
nearest to the job's whatever the job is.

``spellings`` are the names a model may give a key ("occupation", "city"):
the schema's own aliases, so that one fact has one key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    name: str
    spellings: tuple[str, ...]
    says: tuple[str, ...]  # statements a person makes of it, in general words
    asks: tuple[str, ...]  # how a person asks about it
    # what a value read from the parse alone may be (``mind/facts/floor.py``): a name, a place, someone or something
    # named ("dog Rex", "sister Jess"), or a thing the person is ("nurse")
    kinds: frozenset[str] = frozenset({"thing"})
    # said by what happened ("we moved to Glasgow", "I grew up in Lagos"): a past tense may state it; of any
    # other key the past says what held once ("I was a chef", "we lost our cat")
    past: bool = False
    negated: bool = False  # a negation states it ("I don't like dark beer": a dislike)


KEYS: tuple[Key, ...] = (
    Key("name", ("full name", "first name", "nickname", "called"),
        ("My name is this.", "I'm called this, that's my name.", "Hi, it's me here, this is my name."),
        ("What is my name?", "What am I called?"), kinds=frozenset({"name"})),
    Key("age", ("years old",),
        ("I am this many years old.", "I just turned this age on my birthday."),
        ("How old am I?", "What is my age?"), kinds=frozenset({"thing"})),
    Key("birthday", ("birth date", "date of birth"),
        ("My birthday is on this day.", "I was born on this date."),
        ("When is my birthday?",), kinds=frozenset({"thing"})),
    Key("home city", ("city", "home", "location", "lives in", "residence", "town", "current city", "home town now"),
        ("I live here; this is where my home is now.", "We moved here and live in this town."),
        ("Where do I live?", "Which city is my home?"), kinds=frozenset({"place"}), past=True),
    Key("origin", ("hometown", "home country", "country", "birthplace", "comes from", "from", "nationality"),
        ("I am originally from this country.", "I grew up there; it's where I was born and raised."),
        ("Where am I from?", "Where did I grow up?"), kinds=frozenset({"place"}), past=True),
    Key("job", ("occupation", "work", "profession", "career", "employer", "workplace", "role", "job title"),
        ("I work as this; it is my job.", "My profession and what I do for a living at work.",
         "I am employed at this place, my workplace and my career.", "I do it professionally and get paid for it."),
        ("What is my job?", "What do I do for work?", "Where do I work?"), kinds=frozenset({"thing"})),
    Key("education", ("school", "studies", "study", "university", "degree", "college", "major"),
        ("I study this subject at university.", "My degree and my school, what I'm studying in class."),
        ("What do I study?", "Where did I go to school?"), kinds=frozenset({"thing"})),
    Key("partner", ("spouse", "husband", "wife", "boyfriend", "girlfriend", "relationship"),
        ("My husband, my wife, my boyfriend or girlfriend.", "I'm in love with my partner; we got married."),
        ("Who is my partner?", "Am I married?"), kinds=frozenset({"named"})),
    Key("children", ("kids", "child", "sons", "daughters", "son", "daughter"),
        ("I have children; my kids are growing up.", "My son and my daughter, our family's little ones."),
        ("Do I have kids?", "How many children do I have?"), kinds=frozenset({"named", "thing"})),
    Key("family", ("parents", "siblings", "relatives", "sister", "brother", "mother", "father", "mom", "dad"),
        ("My family: my parents, my brother and my sister.", "My mom and dad, my relatives."),
        ("Who is in my family?",), kinds=frozenset({"named"})),
    Key("pet", ("pets", "dog", "cat", "animal"),
        ("My pet lives with me; my dog or my cat is named this.", "We adopted an animal and take care of it."),
        ("Do I have a pet?", "What is my pet's name?"), kinds=frozenset({"named"})),
    Key("friends", ("friend", "best friend"),
        ("My best friend and I hang out.", "My friends and I spend time together."),
        ("Who are my friends?",), kinds=frozenset({"named"})),
    Key("hobbies", ("hobby", "interest", "interests", "pastime", "activities", "activity", "sport", "sports",
                    "exercise", "fitness", "music", "instrument", "art"),
        ("In my free time I do this activity regularly.", "My hobby: I practise it every week for fun.",
         "I play, sing, paint, run or make things as a pastime."),
        ("What are my hobbies?", "What do I do for fun?"), kinds=frozenset({"thing", "doing"})),
    Key("likes", ("like", "favorite", "favourite", "loves", "enjoys", "preferences"),
        ("I really love this; it's my favourite.", "I enjoy this a lot and like it best.",
         "My favourite food, team, book or music.", "I'm a big fan of it."),
        ("What do I like?", "What is my favourite thing?")),
    Key("dislikes", ("dislike", "hates"),
        ("I hate this and can't stand it.", "I really dislike this."),
        ("What do I dislike?",), negated=True),
    Key("health", ("illness", "condition", "allergy", "allergies", "diet", "medical"),
        ("My health: I have this condition or allergy.", "My doctor says I have this; my diet because of it."),
        ("Do I have any health conditions?", "What am I allergic to?")),
    Key("plans", ("plan", "goal", "goals", "dream", "upcoming", "events", "event", "appointment"),
        ("I am planning to do this soon; it's my goal.", "Next month I'm going to do this; it's coming up.",
         "I've decided to do it and I'm hoping it works out.", "I booked a trip; I'm travelling there soon.",
         "I'm looking into it as my future career."),
        ("What am I planning?", "What are my goals?"), kinds=frozenset({"thing", "place"})),
    Key("routine", ("routines", "habit", "habits", "schedule"),
        ("Every morning I do this as my routine.", "My daily habit and schedule."),
        ("What is my routine?",), kinds=frozenset({"thing", "doing"})),
    Key("identity", ("gender", "pronouns", "sexuality"),
        ("I identify as this; it's who I am.", "My gender and my pronouns."),
        ("How do I identify?",), kinds=frozenset({"thing"})),
    Key("beliefs", ("religion", "faith", "values"),
        ("I believe in this; my faith and my values.", "My religion matters to me."),
        ("What do I believe in?",), kinds=frozenset({"thing"})),
)
BY_NAME = {key.name: key for key in KEYS}
PLAN_KEYS = frozenset({"plans"})  # the keys of what is to come: a wish or an infinitive may say them, a date passes
SPELLING = {spelling: key.name for key in KEYS for spelling in (key.name, *key.spellings)}
_PREFIX = re.compile(r"^(the\s+)?(user'?s?|person'?s?|his|her|their|my)\s+")


def normalize_key(key: str) -> str:
    """``"User's Home_City:"`` -> ``"home city"``: one spelling per key, so updates find their fact."""
    key = re.sub(r"[_\-]+", " ", key.casefold())
    key = re.sub(r"[^\w\s]", "", key)
    return _PREFIX.sub("", " ".join(key.split())).strip()


def canonical_key(key: str) -> str | None:
    """The profile key a model's key means ("Occupation" -> "job"), or ``None`` for one outside ``KEYS``."""
    plain = normalize_key(key)
    return SPELLING.get(plain) or SPELLING.get(plain.removesuffix("s"))
