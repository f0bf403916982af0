"""The profile: standing facts about the user, learnt incrementally from new gists.

Each gist is read once (and again only when it changes), with the facts known
so far in view so the model reuses a key when a fact changes. The store keeps
every superseded value as history; the newer observation wins.

A fact is kept only when it is grounded: its key is one of ``KEYS`` (or a
spelling of one) and its value is in the person's own words, in their turns of
that conversation. No fact is better than a wrong one: it would go into every reply.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from pydantic import BaseModel, Field

from ..store.derived import ProfileFact
from . import prompts
from .chunks import split_to
from .grounding import FRAMING, forms, vocabulary
from .lexicon import EVENTS
from .scribe import Scribe
from .statements import acceptable, content_words, floor_facts, own_sentences, said_as

KEY_PREFIXES = re.compile(r"^(the\s+)?(user'?s?|his|her|their|my)\s+")
# The profile's vocabulary: each key with the spellings that mean it.
KEYS = {
    "name": ("full name", "first name", "nickname"),
    "age": ("years old",),
    "birthday": ("birth date", "date of birth"),
    "home city": ("city", "home", "location", "lives in", "residence", "town", "current city"),
    "origin": ("hometown", "home town", "home country", "country", "birthplace", "comes from", "from"),
    "job": ("occupation", "work", "profession", "career", "employer", "workplace", "role"),
    "education": ("school", "studies", "study", "university", "degree", "college"),
    "partner": ("spouse", "husband", "wife", "boyfriend", "girlfriend", "relationship"),
    "children": ("kids", "child", "sons", "daughters"),
    # a relative by name, one key each: a sister does not replace a brother as one "family" value would
    "sister": ("sis",),
    "brother": ("bro",),
    "mother": ("mom", "mum", "mam"),
    "father": ("dad",),
    "son": (),
    "daughter": (),
    "family": ("parents", "siblings", "relatives"),
    "pet": ("pets", "dog", "cat"),
    "friends": ("friend", "best friend"),
    "hobbies": ("hobby", "interest", "interests", "pastime", "activities"),
    "likes": ("like", "favorite", "favourite", "loves", "enjoys"),
    "dislikes": ("dislike", "hates"),
    "health": ("illness", "condition", "allergy", "allergies", "diet"),
    "plans": ("plan", "goal", "goals", "dream"),  # a move is a plan, with its date: "moving to Leeds in May"
    "events": ("event", "appointment", "appointments", "upcoming", "upcoming event"),  # "interview on 2 May"
    "routine": ("routines", "habit", "habits"),
    "identity": ("gender", "pronouns"),
    "beliefs": ("religion", "faith", "values"),
    "music": ("instrument", "band", "song"),
    "books": ("book", "reading", "author"),
    "sport": ("sports", "exercise", "fitness", "team"),
}
KEY_OF = {spelling: key for key, spellings in KEYS.items() for spelling in (key, *spellings)}
# Words that, in the same turn as the value, say it is that kind of fact ("I live in Lisbon": home city).
CUES = {key: {w for spelling in (key, *spellings) for w in spelling.split()} for key, spellings in KEYS.items()}
for _key, _extra in {"home city": "live lived living moved", "origin": "grew born raised",
                     "job": "working works job jobs",
                     "education": "studying studied", "partner": "married engaged dating",
                     "children": "kid", "pet": "adopted puppy kitten", "hobbies": "enjoy love",
                     "likes": "love enjoy", "dislikes": "hate", "health": "sick doctor",
                     "plans": "planning want going", "music": "play playing listen", "books": "read",
                     "sport": "play playing run running gym", "name": "called", "age": "old turned",
                     "events": " ".join(EVENTS)}.items():
    CUES[_key] |= set(_extra.split())
for _key in CUES:  # "in", "from", "one": a word any sentence may hold says no kind
    CUES[_key] -= FRAMING


class Fact(BaseModel):
    key: str = Field(min_length=1, max_length=40)
    value: str = Field(min_length=1, max_length=80)


class Facts(BaseModel):
    facts: list[Fact] = Field(max_length=8)


def normalize_key(key: str) -> str:
    """``"User's Home_City:"`` -> ``"home city"``: one spelling per key, so updates find their fact."""
    key = re.sub(r"[_\-]+", " ", key.casefold())
    key = re.sub(r"[^\w\s]", "", key)
    key = KEY_PREFIXES.sub("", " ".join(key.split()))
    return key.strip()


def clean_facts(facts: Facts) -> list[tuple[str, str]]:
    """Normalized, de-duplicated, non-empty facts (the last word on a key wins)."""
    out: dict[str, str] = {}
    for fact in facts.facts:
        key, value = normalize_key(fact.key), " ".join(fact.value.split()).strip(" .")
        if key and value and value.casefold() != key:
            out[key] = value
    return list(out.items())


def canonical_key(key: str) -> str | None:
    """The profile key a normalized key means ("occupation" -> "job"), or ``None`` for one outside ``KEYS``."""
    return KEY_OF.get(key) or KEY_OF.get(key.removesuffix("s"))


def grounded_facts(facts: list[tuple[str, str]], own_words: list[str], names: Collection[str] = frozenset(),
                   since: Mapping[str, int] | None = None) -> tuple[list[tuple[str, str, int]], list[str]]:
    """The facts worth keeping, with canonical keys and the index of the turn that says each; and for each
    rejected one, the check it failed.

    ``own_words`` are the person's own turns: a value is kept when one of their
    first-person sentences (not a label, a photo caption or a quote of someone
    else) holds each of its content words, with a word that says what kind of
    fact it is next to it ("I live in Lisbon" for a home city, not "my cat" for
    a partner, nor "Lisbon" in one sentence and "live" in another), and it names
    something (a letter, not a bare "1") that is not one of ``names`` (the
    speakers', folded: the person's own name is in every turn of theirs and is
    no one's job). The floor's facts for the same turns (``floor_facts``) come
    first; a model's proposal fills a key the floor left empty. A key in
    ``since`` is learnt only from the turns from that index on (the person said
    its fact was wrong: only what they said after that may say it anew).
    """
    since = since or {}
    kept: dict[str, tuple[str, int]] = {}
    for n, text in enumerate(own_words):
        for key, value in floor_facts(text, names):
            if n >= since.get(key, 0):
                kept.setdefault(key, (value, n))
    said = [vocabulary(own_sentences(text)) for text in own_words] if facts else []
    failed: list[str] = []
    for key, value in facts:
        canonical = canonical_key(key)
        content = content_words(value)
        if canonical is None:
            failed.append("key_outside_vocabulary")
        elif (len(value.strip()) < 2 or not acceptable(canonical, value, set())
              or all(forms(w) & CUES[canonical] for w in content)):  # "job: work" says nothing
            failed.append("value_says_nothing")
        elif not acceptable(canonical, value, names):
            failed.append("value_is_a_speakers_name")
        elif not any(all(forms(w) & words_of for w in content) for words_of in said):
            failed.append("value_not_in_their_words")
        else:
            saying = [n for n, text in enumerate(own_words) if said_as(value, CUES[canonical], text)]
            if not saying:
                failed.append("value_not_said_as_that_fact")
            elif saying[-1] < since.get(canonical, 0):
                failed.append("value_rejected_by_the_person")
            elif canonical not in kept:
                kept[canonical] = (value, next(n for n in saying if n >= since.get(canonical, 0)))
    return [(key, value, turn) for key, (value, turn) in kept.items()], failed


def extract_facts(scribe: Scribe, gist: str, profile: list[ProfileFact]) -> list[tuple[str, str]] | None:
    """The standing facts a gist states; ``None`` when the model's answer was not valid."""
    known = "\n".join(f"- {f.key}: {f.value}" for f in profile) or "(none yet)"
    budget = scribe.budget(prompts.PROFILE)
    known = split_to(known, budget // 2, scribe.count)[0]
    material = f"Known facts:\n{known}\n\nSummary:\n{gist}"
    facts = scribe.ask_json(prompts.PROFILE, split_to(material, budget, scribe.count)[0], Facts)
    return None if facts is None else clean_facts(facts)
