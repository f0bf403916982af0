"""Third-person edits of what someone said, for the summaries written without a model.

The floor's summary of a conversation is built from its own sentences. Read
back as ``Maya said, "…" Lyra said, "…"`` they are a transcript, not a
summary; these pure functions edit one sentence into a summary's sentence
where the edit is mechanical: "I'm thinking of moving" -> "Maya is thinking of
moving", "my sister" -> "Maya's sister", "can you help me prepare?" -> "Maya
asked for help to prepare", and a long reply to what it listed or its first
plain statement. Each returns ``None`` where the edit is not mechanical ("we",
"I'd", a verb it does not know, a question of another shape): the caller then
quotes the sentence as it was said, attributed once. An edit never changes a
word's meaning: negations, tenses and the words themselves are kept; only the
pronouns of the speaker (and of the one spoken to) and their verbs' agreement
change. Nothing here may add a word that says something the sentence did not.
"""

from __future__ import annotations

import re
import unicodedata

WORD = re.compile(r"(\w+(?:['’]\w+)*)")
PLURAL = frozenset("we us our ours ourselves let's lets we're we've we'll we'd".split())
YOU = frozenset("you u ya".split())
YOUR = frozenset("your ur yours".split())
SELF = frozenset("myself yourself yourselves y'all yall".split())
ADVERBS = frozenset("""really also just always never usually often still actually finally totally kinda sometimes
only even already recently literally definitely probably honestly seriously mostly generally currently barely
hardly rarely almost normally def basically""".split())
UNCHANGED = frozenset("""can can't cant cannot could couldn't couldnt would wouldn't wouldnt should shouldn't
shouldnt might must may will won't wont shall was wasn't wasnt did didn't didnt had hadn't hadnt""".split())
AGREEMENT = {"am": "is", "have": "has", "haven't": "hasn't", "havent": "hasn't", "do": "does", "don't": "doesn't",
             "dont": "doesn't", "are": "is", "aren't": "isn't", "arent": "isn't", "were": "was", "weren't": "wasn't"}
# Verbs whose present tense takes an -s in the third person. Words whose past and present are one spelling
# ("read", "put", "quit") are not here: "I read" could be either, and an edit must not choose.
VERBS = frozenset("""work live love like hate want need think feel hope go come get know see say make take try play
walk run swim cook write study teach learn plan mean miss enjoy prefer wish use keep start stop help spend visit
move stay leave remember forget believe guess wonder worry care agree understand look watch listen call text drive
ride train practice practise paint draw sing dance volunteer own rent share find hear eat drink sleep wake wear buy
sell pay save lose win owe struggle manage deal handle cry fly carry bake garden knit sew climb hike cycle shop
nurse commute juggle attend belong seem sound mind collect""".split())
PAST = frozenset("""went got had did made saw said took came knew thought felt found gave told became left heard met
ran swam began sang wrote bought brought caught taught fought sold sent spent built lost won paid kept slept meant
ate drank drove rode wore chose broke spoke woke forgot grew threw flew drew held stood sat understood fell""".split())
NOT_PAST = frozenset("need feed seed bleed speed breed proceed succeed exceed indeed shed bed red wed embed".split())
INTERJECTIONS = frozenset("""oh omg wow haha hahaha lol ok okay yeah yes yep hey hi hello well aw aww ah hmm um
thanks thank congrats congratulations great sure absolutely certainly of course awesome cool nice""".split())
TRAILING = re.compile(r"(?:\s+(?:lol|haha+|lmao|xx+|xd|:\)|:D))+\s*$", re.IGNORECASE)
IMPERATIVES = frozenset("""tell give show let send explain list describe check remind please imagine thank thanks
consider avoid""".split())
BARE_BEFORE = frozenset("help helps helping let lets make makes see watch hear".split())
SUBJECT_AFTER = frozenset("""and but so if when because that or then while as since unless until once before after
though although where""".split())
OPENERS = frozenset("""the a an this that these those it it's its he she they he's she's they're his her their
there there's here one some my""".split())


def possessive(name: str) -> str:
    """"Maya" -> "Maya's", "Jess" -> "Jess's" (as "St James's" is written), "the user" -> "the user's"."""
    return f"{name}'s"


def third_person_verb(word: str) -> str | None:
    """What ``word`` becomes after a third-person subject ("work" -> "works", "went" -> "went"), or ``None``."""
    lower = word.lower().replace("’", "'")
    if lower in UNCHANGED or lower in PAST:
        return word
    if lower in AGREEMENT:
        return AGREEMENT[lower]
    if lower in VERBS:
        if lower == "go" or lower.endswith(("s", "sh", "ch", "x", "z", "o")):
            return word + "es"
        if lower.endswith("y") and lower[-2:-1] not in "aeiou":
            return word[:-1] + "ies"
        return word + "s"
    if lower.endswith("ed") and len(lower) >= 4 and lower not in NOT_PAST:
        return word
    return None


def _swap(sentence: str, me: str | None, you: str | None) -> tuple[str, bool] | None:
    """The sentence with the speaker (``me``) and the one spoken to (``you``) named, and whether it changed."""
    parts = WORD.split(sentence)
    changed = False
    for i in range(1, len(parts), 2):
        lower = parts[i].lower().replace("’", "'")
        if lower in PLURAL or lower in SELF or lower == "i'd":
            return None
        name = me if lower in ("i", "i'm", "im", "i've", "ive", "i'll", "me", "my", "mine") else \
            you if lower in YOU | YOUR | {"you're", "youre", "you've", "you'll"} else ""
        if name is None:
            return None
        if not name:
            continue
        changed = True
        if lower in ("my", "mine") or lower in YOUR:
            parts[i] = possessive(name)
        elif lower in ("i'm", "im", "you're", "youre"):
            parts[i] = f"{name} is"
        elif lower in ("i've", "ive", "you've"):
            parts[i] = f"{name} has"
        elif lower in ("i'll", "you'll"):
            parts[i] = f"{name} will"
        elif lower == "me":
            parts[i] = name
        elif not _subject(parts, i, name, lower in YOU):
            return None
    return "".join(parts), changed


def _subject(parts: list[str], i: int, name: str, second: bool) -> bool:
    """Name the subject at ``parts[i]`` and make its verb agree; ``False`` where that is not mechanical.

    "you" after a word that is no conjunction is an object where no verb this knows follows ("for you", "thank
    you so much") or a bare infinitive does ("help you sleep"): it is named and no verb changes.
    """
    j = i + 2
    while j < len(parts) and parts[j].lower() in ADVERBS:
        j += 2
    verb = third_person_verb(parts[j]) if j < len(parts) and parts[j - 1].strip() == "" else None
    before = parts[i - 2].lower() if i >= 2 and not re.search(r"[,.;:!?]", parts[i - 1]) else ""
    if second and before and before not in SUBJECT_AFTER and (verb is None or before in BARE_BEFORE):
        parts[i] = name
        return True
    if verb is None:
        return False
    parts[i] = name
    parts[j] = verb
    return True


def tidy(sentence: str) -> str:
    """A sentence as a summary writes it: no trailing "lol" or emoji, capitalized, ending with one full stop."""
    text = sentence.strip()
    while text and unicodedata.category(text[-1]) in ("So", "Sk", "Cn"):
        text = text[:-1].rstrip()
    text = TRAILING.sub("", text).rstrip()
    text = re.sub(r"[!?.…,;:]+$", "", text).rstrip()
    return (text[:1].upper() + text[1:] + ".") if text else ""


def third_person(sentence: str, name: str, addressee: str | None = None) -> str | None:
    """A statement in the first person, said by ``name`` (to ``addressee``), in the third person; ``None`` when
    it has no first person in it or the edit is not mechanical."""
    first = WORD.search(sentence)
    if first is None or first.group(0).lower() in VERBS | IMPERATIVES:
        return None  # an imperative ("Tell me more") has no subject to name
    swapped = _swap(sentence, name, addressee)
    if swapped is None or not swapped[1]:
        return None
    return tidy(swapped[0])


QUESTIONS = [
    (re.compile(r"^(?:can|could|would|will) (?:you|u) (?:please |pls )?help (?:me|us) with (?P<x>.+)$", re.I),
     "asked for help with {x}"),
    (re.compile(r"^(?:can|could|would|will) (?:you|u) (?:please |pls )?help me (?:to )?(?P<x>.+)$", re.I),
     "asked for help to {x}"),
    (re.compile(r"^(?:can|could|would|will) (?:you|u) (?:please |pls )?(?P<x>.+)$", re.I), "asked {o} to {x}"),
    (re.compile(r"^how (?:do|can|should|could) i (?P<x>.+)$", re.I), "asked how to {x}"),
    (re.compile(r"^what should i (?P<x>.+)$", re.I), "asked what to {x}"),
    (re.compile(r"^should i (?P<x>.+)$", re.I), "asked whether to {x}"),
    (re.compile(r"^(?:any|got any|do (?:you|u) have any) (?P<k>tips|advice|ideas|suggestions|recommendations) "
                r"(?P<p>on|for|about) (?P<x>.+)$", re.I), "asked for {k} {p} {x}"),
]
ASKING = re.compile(r",\s+(?=(?:can|could|would|will) (?:you|u)\b|how (?:do|can|should|could) i\b|what should i\b|"
                    r"should i\b|any (?:tips|advice|ideas|suggestions))", re.I)


def asked(question: str, name: str, addressee: str | None) -> str | None:
    """What a question asked, without its subject ("can you help me prepare?" -> "asked for help to prepare"),
    or ``None`` for a question of another shape."""
    text = re.sub(r"[?!.\s]+$", "", question.strip())
    for pattern, template in QUESTIONS:
        m = pattern.match(text)
        if not m or ("{o}" in template and not addressee):
            continue
        rest = _swap(m.group("x"), name, None)
        if rest is None or not rest[0].strip() or len(rest[0].split()) > 16:
            return None
        return template.format(o=addressee, x=rest[0], k=m.groupdict().get("k", ""), p=m.groupdict().get("p", ""))
    return None


def edited(sentence: str, name: str, addressee: str | None = None) -> str | None:
    """One sentence of a person's, as a summary's sentence about them, or ``None`` where no edit is mechanical.

    A statement is turned to the third person; a question is said as what it
    asked ("Maya asked how to …"); a statement and a request in one sentence
    are both ("Maya has an interview on 2 May and asked for help to prepare."); a
    sentence with no first person that opens like a plain statement ("Jess says
    …") is said as mentioned ("Maya mentioned that Jess says …").
    """
    split = ASKING.search(sentence)
    lead, question = (sentence[:split.start()], sentence[split.end():]) if split else (sentence, "")
    is_question = sentence.rstrip().rstrip("!").endswith("?")
    if question or is_question:
        what = asked(question or lead, name, addressee)
        if what is None:
            return None
        if not question:
            return tidy(f"{name} {what}")
        said = third_person(lead, name, addressee)
        return tidy(f"{said[:-1]} and {what}") if said else None
    said = third_person(sentence, name, addressee)
    if said is not None:
        return said
    plain = _swap(sentence, None, None)
    first = WORD.search(sentence)
    if plain is None or first is None or is_question:
        return None
    opener = first.group(0)
    if opener.lower() in INTERJECTIONS or not (opener.lower() in OPENERS or opener[:1].isupper()
                                                and opener.lower() not in VERBS):
        return None
    return tidy(f"{name} mentioned that {_lower_opener(sentence.strip())}")


def _lower_opener(text: str, context: str = "") -> str:
    """"The flats are cheaper" -> "the flats are cheaper" (after "that"); a name keeps its capital. A word is
    taken for no name where it is a common one, or written in lower case elsewhere in ``context``."""
    opener = text.split()[0] if text.split() else ""
    lower = opener.lower()
    stem = lower.removesuffix("ing")
    known = VERBS | IMPERATIVES | set(AGREEMENT)
    common = lower in OPENERS | known or stem != lower and {stem, stem + "e", stem[:-1]} & known or \
        re.search(rf"(?<![.!?]\s)\b{re.escape(lower)}\b", context)
    return lower + text[len(opener):] if opener and common and opener[1:] == opener[1:].lower() else text


def in_their_words(sentence: str, name: str) -> str:
    """The sentence as it was said, attributed once (the floor keeps at most one such in a summary)."""
    return f"In {possessive(name)} words: “{sentence.strip()}”"


LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(.+)$")
HEAD = re.compile(r"^\*\*(.+?)\*\*|^__(.+?)__|^([^:]{3,80}):")
FLUFF = INTERJECTIONS | frozenset("here here's great good sure that's thats what sounds glad how".split())
REPLY = re.compile(r"^[\w'’ .-]{1,40}? (?:replied that|listed:|advised:) ")  # a reply reduced by ``reply_about``


def _head(item: str, speaker: str, person: str) -> str | None:
    m = HEAD.match(item.strip())
    head = next((g for g in m.groups() if g), "") if m else item.strip()
    head = re.sub(r"[*_`]+", "", head).strip().rstrip(":.;,!")
    if not head or len(head.split()) > 10:
        return None
    swapped = _swap(head, speaker, person)
    return swapped[0] if swapped else None


def reply_about(reply: str, speaker: str, person: str, sentences: list[str], most: int = 3) -> str | None:
    """A long reply reduced to what it was about: the heads of the points it listed ("ChatGPT listed: research
    the trust; prepare examples."), else its first plain statement ("ChatGPT replied that it is normal to feel
    nervous."), else ``None``. ``sentences`` are the reply's sentences (the caller's splitter)."""
    heads = [h for line in reply.splitlines() if (m := LIST_ITEM.match(line)) and (h := _head(m.group(1), speaker,
                                                                                                 person))]
    if len(heads) >= 2:
        more = "; and more" if len(heads) > most else ""
        return tidy(f"{speaker} listed: " + "; ".join(heads[:most]) + more)
    for sentence in sentences:
        first = WORD.search(sentence)
        if (not sentence.rstrip().endswith(".") or len(sentence.split()) < 6 or first is None
                or first.group(0).lower() in FLUFF or LIST_ITEM.match(sentence)):
            continue
        swapped = _swap(sentence, speaker, person)
        if swapped is None:
            continue
        text = _lower_opener(swapped[0].strip(), reply)
        advice = first.group(0).lower() in VERBS | IMPERATIVES
        return tidy(f"{speaker} advised: {text}" if advice else f"{speaker} replied that {text}")
    return None
