"""What a person says of themselves, read without a model.

A fact about the person must come from a sentence in which they speak of
themselves: their own clauses, with the speaker's label, the captions of shared
photos and what they quote of others taken out, and none that is a question, a
wish, a negation, the past or someone else's words (``clauses.refusal``). The
floor of the profile reads those clauses with the patterns of ``PATTERNS``
("I live in Lisbon", "my dog Rex", "i work night shifts as a nurse"): a box
whose model is too small to extract facts still learns true basics, and a
capable model's proposals pass the same test of where they were said
(``said_as``).

A value must sit next to what says its kind: "my dog Rex" is a pet, while a
turn that says "Rex" somewhere and "dog" somewhere else is not. A lowercase
word is a name only where the pattern's shape leaves nothing else it could be
("my name is jo", "a greyhound called biscuit", "walking our beagle rufus"):
"I'm tired", "my dog sleeps" and "call me later" name no one.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from .clauses import ASIDE, clauses, refusal, retraction
from .grounding import FRAMING, forms, sentences, split_speaker, words
from .lexicon import (
    ACTIVITIES,
    BREEDS,
    EVENTS,
    HOBBY_NOUNS,
    JOB_MODIFIERS,
    JOBS,
    LEISURE,
    MONTHS,
    NOT_A_LOWERCASE_NAME,
    NOT_A_NAME,
    PARTNERS,
    PET_ADJECTIVES,
    PETS,
    PLACES,
    REGULARLY,
    RELATIONS,
    RELATIVE_ADJECTIVES,
    SCHOOLS,
    TRAITS,
    WEEKDAYS,
    WORKPLACES,
)

FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "myself", "im", "ive"})
NEAR = 3  # words between a cue and the value it says the kind of


def _any_of(words_: Iterable[str]) -> str:
    """A regex alternation of words, the longest first ("jack russell" before "jack")."""
    return "|".join(re.escape(w) for w in sorted(words_, key=len, reverse=True))


UPPER, LOWER = "A-ZÀ-ÖØ-Þ", "a-zß-öø-ÿ"  # "Lucía", "Zoë", "Çelik"
NAME = rf"(?P<value>[{UPPER}][{LOWER}]+(?:-[{UPPER}][{LOWER}]+)?(?: [{UPPER}][{LOWER}]+)?)(?!'s)"  # "Mary-Jane Lee"
ANY_NAME = rf"(?P<value>[{UPPER}{LOWER}][{LOWER}]+(?:-[{UPPER}{LOWER}][{LOWER}]+)?)(?!'s)"  # lowercase too: ``_a_name``
# A name in the possessive ("my daughter Sara's birthday") speaks of something of theirs, not of them: not read.
# Where a name said in lowercase must end: the clause, a comma, or a verb of its own ("rufus is", "jess lives").
NAME_END = (r"(?=\s*$|\s*[,.!;:]|\s+(?:is|was|has|had|and|who|just|too|\w+s|\w+ed|this|today|to|at|in|on|for|"
            r"with|every|last|yesterday|here|there|tonight|tomorrow|later|now)\b)")
INTRO_END = r"(?=\s*$|\s*[,.!;:]|\s+(?:and|here|from|btw|aka|x+)\b)"  # "I'm Maya, 34", "I'm Maya and I..."
PLACE = r"(?P<value>[A-Z][a-z]+(?:[ -][A-Z][a-z]+){0,2})"
# a place as typed: capitalized, or in lowercase one that ``PLACES`` knows ("i live in leeds", not "in limbo")
ANY_PLACE = (rf"(?P<value>[A-Z][a-z]+(?:[ -][A-Z][a-z]+){{0,2}}"
             rf"|(?:{_any_of(PLACES)})(?= in\b| on\b| next\b| this\b| now\b|\s*[,.!;:]|\s*$))")
FROM_PLACE = r"(?:from [A-Za-z]+(?: [A-Z][a-z]+)? )"
WE = r"(?:I|[Ww]e)"
OWN = r"(?:[Mm]y|[Oo]ur)"
SUBJECTLESS = r"(?:^|\b(?:I|I'm|I am|[Ww]e|[Ww]e're|[Ww]e are) )(?:(?:just|finally|also|recently) )?"
# "i'm thinking of moving", "we're planning to move", "moving to leeds": a move they are making, not a wish; the
# value says it in their verb ("relocating to Toronto"), every word of a value being theirs
MOVING = (rf"{SUBJECTLESS}(?:(?:thinking|planning) (?:of|about|on) |(?:planning|going|about) to )?"
          r"(?P<move>moving|move|relocating|relocate) ")
KINDS = rf"(?P<kind>{_any_of(PETS | BREEDS | {'guinea pig'})})"
PET_ADJ = rf"(?:(?:{_any_of(PET_ADJECTIVES)}),? )*"
OWNS = (rf"\b{WE}(?:'ve| have)?(?: just| finally| recently)? (?:got|have|adopted|rescued|own|bought|took in) "
        r"(?:a|an|another) ")
CALLED = r"(?:who's |who is |that's |is |'s )?(?:named|called)"
PARTNER_KINDS = rf"(?P<kind>{_any_of(PARTNERS)})"
JOB = rf"(?P<value>(?:(?:{_any_of(JOB_MODIFIERS)}) )*(?:{_any_of(JOBS)}))\b(?!'s| at heart| wannabe)"
# a named workplace ("St James's hospital", "Google", "st james's hospital"); "the hospital" names none
WORKPLACE = (rf"(?P<place>[A-Z][\w'&]*(?: [A-Z][\w'&]*){{0,3}}(?: (?:{_any_of(WORKPLACES)}))?"
             rf"|(?!the |a |an |my )(?:[a-z'&]+ ){{1,3}}?(?:{_any_of(WORKPLACES)}))")
# "started at the school" may be a pupil's: where someone starts work, a place no one studies at
# ("we started at the gym" is a class or a workout as likely): a gym, studio or centre is a workplace only
# with "work"; and "we started" may be two people's anything, so only "I started" or a bare "started" says a job
ANY_WORKPLACE = rf"(?P<value>(?:the )?(?:[a-z'&]+ ){{0,2}}(?:{_any_of(WORKPLACES - SCHOOLS - LEISURE)}))\b"
STARTED_SUBJECT = r"(?:^|\bI )(?:(?:just|finally|also|recently) )?"
STARTED = r"(?:started|start) (?:work |working |my new job |a new job |my job )?"
CLASS_ADJ = rf"(?:(?:weekly|new|local|evening|morning|night|beginners?|beginner's|{_any_of(WEEKDAYS)}) )*"
JOINED = (r"(?:started|joined|signed up for|take|taking|do|doing|go to|'m doing|'m taking|am doing|am taking) "
          r"(?:a |an |the |my )?")
# what may follow "swimming every morning" when it is something they do, not something they talk of ("sounds fun")
DONE_END = r"(?=\s*$|\s*[,.!;:]|\s+(?:before|after|with|at|in|on|now|and|to|for|then|too|lately|these|if)\b)"
# what may follow a move that is still a plan ("moving to Leeds was the best decision" is one made)
PLAN_END = r"(?=\s*$|\s*[,.!;:]|\s+(?:in|on|next|this|soon|with|and|for|to|because|so|tbh|after|once|if)\b)"
MONTH = rf"(?i:{_any_of(MONTHS)})\b"
DAY = rf"(?:\d{{1,2}}(?:st|nd|rd|th)?(?: of)? {MONTH}|{MONTH}\.? \d{{1,2}}(?:st|nd|rd|th)?\b)"
WHEN = rf"(?P<when> (?:on (?:the )?{DAY}|in {MONTH}|in (?:early |late |mid )?(?:{MONTH}|20\d\d)))"
EVENT = rf"(?:{_any_of(EVENTS)})"


@dataclass(frozen=True)
class Pattern:
    key: str
    regex: re.Pattern[str]
    template: str = "{value}"  # how the value reads ("a dog named {value}")
    names: bool = False  # the value is someone's name: checked by ``_a_name``
    places: bool = False  # the value is a place, maybe in lowercase: checked by ``_a_place``
    cued: bool = False  # a naming cue stands before the name ("named", "called", "my name is", "call me")


def _p(key: str, regex: str, template: str = "{value}", names: bool = False, places: bool = False,
       cued: bool = False) -> Pattern:
    return Pattern(key, re.compile(regex), template, names, places, cued)


def _relatives() -> list[Pattern]:
    """"my sister Jess", "my little bro sam": one key per relation, so a brother does not replace a sister."""
    out = []
    for key in sorted(set(RELATIONS.values())):
        relation = _any_of([w for w, k in RELATIONS.items() if k == key])
        said = rf"\b[Mm]y (?:(?:{_any_of(RELATIVE_ADJECTIVES)}) )?(?:{relation})"
        out += [_p(key, rf"{said},? {NAME}\b", names=True), _p(key, rf"{said},? {ANY_NAME}{NAME_END}", names=True)]
    return out


PET = "a {kind} named {value}"
# Each pattern is matched against one plain clause of the person's (``clauses``); the value is the named group.
# A key holds one value: "my daughter Sara" is not the value of "children" (there may be more), so children are
# learnt by count ("I have two kids"), a partner, a sister or a son by name, never one relative standing for all.
PATTERNS = (
    # their name: said outright, or a capitalized word no English reading fits ("I'm Maya", never "I'm Home")
    _p("name", rf"\b[Mm]y name(?:'s| is) {ANY_NAME}(?: (?P<surname>[A-Z][a-z]+))?\b", "{value}{surname}", True,
       cued=True),
    _p("name", rf"\b[Cc]all me {ANY_NAME}{INTRO_END}", names=True, cued=True),
    _p("name", rf"^(?:(?i:so|ok|okay|well|oh|and|also|anyway|btw|by the way)\W+)*(?:I'm|I am) {NAME}{INTRO_END}",
       names=True),
    _p("name", rf"^(?i:hi|hello|hey|hiya|heya)\W*(?:(?i:there|all|everyone)\W*)?(?:I'm|I am) {ANY_NAME}{INTRO_END}",
       names=True),
    _p("name", rf"\b[Ii]t's {NAME} again\b", names=True),
    # where they live, and moves: "moving from Leeds to Edinburgh" says where they live now and where they go
    _p("home city", rf"\b{WE}(?:'m| am|'re| are)? (?:currently |still |now )?(?:live|living|based) in {ANY_PLACE}",
       places=True),
    _p("home city", rf"\b{WE}(?:'ve| have) (?:lived|been living) in {PLACE} for\b"),  # "for 6 years now"
    _p("home city", rf"\b{WE}(?:'ve| have)?(?: just| recently| finally)? moved (?:here |back )?{FROM_PLACE}?"
                    rf"to {PLACE}\b"),
    _p("home city", rf"{MOVING}from {ANY_PLACE} to\b", places=True),
    _p("plans", rf"{MOVING}{FROM_PLACE}?to {ANY_PLACE}{WHEN}?{PLAN_END}", "{move} to {value}{when}", places=True),
    _p("origin", rf"\bI (?:grew up|was born|was raised) in {PLACE}\b"),
    _p("origin", rf"\bI(?:'m| am) (?:originally )?from {PLACE}\b"),
    _p("origin", rf"\bI moved (?:here |away )?from {PLACE}\b"),
    _p("origin", rf"\b[Mm]y home ?(?:town|country)(?: is|,)? {PLACE}\b"),
    # pets: the kind (a breed is one) next to the name
    _p("pet", rf"\b{OWN} {PET_ADJ}{KINDS},? (?:(?:named|called) )?{NAME}\b", PET, True),
    _p("pet", rf"\b{OWN} {PET_ADJ}{KINDS}(?:'s name is|,? {CALLED}) {ANY_NAME}\b", PET, True, cued=True),
    _p("pet", rf"{OWNS}{PET_ADJ}{KINDS},? (?:(?:named|called) )?{NAME}\b", PET, True),
    _p("pet", rf"{OWNS}{PET_ADJ}{KINDS},? {CALLED} {ANY_NAME}\b", PET, True, cued=True),
    _p("pet", rf"\b{NAME},? {OWN} (?:new )?{KINDS}\b", PET, True),
    _p("pet", rf"\b{OWN} {PET_ADJ}{KINDS},? {ANY_NAME}{NAME_END}", PET, True),
    # partner and family, by name
    _p("partner", rf"\b[Mm]y {PARTNER_KINDS},? {NAME}\b", "{kind} {value}", True),
    _p("partner", rf"\b[Mm]y {PARTNER_KINDS},? {ANY_NAME}{NAME_END}", "{kind} {value}", True),
    *_relatives(),
    # work: a job a list knows, and a named workplace with it
    _p("job", rf"\b(?:I|I'm|I am)(?: currently| now| still)? (?:work|working)(?: [a-z]+){{0,3}}? as (?:an? )?{JOB}"
              rf"(?: (?:at|in|for) {WORKPLACE})?", "{value}{at}"),
    _p("job", rf"\b(?:I'm|I am) (?:an?) {JOB}(?: (?:at|in|for) {WORKPLACE})?\b", "{value}{at}"),
    _p("job", r"\bI work as an? (?!team\b|unit\b|group\b|pair\b|family\b)(?P<value>[a-z]+(?: [a-z]+)?)\b(?<!\bthe)"),
    _p("job", rf"\b(?:I (?:work|am working|'m working) |{STARTED_SUBJECT}{STARTED})(?:at|for) {ANY_WORKPLACE}",
       "at {value}"),
    _p("job", rf"\bI work (?:at|for) {PLACE}\b"),
    # what they do regularly: a class or club they go to, an activity with how often
    _p("hobbies", rf"(?:^|\b{WE}(?:'ve| have)? )(?:(?:just|recently) )?{JOINED}{CLASS_ADJ}"
                  rf"(?P<value>{_any_of(ACTIVITIES)}) (?:{_any_of(HOBBY_NOUNS)})\b"),
    _p("hobbies", rf"(?:^|\b{WE}(?:'ve| have)? )(?:(?:just|recently) )?(?:joined|signed up for|go to) (?:a |an |the )?"
                  rf"{CLASS_ADJ}(?P<value>[a-z]{{3,}} club)\b"),
    _p("hobbies", rf"(?:^|\bI(?:'ve| have)? )(?:(?:just|recently) )?(?:started|took up|taken up|picked up) "
                  rf"(?P<value>{_any_of(ACTIVITIES)})\b(?! (?:class|course|lesson|shoes|gear|kit|stuff|things))"),
    _p("hobbies", rf"{SUBJECTLESS}(?:(?:go|do|play|practi[cs]e) )?(?:to (?:the )?)?(?P<value>{_any_of(ACTIVITIES)})"
                  rf"(?: (?:[a-z]+ ){{0,2}}?)? (?:{REGULARLY})\b{DONE_END}"),
    # what they announce with a date that stays true ("on 2 May", never "tomorrow")
    _p("events", rf"\b{WE}(?:'ve got| have got| have| got|'ve) (?:an?|my|our) "
                 rf"(?P<value>(?:[a-z]+ ){{0,2}}?{EVENT}){WHEN}", "{value}{when}"),
    _p("events", rf"\b[Mm]y (?P<value>(?:[a-z]+ )?{EVENT}) is{WHEN}", "{value}{when}"),
    _p("events", rf"\b(?:I'm|I am|[Ww]e're|[Ww]e are) (?P<value>getting married){WHEN}", "{value}{when}"),
    # the rest, as before
    _p("plans", r"\b(?:into|considering|pursue|pursuing|thinking about) (?P<value>[a-z]+(?:(?: and| or)? [a-z]+){0,3}) "
                r"as a career\b", "a career in {value}"),
    _p("children", r"\bI have (?P<value>(?:one|two|three|four|five|\d) "
                   r"(?:kids|children|sons|daughters|son|daughter))\b"),
    # "I'm 34", "I'm 34 years old and tired": a number is an age only where nothing after it says what else it
    # counts ("I'm 30 seconds away", "6 feet tall", "40 quid short")
    _p("age", r"\bI(?:'m| am| just turned| turned) (?P<value>\d{1,2})(?:(?: years| yrs)(?: old)?| y/?o)?"
              r"(?=\s*$|\s*[,.!;:]|\s+(?:and|now|today|this year|btw|myself|too)\b)"),
    _p("music", r"\bI(?:'ve| have)? (?:play|played|playing|been playing|started playing|learning to play|love "
                r"playing) (?:the |an? )?(?:acoustic |electric |classical )?"
                r"(?P<value>guitar|violin|piano|drums|cello|flute|saxophone|sax|trumpet|clarinet|ukulele|"
                r"bass|keyboard|harp|banjo|harmonica)\b"),
    _p("sport", r"\bI (?:play|played|love playing|started playing|'ve been playing) (?P<value>basketball|football|"
                r"soccer|tennis|baseball|volleyball|golf|hockey|badminton|rugby|chess|cricket|table tennis|"
                r"ping pong)\b"),
    _p("education", r"\bI(?:'m| am) (?:studying|majoring in) (?P<value>[a-z]+(?: [a-z]+)?)\b"),
)
AGE_MIN, AGE_MAX = 5, 99
CITY_WORDS = {"Street", "Avenue", "Road", "Mall", "Park", "School", "University", "College", "Center", "Centre",
              "Church", "Hospital", "Library", "Museum", "Cafe", "Café"}
NOT_A_PLACE = frozenset("fear hope denial peace pain debt sin luxury poverty comfort misery chaos harmony bed "
                        "sweatpants pyjamas pajamas hoodies jeans leggings trainers sneakers heels flats house flat "
                        "apartment town city country village suburbs countryside area".split())
# a word whose ending says it is no name ("sleeps", "named", "running", "lonely", "paranoid"); capitalized, a
# name may end so ("Ashley", "Fred", "Ahmed"), so only the endings few names have count ("Exhausting", "Relieved")
NOT_A_NAME_ENDING = re.compile(r"(?:[^su]s|ed|ing|ly|ous|ful|ive|less|able|ible|ish|oid|est|ical|ic|ent|ant|ary|ory|"
                               r"ism|ness)$")
NOT_A_CAPITALIZED_NAME_ENDING = re.compile(r"(?:ing|ous|ful|ive|less|able|ible|oid|^\w{4,}[^e]ed)$")
SIGNATURE = re.compile(r"^\s*(?:[-–—~]+|(?i:cheers|thanks|love|best|regards|xx+),?)\s*(?P<value>[A-Z][a-z]+)\s*$")


def own_sentences(text: str) -> list[str]:
    """The first-person sentences of one turn of the person's, without a speaker's label, photo captions or
    quoted words of someone else."""
    _, said = split_speaker(text)
    said = ASIDE.sub(" ", said)
    return [s for s in sentences(said) if FIRST_PERSON & set(words(s))]


def content_words(value: str) -> list[str]:
    return [w for w in words(value) if w not in FRAMING]


def floor_facts(text: str, names: Collection[str]) -> list[tuple[str, str]]:
    """The facts plain patterns find in one turn of the person's, first match per key; never from a refused
    clause (a question, a wish, a negation, the past, someone else's words), nor from one the turn takes back
    after it ("I'm a nurse lol jk") or quotes someone else in ("Anna wrote: ..."), never a value that is a
    speaker's name (``names``, folded)."""
    found: dict[str, str] = {}
    said = clauses(text)
    capitals = capitalized(text)
    for n, clause in enumerate(said):
        if refusal(clause) or retraction(said, n):
            continue
        for pattern in PATTERNS:
            if pattern.key in found:
                continue
            value = _first_value(pattern, clause, capitals)
            if value is not None and acceptable(pattern.key, value, names):
                found[pattern.key] = value
    signed = signature(text)
    if signed and "name" not in found:
        found["name"] = signed
    return list(found.items())


def capitalized(text: str) -> frozenset[str]:
    """The words (folded) a turn holds with a capital where no sentence starts ("we took Rufus to the vet"): a
    person who types names in lowercase elsewhere ("our beagle rufus") has said here that the word is one.
    A sentence's first word and a shouted one ("NOT") say nothing of the kind."""
    _, said = split_speaker(text)
    out = set()
    for sentence in sentences(ASIDE.sub(" ", said)):
        for word in re.findall(r"[\w'’-]+", sentence)[1:]:
            if word[:1].isupper() and not word.isupper():
                out.add(word.casefold())
    return frozenset(out)


def _first_value(pattern: Pattern, clause: str, capitals: Collection[str] = frozenset()) -> str | None:
    """The value of the pattern's first match in the clause whose parts are what they claim to be; a name in
    lowercase only where ``_a_lowercase_name`` allows it (``capitals``: the turn's capitalized words)."""
    for m in pattern.regex.finditer(clause):
        parts: defaultdict[str, str] = defaultdict(str, {k: v for k, v in m.groupdict().items() if v})
        parts["value"] = _trimmed(parts["value"])
        if pattern.names and not (_a_name(parts["value"]) and _a_lowercase_name(parts["value"], pattern, capitals)):
            continue
        if pattern.places and not _a_place(parts["value"]):
            continue
        if parts["value"][:1].islower() and (pattern.names or pattern.places):
            parts["value"] = parts["value"].title()
        parts["kind"] = parts["kind"].casefold()  # as they said it ("bf"): every word of a value is theirs
        parts["at"] = f" at {parts['place']}" if parts["place"] else ""
        parts["when"] = f" {parts['when'].strip()}" if parts["when"] else ""
        parts["surname"] = f" {parts['surname']}" if parts["surname"] else ""
        return pattern.template.format_map(parts)
    return None


def _a_name(value: str) -> bool:
    """Whether every word of a matched name may be one: not a word of the lists (a state, a place, a month, a
    nationality, a verb), and in lowercase not ending as no name does."""
    for word in re.split(r"[ -]", value):
        folded = word.casefold()
        if len(folded) < 2 or folded in NOT_A_NAME or folded in TRAITS or folded in FRAMING:
            return False
        if (NOT_A_NAME_ENDING if word.islower() else NOT_A_CAPITALIZED_NAME_ENDING).search(folded):
            return False
    return True


def _a_lowercase_name(value: str, pattern: Pattern, capitals: Collection[str]) -> bool:
    """Whether every lowercase word of a matched name may be one. Nothing but the person's capital tells "my dog
    rufus" from "my dog tbh is fine" or "hi im sam" from "hi im deaf", and there is no dictionary to ask: such a
    word is a name where the turn also has it with a capital, or where a naming cue stands before it ("named",
    "called", "my name is", "call me") and it is none of the states, traits and shorthand the lexicon lists
    (``NOT_A_LOWERCASE_NAME``). "hi im maya" alone learns nothing: a missed name costs less than a false one."""
    for word in re.split(r"[ -]", value):
        folded = word.casefold()
        if word.islower() and folded not in capitals and (not pattern.cued or folded in NOT_A_LOWERCASE_NAME):
            return False
    return True


def _a_place(value: str) -> bool:
    return value.casefold() not in NOT_A_PLACE and value.casefold() not in FRAMING and value.casefold() not in \
        NOT_A_NAME


def signature(text: str) -> str | None:
    """The name a turn is signed with ("...see you soon!\\n- Tom"): its last line a dash and a capitalized name
    after a line that ends a sentence (a list's last item, "- Milk", follows no such line)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if len(lines) < 2 or not re.search(r"[.!?)\w]\s*$", lines[-2]) or re.match(r"\s*[-–—*•]", lines[-2]):
        return None
    m = SIGNATURE.match(lines[-1])
    return m.group("value") if m and _a_name(m.group("value")) else None


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
