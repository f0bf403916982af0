"""What a person says of themselves, read without a model.

A fact about the person must come from a sentence in which they speak of
themselves: their own first-person sentences, with the speaker's label, the
captions of shared photos and what they quote of others taken out. The floor of
the profile reads those sentences with plain patterns ("I live in Lisbon",
"my dog Rex", "I play the violin"): a box whose model is too small to extract
facts still learns true basics, and a capable model's proposals pass the same
test of where they were said (``said_as``).

A value must sit next to what says its kind: "my dog Rex" is a pet, while a
turn that says "Rex" somewhere and "dog" somewhere else is not.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from .grounding import FRAMING, forms, sentences, split_speaker, words

FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "myself", "im", "ive"})
ASIDE = re.compile(r"\[[^\]]*\]|“[^”]*”|\"[^\"]*\"|‘[^’]{12,}’")  # photo captions, quotes of others
NEAR = 3  # words between a cue and the value it says the kind of

NAME = r"(?P<value>[A-Z][a-z]+(?: [A-Z][a-z]+)?)"
PLACE = r"(?P<value>[A-Z][a-z]+(?:[ -][A-Z][a-z]+){0,2})"
PETS = r"(?P<kind>dog|cat|puppy|pup|kitten|bunny|rabbit|hamster|parrot|bird|turtle|horse|guinea pig)"
PARTNERS = r"(?P<kind>husband|wife|boyfriend|girlfriend|partner|fianc[ée]e?)"
INSTRUMENTS = (r"(?P<value>guitar|violin|piano|drums|cello|flute|saxophone|sax|trumpet|clarinet|ukulele|bass|"
               r"keyboard|harp|banjo|harmonica)")
SPORTS = (r"(?P<value>basketball|football|soccer|tennis|baseball|volleyball|golf|hockey|badminton|rugby|"
          r"chess|cricket|table tennis|ping pong)")
CITY_WORDS = {"Street", "Avenue", "Road", "Mall", "Park", "School", "University", "College", "Center", "Centre",
              "Church", "Hospital", "Library", "Museum", "Cafe", "Café"}


@dataclass(frozen=True)
class Pattern:
    key: str
    regex: re.Pattern[str]
    template: str = "{value}"  # how the value reads ("a dog named {value}")


def _p(key: str, regex: str, template: str = "{value}") -> Pattern:
    return Pattern(key, re.compile(regex), template)


# Each pattern is matched against one first-person sentence of the person's; the value is the named group.
# A key holds one value: "my daughter Sara" is not the value of "children" (there may be more), so relatives
# are learnt by count ("I have two kids") and a partner by name, never one relative standing for all.
PATTERNS = (
    _p("home city", rf"\bI(?:'m| am)? (?:live|living) in {PLACE}\b"),
    _p("home city", rf"\bI(?:'ve| have)? moved (?:here |back )?to {PLACE}\b"),
    _p("origin", rf"\bI (?:grew up|was born|was raised) in {PLACE}\b"),
    _p("origin", rf"\bI(?:'m| am) (?:originally )?from {PLACE}\b"),
    _p("origin", rf"\bI moved (?:here |away )?from {PLACE}\b"),
    _p("origin", rf"\b[Mm]y home ?(?:town|country)(?: is|,)? {PLACE}\b"),
    _p("pet", rf"\b[Mm]y (?:new )?{PETS},? (?:named |called )?{NAME}\b", "a {kind} named {value}"),
    _p("pet", rf"\b{NAME},? [Mm]y (?:new )?{PETS}\b", "a {kind} named {value}"),
    _p("partner", rf"\b[Mm]y {PARTNERS},? {NAME}\b", "{kind} {value}"),
    _p("plans", r"\b(?:into|considering|pursue|pursuing|thinking about) (?P<value>[a-z]+(?:(?: and| or)? [a-z]+){0,3}) "
                r"as a career\b", "a career in {value}"),
    _p("children", r"\bI have (?P<value>(?:one|two|three|four|five|\d) "
                   r"(?:kids|children|sons|daughters|son|daughter))\b"),
    _p("age", r"\bI(?:'m| am| just turned| turned) (?P<value>\d{1,2})(?: years old)?\b(?! (?:minutes|hours|days|weeks|"
              r"months|times|of|am|pm|percent|%))"),
    _p("music", rf"\bI(?:'ve| have)? (?:play|played|playing|been playing|started playing|learning to play|love "
                rf"playing) the {INSTRUMENTS}\b"),
    _p("sport", rf"\bI (?:play|played|love playing|started playing|'ve been playing) {SPORTS}\b"),
    _p("job", r"\bI work as (?:an? )?(?P<value>[a-z]+(?: [a-z]+)?)\b(?<!\bthe)"),
    _p("job", rf"\bI work (?:at|for) {PLACE}\b"),
    _p("education", r"\bI(?:'m| am) (?:studying|majoring in) (?P<value>[a-z]+(?: [a-z]+)?)\b"),
)
AGE_MIN, AGE_MAX = 5, 99


def own_sentences(text: str) -> list[str]:
    """The first-person sentences of one turn of the person's, without a speaker's label, photo captions or
    quoted words of someone else."""
    _, said = split_speaker(text)
    said = ASIDE.sub(" ", said)
    return [s for s in sentences(said) if FIRST_PERSON & set(words(s))]


def content_words(value: str) -> list[str]:
    return [w for w in words(value) if w not in FRAMING]


def floor_facts(text: str, names: Collection[str]) -> list[tuple[str, str]]:
    """The facts plain patterns find in one turn of the person's, first match per key; never a value that is
    a speaker's name (``names``, folded)."""
    found: dict[str, str] = {}
    for sentence in own_sentences(text):
        for pattern in PATTERNS:
            if pattern.key in found:
                continue
            m = pattern.regex.search(sentence)
            if m is None:
                continue
            parts = {k: _trimmed(v) for k, v in m.groupdict().items() if v}
            value = pattern.template.format(**parts)
            if acceptable(pattern.key, value, names):
                found[pattern.key] = value
    return list(found.items())


def _trimmed(part: str) -> str:
    """A matched value without the small words a pattern may run on into ("a teacher at" -> "a teacher")."""
    kept = part.split()
    while len(kept) > 1 and kept[-1].casefold() in FRAMING:
        kept.pop()
    return " ".join(kept)


def acceptable(key: str, value: str, names: Collection[str]) -> bool:
    """A value that names something and is not a speaker of the conversation (but for the key ``name``)."""
    content = content_words(value)
    if not content or not any(c.isalpha() for c in value) and key != "age":
        return False
    if names_a_speaker(key, value, names):
        return False
    if key == "age":
        return value.isdigit() and AGE_MIN <= int(value) <= AGE_MAX
    if key in ("home city", "origin"):
        return not set(value.split()) & CITY_WORDS
    return True


def names_a_speaker(key: str, value: str, names: Collection[str]) -> bool:
    """Whether a value is, or holds, one of ``names`` (the speakers', folded): never a fact but of ``name``."""
    return key != "name" and (value.casefold() in names or any(w in names for w in content_words(value)))


def said_as(value: str, cues: set[str], text: str) -> bool:
    """Whether one of the person's own first-person sentences in ``text`` holds every content word of the
    value close together, with a word saying its kind (``cues``; it may be one of the value's own, "my cat
    Miso") at most ``NEAR`` words from them."""
    wanted = content_words(value)
    if not wanted:
        return False
    for sentence in own_sentences(text):
        said = [forms(w) for w in words(sentence)]
        places = [[i for i, f in enumerate(said) if f & forms(w)] for w in wanted]
        if not all(places):
            continue
        first, last = min(p[0] for p in places), max(p[-1] for p in places)
        if last - first > len(wanted) + NEAR:  # the value's words are scattered over the sentence
            continue
        if any(said[i] & cues for i in range(max(0, first - NEAR), min(len(said), last + NEAR + 1))):
            return True
    return False
